/**
 * The transcript diff on its own: every shape of change, checked against a model of what the store
 * does with the changes (agent/store/types.ts TranscriptChange), so "load after save equals what was
 * saved" holds here before any engine is involved (test/agent/conversation-store.test.ts checks it
 * on a real store).
 */
import { appendUserTurn } from '../../agent/context/conversation-store.js';
import type { Message } from '../../agent/context/messages.js';
import type { TranscriptChange } from '../../agent/store/types.js';
import { diffTranscript, EMPTY_PERSISTED, freezeMessage, messagesOf, type Persisted } from '../../agent/context/transcript-diff.js';

/** What an engine keeps: the base through baseSeq, rows by seq. */
class ModelStore {
  base: unknown[] = [];
  baseSeq = 0;
  rows = new Map<number, unknown>();
  writes = 0;
  apply(changes: TranscriptChange[]): void {
    this.writes++;
    for (const c of changes) {
      if (c.op === 'append') {
        const last = Math.max(this.baseSeq, ...this.rows.keys());
        c.rows.forEach((r, i) => expect(r.seq).toBe(last + 1 + i));
        for (const r of c.rows) this.rows.set(r.seq, structuredClone(r.message));
      } else if (c.op === 'replace') {
        for (const r of c.rows) {
          expect(this.rows.has(r.seq)).toBe(true);
          this.rows.set(r.seq, structuredClone(r.message));
        }
      } else if (c.op === 'truncate') {
        expect(c.afterSeq).toBeGreaterThanOrEqual(this.baseSeq);
        for (const s of [...this.rows.keys()]) if (s > c.afterSeq) this.rows.delete(s);
      } else {
        expect(c.throughSeq).toBeGreaterThanOrEqual(this.baseSeq);
        this.base = structuredClone(c.base);
        this.baseSeq = c.throughSeq;
        for (const s of [...this.rows.keys()]) if (s <= c.throughSeq) this.rows.delete(s);
      }
    }
  }
  load(): unknown[] {
    return [...this.base, ...[...this.rows.entries()].sort((a, b) => a[0] - b[0]).map(([, m]) => m)];
  }
}

let n = 0;
const user = (text = `u${++n}`): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const asst = (text = `a${++n}`): Message => ({ role: 'assistant', content: [{ type: 'text', text }] });

/** Saves `current` over `p` into `store`; checks the round trip; returns the new persisted state with its messages frozen. */
function save(store: ModelStore, p: Persisted, current: Message[]): { next: Persisted; changes: TranscriptChange[]; rewrite: boolean } {
  const d = diffTranscript(p, current);
  store.apply(d.changes);
  expect(store.load()).toEqual(JSON.parse(JSON.stringify(current)));
  expect(messagesOf(d.next)).toEqual(current);
  messagesOf(d.next).forEach((m, i) => expect(m).toBe(current[i]));
  for (const m of current) freezeMessage(m);
  return d;
}

function start(count: number): { store: ModelStore; p: Persisted; msgs: Message[] } {
  const store = new ModelStore();
  const msgs: Message[] = [];
  for (let i = 0; i < count; i++) msgs.push(i % 2 === 0 ? user() : asst());
  const { next } = save(store, EMPTY_PERSISTED, msgs);
  return { store, p: next, msgs: [...msgs] };
}

test('a new transcript is one append from seq 1; nothing changed writes no change', () => {
  const { store, p, msgs } = start(3);
  expect([...store.rows.keys()]).toEqual([1, 2, 3]);
  const d = save(store, p, msgs);
  expect(d.changes).toEqual([]);
});

test('plain append writes only the new messages, at the following seqs', () => {
  const { store, p, msgs } = start(4);
  const added = [user(), asst()];
  const d = save(store, p, [...msgs, ...added]);
  expect(d.changes).toEqual([
    {
      op: 'append',
      rows: [
        { seq: 5, message: added[0] },
        { seq: 6, message: added[1] },
      ],
    },
  ]);
  expect(d.rewrite).toBe(false);
});

test('a merged user turn (appendUserTurn) replaces the trailing message at its seq, then appends', () => {
  const { store, p, msgs } = start(4);
  const tail: Message = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] };
  const { next } = save(store, p, [...msgs, tail]);
  const cur = messagesOf(next);
  appendUserTurn(cur, [{ type: 'text', text: 'and then?' }]);
  expect(cur[4]).not.toBe(tail);
  const reply = asst();
  const d = save(store, next, [...cur, reply]);
  expect(d.changes).toEqual([
    { op: 'replace', rows: [{ seq: 5, message: cur[4] }] },
    { op: 'append', rows: [{ seq: 6, message: reply }] },
  ]);
});

