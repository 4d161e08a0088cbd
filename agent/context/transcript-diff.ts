/**
 * What changed in a transcript since it was persisted, found by object identity, so a save costs
 * what changed and not what the conversation holds.
 *
 * Contract:
 * - A persisted message is deep-frozen (`freezeMessage`): changing one in place throws, so every
 *   change is a new message object, which the diff sees. Code that edits a transcript builds new
 *   messages (appendUserTurn, the context keeper) and may change the array itself freely.
 * - `diffTranscript(persisted, current)` returns the changes (agent/store/types.ts TranscriptChange)
 *   that turn the stored transcript into `current`, and the persisted state after them:
 *   append (the common case) / replace of new messages at the seqs of the ones they stand in for /
 *   truncate of a dropped tail / rebase when the front was summarized or dropped; when the shape is
 *   none of these (a message moved, one removed from the middle) everything is written again
 *   (rebase through the last seq, then every message appended).
 * - Applying the changes to the stored transcript and loading it gives back `current` (as JSON).
 * - A Persisted never changes once made, and stays usable after a newer one was made from it (a save
 *   that failed diffs from it again). A plain append shares its arrays with the newer state (pushed
 *   in place, `rowCount` marks each state's part), so a save's cost does not grow with the
 *   conversation; a second append onto the older state copies them instead.
 */
import type { TranscriptChange, TranscriptRow } from '../store/types.js';
import type { Message } from './messages.js';

/** The transcript as stored: the base (the latest summary) standing for seqs up to baseSeq, then rows. */
export interface Persisted {
  base: readonly Message[];
  baseSeq: number;
  /**
   * This state's rows are `rows[0, rowCount)`; the array may be longer, a newer state having appended
   * to it in place (read them with `rowsOf`).
   */
  rows: ReadonlyArray<{ seq: number; message: Message }>;
  rowCount: number;
  /** The seq of the newest stored message (baseSeq when there are no rows). */
  lastSeq: number;
  /** What is stored could not be read: the next save writes past all of it. */
  unreadable?: boolean;
}

export const EMPTY_PERSISTED: Persisted = { base: [], baseSeq: 0, rows: [], rowCount: 0, lastSeq: 0 };

/** A Persisted of these rows (a load, a test): its own array. */
export function persistedOf(base: readonly Message[], baseSeq: number, rows: ReadonlyArray<{ seq: number; message: Message }>): Persisted {
  return { base, baseSeq, rows, rowCount: rows.length, lastSeq: rows.length > 0 ? rows[rows.length - 1]!.seq : baseSeq };
}

/** A state's own rows (a copy only when a newer state appended to its array). */
function rowsOf(p: Persisted): ReadonlyArray<{ seq: number; message: Message }> {
  return p.rows.length === p.rowCount ? p.rows : p.rows.slice(0, p.rowCount);
}

/**
 * Arrays this module made and may push to in place: only the newest state over an array appends
 * to it (its count is the array's length); never a caller's array or EMPTY_PERSISTED's.
 */
const growable = new WeakSet<readonly unknown[]>();

export interface TranscriptDiff {
  changes: TranscriptChange[];
  /** The persisted state once the changes are written (its messages are `current`'s objects). */
  next: Persisted;
  /** The diff fell back to writing everything again. */
  rewrite: boolean;
}

