/**
 * The store: a repository per kind of data, with the operations the code needs, named and typed.
 * agent/ and bot/ see only these interfaces; each engine (./sqlite, ./postgres) holds its own SQL,
 * and no file outside an engine's folder imports a database driver. Every engine passes the same
 * contract suite (test/agent/store/contract.ts).
 *
 * Contract (every engine):
 * - Values marked `unknown` are JSON (no Dates, no Buffers, no undefined inside arrays) and come back
 *   as JSON; their owner validates them with zod when read (a store left by another version is
 *   outside data).
 * - Every call resolves after the data is durable in the engine (SQLite: committed in WAL;
 *   PostgreSQL: committed) and rejects with the engine's error otherwise; nothing is dropped quietly.
 * - Each method is one transaction. `checkpoint` is ONE transaction over transcripts and runs.
 * - The atomic operations (`events.claim`, `approvals.decideOnce`, `reminders.swap`: a firing is
 *   claimed by moving its rev) are single statements: of N concurrent callers, across processes
 *   sharing the store, exactly one wins.
 * - Lists come back in a stated order; "oldest first" means by creation, ties by insertion.
 * - Times are ms since the epoch (UTC), given by the caller (`now`), so tests can inject a clock.
 */

// ---------------------------------------------------------------------------------------------
// Transcripts: append-only rows, summaries as rows.

/** One message of a transcript with its position. Seqs grow by one per message, from 1. */
export interface TranscriptRow {
  seq: number;
  message: unknown;
}

export interface LoadedTranscript {
  agent: string;
  /** Small per-conversation state (todos, the API's last token count). */
  state: Record<string, unknown>;
  updatedAt: number;
  /**
   * What stands for every message up to and including `baseSeq` (the latest summary); [] and
   * baseSeq 0 when the conversation was never summarized. Rows at or below baseSeq are not read.
   */
  base: unknown[];
  baseSeq: number;
  /** The messages after baseSeq, ascending by seq. */
  rows: TranscriptRow[];
  /** Bumped by every write; `revision(conv)` reads it alone (a cached copy checks it is current). */
  revision: number;
}

/** One change to a transcript; a write applies its changes in the order given. */
export type TranscriptChange =
  /** New messages at the end; their seqs follow the last one stored. */
  | { op: 'append'; rows: TranscriptRow[] }
  /** New content for stored messages (a big tool result moved out, a merged user turn). */
  | { op: 'replace'; rows: TranscriptRow[] }
  /** Messages after `afterSeq` are gone (a failed run's unanswered tail). */
  | { op: 'truncate'; afterSeq: number }
  /** A summary: `base` stands for every message up to and including `throughSeq` from now on. */
  | { op: 'rebase'; throughSeq: number; base: unknown[] };

export interface TranscriptWrite {
  conversation: string;
  agent: string;
  state: Record<string, unknown>;
  changes: TranscriptChange[];
  now: number;
  /**
   * When given, the write applies only if the stored revision is this one (0: no transcript yet);
   * otherwise it rejects with a StoreConflictError and changes nothing.
   */
  expectRevision?: number;
}

export interface ConversationListing {
  conversation: string;
  agent: string;
  updatedAt: number;
  /** The seq of the newest message (how many messages it has had). */
  lastSeq: number;
}

export interface RetentionRule {
  agent: string;
  /** Keep at most this many conversations of the agent (the most recently active). */
  keep: number;
  /** Conversations idle since before this time are deleted (0: no age limit). */
  idleBefore: number;
}

export interface TranscriptRepo {
  load(conversation: string): Promise<LoadedTranscript | undefined>;
  /** The stored revision alone (undefined: no transcript). One indexed read. */
  revision(conversation: string): Promise<number | undefined>;
  /** Applies the changes and sets agent, state and updatedAt; returns the new revision. */
  write(w: TranscriptWrite): Promise<{ revision: number; created: boolean }>;
  /** The conversation's transcript, state and big tool results are gone (a reset). */
  delete(conversation: string): Promise<void>;
  /** Most recently active first; `agent` filters. Reads no message. */
  listRecent(opts: { agent?: string; limit: number; offset?: number }): Promise<ConversationListing[]>;
  /**
   * Deletes the agent's conversations beyond the rule (with their tool results); returns their keys.
   * Cost grows with what is deleted and with `keep`, not with how many conversations exist.
   */
  applyRetention(rule: RetentionRule): Promise<string[]>;
  /** A big tool result moved out of a transcript, under an id of that conversation. */
  putToolResult(conversation: string, id: string, content: string): Promise<void>;
  /** Only that conversation's own result; undefined for another conversation's id. */
  getToolResult(conversation: string, id: string): Promise<string | undefined>;
}

// ---------------------------------------------------------------------------------------------
// Runs: the record of a run in progress, and the turns accepted but not yet in a transcript.

export interface QueuedTurnRow {
  conversation: string;
  id: string;
  turn: unknown;
}

export interface RunRecordRow {
  conversation: string;
  record: unknown;
}

export interface RunRepo {
  /** Durable when it resolves. */
  enqueueTurn(conversation: string, id: string, turn: unknown, now: number): Promise<void>;
  dropTurn(conversation: string, id: string): Promise<void>;
  /** Every queued turn, oldest first. */
  queuedTurns(): Promise<QueuedTurnRow[]>;
  /** At most one record per conversation: a save replaces it. */
  saveRecord(conversation: string, record: unknown): Promise<void>;
  dropRecord(conversation: string): Promise<void>;
  records(): Promise<RunRecordRow[]>;
}