test('replacing messages in the middle (a big result moved out) writes only those', () => {
  const { store, p, msgs } = start(8);
  const cur = [...msgs];
  cur[2] = user('moved out');
  cur[5] = asst('changed');
  const d = save(store, p, cur);
  expect(d.changes).toEqual([
    {
      op: 'replace',
      rows: [
        { seq: 3, message: cur[2] },
        { seq: 6, message: cur[5] },
      ],
    },
  ]);
});

test('a dropped tail is a truncate after the last message kept', () => {
  const { store, p, msgs } = start(6);
  const d = save(store, p, msgs.slice(0, 4));
  expect(d.changes).toEqual([{ op: 'truncate', afterSeq: 4 }]);
  // Appending after the truncate continues from there.
  const more = [user()];
  const d2 = save(store, d.next, [...msgs.slice(0, 4), ...more]);
  expect(d2.changes).toEqual([{ op: 'append', rows: [{ seq: 5, message: more[0] }] }]);
});

test('a replaced last message plus a dropped tail', () => {
  const { store, p, msgs } = start(6);
  const x = user('x');
  const d = save(store, p, [...msgs.slice(0, 3), x]);
  expect(d.changes).toEqual([
    { op: 'replace', rows: [{ seq: 4, message: x }] },
    { op: 'truncate', afterSeq: 4 },
  ]);
});

test('truncating everything', () => {
  const { store, p } = start(3);
  const d = save(store, p, []);
  expect(d.changes).toEqual([{ op: 'truncate', afterSeq: 0 }]);
});

test('a summary in front of the kept messages is a rebase through the last one summarized', () => {
  const { store, p, msgs } = start(10);
  const summary = user('[Summary] ...');
  const cur = [summary, ...msgs.slice(6)];
  const d = save(store, p, cur);
  expect(d.changes).toEqual([{ op: 'rebase', throughSeq: 6, base: [summary] }]);
  expect(d.next.baseSeq).toBe(6);
  // Then the common case again: appends at 11.
  const reply = asst();
  const d2 = save(store, d.next, [...cur, reply]);
  expect(d2.changes).toEqual([{ op: 'append', rows: [{ seq: 11, message: reply }] }]);
});

test('a summary merged into the first kept user message (the context keeper) stands for it too', () => {
  const { store, p, msgs } = start(10);
  const merged: Message = { role: 'user', content: [{ type: 'text', text: '[Summary] ...' }, ...msgs[6]!.content] };
  const d = save(store, p, [merged, ...msgs.slice(7)]);
  expect(d.changes).toEqual([{ op: 'rebase', throughSeq: 7, base: [merged] }]);
});

test('a second summary replaces the first one, keeping what follows', () => {
  const { store, p, msgs } = start(10);
  const s1 = user('[Summary 1]');
  const d1 = save(store, p, [s1, ...msgs.slice(4)]);
  const cur = [...messagesOf(d1.next), user(), asst(), user(), asst()];
  const d2 = save(store, d1.next, cur);
  const s2 = user('[Summary 2]');
  const d3 = save(store, d2.next, [s2, ...cur.slice(7)]);
  expect(d3.changes).toEqual([{ op: 'rebase', throughSeq: 10, base: [s2] }]);
  expect(store.baseSeq).toBe(10);
});

test('messages dropped from the front with no summary: a rebase with an empty base', () => {
  const { store, p, msgs } = start(6);
  const d = save(store, p, msgs.slice(2));
  expect(d.changes).toEqual([{ op: 'rebase', throughSeq: 2, base: [] }]);
});

test('front summarized, a middle message replaced, and new ones appended, in one save', () => {
  const { store, p, msgs } = start(10);
  const s = user('[Summary]');
  const changed = asst('changed');
  const added = user();
  const cur = [s, ...msgs.slice(5, 7), changed, ...msgs.slice(8), added];
  const d = save(store, p, cur);
  expect(d.changes).toEqual([
    { op: 'rebase', throughSeq: 5, base: [s] },
    { op: 'replace', rows: [{ seq: 8, message: changed }] },
    { op: 'append', rows: [{ seq: 11, message: added }] },
  ]);
});

test('the base itself changed (the summary message edited): the base is written again', () => {
  const { store, p, msgs } = start(8);
  const s = user('[Summary]');
  const d1 = save(store, p, [s, ...msgs.slice(4)]);
  const s2 = user('[Summary, edited]');
  const d2 = save(store, d1.next, [s2, ...msgs.slice(4)]);
  expect(d2.changes).toEqual([{ op: 'rebase', throughSeq: 4, base: [s2] }]);
});

test('the base dropped entirely', () => {
  const { store, p, msgs } = start(8);
  const s = user('[Summary]');
  const d1 = save(store, p, [s, ...msgs.slice(4)]);
  const d2 = save(store, d1.next, msgs.slice(4));
  expect(d2.changes).toEqual([{ op: 'rebase', throughSeq: 4, base: [] }]);
});

