/**
 * agent/egress/approvals.ts against the real broker on a real (in-memory SQLite) store: coalescing of
 * parallel asks onto one card, Always settling another run's card and persisting the grant, a card
 * closed when its command ends, expiry as a refusal.
 */
import { ApprovalBroker } from '../../../agent/approvals/index.js';
import { PersistedAllowlists } from '../../../agent/approvals/allowlists.js';
import type { Card } from '../../../agent/events.js';
import { EgressApprovals, type EgressRequester } from '../../../agent/egress/approvals.js';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import type { Store } from '../../../agent/store/types.js';
import { waitFor } from '../../helpers/wait.js';

let store: Store;
let broker: ApprovalBroker;
let allowlists: PersistedAllowlists;
let approvals: EgressApprovals;
let cards: Array<{ id: string; card: Card }>;
/** What postCard waits on before it returns (a platform slow to post). */
let posting: Promise<void>;

beforeEach(async () => {
  store = await openSqliteStore({ path: ':memory:' });
  cards = [];
  posting = Promise.resolve();
  broker = new ApprovalBroker({
    approvals: store.approvals,
    outputs: () => ({
      emit: async () => undefined,
      streamsText: false,
      postCard: async (card, o) => {
        cards.push({ id: o?.requestId ?? '', card });
        await posting;
        return `h${cards.length}`;
      },
      updateCard: async () => undefined,
    }),
    approversOf: () => ['ada'],
  });
  allowlists = new PersistedAllowlists(store.allowlists);
  await allowlists.load(['net']);
  approvals = new EgressApprovals({ broker, grant: (agent, entry) => allowlists.add(agent, { kind: 'egress', entry }) });
});
afterEach(async () => {
  broker.close();
  await store.close();
});

const who = (runId: string, over: Partial<EgressRequester> = {}): EgressRequester => ({
  agentName: 'net',
  conversationKey: `console:${runId}`,
  platform: 'console',
  runId,
  approvers: () => ['ada'],
  timeoutMs: 600_000,
  signal: new AbortController().signal,
  command: 'git clone https://github.com/a/b',
  ...over,
});
const target = { host: 'github.com', port: 443, method: 'CONNECT' as const };
const refusal = "github.com:443 is not on this agent's sandboxNetwork.allow list";

async function click(label: string, n = 0): Promise<void> {
  await waitFor('a card', () => cards[n]);
  const { id } = cards[n]!;
  const b = (await broker.buttonChoices(id)).find((x) => x.label.startsWith(label))!;
  const r = await broker.click({ token: b.token, conversationKey: (await broker.get(id))!.conversationKey, user: { id: 'ada' } });
  expect(r.accepted).toBe(true);
}

test('two commands of one run asking for the same host at once share one card; one click lets both through', async () => {
  const a = approvals.forCommand(who('r1'));
  const b = approvals.forCommand(who('r1', { command: 'npm install' }));
  const both = Promise.all([a.ask(target, refusal), b.ask(target, refusal)]);
  await click('Approve once');
  const [va, vb] = await both;
  expect(va).toEqual({ allowed: true, requestId: cards[0]!.id });
  expect(vb).toEqual(va);
  expect(cards).toHaveLength(1);
  expect(cards[0]!.card.title).toBe('`git clone https://github.com/a/b` wants github.com:443');
  // Once, for this command: its next connection to the host is not asked again; nothing was kept.
  expect(await a.ask(target, refusal)).toEqual(va);
  expect(cards).toHaveLength(1);
  expect(await store.allowlists.list('net')).toEqual([]);
});

test('Always in one run persists the host and settles another run’s card for it', async () => {
  const first = approvals.forCommand(who('r1')).ask(target, refusal);
  const second = approvals.forCommand(who('r2')).ask(target, refusal);
  await waitFor('two cards', () => cards[1]);
  await click('Always');
  expect(await first).toMatchObject({ allowed: true });
  expect(await second).toMatchObject({ allowed: true });
  expect((await broker.get(cards[1]!.id))!.decision).toMatchObject({ outcome: 'approved', by: 'policy' });
  expect(await store.allowlists.list('net')).toEqual([{ kind: 'egress', value: 'github.com:443' }]);
  expect(allowlists.egress('net')).toEqual(['github.com:443']);
});

