/**
 * The open-requests index across processes (agent/approvals/open-requests.ts) on PostgreSQL, two
 * stores on one database standing for two processes: a question asked by one is answered by a
 * typed reply the other takes, though the other reads nothing for conversations with no request;
 * and a request whose announcement never came (asked through a broker that announces nothing, as
 * when the signal was lost) is found by the re-read after the listening connection comes back.
 */
import { ApprovalBroker } from '../../agent/approvals/index.js';
import type { Card } from '../../agent/events.js';
import { openPostgresStore, terminateConnections } from '../../agent/store/postgres/index.js';
import { storeRoundTrips } from '../../agent/store/round-trips.js';
import type { Store } from '../../agent/store/types.js';
import { testPostgresAdminUrl, testPostgresUrl } from '../helpers/postgres.js';

beforeAll(async () => {
  await testPostgresUrl();
}, 200_000);

function brokerOn(store: Store, announce: boolean) {
  const cards: Card[] = [];
  const broker = new ApprovalBroker({
    approvals: store.approvals,
    outputs: () => ({ emit: async () => undefined, streamsText: false, postCard: async (c) => String(cards.push(c)), updateCard: async () => undefined }),
    approversOf: () => ['alice'],
    ...(announce ? { sharedSignals: store.signals } : {}),
  });
  return { broker, cards };
}

const question = (conversationKey: string) => ({
  conversationKey,
  platform: 'telegram',
  agentName: 'default',
  runId: 'run-1',
  question: 'Which colour?',
  suggestions: [{ value: 'green', label: 'Green' }],
  allowCustom: true,
  starterId: 'alice',
  timeoutMs: 600_000,
});

/** A signal round trip from `there` to `here`: what `there` announced before it has arrived (NOTIFY keeps commit order). */
function roundTrip(here: Store, there: Store): Promise<void> {
  return new Promise<void>((r) => {
    const off = here.signals.subscribe('marker', () => (off(), r()));
    void there.signals.publish('marker', 'm');
  });
}

let stores: Store[] = [];
let brokers: ApprovalBroker[] = [];
afterEach(async () => {
  for (const b of brokers) b.close();
  for (const s of stores) await s.close();
  stores = [];
  brokers = [];
});

async function twoProcesses(announceThere: boolean) {
  const url = await testPostgresUrl();
  const here = await openPostgresStore({ url, log: () => undefined });
  const there = await openPostgresStore({ url, log: () => undefined });
  stores.push(here, there);
  const h = brokerOn(here, true);
  const t = brokerOn(there, announceThere);
  brokers.push(h.broker, t.broker);
  await here.signals.ready();
  await there.signals.ready();
  return { url, here, there, receiving: h.broker, asking: t.broker };
}

test('a question asked by another process is answered by a typed reply here; a conversation with no request costs no read', async () => {
  const { here, there, receiving, asking } = await twoProcesses(true);
  const quiet = `telegram:quiet-${Date.now()}`;
  expect(await receiving.openIds(quiet)).toEqual([]); // seeds the index (one read)
  const before = storeRoundTrips.count;
  expect(await receiving.openIds(quiet)).toEqual([]);
  expect(storeRoundTrips.count - before).toBe(0);

  const key = `telegram:asked-${Date.now()}`;
  const id = await asking.askQuestion(question(key));
  await roundTrip(here, there);
  expect(await receiving.answerTyped(key, { id: 'alice' }, 'indigo')).toBe(true);
  expect((await asking.get(id))?.decision).toMatchObject({ outcome: 'answered', answer: 'indigo', by: 'alice' });
  // Decided: the next typed message in that conversation is a turn again.
  expect(await receiving.answerTyped(key, { id: 'alice' }, 'and another thing')).toBe(false);
}, 60_000);

test('a request whose announcement never came is found by the re-read after the listening connection comes back', async () => {
  const { url, here, receiving, asking } = await twoProcesses(false);
  const key = `telegram:missed-${Date.now()}`;
  expect(await receiving.openIds(key)).toEqual([]); // seeded before the question exists
  const id = await asking.askQuestion(question(key));
  // Nothing announced it: the index here does not know of it yet.
  expect(await receiving.openIds(key)).toEqual([]);

  const resynced = new Promise<void>((r) => {
    const off = here.signals.onResync(() => (off(), r()));
  });
  const database = decodeURIComponent(new URL(url).pathname.slice(1));
  await terminateConnections(await testPostgresAdminUrl(), database);
  await resynced;
  expect(await receiving.openIds(key)).toEqual([id]);
  expect(await receiving.answerTyped(key, { id: 'alice' }, 'indigo')).toBe(true);
  expect((await asking.get(id))?.decision).toMatchObject({ outcome: 'answered', answer: 'indigo' });
}, 60_000);