test('unrecognizable shapes (moved, removed from the middle, all new) rewrite everything, and still round-trip', () => {
  for (const mk of [
    (m: Message[]) => [m[1]!, m[0]!, ...m.slice(2)], // moved
    (m: Message[]) => [...m.slice(0, 2), ...m.slice(3)], // one removed from the middle
    (m: Message[]) => [m[0]!, m[2]!, m[1]!], // reordered
    () => [user(), asst()], // all new
    (m: Message[]) => [...m, m[0]!], // a stored one again at the end
  ]) {
    const { store, p, msgs } = start(6);
    const cur = mk(msgs);
    const d = save(store, p, cur);
    expect(d.rewrite).toBe(true);
    expect(d.changes[0]).toEqual({ op: 'rebase', throughSeq: 6, base: [] });
    // And the next append is plain again.
    const added = user();
    const d2 = save(store, d.next, [...cur, added]);
    expect(d2.changes).toEqual([{ op: 'append', rows: [{ seq: 6 + cur.length + 1, message: added }] }]);
  }
});

test('a stored message is frozen: changing it in place throws instead of being lost', () => {
  const { msgs } = start(2);
  const m = msgs[0]!;
  expect(() => m.content.push({ type: 'text', text: 'x' })).toThrow(TypeError);
  expect(() => {
    (m.content[0] as { text: string }).text = 'changed';
  }).toThrow(TypeError);
  expect(() => {
    (m as { role: string }).role = 'assistant';
  }).toThrow(TypeError);
});

/** A repeatable random integer below k. */
function seeded(seed: number): (k: number) => number {
  return (k) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % k;
  };
}

test('random sequences of edits always round-trip, and plain appends stay appends', () => {
  const rnd = seeded(7);
  for (let round = 0; round < 40; round++) {
    const store = new ModelStore();
    let p = EMPTY_PERSISTED;
    let cur: Message[] = [];
    for (let step = 0; step < 25; step++) {
      const next = [...cur];
      const kind = rnd(7);
      if (kind <= 2 || next.length < 3) next.push(rnd(2) ? user() : asst(), user());
      else if (kind === 3) next[rnd(next.length)] = asst('edited');
      else if (kind === 4) next.splice(next.length - 1 - rnd(2), 1 + rnd(2));
      else if (kind === 5) next.splice(0, 1 + rnd(next.length - 1), user('[Summary]'));
      else next.splice(1 + rnd(next.length - 1), 1);
      const d = save(store, p, next);
      if (kind <= 2 || cur.length < 3) expect(d.changes.map((c) => c.op)).toEqual(['append']);
      p = d.next;
      cur = next;
    }
  }
});

test('a state stays as it was after a newer one was made from it: a failed save diffs from it again', () => {
  const { store, p, msgs } = start(4);
  const [m5, m6] = [user(), asst()];
  // The save of m5 "fails": its result is dropped, the store is unchanged, p is still the truth.
  const lost = diffTranscript(p, [...msgs, m5]);
  expect(messagesOf(lost.next)).toEqual([...msgs, m5]);
  expect(messagesOf(p)).toEqual(msgs);
  const d = save(store, p, [...msgs, m6]);
  expect(d.changes).toEqual([{ op: 'append', rows: [{ seq: 5, message: m6 }] }]);
  expect(messagesOf(p)).toEqual(msgs);
  expect(messagesOf(lost.next)).toEqual([...msgs, m5]);
  // Both newer states go on appending without seeing each other's messages.
  const m7 = user();
  expect(messagesOf(save(store, d.next, [...msgs, m6, m7]).next)).toEqual([...msgs, m6, m7]);
  expect(diffTranscript(lost.next, [...msgs, m5, m7]).changes).toEqual([{ op: 'append', rows: [{ seq: 6, message: m7 }] }]);
});

test('random edits with failed saves in between always round-trip from the state last stored', () => {
  const rnd = seeded(11);
  for (let round = 0; round < 40; round++) {
    const store = new ModelStore();
    let p = EMPTY_PERSISTED;
    let cur: Message[] = [];
    const kept: Array<{ p: Persisted; messages: Message[] }> = [];
    for (let step = 0; step < 30; step++) {
      const next = [...cur];
      const kind = rnd(6);
      if (kind <= 3 || next.length < 3) next.push(rnd(2) ? user() : asst(), user());
      else if (kind === 4) next[rnd(next.length)] = asst('edited');
      else next.splice(0, 1 + rnd(next.length - 1), user('[Summary]'));
      if (rnd(3) === 0) {
        // A save that failed: its state is made (and may be kept by nobody), the store not written.
        const failed = diffTranscript(p, next);
        for (const m of next) freezeMessage(m);
        kept.push({ p: failed.next, messages: next });
        continue;
      }
      const d = save(store, p, next);
      kept.push({ p: d.next, messages: next });
      p = d.next;
      cur = next;
    }
    // Every state made along the way still holds exactly its own messages.
    for (const k of kept) expect(messagesOf(k.p)).toEqual(k.messages);
  }
});