export function diffTranscript(p: Persisted, current: readonly Message[]): TranscriptDiff {
  if (p.unreadable) return rewrite(p, current);
  const nb = p.base.length;
  const total = nb + p.rowCount;
  if (total === 0) return appendAll(p, current);
  // The common case, with no index built and nothing copied: everything stored is still there, in
  // place, and new messages follow (a frozen one among them was moved: the slow path sorts it out).
  if (current.length >= total && storedInPlace(p, current)) {
    let fresh = true;
    for (let i = total; i < current.length && fresh; i++) fresh = !Object.isFrozen(current[i]);
    if (fresh) return appendAll(p, current.slice(total), p);
  }
  const ownRows = rowsOf(p);
  const tracked = storedMessages(p);
  const pos = new Map<Message, number>();
  tracked.forEach((m, i) => pos.set(m, i));
  // The first message of `current` that is stored; what comes before it is new (a summary).
  if (current.length === 0 && nb === 0) {
    return {
      changes: [{ op: 'truncate', afterSeq: p.baseSeq }],
      next: { base: [], baseSeq: p.baseSeq, rows: [], rowCount: 0, lastSeq: p.baseSeq },
      rewrite: false,
    };
  }
  const first = current.findIndex((m) => pos.has(m));
  if (first === -1) return rewrite(p, current);
  const k = pos.get(current[first]!)!;
  // From there on, `current` walks the stored messages in order: each the same, or new in its place.
  const replaced: number[] = [];
  const appended: Message[] = [];
  for (let d = 0; first + d < current.length; d++) {
    const c = current[first + d]!;
    const j = k + d;
    if (j < tracked.length) {
      if (c === tracked[j]) continue;
      if (pos.has(c)) return rewrite(p, current);
      replaced.push(j);
    } else {
      if (pos.has(c)) return rewrite(p, current);
      appended.push(c);
    }
  }
  const end = k + (current.length - first); // stored index after the last one kept
  // The new front: what stands before the first stored row kept.
  let base: Message[] | undefined;
  let throughSeq = p.baseSeq;
  const baseTouched = replaced.some((j) => j < nb);
  if (k < nb) {
    // Part of the old base is kept (maybe changed), after new messages: it all becomes the new base.
    if (end < nb) return rewrite(p, current); // cut inside the base
    if (first > 0 || baseTouched || k > 0) base = current.slice(0, first + (nb - k));
  } else if (first > 0 || k > 0) {
    base = current.slice(0, first);
    throughSeq = k === nb ? p.baseSeq : ownRows[k - nb - 1]!.seq;
  }
  const changes: TranscriptChange[] = [];
  if (base) changes.push({ op: 'rebase', throughSeq, base });
  const rowsLeft = ownRows.slice(Math.max(0, k - nb)).map((r) => ({ ...r }));
  // rowsLeft[i] is stored index nb + max(0, k - nb) + i.
  const rowStart = nb + Math.max(0, k - nb);
  const replaceRows: TranscriptRow[] = [];
  for (const j of replaced) {
    if (j < nb) continue; // part of the new base
    const row = rowsLeft[j - rowStart]!;
    row.message = current[first + (j - k)]!;
    replaceRows.push({ seq: row.seq, message: row.message });
  }
  if (replaceRows.length > 0) changes.push({ op: 'replace', rows: replaceRows });
  const baseSeq = base ? throughSeq : p.baseSeq;
  let kept = rowsLeft;
  let lastSeq = p.lastSeq;
  if (end < tracked.length) {
    kept = rowsLeft.slice(0, end - rowStart);
    const afterSeq = kept.length > 0 ? kept[kept.length - 1]!.seq : baseSeq;
    changes.push({ op: 'truncate', afterSeq });
    lastSeq = afterSeq;
  }
  const appendRows = appended.map((message, i) => ({ seq: lastSeq + 1 + i, message }));
  if (appendRows.length > 0) {
    changes.push({ op: 'append', rows: appendRows });
    lastSeq += appendRows.length;
  }
  return {
    changes,
    next: owned({ base: base ?? p.base, baseSeq, rows: [...kept, ...appendRows], lastSeq }),
    rewrite: false,
  };
}

/** `added` after all of `p` (`keep`) or after nothing (a transcript stored for the first time). */
function appendAll(p: Persisted, added: readonly Message[], keep?: Persisted): TranscriptDiff {
  const rows = added.map((message, i) => ({ seq: p.lastSeq + 1 + i, message }));
  const changes: TranscriptChange[] = rows.length > 0 ? [{ op: 'append', rows }] : [];
  if (!keep) return { changes, next: owned({ base: p.base, baseSeq: p.baseSeq, rows, lastSeq: p.lastSeq + rows.length }), rewrite: false };
  if (rows.length === 0) return { changes, next: p, rewrite: false };
  // The newest state over its arrays pushes onto them (p keeps its count); an older one copies.
  const list = flat.get(p);
  const total = p.base.length + p.rowCount;
  const next: Persisted = {
    base: p.base,
    baseSeq: p.baseSeq,
    rows: extended(p.rows, p.rowCount, rows),
    rowCount: p.rowCount + rows.length,
    lastSeq: p.lastSeq + rows.length,
  };
  if (list && list.length >= total) flat.set(next, extended(list, total, added));
  return { changes, next, rewrite: false };
}

