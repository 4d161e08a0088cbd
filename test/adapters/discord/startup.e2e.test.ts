/**
 * The Discord adapter's start errors against the fake Discord (the real discord.js client): a token
 * Discord refuses fails the start with what to do, and neither the error nor any error in its
 * `cause` chain (what a caller logs with util.inspect, or a crash report prints) holds the token.
 */
import { inspect } from 'node:util';
import { createDiscordAdapter } from '../../../adapters/discord/adapter.js';
import { AdapterError } from '../../../adapters/kit/errors.js';
import { startFakeDiscord, type FakeDiscord } from '../../fakes/discord.js';
import { ContractSink } from '../contract/suite.js';

const TOKEN = 'OTAwMDAwMDAwMDAwMDAwMDAx.GfakeX.fakeDiscordBotTokenValue0123456789';
const WRONG = 'OTAwMDAwMDAwMDAwMDAwMDAx.GwrongX.notTheRightTokenAtAll0123456789';

/** The error and every cause under it, each printed in full (hidden properties too). */
function printedChain(err: unknown): string[] {
  const out: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 10; depth++) {
    out.push(inspect(e, { depth: 10, showHidden: true }), JSON.stringify(e) ?? '');
    e = (e as { cause?: unknown }).cause;
  }
  return out;
}

async function failedStart(fake: FakeDiscord, token: string): Promise<{ err: unknown; logged: string }> {
  let logged = '';
  const adapter = createDiscordAdapter({ token, apiUrl: fake.apiUrl, readyTimeoutMs: 10_000, log: (level, msg) => (logged += `${level} ${msg}\n`) });
  const err = await adapter.start(new ContractSink()).then(
    () => undefined,
    (e: unknown) => e,
  );
  await adapter.stop();
  return { err, logged };
}

let fake: FakeDiscord;
beforeEach(async () => {
  fake = await startFakeDiscord({ token: TOKEN });
});
afterEach(async () => {
  await fake.close();
});

test('a bad bot token (REST 401 on GET /gateway/bot) fails the start with a cause that does not hold the token', async () => {
  const { err, logged } = await failedStart(fake, WRONG);
  expect(fake.calls).toContainEqual({ method: 'GET', route: '/gateway/bot', status: 401 });
  expect(err).toBeInstanceOf(AdapterError);
  expect((err as AdapterError).code).toBe('start_failed');
  expect((err as Error).message).toMatch(/DISCORD_TOKEN was rejected by Discord.*Reset Token/);
  // the cause is kept (a caller can see what Discord said), but holds no secret
  expect((err as Error).cause).toBeDefined();
  for (const printed of printedChain(err)) expect(printed).not.toContain(WRONG);
  expect(logged).not.toContain(WRONG);
  expect(fake.gateway.identifies).toBe(0);
});

test('a token the gateway refuses (close 4004) fails the start with a cause that does not hold the token', async () => {
  fake.closeOnIdentify = 4004;
  const { err, logged } = await failedStart(fake, TOKEN);
  expect(fake.gateway.identifies).toBe(1);
  expect((err as Error).message).toMatch(/DISCORD_TOKEN was rejected by Discord/);
  expect((err as Error).cause).toBeDefined();
  for (const printed of printedChain(err)) expect(printed).not.toContain(TOKEN);
  expect(logged).not.toContain(TOKEN);
});
