/**
 * The owner fast path of the replicas' turn queue (./turn-queue.ts): a replica that stores a turn
 * for a conversation nobody holds takes the conversation in the SAME statement and runs its turns
 * from a lane in its own process, with no pg-boss job, no NOTIFY and no fetch.
 *
 * Contract:
 * - Holding: `leases.holder` is the holder's liveness tag (one per process). Taking a conversation
 *   bumps its epoch (the fence, as leases.take) and sets the holder, in the statement that stores
 *   the turn (`enqueue`) or in the pg-boss fetch (`TAKE_SQL`, the hand-over path). A conversation
 *   is taken only when it has no holder or its holder is dead (`aliveSql`); a live holder's
 *   conversation is never taken, so one replica at a time runs it, whichever path its turns came in.
 * - A turn stored on the fast path locks the lease row and bumps `leases.stored` in its statement;
 *   the holder lets go in the statement that reads no turn, and only if `stored` is what that
 *   statement's snapshot saw (re-checked on the row's latest version): the release either sees the
 *   turn or comes first, and then the storing replica takes the conversation itself. A turn stored
 *   otherwise gets a pg-boss job. A turn is never stranded.
 * - A lane runs what the store holds, oldest first (queued_turns.ord), re-read before each batch,
 *   so turns stored on any replica run in the order they were stored, each once per delivery: the
 *   run drops its turn in its checkpoint. The statement that takes the conversation is the first
 *   read when nothing else was stored for it (no earlier turn, no run record): the lane starts with
 *   that one turn. Each read also returns the transcript's revision, handed to the batch's first run
 *   (`delivery.revision`), so its load does not read it again.
 * - A run that posted its outbox leaves its record to the lane (`delivery.dropRecordLater`): the
 *   next read drops it under the hold, or a statement of its own before another turn or task runs,
 *   or when the lane ends; a crash before that posts the answer again, as before a drop of its own. A fresh lane first continues the conversation's stored
 *   run record (`hooks.takeover`: a dead holder's run, or a parked one). Each read also checks the
 *   hold: a lane whose conversation was taken (its holder looked dead) stops after its turn,
 *   whose writes its fence refuses.
 * - Liveness: the tag is the application_name of the queue's LISTEN session, which also writes a
 *   beat every few seconds; a holder is alive while that session is connected AND its beat is
 *   younger than `staleSeconds` (a SIGKILL is seen at once, a SIGSTOP or a partition after that).
 *   Survivors `sweep` for dead holders and send their conversations a pg-boss job each (one id per
 *   conversation and epoch, so any number of survivors send one), whose fetch takes them over.
 * - `handBack()` (close) releases every held conversation with its fence moved on (a run still in
 *   progress here can no longer write) and returns them, for the queue to send each a job.
 */
import { randomBytes } from 'node:crypto';
import type { DeliveryHooks, TurnHandler } from '../../run/turn-queue.js';
import type { QueuedTurn, Turn } from '../../run/turn.js';
import { FencedError, type Fence } from '../types.js';
import { writePartsFenced } from './run-parts.js';
import { dec, enc, num, type Db } from './db.js';
import { MAX_DELIVERIES } from './turn-jobs.js';
import { fallbackLog, type Log, type LogLevel, messageOf } from '../../log.js';

export const newHolderTag = (): string => `gatehouse-holder-${randomBytes(8).toString('hex')}`;

/** SQL: the holder named by `col` is alive (its liveness session is connected and its beat fresh). */
export function aliveSql(col: string, staleSeconds: number): string {
  return `(EXISTS (SELECT 1 FROM replica_beats b WHERE b.tag = ${col} AND b.beat_at > now() - interval '${Math.ceil(staleSeconds)} seconds')
    AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = ${col}))`;
}

/** SQL: the lease row `l` may be taken by EXCLUDED.holder (nobody holds it, or a dead replica). */
const freeSql = (staleSeconds: number) => `(l.holder IS NULL OR (l.holder <> EXCLUDED.holder AND NOT ${aliveSql('l.holder', staleSeconds)}))`;

