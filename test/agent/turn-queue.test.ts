/** The in-process TurnQueue over a real SQLite store (in memory): durability, order, resume, close. */
import { InProcessTurnQueue } from '../../agent/run/turn-queue.js';
import { parseTurn, type QueuedTurn, type Turn } from '../../agent/run/turn.js';
import { openSqliteStore } from '../../agent/store/sqlite/index.js';
import type { Store } from '../../agent/store/types.js';

let store: Store;
beforeEach(async () => {
  store = await openSqliteStore({ path: ':memory:', log: () => undefined });
});
afterEach(async () => {
  await store.close();
});

const turn = (conversationKey: string, text: string): Turn => ({ agentName: 'a', conversationKey, platform: 'console', sender: { id: 'u' }, text });
const q = (conv: string, id: string): QueuedTurn => ({ id, turn: turn(conv, id) });

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

test('enqueue is durable when it resolves; one turn at a time per conversation, in order; conversations in parallel', async () => {
  const queue = new InProcessTurnQueue({ runs: store.runs, parse: parseTurn });
  const seen: string[] = [];
  const gates = new Map<string, ReturnType<typeof deferred>>();
  const started = new Map<string, ReturnType<typeof deferred>>();
  for (const id of ['a1', 'a2', 'b1']) {
    gates.set(id, deferred());
    started.set(id, deferred());
  }
  queue.start(async (_conv, t) => {
    seen.push(`start ${t.id}`);
    started.get(t.id)!.resolve();
    await gates.get(t.id)!.promise;
    await store.runs.dropTurn(t.turn.conversationKey, t.id);
    seen.push(`end ${t.id}`);
  });
  await queue.enqueue('A', q('A', 'a1'));
  await queue.enqueue('A', q('A', 'a2'));
  await queue.enqueue('B', q('B', 'b1'));
  expect((await store.runs.queuedTurns()).map((r) => r.id)).toEqual(['a1', 'a2', 'b1']);
  await started.get('a1')!.promise;
  await started.get('b1')!.promise; // B does not wait for A
  expect(seen).toEqual(['start a1', 'start b1']);
  expect(queue.busy('A')).toBe(true);
  gates.get('a1')!.resolve();
  await started.get('a2')!.promise;
  gates.get('a2')!.resolve();
  gates.get('b1')!.resolve();
  await queue.idle();
  expect(seen.indexOf('end a1')).toBeLessThan(seen.indexOf('start a2'));
  expect(queue.busy('A')).toBe(false);
  expect(await store.runs.queuedTurns()).toEqual([]);
});

test('a turn that could not be stored is refused and never handled', async () => {
  const queue = new InProcessTurnQueue({ runs: store.runs, parse: parseTurn, log: () => undefined });
  const handled: string[] = [];
  queue.start(async (_c, t) => void handled.push(t.id));
  await store.close(); // every write now fails
  await expect(queue.enqueue('A', q('A', 'x'))).rejects.toThrow();
  await queue.idle();
  expect(handled).toEqual([]);
  store = await openSqliteStore({ path: ':memory:', log: () => undefined });
});

test('resume delivers what an earlier process stored, oldest first, after what its lane holds, once', async () => {
  await store.runs.enqueueTurn('A', 'old1', turn('A', 'old1'), 1);
  await store.runs.enqueueTurn('B', 'old2', turn('B', 'old2'), 2);
  await store.runs.enqueueTurn('A', 'bad', { not: 'a turn' }, 3);
  const warnings: string[] = [];
  const queue = new InProcessTurnQueue({ runs: store.runs, parse: parseTurn, log: (_l, m) => warnings.push(m) });
  const order: string[] = [];
  queue.start(async (conv, t) => {
    order.push(t.id);
    await store.runs.dropTurn(conv, t.id);
  });
  const first = deferred();
  void queue.exclusive('A', () => first.promise.then(() => void order.push('resumed run A')));
  await queue.enqueue('A', q('A', 'new')); // stored by this process: resume must not deliver it again
  expect(await queue.resume()).toBe(2);
  first.resolve();
  await queue.idle();
  expect(order.filter((x) => x !== 'old2')).toEqual(['resumed run A', 'new', 'old1']);
  expect(order.filter((x) => x === 'new')).toHaveLength(1);
  expect(order).toContain('old2');
  expect(warnings.join('\n')).toContain('unreadable');
  expect(await store.runs.queuedTurns()).toEqual([]);
});

test('close stops delivering: what did not start stays stored for the next start; a settled handler is not waited for', async () => {
  const parked = new Set<string>();
  const queue = new InProcessTurnQueue({ runs: store.runs, parse: parseTurn, settled: (c) => parked.has(c) });
  const release = deferred();
  const started = deferred();
  queue.start(async (conv) => {
    parked.add(conv);
    started.resolve();
    await release.promise;
  });
  await queue.enqueue('A', q('A', 'running'));
  await queue.enqueue('A', q('A', 'waiting'));
  await started.promise;
  await queue.close(60_000); // returns at once: the running one is parked on a human
  expect((await store.runs.queuedTurns()).map((r) => r.id)).toEqual(['running', 'waiting']);
  release.resolve();
  await queue.idle();
  expect((await store.runs.queuedTurns()).map((r) => r.id)).toEqual(['running', 'waiting']);
});
