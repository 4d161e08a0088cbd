/**
 * The turn queue: where accepted turns wait for their conversation's previous turn.
 *
 * Contract (every implementation; in-process lanes now, pg-boss across replicas next):
 * - `enqueue` resolves once the turn is durable in the store (it survives a crash from then on), and
 *   rejects when it could not be stored (the turn is then never handled). With `claim`, the turn's
 *   platform event is claimed in the same transaction: false means that event was claimed already
 *   (a redelivery) and nothing was stored.
 * - Turns of one conversation are handled one at a time, in the order they were enqueued; different
 *   conversations run in parallel (the runner caps how many with its slots).
 * - `start(handle)` begins delivery; a turn enqueued before is delivered once started. The handler
 *   removes the stored turn itself (in its checkpoint, in one transaction with the transcript), so a
 *   crash mid-run never loses the turn and never runs it twice once it is part of the transcript.
 * - `resume(which)` delivers the turns an earlier process stored and did not finish, oldest first,
 *   after what is already waiting in their lanes; a turn is never delivered twice by one process.
 *   With `which`, only conversations it accepts (the others belong to another process on the store).
 * - `exclusive(conversation, task)` runs local work in the conversation's order (a reset, a resumed
 *   run): after what is queued there, before what comes later.
 * - `close(graceMs)` stops delivering (what was not started stays stored for the next start) and
 *   resolves when the handlers in progress have finished, or `graceMs` passed, whichever is first;
 *   a handler the `settled` option names (parked on a human, its state stored) is not waited for.
 *   It may be called again to wait again.
 * - A `shared` queue (several processes on one store: agent/store/postgres/turn-queue.ts) delivers a
 *   conversation's job to one process at a time, with the fence it took for it (`delivery.fence`:
 *   the run's writes carry it). Before the job's turn, it hands that process the conversation's
 *   stored run record (`hooks.takeover`: a run whose process died, or that handed it back) to
 *   continue first. `resume()` then never runs a record itself, and `close` hands back what the
 *   process still holds (parked runs included) to the other processes at once.
 */
import PQueue from 'p-queue';
import type { Fence, RunRepo } from '../store/types.js';
import type { QueuedTurn, Turn } from './turn.js';
import { fallbackLog, type Log, type LogLevel } from '../log.js';

/** How a shared queue delivered a conversation's work: under the fence it took. */
export interface Delivery {
  fence: Fence;
  /**
   * The conversation's transcript revision, read under this hold in the statement that delivered
   * the turn (null: nothing stored): the run's load may trust it instead of reading it again.
   */
  revision?: number | null;
  /**
   * Offered when the queue reads the conversation again under the same hold right after the run:
   * the run's record (its posted outbox) is dropped in that read, not by a statement of its own.
   */
  dropRecordLater?(): void;
}

export type TurnHandler = (conversation: string, queued: QueuedTurn, delivery?: Delivery) => Promise<void>;

export interface DeliveryHooks {
  /** A shared queue found a stored run record for the conversation it delivers: continue it first. */
  takeover?(conversation: string, record: unknown, delivery: Delivery): Promise<void>;
  /** A turn this process enqueued was handled, here or by another process. */
  finished?(turnId: string): void;
}

export interface TurnQueue {
  /** True when several processes share it (records are resumed through `hooks.takeover`). */
  readonly shared?: boolean;
  /** False: the turn's event (`queued.claim`) was claimed already, and nothing was stored. */
  enqueue(conversation: string, queued: QueuedTurn): Promise<boolean>;
  start(handle: TurnHandler, hooks?: DeliveryHooks): void;
  resume(which?: (conversation: string) => boolean): Promise<number>;
  exclusive(conversation: string, task: () => Promise<void>): Promise<void>;
  /** Whether the conversation has work queued or running. */
  busy(conversation: string): boolean;
  /** Resolves when no conversation has work queued or running (tests, shutdown). */
  idle(): Promise<void>;
  close(graceMs: number): Promise<void>;
}

/** What a shared turn queue needs from the runner (the contract is above). */
export interface SharedTurnQueueOptions {
  /** This process's replica id (the owner of the fences it takes). */
  owner: string;
  /** Conversations this process runs by itself (agent/run/local-first-queue.ts): left alone at resume. */
  local?(conversation: string): boolean;
  /** Reads a stored turn back (undefined: unreadable, dropped with a warning). */
  parse(value: unknown): Turn | undefined;
  /** A conversation whose running handler is parked on a human (it does not count against `capacity`). */
  settled?(conversation: string): boolean;
  /** How many turns this process runs at once, parked ones not counted (the runner's slots). */
  capacity: number;
  /** pg-boss timings (tests): heartbeat (>= 10 s), supervise pass (s), backstop poll (ms). */
  tuning?: { heartbeatSeconds?: number; superviseSeconds?: number; pollMs?: number };
  now?(): number;
  log?: Log;
}

