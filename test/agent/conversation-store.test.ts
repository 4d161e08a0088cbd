/**
 * The conversation store over a real SQLite store (in memory): what a save writes (by identity, only
 * what changed), that a load after a save gives back what was saved in every shape, the cache of
 * recent conversations, conflicts between two writers, retention and tool results.
 */
import { ConversationStore, repairTranscript, appendUserTurn, type StoredConversation } from '../../agent/context/conversation-store.js';
import { ContextKeeper } from '../../agent/context/keeper.js';
import type { Message } from '../../agent/context/messages.js';
import type { ModelClient } from '../../agent/model/types.js';
import { openSqliteStore } from '../../agent/store/sqlite/index.js';
import { StoreConflictError, type Store, type TranscriptRepo, type TranscriptWrite } from '../../agent/store/types.js';
import { waitFor } from '../helpers/wait.js';

let store: Store;
beforeEach(async () => {
  store = await openSqliteStore({ path: ':memory:', log: () => undefined });
});
afterEach(async () => {
  await store.close();
});

/** The real repository, with its calls counted and its writes kept (no behaviour changed). */
function counted(repo: TranscriptRepo) {
  const calls = { load: 0, revision: 0, writes: [] as TranscriptWrite[] };
  const wrapped: TranscriptRepo = {
    ...repo,
    load: (c) => (calls.load++, repo.load(c)),
    revision: (c) => (calls.revision++, repo.revision(c)),
    write: (w) => (calls.writes.push(w), repo.write(w)),
  };
  return { repo: wrapped, calls };
}

function conversations(
  opts: {
    repo?: TranscriptRepo;
    now?: () => number;
    retention?: { maxConversations: number; maxIdleDays: number };
    cacheSize?: number;
    log?: (l: string, m: string) => void;
  } = {},
) {
  const transcripts = opts.repo ?? store.transcripts;
  return new ConversationStore({
    transcripts,
    checkpoint: (c) => store.checkpoint(c),
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.retention ? { retention: () => opts.retention! } : {}),
    ...(opts.cacheSize !== undefined ? { cacheSize: opts.cacheSize } : {}),
    log: opts.log ?? (() => undefined),
  });
}

let n = 0;
const user = (text = `u${++n}`): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const asst = (text = `a${++n}`): Message => ({ role: 'assistant', content: [{ type: 'text', text }] });
const fresh = (messages: Message[] = []): StoredConversation => ({ agent: 'a', messages, state: {}, updatedAt: 0 });

/** What a process that never saw it loads. */
async function loadedElsewhere(key: string): Promise<Message[] | undefined> {
  return (await conversations().load(key, { raw: true }))?.messages;
}

test('load after save gives back what was saved, in every shape a run makes', async () => {
  const cs = conversations();
  const conv = fresh([user(), asst()]);
  await cs.save('k', conv);
  expect(await loadedElsewhere('k')).toEqual(conv.messages);

  const steps: Array<(m: Message[]) => void> = [
    (m) => m.push(user(), asst()), // append
    (m) =>
      m.push(
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'ls', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'x'.repeat(100) }] },
      ),
    (m) => appendUserTurn(m, [{ type: 'text', text: 'and?' }]), // merged into the trailing tool results
    (m) => m.push(asst()),
    (m) => m.splice(m.length - 1, 1), // a dropped tail
    (m) => m.splice(0, 3, user('[Summary] one')), // summarized front
    (m) => m.push(user(), asst()),
    (m) => m.splice(0, 2, user('[Summary] two')), // a second summary
    (m) => {
      m[1] = asst('edited'); // a replaced message
    },
    (m) => m.reverse(), // unrecognizable: everything written again
    (m) => m.push(user()),
  ];
  for (const step of steps) {
    step(conv.messages);
    await cs.save('k', conv);
    expect(await loadedElsewhere('k')).toEqual(conv.messages);
    // And the same store's cached copy agrees.
    expect((await cs.load('k', { raw: true }))?.messages).toEqual(conv.messages);
  }
});

test('a save writes only what changed: a turn at message 1,000 appends two rows', async () => {
  const { repo, calls } = counted(store.transcripts);
  const cs = conversations({ repo });
  const conv = fresh();
  for (let i = 0; i < 500; i++) conv.messages.push(user(), asst());
  await cs.save('long', conv);
  let c = (await cs.load('long'))!;
  calls.writes.length = 0;
  c.messages.push(user(), asst());
  await cs.save('long', c);
  expect(calls.writes).toHaveLength(1);
  expect(calls.writes[0]!.changes).toEqual([
    {
      op: 'append',
      rows: [
        { seq: 1001, message: c.messages[1000] },
        { seq: 1002, message: c.messages[1001] },
      ],
    },
  ]);
  expect(calls.writes[0]!.expectRevision).toBeGreaterThan(0);
  // The next load reads the revision alone: no row is read again.
  const loadsBefore = calls.load;
  c = (await cs.load('long'))!;
  expect(calls.load).toBe(loadsBefore);
  expect(c.messages).toHaveLength(1002);
});

