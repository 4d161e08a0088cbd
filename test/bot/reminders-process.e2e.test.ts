/**
 * Reminders and memory across a real process restart: the `gatehouse` executable (bot/main.ts from
 * source, the terminal chat, the fake model server on 127.0.0.1). A reminder is set through the
 * model's add_reminder call and a memory note through manage_memory; the process is killed (SIGKILL,
 * nothing gets to clean up); it is started again after the reminder came due. The reminder is posted
 * once, saying how late; a third start posts nothing and stops cleanly with a timer armed; the note is
 * in the system prompt the model gets.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { startFakeTelegram, type FakeChat, type FakeUser } from '../fakes/telegram.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');

const CONFIG = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [add_reminder, list_reminders, cancel_reminder, view_memory, manage_memory]
    tier: low-risk
    workspace: ./ws
    approvers: { console: [local] }
`;

const NOTE = 'The deploy window is Thursday 14:00 UTC';
// Long enough that the first process is killed before it comes due, even on a loaded machine.
const DELAY_S = 6;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function lastUserText(req: RecordedRequest): string {
  const messages = (req.body as { messages?: Array<{ role: string; content: unknown }> }).messages ?? [];
  return JSON.stringify(messages.at(-1)?.content ?? '');
}

function systemOf(req: RecordedRequest): string {
  return JSON.stringify((req.body as { system?: unknown }).system ?? '');
}

let model: FakeAnthropic;
let dir: string;

beforeAll(async () => {
  model = await startFakeAnthropic({ apiKey: 'sk-test' });
  model.setHandler((req): FakeReply => {
    const last = lastUserText(req);
    if (last.includes('tool_result')) return { text: 'done.' };
    if (last.includes('remind-later')) return { toolUses: [{ name: 'add_reminder', input: { text: 'next hour', delaySeconds: 3600 } }] };
    if (last.includes('remind-me')) return { toolUses: [{ name: 'add_reminder', input: { text: 'water the plants', delaySeconds: DELAY_S } }] };
    if (last.includes('remember-this')) return { toolUses: [{ name: 'manage_memory', input: { action: 'add', scope: 'agent', text: NOTE } }] };
    return { text: 'ok' };
  });
});
afterAll(async () => {
  await model.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-reminders-'));
  writeFileSync(join(dir, 'gatehouse.yaml'), CONFIG);
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

interface Bot {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startBot(extraEnv: Record<string, string> = {}): Bot {
  const child = spawn(process.execPath, ['--import', register, main], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: dir, ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: model.url, GATEHOUSE_HTTP_PORT: '0', ...extraEnv },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => setTimeout(() => resolve({ code, signal }), 50)),
  );
  return { child, output: () => out, exited };
}

async function until(what: string, check: () => boolean, bot: Bot, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; output so far:\n${bot.output()}`);
    await sleep(20);
  }
}

const count = (s: string, sub: string) => s.split(sub).length - 1;

test('a reminder set before a crash is posted once after the restart, saying how late; a memory note reaches the next run\'s system prompt', async () => {
  // Run 1: set the reminder and the note, then die without any cleanup.
  const first = startBot();
  await until('the terminal chat', () => first.output().includes('Gatehouse terminal chat'), first);
  first.child.stdin.write('remember-this please\n');
  // An agent-wide note crosses conversations, so it waits for the approver (here: the terminal user).
  await until('the memory card', () => first.output().includes('[1] Approve once'), first);
  first.child.stdin.write('1\n');
  await until('the note to be saved', () => count(first.output(), 'agent> done.') === 1, first);
  first.child.stdin.write('remind-me please\n');
  await until('the reminder to be set', () => count(first.output(), 'agent> done.') === 2, first);
  // After the reminder was stored: due + 3 s from here is at least 3 s past its real due time.
  const setAt = Date.now();
  first.child.kill('SIGKILL');
  expect((await first.exited).signal).toBe('SIGKILL');
  expect(first.output()).not.toContain('⏰ Reminder');

  // Down past the due time.
  const dueAt = setAt + DELAY_S * 1000;
  await sleep(Math.max(0, dueAt - Date.now()) + 3_000);

  // Run 2: the reminder is posted at start, late, once.
  const second = startBot();
  await until('the late reminder', () => second.output().includes('⏰ Reminder: water the plants'), second);
  const late = /delivered (?:(\d+) min )?(\d+) s late/.exec(second.output());
  expect(late).not.toBeNull();
  const lateSeconds = Number(late![1] ?? 0) * 60 + Number(late![2]);
  expect(lateSeconds).toBeGreaterThanOrEqual(3);
  // The next turn's system prompt carries the note saved before the crash.
  const before = model.requests.length;
  second.child.stdin.write('hello again\n');
  await until('an answer', () => second.output().includes('agent> ok'), second);
  const turn = model.requests.slice(before).find((r) => lastUserText(r).includes('hello again'));
  expect(turn).toBeDefined();
  expect(systemOf(turn!)).toContain(NOTE);
  // …as quoted data under its author (an agent-wide note is data, never an instruction).
  // (systemOf gives the system field as JSON text, so the expected line is JSON-escaped too.)
  expect(systemOf(turn!)).toContain(JSON.stringify(`a1: ${JSON.stringify(NOTE)}`).slice(1, -1));
  expect(count(second.output(), '⏰ Reminder')).toBe(1);
  second.child.kill('SIGTERM');
  expect(await second.exited).toEqual({ code: 0, signal: null });
  expect(count(second.output(), '⏰ Reminder')).toBe(1);

  // Nothing of the fired one-shot is left, the note is.
  const db = new Database(join(dir, 'data', 'gatehouse.sqlite'), { readonly: true });
  try {
    expect(db.prepare("SELECT count(*) FROM keyv WHERE key LIKE 'reminders:%'").pluck().get()).toBe(0);
    expect(String(db.prepare("SELECT value FROM keyv WHERE key = 'memory:a:default'").pluck().get())).toContain(NOTE);
  } finally {
    db.close();
  }

  // Run 3: started (the scheduler's first pass is done before "Gatehouse started"), posts nothing;
  // with a timer armed for a reminder an hour away, SIGTERM still stops it cleanly.
  const third = startBot();
  await until('the start', () => third.output().includes('Gatehouse started'), third);
  third.child.stdin.write('remind-later please\n');
  await until('the later reminder to be set', () => third.output().includes('agent> done.'), third);
  third.child.kill('SIGTERM');
  expect(await third.exited).toEqual({ code: 0, signal: null });
  expect(third.output()).not.toContain('⏰ Reminder');
}, 240_000);

// Two processes on one SQLite store are refused now (one `serve` per store: test/bot/single-instance.e2e.test.ts);
// a firing claimed once across processes is the contract suite's race (test/agent/store/races.ts).

test('Telegram: a reminder set in a forum topic is posted into that topic by the next process, once', async () => {
  const tg = await startFakeTelegram({ token: '123456:REMINDER-test_token_abcdefghijklm' });
  try {
    const owner: FakeUser = { id: 501, first_name: 'Ada' };
    const forum: FakeChat = { id: -100300, type: 'supergroup', title: 'Ops', is_forum: true };
    writeFileSync(
      join(dir, 'gatehouse.yaml'),
      CONFIG.replace('approvers: { console: [local] }', 'approvers: { telegram: ["501"] }') + 'access:\n  telegram: { users: ["501"] }\n',
    );
    const env = { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_ROOT: tg.apiRoot };
    const inTopic = () => tg.visible(forum.id).filter((m) => m.threadId === 7);
    const first = startBot(env);
    await until('the bot to connect', () => /connected as @/.test(first.output()), first);
    await tg.sendText({ chat: forum, from: owner, text: `@${tg.bot.username} remind-me please`, threadId: 7 });
    await until('the reminder to be set', () => inTopic().some((m) => m.plain.includes('done.')), first);
    const setAt = Date.now();
    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    await sleep(Math.max(0, setAt + DELAY_S * 1000 - Date.now()) + 2_000);

    const second = startBot(env);
    await until('the reminder in the topic', () => inTopic().some((m) => m.plain.startsWith('⏰ Reminder: water the plants')), second);
    await until('the start', () => second.output().includes('Gatehouse started'), second);
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    const posted = tg.sent.filter((m) => m.plain.startsWith('⏰ Reminder'));
    expect(posted).toHaveLength(1);
    expect(posted[0]).toMatchObject({ chatId: forum.id, threadId: 7 });
    expect(posted[0]!.plain).toMatch(/delivered \d+ s late/);
  } finally {
    await tg.close();
  }
}, 240_000);