/**
 * A store engine with a turn queue shared by every process on it (replicas; PostgreSQL: pg-boss).
 * Not part of Store: the store is the floor under the runner and does not name the runner's types.
 */
export interface SharedTurnQueueEngine {
  turnQueue(opts: SharedTurnQueueOptions): Promise<TurnQueue>;
}

export function hasSharedTurnQueue(store: object): store is SharedTurnQueueEngine {
  return typeof (store as { turnQueue?: unknown }).turnQueue === 'function';
}

export interface InProcessTurnQueueOptions {
  runs: Pick<RunRepo, 'enqueueTurn' | 'dropTurn' | 'queuedTurns'>;
  /** Reads a stored turn back (undefined: unreadable, dropped with a warning). */
  parse(value: unknown): Turn | undefined;
  /** A conversation whose running handler need not be waited for at close (parked on a human). */
  settled?(conversation: string): boolean;
  now?(): number;
  log?: Log;
}

/** One p-queue (concurrency 1) per conversation with work; the store's queued turns are the truth. */
export class InProcessTurnQueue implements TurnQueue {
  private readonly lanes = new Map<string, PQueue>();
  /** Ids this process has put in a lane and not finished: resume() skips them. */
  private readonly inLane = new Set<string>();
  private handle: TurnHandler | undefined;
  private readonly waitingForStart: Array<() => void> = [];
  private closed = false;

  constructor(private readonly opts: InProcessTurnQueueOptions) {}

  start(handle: TurnHandler): void {
    this.handle = handle;
    for (const go of this.waitingForStart.splice(0)) go();
  }

  async enqueue(conversation: string, queued: QueuedTurn): Promise<boolean> {
    const stored = this.opts.runs.enqueueTurn(conversation, queued.id, queued.turn, (this.opts.now ?? Date.now)(), queued.claim);
    // Laned synchronously (lane order = arrival order); it runs once the write is known to be done.
    this.laneTurn(
      conversation,
      queued,
      stored.catch(() => false),
    );
    return stored;
  }

  async resume(which?: (conversation: string) => boolean): Promise<number> {
    let n = 0;
    for (const row of await this.opts.runs.queuedTurns()) {
      if (this.inLane.has(row.id) || (which && !which(row.conversation))) continue;
      const turn = this.opts.parse(row.turn);
      if (!turn) {
        this.log('warn', `dropping an unreadable queued turn of ${row.conversation} (${row.id})`);
        await this.opts.runs.dropTurn(row.conversation, row.id);
        continue;
      }
      n++;
      this.laneTurn(row.conversation, { id: row.id, turn }, Promise.resolve(true));
    }
    return n;
  }

  exclusive(conversation: string, task: () => Promise<void>): Promise<void> {
    return this.lane(conversation, task);
  }

  busy(conversation: string): boolean {
    return this.lanes.has(conversation);
  }

  async idle(): Promise<void> {
    while (this.lanes.size > 0) await Promise.all([...this.lanes.values()].map((l) => l.onIdle()));
  }

  async close(graceMs: number): Promise<void> {
    this.closed = true;
    for (const lane of this.lanes.values()) lane.clear();
    const busy = () => [...this.lanes.entries()].some(([conv, l]) => l.pending > 0 && !this.opts.settled?.(conv));
    const end = Date.now() + graceMs;
    while (Date.now() < end && busy()) await new Promise((r) => setTimeout(r, 10));
  }

  private laneTurn(conversation: string, queued: QueuedTurn, stored: Promise<boolean>): void {
    this.inLane.add(queued.id);
    void this.lane(conversation, async () => {
      try {
        // Not stored: the caller was told to send it again, so it must not also run.
        if (!(await stored) || this.closed) return; // closed: it stays stored, the next start runs it
        const handle = this.handle ?? (await new Promise<TurnHandler>((r) => this.waitingForStart.push(() => r(this.handle!))));
        await handle(conversation, queued);
      } finally {
        this.inLane.delete(queued.id);
      }
    });
  }

  private lane(conversation: string, task: () => Promise<void>): Promise<void> {
    let lane = this.lanes.get(conversation);
    if (!lane) {
      lane = new PQueue({ concurrency: 1 });
      this.lanes.set(conversation, lane);
    }
    const l = lane;
    const done = l.add(task).then(
      () => undefined,
      (err: unknown) => this.log('error', `[${conversation}] run crashed: ${(err as Error).stack ?? String(err)}`),
    );
    // Idle lanes are dropped so 10,000 quiet conversations cost nothing here.
    void done.finally(() => {
      if (l.size === 0 && l.pending === 0 && this.lanes.get(conversation) === l) this.lanes.delete(conversation);
    });
    return done;
  }

  private log(level: LogLevel, msg: string): void {
    (this.opts.log ?? fallbackLog)(level, msg);
  }
}
