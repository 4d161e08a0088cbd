/**
 * Conversation store: transcripts by conversation key, with small per-conversation state (todos),
 * over the store's append-only TranscriptRepo (agent/store/types.ts).
 *
 * Contract:
 * - `load` returns a transcript that always satisfies the tool_use/tool_result invariant: a transcript
 *   left with unanswered tool_use blocks (a crash, a /stop) is repaired with error results, unless the
 *   caller resumes it (`load(key, { raw: true })`, used by the runner to continue a durable wait).
 * - A save writes what changed since the transcript was loaded or last saved (agent/context/transcript-diff.ts),
 *   so its cost does not grow with the conversation: messages it returns and saves are deep-frozen,
 *   and changing one in place throws (build a new message instead). Every write names the revision it
 *   started from, so a transcript changed meanwhile by another writer is never overwritten (the save
 *   rejects with StoreConflictError and the next load reads it afresh).
 * - The most recently used conversations (`cacheSize`, default 500) stay in memory: loading one reads
 *   only its revision, and the rows only when another writer changed it. With `soleWriter` (the
 *   store is exclusive to this process) a cached one is trusted and nothing is read; a write still
 *   names its revision, so a writer that was not expected is caught at save, never overwritten.
 *   A conversation not cached is read in one call.
 * - `checkpoint(key, conv, { dropTurn, record, fence })` is ONE store transaction: the transcript, the
 *   queued turn it now holds, the run record; with a fence, refused (FencedError) once it moved on.
 * - Retention (per agent, `retention(agent)`): conversations beyond the newest `maxConversations`, and
 *   those idle more than `maxIdleDays`, are deleted with their tool results; applied at most once a
 *   minute per agent (after a save) and at start (`applyRetention`), as one query each time.
 * - `reset` starts a new conversation in that place (the old transcript is deleted).
 * - Big tool results moved out of a transcript (agent/context/keeper.ts) are stored per conversation
 *   under an unguessable id: `getToolResult(key, id)` finds only that conversation's own. They are
 *   deleted with the conversation (reset or retention).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { Transcript, type Message, type ContentBlock } from './messages.js';
import { StoreConflictError, type Checkpoint, type Fence, type TranscriptRepo, type TranscriptWrite } from '../store/types.js';
import { diffTranscript, EMPTY_PERSISTED, freezeMessage, messagesOf, persistedOf, type Persisted } from './transcript-diff.js';
import { fallbackLog, type Log, type LogLevel, messageOf } from '../log.js';

export type StoredConversation = { agent: string; messages: Message[]; state: Record<string, unknown>; updatedAt: number };

export interface RetentionSettings {
  maxConversations: number;
  maxIdleDays: number;
}

export const DEFAULT_RETENTION: RetentionSettings = { maxConversations: 10_000, maxIdleDays: 365 };

export interface ConversationStoreOptions {
  transcripts: TranscriptRepo;
  /** The store's one-transaction checkpoint (a result with the new revision saves a read). */
  checkpoint(c: Checkpoint): Promise<void | { revision?: number }>;
  retention?(agent: string): RetentionSettings;
  cacheSize?: number;
  /** No other process writes these transcripts (Store.exclusive): a cached copy is current. */
  soleWriter?: boolean;
  now?(): number;
  log?: Log;
}

/** What this process knows of a stored transcript. */
interface Tracked {
  persisted: Persisted;
  revision: number;
  /**
   * All but the last few messages are known consistent (checked when read from the store, or saved
   * from a repaired load): a load then repairs only the tail, instead of walking the transcript.
   */
  checked: boolean;
}

/** How many trailing messages a load repairs when the rest is known consistent. */
const TAIL = 3;

type Entry = Tracked & { agent: string; state: Record<string, unknown>; updatedAt: number };

const RETENTION_EVERY_MS = 60_000;
const DAY_MS = 86_400_000;

