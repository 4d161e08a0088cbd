/**
 * Issue 24, the card path on a chat surface: through the real start path (bot/cli/index.ts startBot), real
 * grammy against the fake Bot API, the real Anthropic SDK against the fake model, execute_command in
 * bwrap. A command's connection to a host not on sandboxNetwork.allow is held on a Telegram card; the
 * approver's tap on "Approve once" lets it through, and the audit file has the connection.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot, type RunningBot } from '../../../bot/cli/index.js';
import { TOKEN as TG_TOKEN } from '../../adapters/telegram/helpers.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../../fakes/anthropic.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../../fakes/telegram.js';
import { testStoreUrl } from '../../helpers/harness.js';
import { type CountingServer, lastToolResult, startCountingServer } from './helpers.js';

let model: FakeAnthropic;
let tg: FakeTelegram;
let bot: RunningBot | undefined;
let dir: string;
let srv: CountingServer;
let port: number;
let hits: string[];
const queue: Array<FakeReply | ((r: RecordedRequest) => FakeReply)> = [];
const ada: FakeUser = { id: 501, first_name: 'Ada' };
const group: FakeChat = { id: -100300, type: 'supergroup', title: 'Ops' };

function auditRecords(): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const f of readdirSync(join(dir, 'audit')).filter((n) => n.endsWith('.jsonl'))) {
    for (const l of readFileSync(join(dir, 'audit', f), 'utf8').split('\n')) if (l) out.push((JSON.parse(l) as { event: Record<string, unknown> }).event);
  }
  return out;
}

beforeAll(async () => {
  srv = await startCountingServer(() => 'hello-telegram');
  ({ port, hits } = srv);
});
afterAll(() => srv.close());
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-egress-tg-'));
  // The sandbox user (tests run as root) must pass through to the workspace.
  chmodSync(dir, 0o711);
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  model.setHandler((req) => {
    const next = queue.shift();
    if (!next) return { text: '(no scripted reply)' };
    return typeof next === 'function' ? next(req) : next;
  });
  tg = await startFakeTelegram({ token: TG_TOKEN });
});
afterEach(async () => {
  await bot?.stop();
  bot = undefined;
  await tg.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test('Telegram: the held connection is a card; the approver taps Approve once and the command gets the response', async () => {
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [execute_command]
    tier: read-only
    autoApprovedCommands: ["curl"]
    workspace: "${join(dir, 'ws')}"
    approvers: { telegram: ["501"] }
    sandboxNetwork: { allow: ["127.0.0.1:1"] }
access:
  telegram: { users: ["501"], chats: ["-100300"] }
`,
  );
  const out = new PassThrough();
  bot = await startBot(
    {
      env: {
        ANTHROPIC_API_KEY: 'test-key',
        ANTHROPIC_BASE_URL: model.url,
        GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'),
        GATEHOUSE_STORE: await testStoreUrl('sqlite', dir),
        GATEHOUSE_HTTP_PORT: '0',
        TELEGRAM_BOT_TOKEN: TG_TOKEN,
        TELEGRAM_API_ROOT: tg.apiRoot,
      },
      cwd: dir,
      stdout: out,
      stderr: out,
    },
    () => undefined,
  );
  let result = '';
  queue.push({ toolUses: [{ name: 'execute_command', input: { command: `curl -sS http://127.0.0.1:${port}/tg` } }] }, (req) => {
    result = lastToolResult(req);
    return { text: 'Fetched it.' };
  });
  await tg.sendText({ chat: group, from: ada, text: `@${tg.bot.username} fetch it` });
  const card = () => tg.visible(group.id).find((m) => m.replyMarkup !== undefined && m.plain.includes(`wants 127.0.0.1:${port}`));
  await tg.waitFor(() => card() !== undefined, 20_000, 'egress card');
  const c = card()!;
  expect(c.replyMarkup!.inline_keyboard.flat().map((b) => b.text)).toEqual(['Approve once', 'Always for this host', 'Deny']);
  expect(hits).toEqual([]);
  await tg.press(group.id, c.messageId, 0, ada);
  await tg.waitFor(() => tg.visible(group.id).some((m) => m.plain === 'Fetched it.'), 20_000, 'answer');
  expect(result).toContain('hello-telegram');
  expect(hits).toEqual(['/tg']);
  await tg.waitFor(() => /Approved once by Ada/.test(c.plain), 10_000, 'decided card');
  await tg.waitFor(() => auditRecords().some((e) => e['event'] === 'egress_connection'), 10_000, 'audit record');
  expect(auditRecords()).toContainEqual(
    expect.objectContaining({
      event: 'egress_connection',
      port,
      decision: 'allowed',
      conversation: expect.stringMatching(/^telegram:/),
      requestId: expect.any(String),
    }),
  );
}, 90_000);