/** SQL: the upsert of a lease that takes it when free and otherwise leaves it as it is (it locks it either way). */
export function takeSql(rows: string, staleSeconds: number): string {
  const free = freeSql(staleSeconds);
  return `INSERT INTO leases AS l (conversation, owner, epoch, taken_at, holder) ${rows}
    ON CONFLICT (conversation) DO UPDATE SET
      owner = CASE WHEN ${free} THEN EXCLUDED.owner ELSE l.owner END,
      epoch = CASE WHEN ${free} THEN l.epoch + 1 ELSE l.epoch END,
      taken_at = CASE WHEN ${free} THEN EXCLUDED.taken_at ELSE l.taken_at END,
      holder = CASE WHEN ${free} THEN EXCLUDED.holder ELSE l.holder END,
      stored = l.stored + 1
    RETURNING conversation, holder, epoch`;
}

/**
 * SQL for the statement that stores a turn and takes the conversation: whether nothing else is stored
 * for it (its snapshot does not see the turn it stores), and its transcript revision.
 */
const FIRST_BATCH_SQL = `NOT EXISTS (SELECT 1 FROM queued_turns WHERE conversation = $1) AND NOT EXISTS (SELECT 1 FROM run_records WHERE conversation = $1) AS alone,
         (SELECT revision FROM conversations WHERE conversation = $1) AS revision`;

export interface OwnerLanesOptions {
  db: Db;
  /** This process's liveness tag (the LISTEN session's application_name). */
  tag: string;
  /** The replica id fences name. */
  owner: string;
  staleSeconds: number;
  parse(value: unknown): Turn | undefined;
  settled?(conversation: string): boolean;
  handler(): TurnHandler | undefined;
  hooks(): DeliveryHooks;
  /** A turn was handled (or dropped) by a lane here. */
  handled(turnId: string): void;
  /** A lane ended (`size()` went down): the queue's drain loops look again. */
  ended?(): void;
  now?(): number;
  log?: Log;
}

interface Lane {
  conversation: string;
  fence: Fence;
  /** Read the run record on the first read (a fresh hold from `enqueue`). */
  readRecord: boolean;
  /** A record the fetch read under this hold, to continue first. */
  record?: unknown;
  /** The first batch, read by the statement that took the conversation (enqueue): no read needed. */
  first?: Batch;
  /** A run here posted its outbox: the next read (or, before another turn, a statement) drops its record. */
  dropRecord: boolean;
  again: boolean;
  stop: boolean;
  tasks: Array<{ run: () => Promise<void>; abandon: () => void }>;
  attempts: Map<string, number>;
  done: Promise<void>;
}

interface Stored {
  id: string;
  turn: string;
}

interface Batch {
  held: boolean;
  released: boolean;
  record?: unknown;
  turns: Stored[];
  /** The conversation's transcript revision as the read saw it (null: none stored). */
  revision: number | null;
}

export class OwnerLanes {
  private readonly lanes = new Map<string, Lane>();
  private closed = false;

  constructor(private readonly opts: OwnerLanesOptions) {}