test('a cached conversation changed by another writer is read again; a stale save is refused', async () => {
  const { repo, calls } = counted(store.transcripts);
  const a = conversations({ repo });
  const b = conversations();
  await a.save('k', fresh([user('first'), asst()]));
  const mine = (await a.load('k'))!;
  const theirs = (await b.load('k'))!;
  theirs.messages.push(user('from b'), asst());
  await b.save('k', theirs);
  // a's copy is stale: its save is refused and changes nothing.
  mine.messages.push(user('from a'));
  await expect(a.save('k', mine)).rejects.toBeInstanceOf(StoreConflictError);
  expect(await loadedElsewhere('k')).toEqual(theirs.messages);
  const loads = calls.load;
  const again = (await a.load('k'))!;
  expect(calls.load).toBe(loads + 1);
  expect(again.messages).toEqual(theirs.messages);
});

test('the cache is bounded: the least recently used is read again from the store', async () => {
  const { repo, calls } = counted(store.transcripts);
  const cs = conversations({ repo, cacheSize: 2 });
  for (const k of ['k1', 'k2', 'k3']) await cs.save(k, fresh([user(k)]));
  const before = calls.load;
  await cs.load('k3');
  await cs.load('k2');
  expect(calls.load).toBe(before);
  await cs.load('k1'); // evicted by k3
  expect(calls.load).toBe(before + 1);
});

test('stored messages are frozen: a change in place throws instead of being lost', async () => {
  const cs = conversations();
  await cs.save('k', fresh([user('hello')]));
  const c = (await cs.load('k'))!;
  expect(() => c.messages[0]!.content.push({ type: 'text', text: 'lost?' })).toThrow(TypeError);
  // A message saved from this process is frozen too.
  const m = asst();
  c.messages.push(m);
  await cs.save('k', c);
  expect(() => {
    (m.content[0] as { text: string }).text = 'changed';
  }).toThrow(TypeError);
  // The conversation state is not (tools keep todos there); it is saved whole.
  c.state['todos'] = ['x'];
  await cs.save('k', c);
  expect((await conversations().load('k'))!.state).toEqual({ todos: ['x'] });
});

test('the context keeper builds new messages: a big result moved out is saved as a replace', async () => {
  const { repo, calls } = counted(store.transcripts);
  const cs = conversations({ repo });
  const big = 'y'.repeat(20_000);
  const conv = fresh([
    user('run it'),
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'x', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: big }] },
    asst('done'),
    user('next'),
  ]);
  await cs.save('k', conv);
  const c = (await cs.load('k'))!;
  const model: ModelClient = { complete: () => Promise.reject(new Error('not called')) };
  const keeper = new ContextKeeper({ model, modelName: 'claude-sonnet-5-5', storeResult: (content) => cs.putToolResult('k', content) });
  await keeper.beforeCall(c.messages, { fixedTokens: 0, reserveTokens: 0, signal: new AbortController().signal, addUsage: () => undefined });
  calls.writes.length = 0;
  await cs.save('k', c);
  expect(calls.writes[0]!.changes.map((ch) => ch.op)).toEqual(['replace']);
  const loaded = (await loadedElsewhere('k'))!;
  expect(loaded).toEqual(c.messages);
  const ref = JSON.stringify(loaded[2]);
  const id = /tr_[A-Za-z0-9_-]+/.exec(ref)![0];
  expect(await cs.getToolResult('k', id)).toBe(big);
});

test('a checkpoint is one transaction: transcript, queued turn and run record together', async () => {
  const cs = conversations();
  await store.runs.enqueueTurn('k', 'q1', { text: 'hi' }, 1);
  const conv = fresh([user('hi')]);
  await cs.checkpoint('k', conv, { dropTurn: 'q1', record: { runId: 'r1' } });
  expect(await store.runs.queuedTurns()).toEqual([]);
  expect(await store.runs.records()).toEqual([{ conversation: 'k', record: { runId: 'r1' } }]);
  expect(await loadedElsewhere('k')).toEqual(conv.messages);
  // A conflicting transcript write rolls the rest back too.
  await store.runs.enqueueTurn('k', 'q2', { text: 'again' }, 2);
  const other = conversations();
  const elsewhere = (await other.load('k'))!;
  elsewhere.messages.push(asst('elsewhere'));
  await other.save('k', elsewhere);
  conv.messages.push(asst());
  await expect(cs.checkpoint('k', conv, { dropTurn: 'q2', record: null })).rejects.toBeInstanceOf(StoreConflictError);
  expect((await store.runs.queuedTurns()).map((q) => q.id)).toEqual(['q2']);
  expect(await store.runs.records()).toHaveLength(1);
});

