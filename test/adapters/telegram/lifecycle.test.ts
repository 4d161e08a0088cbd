/**
 * Start-up, shutdown and webhook mode of the Telegram adapter against the fake Bot API.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { AdapterError } from '../../../adapters/kit/errors.js';
import { createTelegramAdapter } from '../../../adapters/telegram/adapter.js';
import type { TelegramAdapter } from '../../../adapters/telegram/adapter.js';
import { startFakeTelegram } from '../../fakes/telegram.js';
import type { FakeChat, FakeTelegram, FakeUser } from '../../fakes/telegram.js';
import { TestSink, TOKEN, until } from './helpers.js';

const ada: FakeUser = { id: 501, first_name: 'Ada' };
const dm: FakeChat = { id: 501, type: 'private', first_name: 'Ada' };

let fake: FakeTelegram;
const cleanup: Array<() => Promise<void>> = [];
const logs: string[] = [];
const log = (level: string, msg: string) => void logs.push(`${level} ${msg}`);

beforeEach(async () => {
  logs.length = 0;
  fake = await startFakeTelegram({ token: TOKEN });
});
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
  await fake.close();
  for (const l of logs) expect(l).not.toContain(TOKEN);
});

function make(opts: Partial<Parameters<typeof createTelegramAdapter>[0]> = {}): TelegramAdapter {
  const a = createTelegramAdapter({ token: TOKEN, apiRoot: fake.apiRoot, log, ...opts });
  cleanup.push(() => a.stop());
  return a;
}

test('start calls getMe; with botInfo given it does not', async () => {
  const a = make();
  await a.start(new TestSink());
  expect(fake.calls.filter((c) => c.method === 'getMe')).toHaveLength(1);
  await a.stop();
  fake.calls.length = 0;
  const b = make({
    botInfo: {
      ...fake.bot,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
      can_connect_to_business: false,
      has_main_web_app: false,
      has_topics_enabled: false,
      allows_users_to_create_topics: false,
      can_manage_bots: false,
      supports_join_request_queries: false,
    },
  });
  const sink = new TestSink();
  await b.start(sink);
  expect(fake.calls.filter((c) => c.method === 'getMe')).toHaveLength(0);
  await fake.sendText({ chat: dm, from: ada, text: 'hi @GatehouseBot' });
  await until(() => sink.messages.length === 1, 'message');
  expect(sink.messages[0]?.mentionsBot).toBe(true);
});

test('start registers the chat commands, so the / menu lists /stop, /reset, /id and /help', async () => {
  const a = make();
  await a.start(new TestSink());
  expect(fake.commands.map((c) => c.command)).toEqual(['stop', 'reset', 'id', 'help']);
  for (const c of fake.commands) expect(c.description.length).toBeGreaterThan(0);
  expect(fake.calls.filter((c) => c.method === 'setMyCommands' && c.ok)).toHaveLength(1);
});

test('a / menu Telegram refuses is a warning, not a failed start; the fake checks like Telegram', async () => {
  // "/Stop" has an upper-case letter: Telegram answers BOT_COMMAND_INVALID.
  const a = make({ commands: [{ command: 'Stop', description: 'x' }] });
  const sink = new TestSink();
  await a.start(sink);
  expect(fake.calls.find((c) => c.method === 'setMyCommands')).toMatchObject({ ok: false, errorCode: 400, description: 'Bad Request: BOT_COMMAND_INVALID' });
  expect(logs.some((l) => /^warn could not register the \/ menu/.test(l))).toBe(true);
  expect(fake.commands).toEqual([]);
  // Still serving.
  await fake.sendText({ chat: dm, from: ada, text: 'hi' });
  await until(() => sink.messages.length === 1, 'message');
});

test('an invalid token: start rejects with what to do, and no token in the message', async () => {
  const a = make({ token: '999:not-the-right-token' });
  const err = await a.start(new TestSink()).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(err?.message).toBe('TELEGRAM_BOT_TOKEN was rejected by Telegram (401 Unauthorized): check the token from @BotFather');
});

test('a bad token: the start error is coded and its cause, however deep it is read, never holds the token', async () => {
  const bad = '999:not-the-right-token';
  const a = make({ token: bad });
  const err = await a.start(new TestSink()).then(
    () => undefined,
    (e: unknown) => e as AdapterError,
  );
  expect(err).toBeInstanceOf(AdapterError);
  expect(err?.code).toBe('start_failed');
  // The cause says what Telegram answered (the kind of failure survives) ...
  const cause = err?.cause as Error;
  expect(cause).toBeInstanceOf(Error);
  expect(cause.name).toBe('GrammyError');
  expect(cause.message).toBe('getMe: 401 Unauthorized');
  // ... and neither it nor anything hanging off the error (stack, own properties, nested causes) has the token.
  expect(inspect(err, { depth: null, showHidden: true })).not.toContain(bad);
});

test('an unreachable API root: the network error behind the start error (its URL has the token) is not its cause', async () => {
  const dead = createServer();
  await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
  const root = `http://127.0.0.1:${(dead.address() as AddressInfo).port}`;
  await new Promise<void>((r) => dead.close(() => r()));
  const a = createTelegramAdapter({ token: TOKEN, apiRoot: root, log, networkRetryDelaysMs: [5, 5] });
  const err = await a.start(new TestSink()).then(
    () => undefined,
    (e: unknown) => e as AdapterError,
  );
  expect(err).toBeInstanceOf(AdapterError);
  expect(err?.code).toBe('start_failed');
  expect((err?.cause as Error | undefined)?.name).toBe('HttpError');
  expect(inspect(err, { depth: null, showHidden: true })).not.toContain(TOKEN);
});

test('another poller with the same token: start rejects with 409 and what to do', async () => {
  const first = make();
  await first.start(new TestSink());
  const second = make();
  await expect(second.start(new TestSink())).rejects.toThrow(
    'another process is polling with this token (409 Conflict): stop it or use webhook mode (TELEGRAM_WEBHOOK_URL)',
  );
});

test('an unreachable API root: start rejects naming the API root, never the token', async () => {
  const dead = createServer();
  await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
  const root = `http://127.0.0.1:${(dead.address() as AddressInfo).port}`;
  await new Promise<void>((r) => dead.close(() => r()));
  const a = createTelegramAdapter({ token: TOKEN, apiRoot: root, log, networkRetryDelaysMs: [5, 5] });
  const err = await a.start(new TestSink()).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(err?.message).toMatch(new RegExp(`^cannot reach the Telegram Bot API at ${root}: .*ECONNREFUSED`));
  expect(err?.message).not.toContain(TOKEN);
});

test('stop confirms handled updates: a restart does not see them again', async () => {
  const a = make();
  const s1 = new TestSink();
  await a.start(s1);
  await fake.sendText({ chat: dm, from: ada, text: 'one' });
  await until(() => s1.messages.length === 1, 'first message');
  await a.stop();
  const b = make();
  const s2 = new TestSink();
  await b.start(s2);
  await fake.sendText({ chat: dm, from: ada, text: 'two' });
  await until(() => s2.messages.length === 1, 'second message');
  await new Promise((r) => setTimeout(r, 50));
  expect(s2.messages.map((m) => m.text)).toEqual(['two']);
});

describe('webhook mode', () => {
  let server: Server;
  let url: string;
  let adapter: TelegramAdapter;
  let sink: TestSink;

  beforeEach(async () => {
    const routes = new Map<string, (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void>();
    server = createServer((req, res) => {
      const h = req.method === 'POST' ? routes.get(req.url ?? '') : undefined;
      if (h) h(req, res);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/telegram`;
    adapter = make({ webhook: { url, secret: 'S3cret_webhook-token' } });
    for (const r of adapter.httpRoutes()) routes.set(r.path, r.handler);
    sink = new TestSink();
    await adapter.start(sink);
    cleanup.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    });
  });

  test('setWebhook with the secret at start; the route is the URL path', () => {
    expect(adapter.httpRoutes().map((r) => [r.method, r.path])).toEqual([['POST', '/hooks/telegram']]);
    expect(fake.webhook).toEqual({ url, secret: 'S3cret_webhook-token' });
  });

  test('the right secret is delivered; a wrong secret gets 401 and changes nothing', async () => {
    const wrong = await fake.sendText({ chat: dm, from: ada, text: 'forged', secret: 'not-the-secret' });
    expect(wrong.status).toBe(401);
    const right = await fake.sendText({ chat: dm, from: ada, text: 'real' });
    expect(right.status).toBe(200);
    await until(() => sink.messages.length === 1, 'the real message');
    expect(sink.messages.map((m) => m.text)).toEqual(['real']);
  });

  test('buttons work over the webhook too', async () => {
    await fake.sendText({ chat: dm, from: ada, text: 'hi' });
    await until(() => sink.messages.length === 1, 'message');
    const handle = await adapter.postCard(adapter.decodeKey('telegram:501'), {
      kind: 'question',
      title: 'Which one?',
      body: 'Pick an environment',
      buttons: [{ token: 'q1', label: 'staging', style: 'default' }],
    });
    sink.onAction = () => ({ accepted: true, notice: 'Answered: staging' });
    const r = await fake.press(501, Number(handle), 0, ada);
    await until(() => fake.callbackAnswers.length === 1, 'the answer');
    expect(sink.actions[0]?.token).toBe('q1');
    expect(fake.callbackAnswers[0]).toEqual({ id: r.queryId, text: 'Answered: staging', showAlert: false });
  });
});