/** What a run writes at a checkpoint, in one transaction. */
export interface Checkpoint {
  transcript?: TranscriptWrite;
  /** The queued turn that is now part of the transcript. */
  dropTurn?: { conversation: string; id: string };
  /** The run record: a value saves it, null drops it, absent leaves it. */
  record?: { conversation: string; record: unknown | null };
}

// ---------------------------------------------------------------------------------------------
// Approvals and questions.

export interface ApprovalToken {
  token: string;
  choice: string;
}

export interface StoredApproval {
  id: string;
  conversation: string;
  /** The request as its owner wrote it (card, kind, expiry...), without the decision. */
  request: unknown;
  /** Set once, by decideOnce. */
  decision?: unknown;
  createdAt: number;
}

export interface ApprovalRepo {
  /** The request and its button tokens, in one transaction. Kept until `keepUntil`. */
  create(a: { id: string; conversation: string; request: unknown; tokens: ApprovalToken[]; createdAt: number; keepUntil: number }): Promise<void>;
  /** Undefined when unknown or past its keepUntil. */
  get(id: string, now: number): Promise<StoredApproval | undefined>;
  byToken(token: string, now: number): Promise<{ requestId: string; choice: string } | undefined>;
  /** Undecided request ids of a conversation, oldest first (expired ones included: the caller settles them). */
  pending(conversation: string, now: number): Promise<string[]>;
  /** Every undecided request, oldest first. */
  allPending(now: number): Promise<Array<{ id: string; conversation: string }>>;
  /** Replaces the request (card handles); never touches the decision. False when it is not stored. */
  update(id: string, request: unknown, keepUntil: number): Promise<boolean>;
  /** Records the decision if there is none yet; true for exactly one caller. */
  decideOnce(id: string, decision: unknown, now: number, keepUntil: number): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// The rest.

export type AllowlistKind = 'command' | 'tool';

export interface AllowlistRepo {
  /** Everything granted to the agent, in the order granted. */
  list(agent: string): Promise<Array<{ kind: AllowlistKind; value: string }>>;
  /** True when it was not there yet. */
  add(agent: string, kind: AllowlistKind, value: string, now: number): Promise<boolean>;
  remove(agent: string, kind: AllowlistKind, value: string): Promise<boolean>;
}

/** Platform event ids already handled (retries, redeliveries) and first clicks. */
export interface EventLedger {
  /** True the first time within `ttlMs`; false while the id is recorded. */
  claim(id: string, ttlMs: number, now: number): Promise<boolean>;
}

export interface MemoryRepo {
  /** A list's entries in the order they were added; `list` names it (an agent's, a conversation's). */
  list(list: string): Promise<Array<{ id: string; entry: unknown }>>;
  /** Adds or replaces the entry `id` of the list (a replaced entry keeps its place). */
  put(list: string, id: string, entry: unknown): Promise<void>;
  remove(list: string, id: string): Promise<boolean>;
}

export interface StoredReminder {
  id: string;
  conversation: string;
  dueAt: number;
  /** Bumped by every change; `swap` compares it. */
  rev: number;
  reminder: unknown;
}

export interface ReminderRepo {
  put(r: StoredReminder): Promise<void>;
  get(id: string): Promise<StoredReminder | undefined>;
  delete(id: string): Promise<boolean>;
  /** A conversation's reminders, soonest first. */
  byConversation(conversation: string): Promise<StoredReminder[]>;
  /** Every reminder, soonest first. */
  all(): Promise<StoredReminder[]>;
  /** Due at or before `now`, soonest first, at most `limit`. */
  due(now: number, limit: number): Promise<StoredReminder[]>;
  /** Writes `next` only if the stored rev is `expectedRev`; true for exactly one caller. */
  swap(id: string, expectedRev: number, next: StoredReminder): Promise<boolean>;
}

/** The one plain key-value use left: MCP tool listings. */
export interface CacheRepo {
  get(key: string): Promise<unknown>;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
}

export interface Store {
  readonly engine: 'sqlite' | 'postgres';
  /** Where it is, safe to print: `sqlite:///abs/path` or `postgres://user@host:port/db` (never a password). */
  readonly description: string;
  transcripts: TranscriptRepo;
  runs: RunRepo;
  approvals: ApprovalRepo;
  allowlists: AllowlistRepo;
  events: EventLedger;
  memory: MemoryRepo;
  reminders: ReminderRepo;
  cache: CacheRepo;
  /**
   * No other process runs turns on this store (a SQLite store opened exclusive by `gatehouse serve`):
   * what this process caches of transcripts and open questions cannot go stale behind its back.
   * Operator commands beside it only read, or decide approvals. Absent or false: ask the store.
   */
  readonly exclusive?: boolean;
  /**
   * One transaction over the transcript and the run's own rows. With a transcript write, resolves
   * with its new revision (a cached copy stays current without reading it back).
   */
  checkpoint(c: Checkpoint): Promise<void | { revision: number }>;
  close(): Promise<void>;
}

/** A transcript write whose expectRevision was not the stored one. */
export class StoreConflictError extends Error {
  override name = 'StoreConflictError';
  constructor(
    readonly conversation: string,
    readonly expected: number,
    readonly actual: number | undefined,
  ) {
    super(`the transcript of ${conversation} changed meanwhile (expected revision ${expected}, found ${actual ?? 'none'})`);
  }
}

/** A store that cannot be opened or used, said so an operator can fix it (never holds a password). */
export class StoreError extends Error {
  override name = 'StoreError';
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}