export class ConversationStore {
  private readonly cache = new Map<string, Entry>();
  private readonly tracking = new WeakMap<StoredConversation, Tracked>();
  private readonly retentionAt = new Map<string, number>();
  private readonly cacheSize: number;

  constructor(private readonly opts: ConversationStoreOptions) {
    this.cacheSize = opts.cacheSize ?? 500;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** `revision`: the stored revision, read just before by the caller (null: none stored); saves reading it. */
  async load(key: string, opts: { raw?: boolean; revision?: number | null } = {}): Promise<StoredConversation | undefined> {
    let entry = this.cache.get(key);
    // Checked against the store unless this process is its only writer; not cached: one read.
    const stored = async () => (opts.revision !== undefined ? (opts.revision ?? undefined) : await this.opts.transcripts.revision(key));
    const revision = entry && !this.opts.soleWriter ? await stored() : entry?.revision;
    if (entry && revision === undefined) {
      this.cache.delete(key);
      return undefined;
    }
    if (entry && entry.revision === revision) {
      this.touch(key, entry);
    } else {
      entry = await this.read(key);
      if (!entry) return undefined;
    }
    // A repaired load is consistent throughout, so what is saved from it is too.
    const tracked: Tracked = { persisted: entry.persisted, revision: entry.revision, checked: opts.raw ? entry.checked : true };
    const messages = messagesOf(entry.persisted);
    const conv: StoredConversation = {
      agent: entry.agent,
      messages: opts.raw ? messages : entry.checked ? repairTail(messages) : repairTranscript(messages),
      state: structuredClone(entry.state),
      updatedAt: entry.updatedAt,
    };
    this.tracking.set(conv, tracked);
    return conv;
  }

  /** Reads the whole stored transcript (a cache miss); an unreadable one starts over, rows kept aside. */
  private async read(key: string) {
    const t = await this.opts.transcripts.load(key);
    if (!t) return undefined;
    const base = Transcript.safeParse(t.base);
    const rows = z.array(z.object({ seq: z.number(), message: Transcript.element })).safeParse(t.rows);
    if (!base.success || !rows.success) {
      // A corrupt entry must not wedge the conversation forever: start over, and say so in logs.
      // The next save writes past what is stored (rebase), so nothing unreadable is read again.
      this.log('warn', `[store] transcript for ${key} is unreadable; starting a new conversation`);
      const lastSeq = Math.max(t.baseSeq, ...t.rows.map((r) => r.seq));
      const entry = {
        persisted: { ...EMPTY_PERSISTED, baseSeq: t.baseSeq, lastSeq, unreadable: true },
        revision: t.revision,
        checked: true,
        agent: t.agent,
        state: {},
        updatedAt: t.updatedAt,
      };
      this.touch(key, entry);
      return undefined;
    }
    const persistedRows = rows.data.map((r) => ({ seq: r.seq, message: freezeMessage(r.message as Message) }));
    const persisted = persistedOf(
      base.data.map((m) => freezeMessage(m as Message)),
      t.baseSeq,
      persistedRows,
    );
    const all = messagesOf(persisted);
    const entry = {
      persisted,
      checked: isConsistent(all.slice(0, Math.max(0, all.length - TAIL))),
      revision: t.revision,
      agent: t.agent,
      state: t.state,
      updatedAt: t.updatedAt,
    };
    this.touch(key, entry);
    return entry;
  }

  async save(key: string, conv: StoredConversation): Promise<void> {
    await this.checkpoint(key, conv, {});
  }

  /**
   * One transaction: the transcript's changes (when `conv` is given), the queued turn `dropTurn` of
   * this conversation dropped, the run record saved (a value) or dropped (null).
   */
  async checkpoint(key: string, conv: StoredConversation | undefined, extra: { dropTurn?: string; record?: unknown | null; fence?: Fence }): Promise<void> {
    const c: Checkpoint = {
      ...(extra.fence ? { fence: extra.fence } : {}),
      ...(extra.dropTurn !== undefined ? { dropTurn: { conversation: key, id: extra.dropTurn } } : {}),
      ...(extra.record !== undefined ? { record: { conversation: key, record: extra.record } } : {}),
    };
    if (!conv) {
      if (c.dropTurn || c.record) await this.opts.checkpoint(c);
      return;
    }
    const now = this.now();
    let tracked = this.tracking.get(conv);
    if (!tracked) {
      // Not loaded through this store (a new conversation): it must not exist yet, unless a
      // corrupt one was set aside by load.
      const aside = this.cache.get(key);
      tracked = aside ? { persisted: aside.persisted, revision: aside.revision, checked: true } : { persisted: EMPTY_PERSISTED, revision: 0, checked: true };
    }
    const diff = diffTranscript(tracked.persisted, conv.messages);
    const write: TranscriptWrite = {
      conversation: key,
      agent: conv.agent,
      state: conv.state,
      changes: diff.changes,
      now,
      expectRevision: tracked.revision,
      ...(extra.fence ? { fence: extra.fence } : {}),
    };
    let revision: number | undefined;
    try {
      if (!c.dropTurn && !c.record) revision = (await this.opts.transcripts.write(write)).revision;
      else {
        const result = await this.opts.checkpoint({ ...c, transcript: write });
        // Both engines return the new revision; a checkpoint that does not costs one indexed read.
        revision = (result && typeof result === 'object' ? result.revision : undefined) ?? (await this.opts.transcripts.revision(key));
      }
    } catch (err) {
      if (err instanceof StoreConflictError) {
        this.cache.delete(key);
        this.tracking.delete(conv);
      }
      throw err;
    }
    for (const ch of diff.changes) {
      if (ch.op === 'append' || ch.op === 'replace') for (const r of ch.rows) freezeMessage(r.message as Message);
      else if (ch.op === 'rebase') for (const m of ch.base) freezeMessage(m as Message);
    }
    conv.updatedAt = now;
    const next: Tracked = { persisted: diff.next, revision: revision ?? 0, checked: tracked.checked };
    this.tracking.set(conv, next);
    if (revision === undefined) this.cache.delete(key);
    else this.touch(key, { ...next, agent: conv.agent, state: structuredClone(conv.state), updatedAt: now });
    this.maybeApplyRetention(conv.agent, now);
  }

  async reset(key: string, _agent?: string): Promise<void> {
    this.cache.delete(key);
    await this.opts.transcripts.delete(key);
  }

  /** Stores a big tool result for this conversation; returns its id (`tr_...`). */
  async putToolResult(key: string, content: string): Promise<string> {
    const id = `tr_${randomBytes(12).toString('base64url')}`;
    await this.opts.transcripts.putToolResult(key, id, content);
    return id;
  }

  /** A stored result of THIS conversation, or undefined (another conversation's id included). */
  getToolResult(key: string, id: string): Promise<string | undefined> {
    return this.opts.transcripts.getToolResult(key, id);
  }

  /** Applies each agent's retention now (at start); returns how many conversations were deleted. */
  async applyRetention(agents: readonly string[]): Promise<number> {
    let n = 0;
    for (const agent of agents) n += (await this.retain(agent, this.now())).length;
    return n;
  }

  private maybeApplyRetention(agent: string, now: number): void {
    if (!this.opts.retention) return;
    const last = this.retentionAt.get(agent);
    if (last !== undefined && now - last < RETENTION_EVERY_MS) return;
    this.retentionAt.set(agent, now);
    // In the background: a slow deletion never holds up a turn; a failure is tried again a minute later.
    this.retain(agent, now).catch((err: unknown) => this.log('warn', `[store] could not apply the retention of agent ${agent}: ${messageOf(err)}`));
  }

  private async retain(agent: string, now: number): Promise<string[]> {
    if (!this.opts.retention) return [];
    this.retentionAt.set(agent, now);
    const r = this.opts.retention(agent);
    const gone = await this.opts.transcripts.applyRetention({
      agent,
      keep: Math.max(1, r.maxConversations),
      idleBefore: r.maxIdleDays > 0 ? now - r.maxIdleDays * DAY_MS : 0,
    });
    for (const key of gone) this.cache.delete(key);
    if (gone.length > 0) this.log('info', `[store] retention of agent ${agent}: deleted ${gone.length} conversation(s)`);
    return gone;
  }

  private touch(key: string, entry: Entry): void {
    this.cache.delete(key);
    this.cache.set(key, entry);
    while (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
  }

  private log(level: LogLevel, msg: string): void {
    (this.opts.log ?? fallbackLog)(level, msg);
  }
}

/**
 * Answers every unanswered tool_use with an error result, so the transcript is valid for the API.
 * Also merges consecutive user messages (a user turn after a trailing tool_result message).
 * Messages it does not change are returned as they are (the same objects).
 */
export function repairTranscript(input: readonly Message[]): Message[] {
  if (isConsistent(input)) return input.slice();
  const messages = [...input]; // the caller's array is left as it was
  const out: Message[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    out.push(m);
    if (m.role !== 'assistant') continue;
    const uses = m.content.filter((b) => b.type === 'tool_use');
    if (uses.length === 0) continue;
    const next = messages[i + 1];
    const answered = new Set(next?.role === 'user' ? next.content.flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : [])) : []);
    const missing: ContentBlock[] = uses
      .filter((u) => u.type === 'tool_use' && !answered.has(u.id))
      .map((u) => ({
        type: 'tool_result' as const,
        tool_use_id: (u as { id: string }).id,
        content: 'This call was interrupted (the run was stopped or the bot restarted) and did not complete.',
        is_error: true,
      }));
    if (missing.length === 0) continue;
    if (next?.role === 'user') {
      messages[i + 1] = { role: 'user', content: [...missing, ...next.content] };
    } else {
      out.push({ role: 'user', content: missing });
    }
  }
  return mergeConsecutive(out);
}