  /**
   * Stores the turn in ONE statement that also takes the conversation when nobody holds it.
   * Resolves false when the claimed event was taken already (nothing stored).
   */
  async enqueue(conversation: string, queued: QueuedTurn, nonce: string): Promise<boolean> {
    const { db, tag, owner, staleSeconds } = this.opts;
    const now = (this.opts.now ?? Date.now)();
    const claim = queued.claim;
    let r;
    if (claim) {
      r = await db.query(
        'queue a turn',
        'once',
        `WITH c AS (
           INSERT INTO events AS e (id, expires_at, claimer) VALUES ($7, $8, $9)
           ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at, claimer = EXCLUDED.claimer WHERE e.expires_at <= $4
           RETURNING 1 AS claimed
         ), t AS (
           INSERT INTO queued_turns (conversation, id, turn, created_at) SELECT $1, $2, $3, $4 FROM c ON CONFLICT (conversation, id) DO NOTHING
         ), h AS (${takeSql('SELECT $1::text, $5::text, 1, $4::bigint, $6::text FROM c', staleSeconds)})
         SELECT holder, epoch, ${FIRST_BATCH_SQL} FROM h`,
        [conversation, queued.id, enc(queued.turn), now, owner, tag, claim.event, now + claim.ttlMs, nonce],
        async (c) => {
          // A commit lost in flight: ours when the ledger holds our nonce (the lease is then read back).
          const v = await db.q(c, 'SELECT 1 FROM events WHERE id = $1 AND claimer = $2', [claim.event, nonce]);
          if (v.rows.length === 0) return undefined;
          return db.q(c, 'SELECT holder, epoch FROM leases WHERE conversation = $1', [conversation]);
        },
      );
      if (r.rows.length === 0) return false; // a redelivery of an event already taken
    } else {
      // Retried after a lost commit, the take is a no-op (the holder is us) and the insert too.
      r = await db.query(
        'queue a turn',
        'idempotent',
        `WITH t AS (
           INSERT INTO queued_turns (conversation, id, turn, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (conversation, id) DO NOTHING
         ), h AS (${takeSql('VALUES ($1::text, $5::text, 1, $4::bigint, $6::text)', staleSeconds)})
         SELECT holder, epoch, ${FIRST_BATCH_SQL} FROM h`,
        [conversation, queued.id, enc(queued.turn), now, owner, tag],
      );
    }
    const row = r.rows[0] as { holder: string | null; epoch: string; alone?: boolean; revision?: string | null } | undefined;
    // Held by another live replica: its lane reads the turn before it lets go.
    if (row?.holder !== tag) return true;
    // Taken with nothing else stored (no earlier turn, no run record): this turn is the lane's first
    // batch, with no read. (The statement's snapshot does not see its own turn, hence "alone".)
    const first: Batch | undefined = row.alone
      ? { held: true, released: false, turns: [{ id: queued.id, turn: enc(queued.turn) }], revision: row.revision == null ? null : num(row.revision) }
      : undefined;
    this.hold(conversation, num(row.epoch), { readRecord: true, ...(first ? { first } : {}) });
    return true;
  }

  /**
   * Runs a conversation this process holds at `epoch` (taken by enqueue, or by a pg-boss fetch
   * with `record` read under the hold). Joins the lane already running it under that epoch.
   * Resolves when the lane lets go of the conversation.
   */
  hold(conversation: string, epoch: number, o: { readRecord?: boolean; record?: unknown; first?: Batch }): Promise<void> {
    const cur = this.lanes.get(conversation);
    if (cur && cur.fence.epoch === epoch && !cur.stop) {
      cur.again = true;
      return cur.done;
    }
    if (cur) cur.stop = true; // an older hold, lost since: it ends at its next read
    const lane: Lane = {
      conversation,
      fence: { conversation, owner: this.opts.owner, epoch },
      readRecord: o.record === undefined && o.first === undefined && (o.readRecord ?? true),
      ...(o.record !== undefined ? { record: o.record } : {}),
      ...(o.first !== undefined && o.record === undefined ? { first: o.first } : {}),
      dropRecord: false,
      again: false,
      stop: false,
      tasks: [],
      attempts: new Map(),
      done: Promise.resolve(),
    };
    this.lanes.set(conversation, lane);
    lane.done = (cur?.done ?? Promise.resolve())
      .then(() => this.run(lane))
      .catch((err: unknown) => this.log('error', `[${conversation}] ${(err as Error).stack ?? String(err)}`));
    return lane.done;
  }

  holds(conversation: string): boolean {
    const l = this.lanes.get(conversation);
    return l !== undefined && !l.stop;
  }

  /**
   * Local work in a held conversation's order (between its turns); undefined when not held here.
   * Resolves 'done' once it ran, or 'not-held' when the lane let the conversation go (released,
   * taken over, closed) before it came to the task: the caller then runs it the way it runs work
   * for a conversation not held here. A task is never left waiting on a lane that is gone.
   */
  exclusive(conversation: string, task: () => Promise<void>): Promise<'done' | 'not-held'> | undefined {
    const l = this.lanes.get(conversation);
    if (!l || l.stop) return undefined;
    return new Promise<'done' | 'not-held'>((resolve) => {
      l.tasks.push({
        run: async () => {
          try {
            await task();
          } catch (err) {
            this.log('error', `[${conversation}] ${(err as Error).stack ?? String(err)}`);
          } finally {
            resolve('done');
          }
        },
        abandon: () => resolve('not-held'),
      });
      l.again = true;
    });
  }

  /** Lanes running a turn that is not parked on a human. */
  running(): number {
    let n = 0;
    for (const l of this.lanes.values()) if (!this.opts.settled?.(l.conversation)) n++;
    return n;
  }

