/**
 * Reminders and memory across a real process restart: the `gatehouse` executable (bot/main.ts from
 * source, the terminal chat, the fake model server on 127.0.0.1). A reminder is set through the
 * model's add_reminder call and a memory note through manage_memory; the process is killed (SIGKILL,
 * nothing gets to clean up); while it is down the reminder is made due (its stored due time moved
 * into the past through the store's repositories: no test waits for a wall clock). The next start
 * posts it once, saying how late; a third start posts nothing and stops cleanly with a timer armed; the note is
 * in the system prompt the model gets.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../bot/service/storage.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { startFakeTelegram, type FakeChat, type FakeUser } from '../fakes/telegram.js';
import { startGatehouse, waitForProcess, type TestProcess } from '../helpers/process.js';

/** The store's repositories at `path` (beside a running bot: not exclusive), read by the test. */
const openRepos = (path: string) => openStore({ kind: 'sqlite', url: `sqlite://${path}`, path }, { mustExist: true });

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
// Never due while the first process runs, however slow the machine: the test makes it due.
const DELAY_S = 3_000;
/** How far in the past the test moves the reminder's due time while no process runs. */
const LATE_MS = 4_000;

/** Moves every stored reminder's due time LATE_MS into the past (as if the bot was down that long past it). */
async function makeDue(path: string): Promise<void> {
  const repos = await openRepos(path);
  try {
    const all = await repos.reminders.all();
    expect(all.length).toBeGreaterThan(0);
    for (const r of all) await repos.reminders.put({ ...r, dueAt: Date.now() - LATE_MS, rev: r.rev + 1 });
  } finally {
    await repos.close();
  }
}

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

type Bot = TestProcess;

function startBot(extraEnv: Record<string, string> = {}): Bot {
  return startGatehouse([], { cwd: dir, env: { ANTHROPIC_BASE_URL: model.url, GATEHOUSE_HTTP_PORT: '0', ...extraEnv } });
}

const until = (what: string, check: () => boolean, bot: Bot, timeoutMs = 60_000) => waitForProcess(bot, what, check, timeoutMs);

const count = (s: string, sub: string) => s.split(sub).length - 1;

test("a reminder set before a crash is posted once after the restart, saying how late; a memory note reaches the next run's system prompt", async () => {
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
  first.child.kill('SIGKILL');
  expect((await first.exited).signal).toBe('SIGKILL');
  expect(first.output()).not.toContain('⏰ Reminder');

  // Down past the due time.
  await makeDue(join(dir, 'data', 'gatehouse.sqlite'));

  // Run 2: the reminder is posted at start, late, once.
  const second = startBot();
  await until('the late reminder', () => second.output().includes('⏰ Reminder: water the plants'), second);
  const late = /delivered (?:(\d+) min )?(\d+) s late/.exec(second.output());
  expect(late).not.toBeNull();
  const lateSeconds = Number(late![1] ?? 0) * 60 + Number(late![2]);
  expect(lateSeconds).toBeGreaterThanOrEqual(LATE_MS / 1000 - 1);
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
  const repos = await openRepos(join(dir, 'data', 'gatehouse.sqlite'));
  try {
    expect(await repos.reminders.all()).toEqual([]);
    expect(JSON.stringify(await repos.memory.list('a:default'))).toContain(JSON.stringify(NOTE).slice(1, -1));
  } finally {
    await repos.close();
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
    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    await makeDue(join(dir, 'data', 'gatehouse.sqlite'));

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