/** repairTranscript of the last TAIL messages only (the rest is known consistent). */
function repairTail(messages: Message[]): Message[] {
  const k = messages.length - TAIL;
  if (k <= 0) return repairTranscript(messages);
  const tail = repairTranscript(messages.slice(k));
  if (tail[0] && messages[k - 1]!.role === tail[0].role) return repairTranscript(messages);
  if (tail.length === TAIL && tail.every((m, i) => m === messages[k + i])) return messages;
  return messages.slice(0, k).concat(tail);
}

/** Roles alternate and every tool_use is answered in the next message (checked without allocating). */
function isConsistent(messages: readonly Message[]): boolean {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (i > 0 && messages[i - 1]!.role === m.role) return false;
    if (m.role !== 'assistant') continue;
    const next = messages[i + 1];
    for (const b of m.content) {
      if (b.type !== 'tool_use') continue;
      if (!next) return false;
      let found = false;
      for (const r of next.content) if (r.type === 'tool_result' && r.tool_use_id === b.id) found = true;
      if (!found) return false;
    }
  }
  return true;
}

function mergeConsecutive(messages: Message[]): Message[] {
  const out: Message[] = [];
  for (const m of messages) {
    const last = out[out.length - 1];
    if (last && last.role === m.role) {
      // tool_results must come first in a user message.
      const content = [...last.content, ...m.content];
      content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
      out[out.length - 1] = { role: m.role, content };
    } else out.push(m);
  }
  return out;
}

/**
 * Appends a user turn, merging into a trailing user message (tool results) so roles alternate.
 * The merged message is a new object: the stored one is frozen.
 */
export function appendUserTurn(messages: Message[], content: ContentBlock[]): void {
  const last = messages[messages.length - 1];
  if (last && last.role === 'user') messages[messages.length - 1] = { role: 'user', content: [...last.content, ...content] };
  else messages.push({ role: 'user', content });
}