  size(): number {
    return this.lanes.size;
  }

  /** Whether a lane is still running a turn that is not parked (close waits for those). */
  busy(): boolean {
    return [...this.lanes.values()].some((l) => !this.opts.settled?.(l.conversation));
  }

  /** Releases every conversation held here, fence moved on first; returns them with their new epoch. */
  async handBack(): Promise<Array<{ conversation: string; epoch: number }>> {
    this.closed = true;
    for (const l of this.lanes.values()) l.stop = true;
    const r = await this.opts.db.query(
      'hand back the held conversations',
      'idempotent',
      `UPDATE leases SET holder = NULL, epoch = epoch + 1, owner = $2 WHERE holder = $1 RETURNING conversation, epoch`,
      [this.opts.tag, `${this.opts.owner}:handed-back`],
    );
    return (r.rows as Array<{ conversation: string; epoch: string }>).map((x) => ({ conversation: x.conversation, epoch: num(x.epoch) }));
  }

  private async run(l: Lane): Promise<void> {
    const { conversation } = l;
    try {
      if (l.record !== undefined) await this.takeover(l, l.record);
      for (;;) {
        if (l.dropRecord && l.tasks.length > 0) await this.dropRecordNow(l);
        for (const task of l.tasks.splice(0)) await task.run();
        if (l.stop || this.closed) return;
        // Let go only when nothing asked for another look since the last read (nor before the record).
        const mayRelease = !l.again && l.tasks.length === 0 && !l.readRecord;
        l.again = false;
        let batch: Batch;
        try {
          batch = l.first ?? (await this.read(l, mayRelease));
          l.first = undefined;
        } catch (err) {
          if (this.closed) return;
          this.log('warn', `[${conversation}] reading its queued turns failed (${messageOf(err)}); trying again`);
          await sleep(1000);
          continue;
        }
        if (!batch.held) return this.lost(l);
        if (batch.released) return;
        if (l.readRecord) {
          l.readRecord = false;
          if (batch.record !== undefined) {
            await this.takeover(l, batch.record);
            continue; // the record's run may have consumed turns: read again
          }
        }
        for (const [i, s] of batch.turns.entries()) {
          if (l.stop) break;
          // A posted outbox is not left standing through the next run (a crash in it would post it again).
          if (l.dropRecord) await this.dropRecordNow(l);
          await this.turn(l, s, i === 0 ? batch.revision : undefined);
          if (l.tasks.length > 0) break; // exclusive work queued meanwhile goes next, in order
        }
      }
    } finally {
      if (l.dropRecord)
        await this.dropRecordNow(l).catch((err: unknown) => this.log('warn', `[${conversation}] could not drop a posted run record: ${messageOf(err)}`));
      if (this.lanes.get(conversation) === l) this.lanes.delete(conversation);
      // Work queued after the last look (the release was decided before it came): handed back.
      for (const task of l.tasks.splice(0)) task.abandon();
      this.opts.ended?.();
    }
  }

  private lost(l: Lane): void {
    // A lane that ran nothing found a hold already let go (its enqueue raced the release): quiet.
    if (!l.stop && !this.closed && l.attempts.size > 0)
      this.log('warn', `[${l.conversation}] another replica took this conversation over (epoch ${l.fence.epoch}); this replica lets it go`);
    l.stop = true;
  }

  private async takeover(l: Lane, record: unknown): Promise<void> {
    const hook = this.opts.hooks().takeover;
    if (!hook) return;
    try {
      await hook(l.conversation, record, { fence: l.fence });
    } catch (err) {
      this.log('error', `[${l.conversation}] ${(err as Error).stack ?? String(err)}`);
    }
  }

