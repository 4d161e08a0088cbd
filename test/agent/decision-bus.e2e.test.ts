/**
 * The SignalDecisionBus (agent/approvals/decision-bus.ts) on PostgreSQL, two stores on one database
 * standing for two processes: a decision whose signal never came (recorded by a broker on a bus that
 * does not signal, as when NOTIFY was lost) wakes the wait at the next resync, here after the
 * listening connection was terminated; and with a safety re-read, without one. A settled wait leaves
 * no subscription behind.
 */
import { ApprovalBroker, ApprovalStore, InProcessDecisionBus, SignalDecisionBus } from '../../agent/approvals/index.js';
import type { Card } from '../../agent/events.js';
import { openPostgresStore, terminateConnections } from '../../agent/store/postgres/index.js';
import type { Store } from '../../agent/store/types.js';
import { testPostgresAdminUrl, testPostgresUrl } from '../helpers/postgres.js';

beforeAll(async () => {
  await testPostgresUrl();
}, 200_000);

const where = { conversationKey: 'telegram:1', platform: 'telegram', agentName: 'default', runId: 'run-1' };

function brokerOn(store: Store, bus: InProcessDecisionBus | SignalDecisionBus, cards: Card[] = []) {
  return new ApprovalBroker({
    approvals: store.approvals,
    bus,
    outputs: () => ({ emit: async () => undefined, streamsText: false, postCard: async (c) => String(cards.push(c)), updateCard: async () => undefined }),
    approversOf: () => ['alice'],
  });
}

test.each([
  ['a resync after the listening connection was lost', 0],
  ['the safety re-read', 200],
])(
  'a decision whose signal never came wakes the wait at %s',
  async (how, safetyReadMs) => {
    const url = await testPostgresUrl();
    const here = await openPostgresStore({ url, log: () => undefined });
    const there = await openPostgresStore({ url, log: () => undefined });
    const decisions = new ApprovalStore(here.approvals);
    const bus = new SignalDecisionBus({ signals: here.signals, read: async (id) => (await decisions.get(id))?.decision, safetyReadMs });
    const waiting = brokerOn(here, bus);
    const cards: Card[] = [];
    // The other "process" decides on a bus that reaches nobody else: no signal is sent.
    const deciding = brokerOn(there, new InProcessDecisionBus(), cards);
    try {
      await here.signals.ready();
      const id = await deciding.askApproval({ ...where, title: 'Run ls?', body: 'ls', alwaysLabel: null, timeoutMs: 600_000 });
      let woke = false;
      const wait = waiting.wait(id).then((d) => ((woke = true), d));
      expect(await deciding.click({ token: cards[0]!.buttons[0]!.token, conversationKey: where.conversationKey, user: { id: 'alice' } })).toMatchObject({
        accepted: true,
      });
      // A signal round trip on this connection: had one been sent, it would have arrived by now.
      await new Promise<void>((r) => {
        const off = here.signals.subscribe('marker', () => (off(), r()));
        void there.signals.publish('marker', 'm');
      });
      if (how.startsWith('a resync')) {
        // No signal, no re-read: still waiting (the safety re-read may have woken it already).
        expect(woke).toBe(false);
        const database = decodeURIComponent(new URL(url).pathname.slice(1));
        await terminateConnections(await testPostgresAdminUrl(), database);
      }
      expect(await wait).toMatchObject({ outcome: 'approved', by: 'alice' });
      expect(bus.listenerCount(id)).toBe(0);
    } finally {
      waiting.close();
      deciding.close();
      bus.close();
      await there.close();
      await here.close();
    }
  },
  60_000,
);