/** `items[0, count)` followed by `more`: in place when `items` is ours and holds nothing past count. */
function extended<T>(items: readonly T[], count: number, more: readonly T[]): readonly T[] {
  if (growable.has(items) && items.length === count) {
    (items as T[]).push(...more);
    return items;
  }
  const copy = items.slice(0, count).concat(more);
  growable.add(copy);
  return copy;
}

/** A Persisted over arrays made here (its rows may then grow in place). */
function owned(p: Omit<Persisted, 'rowCount'>): Persisted {
  const rows = p.rows.slice();
  growable.add(rows);
  return { ...p, rows, rowCount: rows.length };
}

function rewrite(p: Persisted, current: readonly Message[]): TranscriptDiff {
  const through = p.lastSeq;
  const rows = current.map((message, i) => ({ seq: through + 1 + i, message }));
  const changes: TranscriptChange[] = [{ op: 'rebase', throughSeq: through, base: [] }];
  if (rows.length > 0) changes.push({ op: 'append', rows });
  return { changes, next: owned({ base: [], baseSeq: through, rows, lastSeq: through + rows.length }), rewrite: true };
}

/**
 * `compute` of a message, remembered (weakly) for stored messages: they are frozen and never change,
 * so what is derived from one never goes stale. A message still being built is computed each time.
 */
export function perStoredMessage<T>(compute: (m: Message) => T): (m: Message) => T {
  const known = new WeakMap<Message, T>();
  return (m) => {
    if (known.has(m)) return known.get(m)!;
    const v = compute(m);
    if (isStored(m)) known.set(m, v);
    return v;
  };
}

/** A stored message: frozen (`freezeMessage`), so it never changes. */
export function isStored(m: Message): boolean {
  return Object.isFrozen(m) && Object.isFrozen(m.content);
}

/** Freezes a message and everything in it (a stored message is never changed in place). */
export function freezeMessage(m: Message): Message {
  deepFreeze(m);
  return m;
}

function deepFreeze(v: unknown): void {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const x of Object.values(v as Record<string, unknown>)) deepFreeze(x);
}

function storedInPlace(p: Persisted, current: readonly Message[]): boolean {
  // The flat list, when this process made it (every append keeps it): two contiguous arrays of
  // pointers. The rows are one object each, scattered in the heap: at thousands of messages reading
  // each row's message was most of this walk (cache misses, turn after turn).
  const nb = p.base.length;
  const total = nb + p.rowCount;
  const list = flat.get(p);
  if (list && list.length >= total) {
    for (let i = 0; i < total; i++) if (current[i] !== list[i]) return false;
    return true;
  }
  for (let i = 0; i < nb; i++) if (current[i] !== p.base[i]) return false;
  for (let i = 0; i < p.rowCount; i++) if (current[nb + i] !== p.rows[i]!.message) return false;
  return true;
}

/**
 * Flat message lists of persisted states: the first base + rowCount entries are the state's (like
 * the rows, a newer state may have appended to the same list in place).
 */
const flat = new WeakMap<Persisted, readonly Message[]>();

function storedMessages(p: Persisted): readonly Message[] {
  const nb = p.base.length;
  const total = nb + p.rowCount;
  const known = flat.get(p);
  if (known && known.length === total) return known;
  if (known && known.length > total) return known.slice(0, total);
  const list = new Array<Message>(total);
  for (let i = 0; i < nb; i++) list[i] = p.base[i]!;
  for (let i = 0; i < p.rowCount; i++) list[nb + i] = p.rows[i]!.message;
  growable.add(list);
  flat.set(p, list);
  return list;
}

/** The stored transcript as the model sees it: the base, then the rows (a new array, one native copy). */
export function messagesOf(p: Persisted): Message[] {
  return storedMessages(p).slice(0, p.base.length + p.rowCount);
}