test('the command ends while its card waits: the card is closed as denied; a stop refuses at once', async () => {
  const stop = new AbortController();
  const gate = approvals.forCommand(who('r1', { signal: stop.signal }));
  const held = gate.ask(target, refusal);
  await waitFor('a card', () => cards[0]);
  stop.abort();
  expect(await held).toMatchObject({ refused: expect.stringMatching(/the command was stopped while its approval waited$/) });
  await waitFor('the card decided', async () => (await broker.get(cards[0]!.id))?.decision);
  expect((await broker.get(cards[0]!.id))!.decision).toMatchObject({ outcome: 'denied', note: 'the command was stopped' });

  const other = approvals.forCommand(who('r2'));
  void other.ask(target, refusal);
  await waitFor('a second card', () => cards[1]);
  await other.close();
  await waitFor('the second card decided', async () => (await broker.get(cards[1]!.id))?.decision);
  expect((await broker.get(cards[1]!.id))!.decision).toMatchObject({ outcome: 'denied', note: 'the command ended before a decision' });
});

test('a command that ends, or is stopped, while its card is still being posted leaves no card waiting', async () => {
  for (const how of ['ends', 'stopped'] as const) {
    let posted!: () => void;
    posting = new Promise<void>((r) => (posted = r));
    const stop = new AbortController();
    const n = cards.length;
    const gate = approvals.forCommand(who(`r-${how}`, { signal: stop.signal }));
    const held = gate.ask(target, refusal);
    await waitFor('the card being posted', () => cards[n]);
    if (how === 'ends') await gate.close();
    else stop.abort();
    posted();
    expect(await held).toMatchObject({
      refused: expect.stringMatching(how === 'ends' ? /the command is ending$/ : /the command was stopped while its approval waited$/),
    });
    await waitFor(`the card decided (${how})`, async () => (await broker.get(cards[n]!.id))?.decision);
    expect((await broker.get(cards[n]!.id))!.decision).toMatchObject({ outcome: 'denied' });
  }
});

test('a run stopped while its card is still being posted, whose command ends before the post returns: the card says stopped', async () => {
  // The order a busy machine can produce: the stop kills the command, its session closes, and only
  // then does the card's post come back.
  let posted!: () => void;
  posting = new Promise<void>((r) => (posted = r));
  const stop = new AbortController();
  const gate = approvals.forCommand(who('r-race', { signal: stop.signal }));
  const held = gate.ask(target, refusal);
  await waitFor('the card being posted', () => cards[0]);
  stop.abort();
  await gate.close();
  posted();
  expect(await held).toMatchObject({ refused: expect.stringMatching(/the command is ending$/) });
  await waitFor('the card decided', async () => (await broker.get(cards[0]!.id))?.decision);
  expect((await broker.get(cards[0]!.id))!.decision).toMatchObject({ outcome: 'denied', note: 'the command was stopped' });
});

test('expiry refuses, and the command’s note says so; no approver: refused without a card', async () => {
  const gate = approvals.forCommand(who('r1', { timeoutMs: 1 }));
  expect(await gate.ask(target, refusal)).toMatchObject({ refused: `${refusal}; nobody approved the connection before its approval expired` });
  expect(await gate.close()).toEqual([
    'The egress proxy declined github.com:443 (CONNECT): nobody approved it before the approval expired. Do not retry it; ask the user what to do instead.',
  ]);
  const nobody = approvals.forCommand(who('r2', { approvers: () => [] }));
  expect(await nobody.ask(target, refusal)).toMatchObject({ refused: expect.stringContaining('no approver is bound for console') });
  expect(cards).toHaveLength(1);
});
