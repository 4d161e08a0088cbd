/**
 * A real bot for the telemetry tests (not a test file): bot/cli/index.ts startBot with the fake Telegram
 * and the fake Anthropic behind the real grammy and SDK clients, its real HTTP server on 127.0.0.1,
 * and one scripted conversation: a plain message, a stranger refused, and a write_file call that
 * needs approval and is approved by the owner. Ids and words are distinctive so a test can look for them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot, type RunningBot } from '../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../fakes/telegram.js';

const TOKEN = '123456:TELEMETRY-token_abcdefghijklmnopq';
export const owner: FakeUser = { id: 73519, first_name: 'Ada' };
export const stranger: FakeUser = { id: 86624, first_name: 'Mallory' };
export const ownerDm: FakeChat = { id: 73519, type: 'private', first_name: 'Ada' };
const strangerDm: FakeChat = { id: 86624, type: 'private', first_name: 'Mallory' };
/** In the user's message. */
export const MESSAGE_WORD = 'tangerinezeppelin';
/** In the tool's arguments only. */
export const ARGUMENT_WORD = 'aubergineaqueduct';

export interface TelemetryBot {
  bot: RunningBot;
  tg: FakeTelegram;
  model: FakeAnthropic;
  dir: string;
  /** The bot's HTTP base URL. */
  url: string;
  close(): Promise<void>;
}

/** `agentLines`: more of the default agent's config, e.g. `'    budget: { conversation: { usd: 1 } }'`. */
export async function startTelemetryBot(env: Record<string, string> = {}, agentLines: string[] = []): Promise<TelemetryBot> {
  const dir = mkdtempSync(join(tmpdir(), 'gh-telemetry-'));
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    [
      'agents:',
      '  default:',
      '    model: claude-sonnet-5-5',
      '    tools: [read_file, write_file]',
      '    tier: read-only',
      `    workspace: "${join(dir, 'ws')}"`,
      `    approvers: { telegram: ["${owner.id}"] }`,
      ...agentLines,
      'access:',
      `  telegram: { users: ["${owner.id}"] }`,
      '',
    ].join('\n'),
  );
  const tg = await startFakeTelegram({ token: TOKEN });
  const model = await startFakeAnthropic({ apiKey: 'test-key' });
  let bot: RunningBot;
  try {
    bot = await startBot(
      {
        env: {
          ANTHROPIC_API_KEY: 'test-key',
          ANTHROPIC_BASE_URL: model.url,
          GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'),
          GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}`,
          GATEHOUSE_HTTP_PORT: '0',
          TELEGRAM_BOT_TOKEN: TOKEN,
          TELEGRAM_API_ROOT: tg.apiRoot,
          ...env,
        },
        cwd: dir,
        stdout: new PassThrough(),
        stderr: new PassThrough(),
      },
      () => undefined,
    );
  } catch (err) {
    await tg.close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  let closed = false;
  return {
    bot,
    tg,
    model,
    dir,
    url: `http://127.0.0.1:${bot.http!.port}`,
    async close() {
      if (closed) return;
      closed = true;
      await bot.stop();
      await tg.close();
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A plain exchange, a stranger refused, then a write_file approved by the owner; resolves when answered. */
export async function scriptedConversation(t: TelemetryBot): Promise<void> {
  const queue: FakeReply[] = [
    { text: 'Hello Ada.' },
    { toolUses: [{ name: 'write_file', input: { path: 'plan.md', content: `# ${ARGUMENT_WORD}\n` } }] },
    { text: 'Wrote plan.md.' },
  ];
  t.model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
  const texts = (chat: number) => t.tg.visible(chat).map((m) => m.plain);
  await t.tg.sendText({ chat: ownerDm, from: owner, text: 'hello' });
  await t.tg.waitFor(() => texts(ownerDm.id).includes('Hello Ada.'), 10_000, 'first answer');
  await t.tg.sendText({ chat: strangerDm, from: stranger, text: 'let me in' });
  await t.tg.waitFor(() => texts(strangerDm.id).length === 1, 10_000, 'refusal');
  await t.tg.sendText({ chat: ownerDm, from: owner, text: `write the plan about ${MESSAGE_WORD}` });
  await t.tg.waitFor(
    () => t.tg.visible(ownerDm.id).some((m) => m.replyMarkup !== undefined && m.replyMarkup.inline_keyboard.length > 0),
    10_000,
    'approval card',
  );
  const card = t.tg.visible(ownerDm.id).find((m) => m.replyMarkup !== undefined && m.replyMarkup.inline_keyboard.length > 0)!;
  await t.tg.press(ownerDm.id, card.messageId, 0, owner);
  await t.tg.waitFor(() => texts(ownerDm.id).includes('Wrote plan.md.'), 10_000, 'answer after approval');
}
