/**
 * The owner fast path of the shared turn queue (agent/store/postgres/owner-lanes.ts) across real
 * processes (./replica-child.ts): a turn stored on a replica for a conversation nobody holds runs
 * there with no pg-boss job; turns of one conversation stored on two replicas run in the order
 * they were stored, each once, on whichever holds it; a holder SIGKILLed mid-run leaves its stored
 * turns, and its parked run, to a survivor.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { openPostgresStore, type PostgresStore } from '../../../agent/store/postgres/index.js';
import { QUEUE_SCHEMA } from '../../../agent/store/postgres/turn-queue.js';
import { testPostgresUrl } from '../../helpers/postgres.js';
import { runsOf, startReplica, warningsOf, type Replica } from './replica-harness.js';

let url: string;
let store: PostgresStore;
let pgboss: pg.Client;
const replicas: Replica[] = [];

async function replica(name: string): Promise<Replica> {
  const r = await startReplica(url, name);
  replicas.push(r);
  return r;
}

/** Stores a turn through replica `r`'s own queue; resolves once `enqueue` resolved there. */
async function sendVia(r: Replica, conversation: string, text = 'go'): Promise<string> {
  const id = randomUUID();
  r.send(`send ${conversation} ${id} ${text}`);
  await r.until(`${id} stored`, (e) => (e.ev === 'sent' || e.ev === 'send-failed') && e.id === id);
  expect(r.events.find((e) => e.id === id && e.ev === 'send-failed')).toBeUndefined();
  return id;
}
const rowsOf = async (c: string) => ((await store.transcripts.load(c))?.rows ?? []).map((r) => r.message as string);
const all = () => replicas.flatMap((r) => r.events);
/** pg-boss's own job table: the fast path must not have created a job for the conversation. */
const jobsOf = async (c: string) => Number((await pgboss.query(`SELECT count(*) AS n FROM ${QUEUE_SCHEMA}.job WHERE singleton_key = $1`, [c])).rows[0].n);

beforeAll(async () => {
  url = await testPostgresUrl();
  store = await openPostgresStore({ url, log: () => undefined });
  pgboss = new pg.Client({ connectionString: url });
  await pgboss.connect();
}, 200_000);

afterEach(async () => {
  for (const r of replicas.splice(0)) {
    r.p.kill('SIGKILL');
    await r.exited;
  }
});

afterAll(async () => {
  await pgboss?.end();
  await store?.close();
});

test('a turn stored on a replica runs there, with no pg-boss job', async () => {
  const a = await replica('fa');
  await replica('fb');
  const c = `fast:${randomUUID().slice(0, 6)}`;
  const ids = [await sendVia(a, c), await sendVia(a, c)];
  for (const id of ids) await a.until(`${id} posted`, (e) => e.ev === 'posted' && e.id === id);
  expect(await rowsOf(c)).toEqual(ids);
  // Every start on fa; each turn run once (a second start only after a logged failed attempt).
  expect({ runs: runsOf(all()), warnings: warningsOf(all()) }).toEqual({ runs: ids, warnings: expect.any(Array) });
  expect(all().filter((e) => e.ev === 'start' && e.replica !== 'fa')).toEqual([]);
  expect(await jobsOf(c)).toBe(0);
  expect(await store.runs.queuedTurns()).toEqual([]);
}, 120_000);

test('turns of one conversation stored on two replicas: in the order stored, each run once, no job', async () => {
  const a = await replica('ta');
  const b = await replica('tb');
  const c = `two:${randomUUID().slice(0, 6)}`;
  const sent: string[] = [];
  for (let i = 0; i < 12; i++) sent.push(await sendVia(i % 3 === 0 ? b : a, c));
  await a.until('all posted', () => all().filter((e) => e.ev === 'posted' && e.conversation === c).length === sent.length);
  expect(await rowsOf(c)).toEqual(sent);
  expect({ runs: runsOf(all()).sort(), warnings: warningsOf(all()) }).toEqual({ runs: [...sent].sort(), warnings: expect.any(Array) });
  expect(all().some((e) => e.ev === 'fenced')).toBe(false);
  expect(await jobsOf(c)).toBe(0);
}, 120_000);

test('a holder SIGKILLed mid-run: a survivor runs its stored turns once each, in order, under a new claim', async () => {
  const a = await replica('ka');
  const b = await replica('kb');
  const c = `kill:${randomUUID().slice(0, 6)}`;
  const first = await sendVia(a, c, 'hold:ka');
  await a.until('holding', (e) => e.ev === 'holding' && e.id === first);
  const second = await sendVia(a, c); // a holds c: stored for a's lane
  const third = await sendVia(b, c); // stored on b, still a's to run
  expect(b.events.some((e) => e.ev === 'start')).toBe(false);
  a.p.kill('SIGKILL');
  await a.exited;
  await b.until('the third turn posted', (e) => e.ev === 'posted' && e.id === third, 90_000);
  expect(await rowsOf(c)).toEqual([first, second, third]);
  expect({ runs: runsOf(b.events), warnings: warningsOf(b.events) }).toEqual({ runs: [first, second, third], warnings: expect.any(Array) });
  expect(b.events.find((e) => e.ev === 'start' && e.id === first)!.epoch).toBe(2);
  expect(await store.runs.queuedTurns()).toEqual([]);
}, 180_000);

test('a holder SIGKILLed while its run is parked on a human: a survivor continues the stored run, then the turns behind it', async () => {
  const a = await replica('pa');
  const b = await replica('pb');
  const c = `park:${randomUUID().slice(0, 6)}`;
  const parked = await sendVia(a, c, 'park:pa');
  await a.until('parked', (e) => e.ev === 'holding' && e.id === parked);
  const next = await sendVia(b, c);
  a.p.kill('SIGKILL');
  await a.exited;
  const took = await b.until('the run taken over', (e) => e.ev === 'takeover' && e.conversation === c, 90_000);
  expect(took.runId).toBe(parked);
  await b.until('the turn behind it posted', (e) => e.ev === 'posted' && e.id === next);
  expect(b.events.filter((e) => e.ev === 'takeover')).toHaveLength(1);
  expect(await store.runs.records()).toEqual([]);
}, 180_000);

test('exclusive work asked for while the lane lets its conversation go still runs (a /reset right after an answer)', async () => {
  // The race: the lane decided to release (nothing queued) and an exclusive task arrived before it
  // was gone. It used to wait forever on the dead lane; it is handed back and runs the other way.
  const a = await replica('xa');
  const c = `excl:${randomUUID().slice(0, 6)}`;
  for (let i = 0; i < 40; i++) {
    const id = await sendVia(a, c);
    await a.until(`${id} posted`, (e) => e.ev === 'posted' && e.id === id);
    a.send(`exclusive ${c} k${i}`);
    await a.until(`task k${i} running`, (e) => e.ev === 'exclusive-running' && e.id === `k${i}`, 20_000);
    a.send(`release k${i}`);
    await a.until(`task k${i} done`, (e) => e.ev === 'exclusive-done' && e.id === `k${i}`, 20_000);
  }
  expect((await rowsOf(c)).length).toBe(40);
}, 600_000);
