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
 * - Fencing (`leases`): a write given a `fence` (transcript writes, checkpoints, run records) is
 *   refused with FencedError, changing nothing, once a later `take` moved the conversation's epoch
 *   on; the check is in the write's own statement or transaction.
 */

import type { Log } from '../log.js';

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
  /** When given, the write applies only while the fence holds; otherwise FencedError, nothing changed. */
  fence?: Fence;
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

/**
 * The platform event a turn comes from, claimed in the ledger (EventLedger) in the same transaction
 * as the turn is stored: a crash cannot leave the event claimed and its turn lost (a redelivery on
 * another replica would then be dropped as a duplicate), nor store a redelivered one twice.
 */
export interface EventClaim {
  event: string;
  ttlMs: number;
}

export interface RunRepo {
  /**
   * Durable when it resolves. With `claim`: stored only when the event was not claimed yet (true),
   * else nothing is written (false); the claim and the turn commit together.
   */
  enqueueTurn(conversation: string, id: string, turn: unknown, now: number, claim?: EventClaim): Promise<boolean>;
  dropTurn(conversation: string, id: string): Promise<void>;
  /** Every queued turn, oldest first. */
  queuedTurns(): Promise<QueuedTurnRow[]>;
  /**
   * At most one record per conversation: a save replaces it. With a fence, it saves only while the
   * fence holds (FencedError otherwise, nothing changed), checked in the same statement/transaction.
   */
  saveRecord(conversation: string, record: unknown, fence?: Fence): Promise<void>;
  dropRecord(conversation: string, fence?: Fence): Promise<void>;
  records(): Promise<RunRecordRow[]>;
  /** One read: the conversation's run record, and the queued turn `turnId` (undefined: not stored). */
  pending(conversation: string, turnId?: string): Promise<{ record?: unknown; turn?: unknown }>;
}

