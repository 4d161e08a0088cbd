/**
 * README "Telegram setup" step 5, for real: `gatehouse serve` (bot/main.ts from source) with the real
 * grammy client against the fake Bot API and the fake model. The admin, admitted by user id only,
 * adds the bot to a new group: the bot answers there (admitted), so no refusal names the group's id;
 * `/id` does, and the log's first line about that group does too (once). A stranger's `/id` tells
 * them only their id and their chat's, throttled like every refusal reply, and never reaches the model.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../fakes/telegram.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');

const admin: FakeUser = { id: 501, first_name: 'Ada' };
const stranger: FakeUser = { id: 666, first_name: 'Mallory' };
const group: FakeChat = { id: -1001234567890, type: 'supergroup', title: 'Ops' };
const strangerDm: FakeChat = { id: 666, type: 'private', first_name: 'Mallory' };

let dir: string;
let tg: FakeTelegram;
let model: FakeAnthropic;
let child: ChildProcessWithoutNullStreams;
let out: string;

async function until(what: string, check: () => boolean): Promise<void> {
  const end = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > end || child.exitCode !== null) throw new Error(`gave up waiting for ${what}\n--- log:\n${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const repliesIn = (chatId: number) => tg.sent.filter((m) => m.chatId === chatId).map((m) => m.plain);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-tg-ids-'));
  tg = await startFakeTelegram({ token: '123456:IDS-test_token_abcdefghijklmnopq' });
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  model.setHandler(() => ({ text: 'Hello, group.' }));
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    [
      'agents:',
      '  ops:',
      '    model: claude-sonnet-5-5',
      '    tools: [read_file]',
      '    workspace: ./ws',
      'access:',
      '  telegram: { users: ["501"] }',
      '',
    ].join('\n'),
  );
  out = '';
  child = spawn(process.execPath, ['--import', register, main, 'serve'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: model.url,
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      GATEHOUSE_HTTP_PORT: '0',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await until('the bot to connect', () => /connected as @GatehouseBot/.test(out));
});

afterEach(async () => {
  const exited = new Promise((r) => child.once('close', r));
  child.kill('SIGTERM');
  await exited;
  await tg.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test('the admitted admin in a new group: the log names the chat id once, and /id replies with it', async () => {
  await tg.sendText({ chat: group, from: admin, text: '@GatehouseBot hello' });
  await until('the answer in the group', () => repliesIn(group.id).some((t) => t.includes('Hello, group.')));
  // Admitted by user id: no refusal, so the id comes from the log line.
  const first = out.split('\n').filter((l) => l.includes('first message from a new Telegram group'));
  expect(first).toHaveLength(1);
  expect(first[0]).toContain(`chat id ${group.id}`);
  expect(first[0]).toContain('access.telegram.chats');
  expect(first[0]).toContain(`match: \\"telegram:${group.id}\\"`);

  await tg.sendText({ chat: group, from: admin, text: '/id@GatehouseBot' });
  await until('the /id reply', () => repliesIn(group.id).some((t) => t.includes("This chat's id is")));
  const reply = repliesIn(group.id).find((t) => t.includes("This chat's id is"))!;
  expect(reply).toContain(`Your Telegram user id is ${admin.id}.`);
  expect(reply).toContain(`This chat's id is ${group.id}; a route for it matches "telegram:${group.id}".`);
  // /id is answered by Gatehouse itself: one model call (the hello), not two.
  expect(model.requests).toHaveLength(1);
  // A second message from the same group is not "new" any more.
  await tg.sendText({ chat: group, from: admin, text: '@GatehouseBot again' });
  await until('the second answer', () => repliesIn(group.id).filter((t) => t.includes('Hello, group.')).length === 2);
  expect(out.split('\n').filter((l) => l.includes('first message from a new Telegram group'))).toHaveLength(1);
}, 90_000);

test("a stranger's /id gets their id and their chat's only, throttled like other refusals, and never reaches the model", async () => {
  await tg.sendText({ chat: strangerDm, from: stranger, text: '/id' });
  await until('the /id reply', () => repliesIn(strangerDm.id).length === 1);
  const [reply] = repliesIn(strangerDm.id);
  expect(reply).toBe(`Your Telegram user id is ${stranger.id}.\nThis direct chat's id is ${strangerDm.id}; its conversation key is telegram:${strangerDm.id}.`);
  // Nothing about anyone else: not the admin's id, not the group's.
  expect(reply).not.toContain(String(admin.id));
  // Asked again at once: throttled (access.refusals: once per stranger per interval), silence.
  await tg.sendText({ chat: strangerDm, from: stranger, text: '/id' });
  // A plain message gets the usual refusal (its own once-key), which shows the second /id was handled.
  await tg.sendText({ chat: strangerDm, from: stranger, text: 'let me in' });
  await until('the refusal', () => repliesIn(strangerDm.id).length === 2);
  expect(repliesIn(strangerDm.id)[1]).toContain("Gatehouse doesn't know you yet");
  // In a group nobody admitted, a stranger's /id names that group (and them).
  await tg.sendText({ chat: group, from: stranger, text: '/id@GatehouseBot' });
  await until('the group /id reply', () => repliesIn(group.id).length === 1);
  expect(repliesIn(group.id)[0]).toContain(`This chat's id is ${group.id}`);
  expect(repliesIn(group.id)[0]).toContain(`Your Telegram user id is ${stranger.id}.`);
  expect(repliesIn(strangerDm.id)).toHaveLength(2);
  expect(model.requests).toHaveLength(0);
  // Audited as strangers told (the trail shows who asked).
  expect(out.split('\n').filter((l) => l.includes('"stranger_refused"') && l.includes('"666"'))).toHaveLength(3);
}, 90_000);