  private async turn(l: Lane, s: Stored, revision: number | null | undefined): Promise<void> {
    const { conversation } = l;
    const n = (l.attempts.get(s.id) ?? 0) + 1;
    l.attempts.set(s.id, n);
    try {
      const turn = this.opts.parse(dec(s.turn));
      if (!turn) {
        this.log('warn', `dropping an unreadable queued turn of ${conversation} (${s.id})`);
        await this.drop(l, s.id);
      } else if (n > MAX_DELIVERIES) {
        this.log('error', `[${conversation}] dropping turn ${s.id}: run ${n - 1} times without reaching its checkpoint`);
        await this.drop(l, s.id);
      } else {
        const handle = this.opts.handler();
        if (!handle) throw new Error('the turn queue is not started');
        await handle(
          conversation,
          { id: s.id, turn },
          {
            fence: l.fence,
            ...(revision !== undefined ? { revision } : {}),
            dropRecordLater: () => {
              l.dropRecord = true;
            },
          },
        );
      }
    } catch (err) {
      // A turn its checkpoint did not drop runs again at the next read (up to MAX_DELIVERIES): name it.
      this.log('error', `[${conversation}] turn ${s.id} failed on attempt ${n}: ${(err as Error).stack ?? String(err)}`);
    } finally {
      this.opts.handled(s.id);
    }
  }

  /**
   * ONE statement: the hold, the record (first read of a fresh hold), the stored turns oldest
   * first, and, when none is stored and `mayRelease`, the release. The release is refused when
   * `leases.stored` moved since this statement's snapshot: a turn stored meanwhile (its statement
   * locks and bumps the row) is read next time, never left behind.
   */
  private async read(l: Lane, mayRelease: boolean): Promise<Batch> {
    const r = await this.opts.db.query(
      `read the queued turns of ${l.conversation}`,
      'idempotent',
      `WITH h AS (SELECT stored FROM leases WHERE conversation = $1 AND holder = $2 AND epoch = $3),
            q AS (SELECT id, turn, ord FROM queued_turns WHERE conversation = $1 AND EXISTS (SELECT 1 FROM h) ORDER BY ord LIMIT 32),
            u AS (UPDATE leases SET holder = NULL
                   WHERE $5::boolean AND conversation = $1 AND holder = $2 AND epoch = $3 AND stored = (SELECT stored FROM h) AND NOT EXISTS (SELECT 1 FROM q)
                   RETURNING 1),
            x AS (DELETE FROM run_records WHERE $6::boolean AND conversation = $1 AND EXISTS (SELECT 1 FROM h))
       SELECT EXISTS (SELECT 1 FROM h) AS held, EXISTS (SELECT 1 FROM u) AS released,
              CASE WHEN $4::boolean THEN (SELECT record FROM run_records WHERE conversation = $1) END AS record,
              (SELECT revision FROM conversations WHERE conversation = $1) AS revision, q.id, q.turn
         FROM (SELECT 1) AS one LEFT JOIN q ON true
        ORDER BY q.ord`,
      [l.conversation, this.opts.tag, l.fence.epoch, l.readRecord, mayRelease, l.dropRecord],
    );
    const rows = r.rows as Array<{ held: boolean; released: boolean; record: string | null; revision: string | null; id: string | null; turn: string | null }>;
    const first = rows[0];
    if (first?.held) l.dropRecord = false;
    return {
      held: first?.held === true,
      released: first?.released === true,
      ...(first?.record != null ? { record: dec(first.record) } : {}),
      turns: rows.filter((x) => x.id !== null).map((x) => ({ id: x.id!, turn: x.turn! })),
      revision: first?.revision == null ? null : num(first.revision),
    };
  }

  /** Drops the record of a run that posted its outbox, under the lane's fence (a moved fence: nothing to drop here). */
  private async dropRecordNow(l: Lane): Promise<void> {
    await writePartsFenced(this.opts.db, 'drop a posted run record', { record: { conversation: l.conversation, record: null } }, l.fence).catch(
      (err: unknown) => {
        if (!(err instanceof FencedError)) throw err;
      },
    );
    l.dropRecord = false;
  }

  /** Drops a stored turn while this lane still holds the conversation. */
  private async drop(l: Lane, id: string): Promise<void> {
    await this.opts.db.query(
      'drop a queued turn',
      'idempotent',
      `DELETE FROM queued_turns WHERE conversation = $1 AND id = $2 AND EXISTS (SELECT 1 FROM leases WHERE conversation = $1 AND holder = $3 AND epoch = $4)`,
      [l.conversation, id, this.opts.tag, l.fence.epoch],
    );
  }

  private log(level: LogLevel, msg: string): void {
    (this.opts.log ?? fallbackLog)(level, msg);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