/** What a run writes at a checkpoint, in one transaction. */
export interface Checkpoint {
  /** When given, nothing is written unless it holds (FencedError), checked in the same transaction. */
  fence?: Fence;
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

/** `egress`: a `host:port` a boxed command may reach ("Always for this host", agent/egress/approvals.ts). */
export type AllowlistKind = 'command' | 'tool' | 'egress';

export interface AllowlistRepo {
  /** Everything granted to the agent, in the order granted. */
  list(agent: string): Promise<Array<{ kind: AllowlistKind; value: string }>>;
  /** True when it was not there yet. */
  add(agent: string, kind: AllowlistKind, value: string, now: number): Promise<boolean>;
  remove(agent: string, kind: AllowlistKind, value: string): Promise<boolean>;
}

/** One running total a model call reserves against (agent/budget/ names the keys). */
export interface SpendLine {
  /** e.g. `agent:ops:day:2026-12-02:usd`; the unit is the key's business. */
  key: string;
  /** Integer, in the key's unit (micro-USD or tokens). */
  amount: number;
  /**
   * Integer; the reservation is refused if used + reserved + amount would exceed it plus what
   * approvals raised the total by (`raise`), but never past `cap`.
   */
  limit: number;
  /** The ceiling no raise passes (a soft limit's hard one); absent: `limit` (nothing raises it). */
  cap?: number;
  /** ms since the epoch when this total's period ends (the row may then be purged); absent: never. */
  resetsAt?: number | undefined;
}

export interface SpendTotal {
  used: number;
  reserved: number;
}

/**
 * Spend totals (issue 24). `reserve` is all-or-nothing over its lines, and atomic against every
 * other caller on the store (replicas included): N parallel reservations never take a total past
 * its limit. `settle` moves a reservation to its real use.
 */
export interface SpendRepo {
  /**
   * Granted: every line added to `reserved`. Refused: nothing changed; `key` is the first line over,
   * `raised` what approvals have added to its limit so far.
   */
  reserve(lines: SpendLine[], now: number): Promise<{ ok: true } | { ok: false; key: string; total: SpendTotal; raised: number }>;
  /** Per line: `reserved -= amount`, `used += used` (one transaction). */
  settle(lines: Array<{ key: string; amount: number; used: number }>, now: number): Promise<void>;
  /** Totals of the keys asked that exist. */
  totals(keys: string[]): Promise<Map<string, SpendTotal>>;
  /**
   * Sets what a total's limit is raised by to `to`, only if it is `from` now (an approved soft
   * limit: two approvals of the same step raise it once). True when this call changed it.
   */
  raise(line: Pick<SpendLine, 'key' | 'resetsAt'>, from: number, to: number, now: number): Promise<boolean>;
  /** Deletes the totals whose period ended at or before `now` (the store's sweep); returns how many. */
  purge(now: number): Promise<number>;
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
  /**
   * Claims what is due at or before `now` (soonest first, at most `limit` looked at): each row for
   * which `next` returns a value is moved to it (its rev must differ) and returned with what it was.
   * Of concurrent callers, across processes sharing the store, each row is claimed by one only:
   * PostgreSQL locks the rows it looks at (`FOR UPDATE SKIP LOCKED`, so callers take disjoint
   * rows), SQLite compares the rev of each (`swap`). `next` is called before the claim commits.
   */
  claimDue(
    now: number,
    limit: number,
    next: (r: StoredReminder) => StoredReminder | undefined,
  ): Promise<Array<{ before: StoredReminder; after: StoredReminder }>>;
}

// ---------------------------------------------------------------------------------------------
// Fencing: a claim on a conversation, numbered by an epoch that only grows.

/** A claim on a conversation: writes carrying it apply only while its epoch is the current one. */
export interface Fence {
  conversation: string;
  /** Who claimed it (a replica id: hostname:pid:random, or GATEHOUSE_REPLICA_ID). */
  owner: string;
  epoch: number;
}

export interface LeaseRepo {
  /**
   * Claims the conversation for `owner`: its epoch goes up by one (from 1), so every earlier fence
   * of it, whoever holds it, stops holding. One statement; of N concurrent takes each gets its own
   * epoch and only the last holds. A take waits for writes in flight under the previous fence.
   */
  take(conversation: string, owner: string, now: number): Promise<Fence>;
  /** Whether the fence is still the conversation's current claim. One indexed read. */
  holds(fence: Fence): Promise<boolean>;
  /** The current claim (undefined: never taken). */
  current(conversation: string): Promise<Fence | undefined>;
}

/** The one plain key-value use left: MCP tool listings. */
export interface CacheRepo {
  get(key: string): Promise<unknown>;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Signals: small wake-ups between the processes sharing the store.

/**
 * Contract (every engine):
 * - A signal says "look at the store again": the store is the truth, the payload only names what
 *   changed (a request id, an agent). Topics match TOPIC_PATTERN; a payload is at most
 *   MAX_SIGNAL_PAYLOAD bytes of UTF-8 (PostgreSQL's NOTIFY limit is 8000); more rejects.
 * - `publish` tells every subscriber of the topic in every process sharing the store, this one
 *   included, at most once each per publish; it resolves once sent (SQLite: delivered). It never
 *   waits for a subscriber; one that throws is its own problem. Order between publishes is not
 *   promised.
 * - A signal may be missed (PostgreSQL: while the listening connection is down, or before it is
 *   first up). Every time one may have been, `onResync` listeners are called after signals flow
 *   again: they re-read what they care about. Signals never arrive before the data they name is
 *   committed, when the publisher published after its write resolved.
 * - `ready()` resolves once signals from any process reach this one's subscribers (PostgreSQL:
 *   listening); the first subscribe or onResync starts that, and an onResync follows it.
 * - `live()` says whether they reach it now: false before that and from the moment a loss is seen
 *   until signals flow again, when it turns true in the same tick as the onResync listeners are
 *   called. (A connection lost silently is seen within the ping timeout: until then it says true.)
 * - SQLite: one process per store, so signals stay in the process (delivered synchronously by
 *   `publish`) and never need a resync. PostgreSQL: LISTEN/NOTIFY on one dedicated connection
 *   (not a pooled one), reconnected with backoff after a loss, then LISTEN again, then a resync.
 */
export interface Signals {
  publish(topic: string, payload: string): Promise<void>;
  subscribe(topic: string, fn: (payload: string) => void): () => void;
  onResync(fn: () => void): () => void;
  ready(): Promise<void>;
  live(): boolean;
}

export const TOPIC_PATTERN = /^[a-z][a-z0-9_.-]{0,40}$/;
export const MAX_SIGNAL_PAYLOAD = 1000;

// ---------------------------------------------------------------------------------------------
// Leadership: which process holds what only one process may hold.

/**
 * A role only one process sharing the store may hold at a time (the platform connections only one
 * client may keep open: Telegram long polling, Slack Socket Mode, the Discord gateway).
 *
 * Contract:
 * - SQLite: always leads (one process per store file, enforced by its lock); `onChange` never fires.
 * - PostgreSQL: a session advisory lock on a connection of its own (not pooled: the lock lives and
 *   dies with that connection). Not leading, it tries again every `retryEveryMs` and at once when the
 *   holder says it released (NOTIFY). A holder whose connection fails or whose heartbeat goes
 *   unanswered stops leading at once (`onChange(false)`), before the server may hand the lock to
 *   another; a killed holder's lock goes with its connection, so a standby takes over within
 *   `retryEveryMs` of the server noticing.
 * - `start()` resolves after the first attempt (`leading` says its outcome) and never rejects: a
 *   database that cannot be reached means "not leading, trying again".
 * - `release()` stops trying and gives the role up (unlock, then NOTIFY so a standby takes it at
 *   once); `onChange(false)` fires first if it was leading. Idempotent.
 */
export interface Leadership {
  readonly role: string;
  readonly leading: boolean;
  /** Every change of `leading`, in order; returns the unsubscribe. */
  onChange(fn: (leading: boolean) => void): () => void;
  start(): Promise<void>;
  release(): Promise<void>;
}

export interface LeadershipOptions {
  /** How often a standby tries to take the role, and a holder checks its connection (default 2 s). */
  retryEveryMs?: number;
  log?: Log;
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
  spend: SpendRepo;
  /** Wake-ups between the processes sharing the store (see Signals). */
  signals: Signals;
  leases: LeaseRepo;
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
  /**
   * Resolves when the engine answers a trivial query (readiness: /readyz), rejects otherwise; never
   * retries, and gives up after `timeoutMs` (default 2 s).
   */
  ping(timeoutMs?: number): Promise<void>;
  /** The role named `role` (see Leadership); one object per call, each with its own connection. */
  leadership(role: string, opts?: LeadershipOptions): Leadership;
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

/** A write refused because its fence no longer holds: another process claimed the conversation since. */
export class FencedError extends StoreError {
  override name = 'FencedError';
  constructor(
    readonly fence: Fence,
    /** The conversation's epoch now (undefined: no claim stored). */
    readonly current: number | undefined,
  ) {
    super(`lost conversation ${fence.conversation} to another replica (epoch ${fence.epoch}, now ${current ?? 'none'})`, 'FENCED');
  }
}
