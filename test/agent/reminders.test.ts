/**
 * Reminders (agent/memory/reminders.ts) and their tools on the real SQLite store: what is refused and why,
 * and the claim that makes a fire happen once, raced by two connections to the same file (as two
 * processes sharing the store would).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_REMINDER_SETTINGS, Reminders, formatDuration, type ReminderSettings } from '../../agent/memory/reminders.js';
import { addReminderTool, cancelReminderTool, listRemindersTool } from '../../agent/tools/builtin/reminders.js';
import { summarizeCall } from '../../agent/tools/summary.js';
import type { ToolContext } from '../../agent/tools/types.js';
import { openSqliteStore } from '../../agent/store/sqlite/index.js';
import type { Store } from '../../agent/store/types.js';

let dir: string;
let storage: Store;
let settings: ReminderSettings;
let clock: number;

const open = () => openSqliteStore({ path: join(dir, 'store.sqlite') });
const reminders = (s: Store = storage) =>
  new Reminders(
    s.reminders,
    () => settings,
    () => clock,
  );

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-reminders-'));
  storage = await open();
  settings = { ...DEFAULT_REMINDER_SETTINGS };
  clock = Date.parse('2026-12-01T08:00:00Z');
});
afterEach(async () => {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

function ctx(conversationKey = 'telegram:1'): ToolContext {
  return {
    workspace: dir,
    signal: new AbortController().signal,
    conversationKey,
    agentName: 'ops',
    envAllowlist: [],
    state: { get: () => undefined, set: () => undefined },
  };
}

test('add_reminder at an ISO time or after a delay; list and cancel only within the conversation', async () => {
  const r = reminders();
  const add = addReminderTool(r, () => clock);
  const list = listRemindersTool(r, () => clock);
  const cancel = cancelReminderTool(r);
  const card = await add.propose!({ text: 'standup', at: '2026-12-01T10:30:00+01:00' }, ctx());
  expect(card.summary).toBe('add_reminder at 2026-12-01T09:30:00.000Z (in 1 h 30 min): standup');
  const set = await add.execute({ text: 'standup', at: '2026-12-01T10:30:00+01:00' }, ctx(), {});
  expect(set.content).toMatch(/^Reminder set\. [0-9a-f]{10}: 2026-12-01T09:30:00\.000Z \(in 1 h 30 min\): standup$/);
  await add.execute({ text: 'tea', delaySeconds: 600, repeatEverySeconds: 86_400 }, ctx(), {});
  const shown = String((await list.execute({}, ctx(), {})).content).split('\n');
  expect(shown).toHaveLength(2);
  expect(shown[0]).toMatch(/2026-12-01T08:10:00\.000Z \(in 10 min, then every 1 d\): tea$/);
  expect((await list.execute({}, ctx('telegram:2'), {})).content).toBe('No reminders in this conversation.');
  const id = /^([0-9a-f]+):/.exec(shown[1]!)![1]!;
  // Another conversation cannot cancel it; this one can, once.
  await expect(cancel.execute({ id }, ctx('telegram:2'), {})).rejects.toThrow(/No reminder .* in this conversation/);
  expect((await cancel.execute({ id }, ctx(), {})).content).toBe(`Cancelled reminder ${id}: standup`);
  await expect(cancel.execute({ id }, ctx(), {})).rejects.toThrow(/No reminder/);
  expect(await r.list('telegram:1')).toHaveLength(1);
  expect([add.tier, list.tier, cancel.tier]).toEqual(['low-risk', 'read-only', 'low-risk']);
});

test('refused: a time without a zone, both or neither of at/delaySeconds, the past, too far ahead, too frequent, too many', async () => {
  settings = { ...settings, maxPerConversation: 2, minRepeatIntervalMs: 10 * 60_000 };
  const add = addReminderTool(reminders(), () => clock);
  const c = ctx();
  await expect(add.execute({ text: 'x', at: '2026-12-01T10:00:00' }, c, {})).rejects.toThrow(/with a zone/);
  await expect(add.execute({ text: 'x', at: '2026-12-01T10:00:00Z', delaySeconds: 5 }, c, {})).rejects.toThrow(/exactly one of at/);
  await expect(add.execute({ text: 'x' }, c, {})).rejects.toThrow(/exactly one of at/);
  await expect(add.execute({ text: 'x', at: '2026-11-30T10:00:00Z' }, c, {})).rejects.toThrow(/in the past/);
  await expect(add.execute({ text: 'x', at: '2028-12-01T10:00:00Z' }, c, {})).rejects.toThrow(/more than a year ahead/);
  await expect(add.execute({ text: 'x', delaySeconds: 60, repeatEverySeconds: 60 }, c, {})).rejects.toThrow(
    /every 1 min is too often: the shortest repeat here is 10 min \(agents\.ops\.reminders\.minRepeatIntervalMs\)/,
  );
  await add.execute({ text: 'one', delaySeconds: 60 }, c, {});
  await add.execute({ text: 'two', delaySeconds: 60 }, c, {});
  await expect(add.execute({ text: 'three', delaySeconds: 60 }, c, {})).rejects.toThrow(/already has 2 reminders.*agents\.ops\.reminders\.maxPerConversation/);
  // The cap is per conversation.
  await add.execute({ text: 'elsewhere', delaySeconds: 60 }, ctx('telegram:2'), {});
  expect((await reminders().all()).map((r) => r.text).sort()).toEqual(['elsewhere', 'one', 'two']);
});

test('two connections to the store race to claim each due reminder: exactly one wins every time', async () => {
  const other = await open();
  try {
    const a = reminders(storage);
    const b = reminders(other);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await a.add({ agentName: 'ops', conversationKey: `telegram:${i}`, text: `r${i}`, dueAt: clock + 1_000 })).id);
    clock += 5_000;
    // Both read every reminder first (same revision), then both claim.
    const [seenA, seenB] = await Promise.all([a.all(), b.all()]);
    const claims = await Promise.all([...seenA.map((r) => a.claim(r)), ...seenB.map((r) => b.claim(r))]);
    const won = claims.filter((c) => c !== undefined).map((c) => c!.reminder.id);
    expect(won.sort()).toEqual([...ids].sort());
    expect(claims.find((c) => c !== undefined)!.lateMs).toBe(4_000);
  } finally {
    await other.close();
  }
});

test('a repeating reminder moves to its next occurrence after now; occurrences missed while down fire once', async () => {
  const r = reminders();
  const created = await r.add({ agentName: 'ops', conversationKey: 'telegram:1', text: 'hourly', dueAt: clock + 3_600_000, repeatMs: 3_600_000 });
  clock += 3 * 3_600_000 + 60_000; // down through three occurrences
  const fire = await r.claim((await r.get(created.id))!);
  expect(fire).toMatchObject({ dueAt: created.dueAt, lateMs: 2 * 3_600_000 + 60_000, nextDueAt: created.dueAt + 3 * 3_600_000 });
  // The stale revision cannot claim again.
  expect(await r.claim(created)).toBeUndefined();
  expect(await r.claim((await r.get(created.id))!)).toBeUndefined(); // not due yet
  await r.finish(fire!);
  expect((await r.get(created.id))?.dueAt).toBe(created.dueAt + 3 * 3_600_000);
});

test('a one-shot is marked when claimed and gone after delivery; a cancelled one cannot be claimed', async () => {
  const r = reminders();
  const once = await r.add({ agentName: 'ops', conversationKey: 'telegram:1', text: 'once', dueAt: clock + 1_000 });
  const cancelled = await r.add({ agentName: 'ops', conversationKey: 'telegram:1', text: 'never', dueAt: clock + 1_000 });
  await r.cancel('telegram:1', cancelled.id);
  clock += 2_000;
  expect(await r.claim(cancelled)).toBeUndefined();
  const fire = await r.claim(once);
  expect(fire).toBeDefined();
  expect((await r.get(once.id))?.firedAt).toBe(clock);
  expect(await r.list('telegram:1')).toEqual([]);
  await r.finish(fire!);
  expect(await r.get(once.id)).toBeUndefined();
});

test('durations read as people say them', () => {
  expect(formatDuration(400)).toBe('400 ms');
  expect(formatDuration(45_000)).toBe('45 s');
  expect(formatDuration(3_660_000)).toBe('1 h 1 min');
  expect(formatDuration(7_200_000)).toBe('2 h');
  expect(formatDuration(90_061_000)).toBe('1 d 1 h');
});

test('a status line shows duration arguments as people say them', () => {
  expect(summarizeCall('add_reminder', { text: 'tea', delaySeconds: 5400, repeatEverySeconds: 30 })).toBe(
    'add_reminder text: tea, delaySeconds: 5400 (1 h 30 min), repeatEverySeconds: 30',
  );
  expect(summarizeCall('execute_command', { command: 'make', timeoutMs: 120_000 })).toBe('execute_command command: make, timeoutMs: 120000 (2 min)');
});
