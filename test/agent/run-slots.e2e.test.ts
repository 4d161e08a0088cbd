/**
 * Run slots (agent/run/limits.ts) through the real start path (router, runner, SQLite store, the real
 * Anthropic SDK against the fake model): one admitted user who fills eight places with runs that
 * block (a tool that waits until the test releases it) cannot take every global slot, so another
 * user's DM still starts a run. Nothing waits on the clock: runs are observed by their events, queued
 * turns by the runner's "waiting for a run slot" log line. The control sets every cap to unlimited:
 * the same attack then makes the DM wait, so the test can fail.
 */
import { z } from 'zod';
import type { Tool } from '../../agent/tools/types.js';
import { Slots, placeOf } from '../../agent/run/limits.js';
import type { RecordedRequest } from '../fakes/anthropic.js';
import { Harness, agentYaml, waitFor } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  releaseAll();
  await h?.close();
  h = undefined;
});

/** Bounded polls with room for a loaded 2-core CI box: eight runs start and finish at once here. */
const waitLong = <T>(what: string, check: () => T | undefined | false | null) => waitFor(what, check, 45_000);

/** Conversation key -> release function of the `hold` call running there. */
// Each harness gets its own map: a run of an earlier test's harness that starts while it shuts down
// must not overwrite this test's entries (its release would then free nothing here).
let held = new Map<string, () => void>();
function releaseAll(): void {
  for (const r of held.values()) r();
  held.clear();
}

