/**
 * The approvals split (agent/approvals/): the decision bus wakes waits and leaves no subscription
 * behind; two brokers sharing one store (as two processes: separate buses, no polling) see each
 * other's questions and decisions; what is stored is the request without its decision, the decision
 * in the repository's own field, recorded once; a click before the card's handle is stored still
 * gets its card replaced. On both engines.
 */
import { ApprovalBroker, InProcessDecisionBus, type Decision } from '../../agent/approvals/index.js';
import type { Card } from '../../agent/events.js';
import { openPostgresStore } from '../../agent/store/postgres/index.js';
import { openSqliteStore } from '../../agent/store/sqlite/index.js';
import type { Store } from '../../agent/store/types.js';
import { testPostgresUrl } from '../helpers/postgres.js';

const engines: Array<[string, () => Promise<Store>]> = [
  ['sqlite', () => openSqliteStore({ path: ':memory:' })],
  ['postgres', async () => openPostgresStore({ url: await testPostgresUrl(), log: () => undefined })],
];

describe.each(engines)('on %s', (_engine, open) => {
  let store: Store;
  beforeAll(async () => {
    // The first PostgreSQL store may wait for the test server to start.
    await (await open()).close();
  }, 200_000);
  beforeEach(async () => {
    store = await open();
  });
  afterEach(async () => {
    await store.close();
  });

  function broker(bus = new InProcessDecisionBus(), now?: () => number) {
    const cards: Card[] = [];
    const updated: Card[] = [];
    const b = new ApprovalBroker({
      approvals: store.approvals,
      bus,
      outputs: () => ({
        emit: async () => undefined,
        streamsText: false,
        postCard: async (c) => String(cards.push(c)),
        updateCard: async (_h, c) => void updated.push(c),
      }),
      approversOf: () => ['alice'],
      ...(now ? { now } : {}),
    });
    return { b, bus, cards, updated };
  }

  const where = { conversationKey: 'telegram:1', platform: 'telegram', agentName: 'default', runId: 'run-1' };

  test('a click wakes the wait through the bus, and the settled wait unsubscribes', async () => {
    const { b, bus, cards, updated } = broker();
    const id = await b.askApproval({ ...where, title: 'Approve ls?', body: 'ls', alwaysLabel: null, timeoutMs: 600_000 });
    const waiting = b.wait(id);
    const seen: Decision[] = [];
    const off = bus.subscribe(id, (d) => seen.push(d));
    expect(await b.click({ token: cards[0]!.buttons[0]!.token, conversationKey: where.conversationKey, user: { id: 'alice' } })).toEqual({
      accepted: true,
      notice: 'Approved.',
    });
    const d = await waiting;
    expect(d).toMatchObject({ outcome: 'approved', by: 'alice' });
    expect(seen).toEqual([d]);
    off();
    expect(bus.listenerCount(id)).toBe(0);
    expect(updated.at(-1)?.outcome).toMatch(/^Approved once by alice/);
    b.close();
  });

  test("a click that lands before the card's handle is stored still gets the card replaced with the decision", async () => {
    const updated: Array<{ handle: string; card: Card }> = [];
    let clicked: Promise<unknown> | undefined;
    const b: ApprovalBroker = new ApprovalBroker({
      approvals: store.approvals,
      outputs: () => ({
        emit: async () => undefined,
        streamsText: false,
        // The approver taps as soon as the card is on screen: before postCard has returned its handle.
        postCard: async (c) => {
          clicked = b.click({ token: c.buttons[0]!.token, conversationKey: where.conversationKey, user: { id: 'alice' } });
          await clicked;
          return 'card-1';
        },
        updateCard: async (handle, card) => void updated.push({ handle, card }),
      }),
      approversOf: () => ['alice'],
    });
    const id = await b.askApproval({ ...where, title: 'Approve ls?', body: 'ls', alwaysLabel: null, timeoutMs: 600_000 });
    expect(await clicked).toEqual({ accepted: true, notice: 'Approved.' });
    expect(await b.wait(id)).toMatchObject({ outcome: 'approved', by: 'alice' });
    expect(updated.map((u) => u.handle)).toEqual(['card-1']);
    expect(updated[0]!.card.outcome).toMatch(/^Approved once by alice/);
    expect(updated[0]!.card.buttons).toHaveLength(0);
    b.close();
  });

  test('stored: the request as StoredRequest without a decision field, the decision once in its own field', async () => {
    const { b, cards } = broker();
    const id = await b.askQuestion({
      ...where,
      question: 'Which?',
      suggestions: [{ value: 'v1', label: 'One' }],
      allowCustom: false,
      starterId: 'bob',
      timeoutMs: 600_000,
    });
    const before = await store.approvals.get(id, Date.now());
    expect(before?.decision).toBeUndefined();
    expect(before?.request).toMatchObject({
      id,
      kind: 'question',
      conversationKey: where.conversationKey,
      starterId: 'bob',
      cardHandle: '1',
      suggestions: [{ value: 'v1', label: 'One' }],
    });
    expect(Object.keys(before!.request as object)).not.toContain('decision');
    expect(await b.click({ token: cards[0]!.buttons[0]!.token, conversationKey: where.conversationKey, user: { id: 'bob' } })).toMatchObject({
      accepted: true,
    });
    expect((await b.click({ token: cards[0]!.buttons[0]!.token, conversationKey: where.conversationKey, user: { id: 'alice' } })).notice).toMatch(
      /^Already decided: Answered by bob/,
    );
    const after = await store.approvals.get(id, Date.now());
    expect(after?.decision).toMatchObject({ outcome: 'answered', answer: 'v1', by: 'bob' });
    expect(Object.keys(after!.request as object)).not.toContain('decision');
    expect(await store.approvals.pending(where.conversationKey, Date.now())).toEqual([]);
    b.close();
  });

  test("another broker's open question takes a typed answer here, and its own wait wakes with that answer, not as unanswered", async () => {
    // One clock for both, moved by the test: how long the store takes on a busy machine does not matter.
    let t = Date.now();
    const now = () => t;
    const asker = broker(undefined, now);
    const other = broker(undefined, now);
    // Nothing open: an ordinary message is not an answer.
    expect(await other.b.answerTyped(where.conversationKey, { id: 'bob' }, 'hello')).toBe(false);
    const id = await asker.b.askQuestion({ ...where, question: 'Name?', suggestions: [], allowCustom: true, starterId: 'bob', timeoutMs: 60_000 });
    expect(await other.b.answerTyped(where.conversationKey, { id: 'bob' }, 'Ada')).toBe(true);
    // The asker's bus never heard of it: at expiry it finds the stored answer and wakes with it.
    t += 60_001;
    expect(await asker.b.wait(id)).toMatchObject({ outcome: 'answered', answer: 'Ada', by: 'bob' });
    expect(await other.b.answerTyped(where.conversationKey, { id: 'bob' }, 'again')).toBe(false);
    asker.b.close();
    other.b.close();
  });

  test('approve all decides its members once each; a member decided meanwhile keeps its decision', async () => {
    const { b, cards } = broker();
    const m1 = await b.askApproval({ ...where, title: 'Approve a?', body: 'a', alwaysLabel: null, timeoutMs: 600_000 });
    const m2 = await b.askApproval({ ...where, title: 'Approve b?', body: 'b', alwaysLabel: null, timeoutMs: 600_000 });
    const all = await b.askApproveAll({ ...where, title: 'All?', body: '2', timeoutMs: 600_000 }, [m1, m2]);
    expect(await b.settle(m2, { outcome: 'denied', at: Date.now(), by: 'policy' })).toBe(true);
    const allCard = cards[2]!;
    expect(await b.click({ token: allCard.buttons[0]!.token, conversationKey: where.conversationKey, user: { id: 'alice' } })).toEqual({
      accepted: true,
      notice: 'Approved all.',
    });
    expect((await b.get(all))?.decision?.outcome).toBe('approved');
    expect((await b.get(m1))?.decision).toMatchObject({ outcome: 'approved', note: 'via Approve all / Deny all' });
    expect((await b.get(m2))?.decision).toMatchObject({ outcome: 'denied', by: 'policy' });
    expect(await b.pendingIds(where.conversationKey)).toEqual([]);
    b.close();
  });
});
