/**
 * The shared TurnQueue on pg-boss (agent/store/postgres/turn-queue.ts) across real processes: each
 * replica is a child process (./replica-child.ts) on one PostgreSQL database. Order per
 * conversation, conversations spread, a SIGKILLed replica's job taken over by a survivor, nothing
 * run twice, close hands back at once, and a SIGSTOPped replica past its claim cannot write or
 * post once resumed, and says so.
 */
import { randomUUID } from 'node:crypto';
import { parseTurn, type Turn } from '../../../agent/run/turn.js';
import type { TurnQueue } from '../../../agent/run/turn-queue.js';
import { openPostgresStore, type PostgresStore } from '../../../agent/store/postgres/index.js';
import { testPostgresUrl } from '../../helpers/postgres.js';
import { runsOf, startReplica, warningsOf, type Replica } from './replica-harness.js';

let url: string;
let store: PostgresStore;
let producer: TurnQueue;
const replicas: Replica[] = [];

async function replica(name: string, capacity = 4): Promise<Replica> {
  const r = await startReplica(url, name, capacity);
  replicas.push(r);
  return r;
}

const turn = (conversationKey: string, text: string): Turn => ({ agentName: 'a', conversationKey, platform: 'console', sender: { id: 'u' }, text });
async function send(conversation: string, text = 'go'): Promise<string> {
  const id = randomUUID();
  await producer.enqueue(conversation, { id, turn: turn(conversation, text) });
  return id;
}
const rowsOf = async (c: string) => ((await store.transcripts.load(c))?.rows ?? []).map((r) => r.message as string);
const all = () => replicas.flatMap((r) => r.events);

beforeAll(async () => {
  url = await testPostgresUrl();
  store = await openPostgresStore({ url, log: () => undefined });
  // Sends only: never started, it fetches nothing.
  producer = await store.turnQueue!({ owner: 'producer', parse: parseTurn, capacity: 0, tuning: { superviseSeconds: 1 } });
}, 200_000);

afterEach(async () => {
  for (const r of replicas.splice(0)) {
    r.p.kill('SIGCONT');
    r.p.kill('SIGKILL');
    await r.exited;
  }
});

afterAll(async () => {
  await producer?.close(0);
  await store?.close();
});

test('order per conversation across three replicas, conversations spread, every turn run once', async () => {
  const rs = await Promise.all(['r1', 'r2', 'r3'].map((n) => replica(n, 3)));
  const convs = Array.from({ length: 8 }, (_, i) => `order-${i}:${randomUUID().slice(0, 6)}`);
  const sent = new Map<string, string[]>(convs.map((c) => [c, []]));
  for (let round = 0; round < 5; round++) for (const c of convs) sent.get(c)!.push(await send(c));
  for (const c of convs) {
    await rs[0]!.until(`all of ${c} posted`, () => all().filter((e) => e.ev === 'posted' && e.conversation === c).length === 5);
    expect(await rowsOf(c)).toEqual(sent.get(c));
  }
  const starts = all().filter((e) => e.ev === 'start');
  // Each turn run once (a second start only after a logged failed attempt of it).
  expect({ runs: runsOf(all()).sort(), warnings: warningsOf(all()) }).toEqual({ runs: [...sent.values()].flat().sort(), warnings: expect.any(Array) });
  // Spread: more than one replica ran turns.
  expect(new Set(starts.map((e) => e.replica)).size).toBeGreaterThan(1);
  expect(await store.runs.queuedTurns()).toEqual([]);
}, 180_000);

test('a SIGKILLed replica mid-turn: a survivor takes the conversation over, the turn runs once, later turns follow in order', async () => {
  const a = await replica('ka');
  const c = `kill:${randomUUID().slice(0, 6)}`;
  const first = await send(c, 'hold:ka');
  await a.until('holding', (e) => e.ev === 'holding' && e.id === first);
  const b = await replica('kb');
  const second = await send(c);
  a.p.kill('SIGKILL');
  await a.exited;
  // The survivor gets the job once its heartbeat stops being refreshed.
  await b.until('the first turn posted', (e) => e.ev === 'posted' && e.id === first, 90_000);
  await b.until('the second turn posted', (e) => e.ev === 'posted' && e.id === second);
  expect(await rowsOf(c)).toEqual([first, second]);
  expect({ runs: runsOf(b.events), warnings: warningsOf(b.events) }).toEqual({ runs: [first, second], warnings: expect.any(Array) });
  expect(b.events.find((e) => e.id === first && e.ev === 'start')!.epoch).toBe(2); // a new claim
}, 180_000);

test('close hands back a parked run at once: another replica takes it without waiting for a heartbeat to lapse', async () => {
  const a = await replica('ca');
  const c = `close:${randomUUID().slice(0, 6)}`;
  const parkedTurn = await send(c, 'park:ca');
  await a.until('holding', (e) => e.ev === 'holding' && e.id === parkedTurn);
  const b = await replica('cb');
  a.send('close 200');
  expect(await a.exited).toBe(0);
  expect(a.events.some((e) => e.ev === 'log' && /handed back 1 conversation/.test(e.msg ?? ''))).toBe(true);
  await b.until('the handed-back turn posted', (e) => e.ev === 'posted' && e.id === parkedTurn);
  expect(await rowsOf(c)).toEqual([parkedTurn]);
}, 120_000);

test('a SIGSTOPped replica past its claim cannot write or post once resumed, and says so', async () => {
  const a = await replica('sa');
  const c = `stop:${randomUUID().slice(0, 6)}`;
  const t = await send(c, 'hold:sa');
  await a.until('holding', (e) => e.ev === 'holding' && e.id === t);
  const b = await replica('sb');
  a.p.kill('SIGSTOP');
  await b.until('the turn taken over and posted', (e) => e.ev === 'posted' && e.id === t, 90_000);
  a.p.kill('SIGCONT');
  a.send(`release ${t}`);
  const fenced = await a.until('fenced', (e) => e.ev === 'fenced' && e.id === t);
  expect(fenced.message).toBe(`lost conversation ${c} to another replica (epoch 1, now 2)`);
  await a.untilStderr(`lost conversation ${c} to another replica (epoch 1, now 2): not writing or posting`);
  expect(a.events.some((e) => e.ev === 'posted' && e.id === t)).toBe(false);
  expect(await rowsOf(c)).toEqual([t]); // written once, by the replica that held the claim
}, 180_000);
