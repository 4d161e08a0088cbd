/**
 * Cross-replica truths over real processes (test/helpers/replica-child.ts: the real store, bus,
 * broker, allowlists and reminder scheduler, wired as bot/service/app.ts wires them):
 * - PostgreSQL: a decision made in process B wakes the wait in process A at once: A's bus has no
 *   safety re-read and nothing polls, so only the signal (LISTEN/NOTIFY) can wake it.
 * - PostgreSQL: an "Always" grant made in B is in A's allowlist copy, and A's watchers re-check,
 *   without a restart.
 * - Both engines: many reminders due at once over three processes fire exactly once each.
 * - PostgreSQL: a reminder set in A, which is then SIGKILLed, is fired by B on time: B's scheduler
 *   waits 10 minutes between reads, so only the `reminders` signal can have told it.
 * - PostgreSQL: approval and question expiry over three processes: each request's card is updated
 *   once, by one process, every waiter wakes with the stored outcome; and a request whose waiting
 *   process was SIGKILLed still expires on time through the others' expiry watch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApprovalStore, type Decision } from '../../agent/approvals/index.js';
import { Reminders } from '../../agent/memory/reminders.js';
import type { Store } from '../../agent/store/types.js';
import { storeFromEnv } from '../../bot/config/env.js';
import { openStore } from '../../bot/service/storage.js';
import { ENGINES, testStoreUrl } from '../helpers/harness.js';
import { startReplica, type Replica } from '../helpers/replica-process.js';
import { waitFor } from '../helpers/wait.js';

let dir: string;
const replicas: Replica[] = [];
const stores: Store[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-replicas-'));
});
afterEach(async () => {
  await Promise.all(replicas.splice(0).map((r) => r.stop().catch(() => undefined)));
  for (const s of stores.splice(0)) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

async function shared(engine: 'sqlite' | 'postgres', n: number, env: Record<string, string> = {}): Promise<{ url: string; store: Store; rs: Replica[] }> {
  const url = await testStoreUrl(engine, dir);
  const store = await openStore(storeFromEnv({ GATEHOUSE_STORE: url }, dir).store, { log: () => undefined });
  stores.push(store);
  const rs = Array.from({ length: n }, () => startReplica(url, env));
  replicas.push(...rs);
  for (const r of rs) await r.next('ready');
  return { url, store, rs };
}

const asked = (line: string) => {
  const [id, ...tokens] = line.split(' ');
  return { id: id!, tokens };
};

describe('on postgres', () => {
  test('a decision made in process B wakes the wait in process A (no poll, no re-read: the signal)', async () => {
    const { rs } = await shared('postgres', 2);
    const [a, b] = rs as [Replica, Replica];
    const wakeMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      a.send(`ask telegram:${i} 600000 approval`);
      const { id, tokens } = asked(await a.next('asked'));
      a.send(`wait ${id}`);
      b.send(`click ${tokens[i % 2]} telegram:${i} bob`);
      expect(JSON.parse(await b.next('click'))).toMatchObject({ accepted: true });
      const clicked = Date.now();
      const [wid, ...json] = (await a.next('woke')).split(' ');
      wakeMs.push(Date.now() - clicked);
      expect(wid).toBe(id);
      expect(JSON.parse(json.join(' ')) as Decision).toMatchObject({ outcome: i % 2 === 0 ? 'approved' : 'denied', by: 'bob' });
    }
    // Reported, not asserted: from B's click result to A's wake-up line, as this test sees them.
    console.log(`wake-up in A after B's click answered: ${wakeMs.join(', ')} ms`);
  }, 90_000);

  test("a reminder set in A, which then dies, is fired by B: the signal told B's scheduler", async () => {
    const { rs } = await shared('postgres', 2, { REPLICA_MAX_WAIT_MS: '600000' });
    const [a, b] = rs as [Replica, Replica];
    for (const r of rs) r.send('reminders');
    for (const r of rs) await r.next('scheduling');
    a.send('remind telegram:9 1500 water the plants');
    await a.next('reminded');
    a.child.kill('SIGKILL');
    await a.exited;
    expect(await b.next('fired')).toMatch(/^telegram:9 ⏰ Reminder: water the plants/);
  }, 60_000);

  test('an "Always" grant made in B is in A\'s allowlist without a restart, and A\'s watchers re-check', async () => {
    const { rs } = await shared('postgres', 2);
    const [a, b] = rs as [Replica, Replica];
    a.send('watch default');
    await a.next('watching-allowlist');
    a.send('commands default');
    expect(await a.next('commands')).toBe('[]');
    b.send('allow default git status');
    await b.next('allowed');
    expect(await a.next('watcher')).toBe('default');
    a.send('commands default');
    expect(JSON.parse(await a.next('commands'))).toEqual(['git status']);
  }, 60_000);
});

describe.each(ENGINES)('on %s', (engine) => {
  test('150 reminders due at once, and 30 coming due, over three processes: each fires exactly once', async () => {
    const { store, rs } = await shared(engine, 3);
    const reminders = new Reminders(store.reminders);
    const texts: string[] = [];
    for (let i = 0; i < 150; i++) {
      texts.push(`now-${i}`);
      await reminders.add({ agentName: 'default', conversationKey: `telegram:${i}`, text: `now-${i}`, dueAt: Date.now() });
    }
    for (const r of rs) r.send('reminders');
    // Stored while the schedulers run: each reads the store again within its 200 ms wait.
    for (let i = 0; i < 30; i++) {
      texts.push(`soon-${i}`);
      await reminders.add({ agentName: 'default', conversationKey: `telegram:s${i}`, text: `soon-${i}`, dueAt: Date.now() + 300 + i * 20 });
    }
    const fired = () => rs.flatMap((r) => r.all('fired').map((l) => /⏰ Reminder: (\S+)/.exec(l)?.[1] ?? l));
    // Whichever process prints the last one resolves it.
    await Promise.race(rs.map((r) => r.until('fired', () => fired().length >= texts.length)));
    await Promise.all(rs.map((r) => r.stop()));
    expect(fired().sort()).toEqual([...texts].sort());
    expect(await reminders.all()).toEqual([]);
    console.log(`reminders fired per process (${engine}): ${rs.map((r) => r.all('fired').length).join(', ')}`);
  }, 120_000);
});

describe('expiry on postgres', () => {
  test('approvals and questions expiring over three processes that all wait: one card update each, every waiter woken with the stored outcome', async () => {
    const { store, rs } = await shared('postgres', 3);
    for (const r of rs) r.send('expiry');
    for (const r of rs) await r.next('watching');
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const asker = rs[i % 3]!;
      asker.send(`ask telegram:${i} ${1500 + i * 100} ${i % 2 ? 'question' : 'approval'}`);
      ids.push(asked(await asker.next('asked')).id);
    }
    for (const r of rs) for (const id of ids) r.send(`wait ${id}`);
    await Promise.all(rs.map((r) => r.until('woke', (l) => l.length === ids.length)));
    const decisions = new ApprovalStore(store.approvals);
    for (const [i, id] of ids.entries()) {
      const stored = (await decisions.get(id))?.decision;
      expect(stored?.outcome).toBe(i % 2 ? 'unanswered' : 'expired');
      for (const r of rs) {
        const line = r.all('woke').find((l) => l.startsWith(`${id} `))!;
        expect(JSON.parse(line.slice(id.length + 1))).toEqual(stored);
      }
    }
    await Promise.all(rs.map((r) => r.stop()));
    const updates = rs.flatMap((r) => r.all('updated')).map((l) => l.split(' ')[0]);
    expect(updates.sort()).toEqual([...ids].sort());
  }, 120_000);

  test('the waiting process is SIGKILLed: the others still expire its requests on time, once each', async () => {
    const { store, rs } = await shared('postgres', 3);
    const [a, b, c] = rs as [Replica, Replica, Replica];
    for (const r of rs) r.send('expiry');
    for (const r of rs) await r.next('watching');
    const ids: string[] = [];
    // Due 5 s after the ask: A is killed before (six asks to a local process), so the others must
    // expire them. Should a loaded machine let one come due in A first, the test says so below
    // instead of waiting for an update that B and C will never make.
    for (let i = 0; i < 6; i++) {
      a.send(`ask telegram:${i} ${5000 + i * 50} ${i % 2 ? 'question' : 'approval'}`);
      ids.push(asked(await a.next('asked')).id);
      a.send(`wait ${ids.at(-1)}`);
    }
    a.child.kill('SIGKILL');
    await a.exited;
    const allUpdates = () => rs.flatMap((x) => x.all('updated'));
    await waitFor('every request to be expired and its card updated', () => allUpdates().length >= ids.length, {
      timeoutMs: 60_000,
      intervalMs: 20,
      detail: () => `updates: ${JSON.stringify(allUpdates())}`,
    });
    expect(a.all('updated')).toEqual([]); // none came due before the kill
    await Promise.all([b, c].map((r) => r.stop()));
    const updates = [b, c].flatMap((r) => r.all('updated')).map((l) => l.split(' ')[0]);
    expect(updates.sort()).toEqual([...ids].sort());
    const decisions = new ApprovalStore(store.approvals);
    for (const [i, id] of ids.entries()) expect((await decisions.get(id))?.decision?.outcome).toBe(i % 2 ? 'unanswered' : 'expired');
  }, 120_000);
});
