/**
 * The shared turn queue's drain waits (agent/store/postgres/turn-queue.ts idle() and close(), on
 * agent/run/changes.ts) across a real process (./replica-child.ts) with a small heap: while a turn
 * runs in this replica's own lane, or an exclusive task runs for a conversation nobody holds here,
 * idle() and close() wait for it without starving it. A wait that re-awaits a promise settled
 * already (`Promise.race([Promise.all([]), sleep])`) spins on microtasks: the process stops reading
 * stdin and the database, never finishes the run, and runs out of memory, so the events below
 * never come and the replica exits. That is what took down every in-process Gatehouse on
 * PostgreSQL when the owner fast path first landed.
 */
import { randomUUID } from 'node:crypto';
import { testPostgresUrl } from '../../helpers/postgres.js';
import { startReplica, type Replica } from './replica-harness.js';

let url: string;
const replicas: Replica[] = [];

/** A replica whose heap is small: a spinning wait ends it within seconds instead of hanging. */
async function replica(name: string): Promise<Replica> {
  const r = await startReplica(url, name, 4, ['--max-old-space-size=96']);
  replicas.push(r);
  return r;
}

/** Stores a turn on `r` for a fresh conversation (so `r` takes it, on the fast path) and waits until its lane holds it. */
async function holding(r: Replica): Promise<string> {
  const id = randomUUID();
  r.send(`send lane:${randomUUID().slice(0, 6)} ${id} hold:${r.name}`);
  await r.until(`${id} stored`, (e) => e.ev === 'sent' && e.id === id);
  await r.until('holding', (e) => e.ev === 'holding' && e.id === id);
  return id;
}

beforeAll(async () => {
  url = await testPostgresUrl();
}, 200_000);

afterEach(async () => {
  for (const r of replicas.splice(0)) {
    r.p.kill('SIGKILL');
    await r.exited;
  }
});

test('idle() while a turn runs in this replica’s own lane waits for it, and the turn finishes', async () => {
  const a = await replica('ia');
  const id = await holding(a);
  a.send('idle');
  await a.until('idling', (e) => e.ev === 'idling');
  a.send(`release ${id}`);
  await a.until('posted', (e) => e.ev === 'posted' && e.id === id);
  await a.until('idle', (e) => e.ev === 'idle');
  expect(a.exit).toBeUndefined();
}, 120_000);

test('idle() while an exclusive task runs for a conversation not held here waits for it, and the task finishes', async () => {
  const a = await replica('xa');
  const c = `excl:${randomUUID().slice(0, 6)}`;
  a.send(`exclusive ${c} k1`);
  await a.until('the task running', (e) => e.ev === 'exclusive-running' && e.id === 'k1');
  a.send('idle');
  await a.until('idling', (e) => e.ev === 'idling');
  a.send('release k1');
  await a.until('the task done', (e) => e.ev === 'exclusive-done' && e.id === 'k1');
  await a.until('idle', (e) => e.ev === 'idle');
  expect(a.exit).toBeUndefined();
}, 120_000);

test('close() with a turn running in this replica’s own lane lets it finish within the grace, then exits 0', async () => {
  const a = await replica('ca');
  const id = await holding(a);
  a.send('close 600000');
  await a.until('closing', (e) => e.ev === 'closing');
  a.send(`release ${id}`);
  await a.until('posted', (e) => e.ev === 'posted' && e.id === id);
  await a.until('closed', (e) => e.ev === 'closed');
  expect(await a.exited).toBe(0);
}, 120_000);