/** Read-only, so it runs without a card; returns only when the test releases its conversation. */
function holdTool(into: Map<string, () => void>): Tool<Record<string, never>> {
  return {
    name: 'hold',
    description: 'Holds the run until released (test tool).',
    input: z.strictObject({}),
    tier: 'read-only',
    async execute(_input, ctx) {
      await new Promise<void>((resolve) => {
        into.set(ctx.conversationKey, resolve);
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return { content: 'released' };
    },
  };
}

/** Every run: first a `hold` call, then (with its result) the answer. */
function holdThenAnswer(req: RecordedRequest) {
  const last = JSON.stringify((req.body as { messages: Array<{ content: unknown }> }).messages.at(-1)?.content ?? '');
  return last.includes('tool_result') ? { text: 'done' } : { toolUses: [{ name: 'hold', input: {} }] };
}

async function start(runner = ''): Promise<{ h: Harness; waits: string[] }> {
  const waits: string[] = [];
  const harness = await Harness.start({
    yaml:
      agentYaml('tools: [hold]', 'tier: read-only', 'approvers: { console: [local] }') +
      `access:\n  rateLimit: { messages: 1000, perSeconds: 60 }\n${runner ? `runner: { ${runner} }\n` : ''}`,
    extraTools: [holdTool((held = new Map()))],
    log: (_level, msg) => {
      const m = /^\[([^\]]+)\] waiting for a run slot/.exec(msg);
      if (m) waits.push(m[1]!);
    },
  });
  harness.fake.setHandler(holdThenAnswer);
  return { h: harness, waits };
}

const started = (harness: Harness, key: string) => harness.adapter.eventsOf(key, 'run_started').length > 0;
const PLACES = Array.from({ length: 8 }, (_, i) => `topic${i}`);

async function aliceFillsEightPlaces(harness: Harness): Promise<void> {
  for (const p of PLACES) expect((await harness.adapter.send('sleep 120', { conversation: p, user: 'alice' })).accepted).toBe(true);
}

test('defaults: one user in eight places holds two slots; the others queue (not refused) and another user\u2019s DM starts a run', async () => {
  const s = await start();
  h = s.h;
  await aliceFillsEightPlaces(h);
  await waitLong('two of alice\u2019s runs holding', () => held.size === 2);
  await waitLong('six of alice\u2019s turns queued', () => s.waits.length === 6);
  expect(PLACES.filter((p) => started(h!, `console:${p}`))).toHaveLength(2);

  await h.adapter.send('are you there?', { conversation: 'admin-dm', user: 'local' });
  await waitLong('the DM\u2019s run started', () => started(h!, 'console:admin-dm') && held.has('console:admin-dm'));
  expect(s.waits).not.toContain('console:admin-dm');
  held.get('console:admin-dm')!();
  await waitLong('the DM answered', () => h!.adapter.answers('console:admin-dm')[0]);
  expect(h.adapter.answers('console:admin-dm')).toEqual(['done']);

  // Queued, not dropped: released one by one, every one of alice's turns runs and answers.
  while (PLACES.some((p) => h!.adapter.answers(`console:${p}`).length === 0)) {
    await waitLong('a held run', () => held.size > 0);
    const [key, release] = [...held][0]!;
    held.delete(key);
    release();
    await waitLong(`${key} answered`, () => h!.adapter.answers(key)[0]);
  }
  for (const p of PLACES) expect(h.adapter.answers(`console:${p}`)).toEqual(['done']);
}, 180_000);

test('the reserved slot alone: with no per-user or per-place cap, the user gets seven slots and the eighth is kept for someone else', async () => {
  const s = await start('maxRunsPerUser: unlimited, maxRunsPerPlace: unlimited');
  h = s.h;
  await aliceFillsEightPlaces(h);
  await waitLong('seven of alice\u2019s runs holding', () => held.size === 7);
  await waitLong('one queued', () => s.waits.length === 1);
  await h.adapter.send('hello', { conversation: 'admin-dm', user: 'local' });
  await waitLong('the DM\u2019s run started', () => held.has('console:admin-dm'));
  expect(started(h, 'console:admin-dm')).toBe(true);
}, 180_000);

test('control: with every cap unlimited and no reserve, the same attack takes all eight slots and the DM waits', async () => {
  const s = await start('maxRunsPerUser: unlimited, maxRunsPerPlace: unlimited, reservedRuns: 0');
  h = s.h;
  await aliceFillsEightPlaces(h);
  await waitLong('all eight of alice\u2019s runs holding', () => held.size === 8);
  await h.adapter.send('hello', { conversation: 'admin-dm', user: 'local' });
  await waitLong('the DM queued', () => s.waits.includes('console:admin-dm'));
  expect(started(h, 'console:admin-dm')).toBe(false);
  // Its turn comes once a slot is free.
  const [key, release] = [...held][0]!;
  held.delete(key);
  release();
  await waitLong('the DM\u2019s run started', () => held.has('console:admin-dm'));
}, 180_000);

describe('Slots (unit)', () => {
  const claim = (user: string, place: string) => ({ user, place });

  test('a place is the chat or channel: topics and threads of one group count together', () => {
    expect(placeOf('telegram:-1001234:17')).toBe('telegram:-1001234');
    expect(placeOf('telegram:42')).toBe('telegram:42');
    expect(placeOf('slack:T1:C1:1700000000.000100')).toBe('slack:T1:C1');
    expect(placeOf('slack:T1:D1')).toBe('slack:T1:D1');
    expect(placeOf('discord:9:8:7')).toBe('discord:9:8');
    expect(placeOf('discord:dm:8')).toBe('discord:dm:8');
    expect(placeOf('console:main')).toBe('console:main');
  });

  test('per-place cap: many users in one forum\u2019s topics share its cap; a waiter held by its cap does not hold back others', async () => {
    const slots = new Slots({ total: 8, perUser: 2, perPlace: 3, reserved: 1 });
    const forum = (u: string) => claim(u, placeOf(`telegram:-100:${u}`));
    const order: string[] = [];
    const take = (name: string, c: { user: string; place: string }) => slots.acquire(c).then(() => order.push(name));
    await Promise.all([take('a1', forum('a')), take('b1', forum('b')), take('c1', forum('c'))]);
    void take('d1', forum('d')); // the forum is full: waits
    await take('e-dm', claim('telegram:e', 'telegram:e')); // another place: passes the waiter
    expect(order).toEqual(['a1', 'b1', 'c1', 'e-dm']);
    expect(slots.queued).toBe(1);
    slots.release(forum('a'));
    await Promise.resolve();
    expect(order.at(-1)).toBe('d1');
    expect(slots.held({ place: 'telegram:-100' })).toBe(3);
  });

  test('per-user cap across places, and the reserve keeps the last slot for users running nothing', async () => {
    const slots = new Slots({ total: 3, perUser: Infinity, perPlace: Infinity, reserved: 1 });
    await slots.acquire(claim('a', 'p1'));
    await slots.acquire(claim('a', 'p2'));
    let third = false;
    void slots.acquire(claim('a', 'p3')).then(() => (third = true));
    await slots.acquire(claim('b', 'dm')); // the kept slot
    await Promise.resolve();
    expect(third).toBe(false);
    expect(slots.held()).toBe(3);
    slots.release(claim('b', 'dm'));
    // Free again, but it is the last one and "a" holds two: still kept.
    await Promise.resolve();
    expect(third).toBe(false);
    slots.release(claim('a', 'p1'));
    await Promise.resolve();
    expect(third).toBe(true);
  });

  test('the reserve never keeps every slot', async () => {
    const slots = new Slots({ total: 1, perUser: Infinity, perPlace: Infinity, reserved: 5 });
    await slots.acquire(claim('a', 'p'));
    slots.release(claim('a', 'p'));
    await slots.acquire(claim('a', 'p'));
    expect(slots.held({ user: 'a' })).toBe(1);
  });
});