test('a corrupt transcript starts a new conversation instead of failing every turn', async () => {
  await store.transcripts.write({
    conversation: 'bad',
    agent: 'a',
    state: {},
    now: 1,
    changes: [{ op: 'append', rows: [{ seq: 1, message: 'not a message' }] }],
  });
  const warnings: string[] = [];
  const cs = conversations({ log: (_l, m) => warnings.push(m) });
  expect(await cs.load('bad')).toBeUndefined();
  expect(warnings.join('\n')).toContain('unreadable');
  // The new conversation is written past the unreadable one.
  const conv = fresh([user('new start')]);
  await cs.save('bad', conv);
  expect(await loadedElsewhere('bad')).toEqual(conv.messages);
});

test('retention: beyond maxConversations and past maxIdleDays, at most once a minute per agent', async () => {
  let now = 1_000_000_000_000;
  const cs = conversations({ now: () => now, retention: { maxConversations: 2, maxIdleDays: 30 } });
  await cs.save('k1', fresh([user()]));
  const id = await cs.putToolResult('k1', 'big');
  now += 1000;
  await cs.save('k2', fresh([user()]));
  now += 1000;
  await cs.save('k3', fresh([user()]));
  // Within the minute: not applied yet (the cost of a new conversation is one write).
  expect((await store.transcripts.listRecent({ agent: 'a', limit: 10 })).map((c) => c.conversation)).toEqual(['k3', 'k2', 'k1']);
  now += 60_000;
  await cs.save('k3', (await cs.load('k3'))!);
  await waitUntil(async () => (await store.transcripts.listRecent({ agent: 'a', limit: 10 })).length === 2);
  expect(await cs.load('k1')).toBeUndefined();
  expect(await cs.getToolResult('k1', id)).toBeUndefined();
  // Idle: 31 days later, at start, everything idle goes.
  now += 31 * 86_400_000;
  expect(await cs.applyRetention(['a'])).toBe(2);
  expect(await store.transcripts.listRecent({ limit: 10 })).toEqual([]);
});

test('stored tool results belong to one conversation and go with it (reset)', async () => {
  const cs = conversations();
  await cs.save('k1', fresh([user('one')]));
  const id = await cs.putToolResult('k1', 'big output');
  expect(id).toMatch(/^tr_[A-Za-z0-9_-]{16}$/);
  expect(await cs.getToolResult('k1', id)).toBe('big output');
  expect(await cs.getToolResult('k2', id)).toBeUndefined(); // another conversation: not found
  await cs.reset('k1');
  expect(await cs.getToolResult('k1', id)).toBeUndefined();
  expect(await cs.load('k1')).toBeUndefined();
  // A new conversation in the same place starts from seq 1 again.
  const c = fresh([user('again')]);
  await cs.save('k1', c);
  expect(await loadedElsewhere('k1')).toEqual(c.messages);
});

test('repairTranscript keeps the messages it does not change (so a save after it stays small)', () => {
  const a: Message = { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'x', input: {} }] };
  const u1 = user();
  const out = repairTranscript([u1, asst(), user(), a]);
  expect(out[0]).toBe(u1);
  expect(out[3]).toBe(a);
  expect(out[4]!.content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 't', is_error: true });
});

const waitUntil = (check: () => Promise<boolean>): Promise<boolean> => waitFor('the store to show it', check, { intervalMs: 5 });

test('a load repairs an unanswered tail from the cache, and a transcript inconsistent in the middle in full', async () => {
  const cs = conversations();
  const use: Message = { role: 'assistant', content: [{ type: 'tool_use', id: 't9', name: 'ls', input: {} }] };
  const c = fresh([user(), asst(), user(), use]);
  await cs.save('k', c); // as a run parked in a durable wait leaves it
  const cached = (await cs.load('k'))!;
  expect(cached.messages.at(-1)!.content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 't9', is_error: true });
  expect((await cs.load('k', { raw: true }))!.messages.at(-1)).toEqual(use);
  // Two user messages in a row early on (left by another version): read from the store, repaired throughout.
  const rows = [user('a'), user('b'), asst(), user(), asst(), user()].map((message, i) => ({ seq: i + 1, message }));
  await store.transcripts.write({ conversation: 'odd', agent: 'a', state: {}, now: 1, changes: [{ op: 'append', rows }] });
  const odd = (await conversations().load('odd'))!;
  expect(odd.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
});
