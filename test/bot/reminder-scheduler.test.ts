/**
 * The reminder scheduler (bot/service/reminder-scheduler.ts) on the real SQLite store: two schedulers on two
 * connections (as two processes) post each reminder once; one timer aimed at the next reminder, none
 * when nothing is stored; a clock set forward fires what became due; stop() leaves nothing running;
 * a reminder for a platform not enabled is kept, not lost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_REMINDER_SETTINGS, Reminders, type Reminder } from '../../agent/memory/reminders.js';
import { ReminderScheduler, type ReminderSchedulerOptions } from '../../bot/service/reminder-scheduler.js';
import { openSqliteStore } from '../../agent/store/sqlite/index.js';
import type { Store } from '../../agent/store/types.js';
import { waitFor } from '../helpers/harness.js';

let dir: string;
let storage: Store;
let clock: number;
const schedulers: ReminderScheduler[] = [];
const extra: Store[] = [];

const open = () => openSqliteStore({ path: join(dir, 'store.sqlite') });
const settings = { ...DEFAULT_REMINDER_SETTINGS, minRepeatIntervalMs: 1_000 };
const remindersOn = (s: Store) =>
  new Reminders(
    s.reminders,
    () => settings,
    () => clock,
  );

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-scheduler-'));
  storage = await open();
  clock = Date.parse('2026-12-01T08:00:00Z');
});
afterEach(async () => {
  for (const s of schedulers.splice(0)) await s.stop();
  for (const s of extra.splice(0)) await s.close();
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

function scheduler(reminders: Reminders, over: Partial<ReminderSchedulerOptions> = {}) {
  const posts: Array<{ key: string; text: string }> = [];
  const logs: string[] = [];
  const s = new ReminderScheduler({
    reminders,
    post: async (key, text) => void posts.push({ key, text }),
    reachable: (key) => key.startsWith('console:'),
    runAsTurn: () => false,
    log: (_level, msg) => void logs.push(msg),
    now: () => clock,
    ...over,
  });
  schedulers.push(s);
  return { s, posts, logs };
}

test('two schedulers on two store connections post each due reminder exactly once', async () => {
  const other = await open();
  extra.push(other);
  const a = remindersOn(storage);
  for (let i = 0; i < 60; i++) await a.add({ agentName: 'ops', conversationKey: `console:c${i % 3}`, text: `reminder ${i}`, dueAt: clock + 1_000 });
  clock += 10_000;
  const one = scheduler(a);
  const two = scheduler(remindersOn(other));
  await Promise.all([one.s.start(), two.s.start()]);
  const texts = [...one.posts, ...two.posts].map((p) => /Reminder: (reminder \d+)/.exec(p.text)![1]);
  expect(texts).toHaveLength(60);
  expect(new Set(texts).size).toBe(60);
  expect(await a.all()).toEqual([]);
});

test('one timer aimed at the soonest reminder, at most maxWaitMs; none when nothing is stored; re-armed on add', async () => {
  const r = remindersOn(storage);
  const { s } = scheduler(r, { maxWaitMs: 60_000 });
  await s.start();
  expect(s.nextWakeAt).toBeUndefined();
  await r.add({ agentName: 'ops', conversationKey: 'console:main', text: 'later', dueAt: clock + 20_000 });
  await waitFor('the timer to be armed', () => s.nextWakeAt !== undefined);
  expect(s.nextWakeAt).toBe(clock + 20_000);
  await r.add({ agentName: 'ops', conversationKey: 'console:main', text: 'much later', dueAt: clock + 3_600_000 });
  await r.add({ agentName: 'ops', conversationKey: 'console:main', text: 'sooner', dueAt: clock + 5_000 });
  await waitFor('the timer to move to the sooner one', () => s.nextWakeAt === clock + 5_000);
});

test('a clock set forward fires what became due, saying how late; repeats fire again at their next time', async () => {
  const r = remindersOn(storage);
  const { s, posts } = scheduler(r, { maxWaitMs: 20 });
  await r.add({ agentName: 'ops', conversationKey: 'console:main', text: 'stretch', dueAt: clock + 3_600_000, repeatMs: 3_600_000 });
  await s.start();
  expect(posts).toEqual([]);
  clock += 2 * 3_600_000 + 5 * 60_000; // the wall clock jumps: the monotonic timer alone would never see it
  await waitFor('the reminder', () => posts.length === 1);
  expect(posts[0]!.text).toMatch(
    /^⏰ Reminder: stretch\n\(due 2026-12-01T09:00:00\.000Z, delivered 1 h 5 min late; repeats every 1 h, next 2026-12-01T11:00:00\.000Z; id [0-9a-f]+\)$/,
  );
  clock += 3_600_000;
  await waitFor('the next occurrence', () => posts.length === 2);
  expect(posts[1]!.text).toContain('due 2026-12-01T11:00:00.000Z, delivered 5 min late');
  expect(posts.map((p) => p.key)).toEqual(['console:main', 'console:main']);
});

test('on time, no lateness is claimed; runAsTurn hands the agent the reminder with its lateness', async () => {
  const r = remindersOn(storage);
  const turns: Array<{ r: Reminder; text: string }> = [];
  const { s, posts } = scheduler(r, { maxWaitMs: 20, runAsTurn: (a) => a === 'ops', runTurn: async (rem, text) => void turns.push({ r: rem, text }) });
  await s.start();
  await r.add({ agentName: 'ops', conversationKey: 'console:main', text: 'check the build', dueAt: clock + 1_000 });
  await r.add({ agentName: 'other', conversationKey: 'console:main', text: 'post only', dueAt: clock + 1_000 });
  clock += 1_000;
  await waitFor('both reminders', () => posts.length === 2);
  expect(posts[0]!.text).not.toContain('late');
  expect(turns).toHaveLength(1);
  expect(turns[0]!.text).toMatch(/^\[Reminder [0-9a-f]+, set in this conversation on .*, due .*\.\] check the build$/);
});

test('stop() clears the timer; nothing fires after it, and a reminder added later is left for the next start', async () => {
  const r = remindersOn(storage);
  const { s, posts } = scheduler(r, { maxWaitMs: 20 });
  await r.add({ agentName: 'ops', conversationKey: 'console:main', text: 'soon', dueAt: clock + 60_000 });
  await s.start();
  expect(s.nextWakeAt).toBeDefined();
  await s.stop();
  expect(s.nextWakeAt).toBeUndefined();
  clock += 120_000;
  await r.add({ agentName: 'ops', conversationKey: 'console:main', text: 'added after stop', dueAt: clock });
  await new Promise((res) => setTimeout(res, 200));
  expect(posts).toEqual([]);
  expect((await r.all()).map((x) => x.text).sort()).toEqual(['added after stop', 'soon']);
  // The next start posts both.
  const next = scheduler(r, { maxWaitMs: 20 });
  await next.s.start();
  expect(next.posts).toHaveLength(2);
});

test('a reminder for a platform that is not enabled is kept and logged once, not fired or dropped', async () => {
  const r = remindersOn(storage);
  await r.add({ agentName: 'ops', conversationKey: 'telegram:42', text: 'for telegram', dueAt: clock + 1_000 });
  clock += 5_000;
  const { s, posts, logs } = scheduler(r, { maxWaitMs: 20 });
  await s.start();
  s.poke();
  await new Promise((res) => setTimeout(res, 100));
  expect(posts).toEqual([]);
  expect(logs.filter((l) => l.includes('not enabled'))).toHaveLength(1);
  expect((await r.all()).map((x) => x.text)).toEqual(['for telegram']);
  expect(s.nextWakeAt).toBeUndefined();
});
