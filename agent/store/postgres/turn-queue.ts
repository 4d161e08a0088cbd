/**
 * Contract: the replicas' TurnQueue (agent/run/turn-queue.ts) on PostgreSQL, for every process
 * sharing one store: an owner fast path (./owner-lanes.ts) with pg-boss 12 as the hand-over path.
 * pg-boss is loaded only here, by dynamic import.
 * - One replica at a time runs a conversation: the one that holds it (`leases.holder`, taken with
 *   the fence, epoch up by one). It runs the conversation's record first, then every stored turn,
 *   oldest first, from a lane in its own process, and lets go when nothing is stored.
 * - `enqueue` on a started replica with capacity whose liveness session is up (the fast path) is
 *   ONE statement: the turn in `queued_turns` (with its platform event claimed, when given) and
 *   the take when nobody holds the conversation (or its holder is dead). Taken: it runs here, no
 *   job. Held by another live replica: that holder's lane reads the turn before it lets go (the
 *   statement locks the lease row, which the release locks first). Otherwise (not started, no
 *   capacity, liveness session down) `enqueue` is ONE transaction as before the fast path: the
 *   turn, a pg-boss job (id = the turn's id) and a NOTIFY that wakes every replica's fetch loop.
 * - Jobs (ONE pg-boss queue `gatehouse-turns`, schema `gatehouse_queue`, `key_strict_fifo`,
 *   singletonKey = the conversation) carry only {conversation, turnId?}. A fetch is ONE
 *   transaction: the jobs, the take of each one's conversation unless a live replica holds it,
 *   and each taken one's run record; a taken conversation runs in this replica's lane (the record
 *   through `hooks.takeover`, then its stored turns) and its job is completed when the lane lets
 *   go; a job for a conversation held elsewhere is completed at once. A turn already checkpointed
 *   is no longer stored: it never runs twice.
 * - Jobs are sent for: turns stored off the fast path; `resume()` (every stored record and turn,
 *   idempotently: a crash before this queue existed); conversations whose holder died (`sweep`
 *   at every poll: one job id per conversation and epoch, whichever survivors send it); what
 *   `close` hands back; and what follows an `exclusive` task run for a conversation not held here.
 * - Liveness: the LISTEN session's application_name is this process's holder tag, and it beats
 *   (`replica_beats`) every heartbeatSeconds / 2; a holder is dead when that session is gone (a
 *   SIGKILL, seen at the next poll) or its beat is older than 2 x heartbeatSeconds (a SIGSTOP, a
 *   partition). A replica taken for dead that still runs is fenced: its writes are refused.
 * - A replica fetches while it has capacity (`capacity` minus its running lanes; lanes parked on
 *   a human do not count), one fetch loop per process, woken by NOTIFY, its own completions and
 *   a backstop poll. Jobs held are heartbeated (pg-boss's minimum 10 s); a job whose heartbeat
 *   stopped goes back to `retry` and is fetched again (its conversation's holder decides who runs).
 * - `close(graceMs)` stops fetching, waits up to the grace for running lanes (not parked ones),
 *   then hands back every conversation held (fence moved on, holder cleared, a job each) and
 *   every job still held (failed to `retry`): another replica takes them at once.
 * - `exclusive` on a conversation held here runs between its turns; otherwise it takes the
 *   conversation's fence from whoever runs it (that holder lets go), and sends a job after it.
 * - `idle()` and `close()` wait on agent/run/changes.ts (notified whenever a job, a lane or a turn
 *   of this process ends; a short timer for what changes unseen), never on a promise that may have
 *   settled already: such a wait spins on microtasks and starves the run it waits for.
 */
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Job, JobWithMetadata, PgBoss as PgBossType } from 'pg-boss';
import type { DeliveryHooks, SharedTurnQueueOptions, TurnHandler, TurnQueue } from '../../run/turn-queue.js';
import type { QueuedTurn } from '../../run/turn.js';
import { Changes } from '../../run/changes.js';
import type { Fence, LeaseRepo, RunRepo } from '../types.js';
import { dec, num, type Db } from './db.js';
import { CHANNEL, jobIdOf, sendTurnJob, TURN_QUEUE, type JobData } from './turn-jobs.js';
import { aliveSql, newHolderTag, OwnerLanes, takeSql } from './owner-lanes.js';
import { startPgBoss } from './pgboss-start.js';
import { fallbackLog, type LogLevel, messageOf } from '../../log.js';

export { QUEUE_SCHEMA } from './turn-jobs.js';

export interface PgBossTurnQueueOptions extends SharedTurnQueueOptions {
  url: string;
  db: Db;
  runs: RunRepo;
  leases: LeaseRepo;
}

interface Claimed {
  job: JobWithMetadata<JobData>;
  /** Undefined: another live replica holds the conversation (its lane runs what is stored). */
  fence?: Fence;
  record?: unknown;
}

interface Held {
  job: Job<JobData>;
  conversation: string;
  fence?: Fence;
  done: Promise<void>;
  handedBack: boolean;
}

export async function openPgBossTurnQueue(opts: PgBossTurnQueueOptions): Promise<PgBossTurnQueue> {
  const { boss, heartbeatSeconds } = await startPgBoss(opts);
  const q = new PgBossTurnQueue(opts, boss, heartbeatSeconds);
  await q.listen();
  return q;
}

export class PgBossTurnQueue implements TurnQueue {
  readonly shared = true;
  private handle: TurnHandler | undefined;
  private hooks: DeliveryHooks = {};
  private readonly held = new Map<string, Held>();
  /** Local work in a conversation's order (exclusive), after what this process holds of it. */
  private readonly lanes = new Map<string, Promise<void>>();
  /** Turns this process enqueued and has not seen finished (idle() waits for them), with their conversation. */
  private readonly mine = new Map<string, string>();
  /** This process's liveness tag: the LISTEN session's application_name, and the holder it writes. */
  private readonly tag = newHolderTag();
  /** A holder whose beat is older than this is dead (its session may still be connected: SIGSTOP). */
  private readonly staleSeconds: number;
  private readonly owned: OwnerLanes;
  /** Notified whenever held, lanes, mine or a lane of `owned` loses an entry: idle() and close() wait on it. */
  private readonly changes = new Changes();
  private closed = false;
  private pumping = false;
  private again = false;
  private listener: pg.Client | undefined;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly opts: PgBossTurnQueueOptions,
    private readonly boss: PgBossType,
    heartbeatSeconds: number,
  ) {
    this.staleSeconds = 2 * heartbeatSeconds;
    this.owned = new OwnerLanes({
      db: opts.db,
      tag: this.tag,
      owner: opts.owner,
      staleSeconds: this.staleSeconds,
      parse: opts.parse,
      ...(opts.settled ? { settled: opts.settled } : {}),
      handler: () => this.handle,
      hooks: () => this.hooks,
      handled: (id) => this.finish(id),
      ended: () => this.changes.notify(),
      ...(opts.now ? { now: opts.now } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
    const beat = setInterval(() => void this.heartbeat(), (heartbeatSeconds * 1000) / 2);
    const poll = setInterval(() => {
      this.wake();
      void this.sweep().catch((err: unknown) => this.log('warn', `turn queue: looking for dead holders failed (${messageOf(err)})`));
      if (this.mine.size > 0) void this.settleMine().catch(() => undefined);
    }, opts.tuning?.pollMs ?? 2000);
    beat.unref();
    poll.unref();
    this.timers.push(beat, poll);
  }

  /** A dedicated connection LISTENing for new and freed work; lost, it reconnects (the poll covers the gap). */
  async listen(): Promise<void> {
    if (this.closed) return;
    // Its application_name is the liveness tag: while it is connected (and beats), this replica is alive.
    const c = new pg.Client({ connectionString: this.opts.url, application_name: this.tag, keepAlive: true });
    const retry = () => {
      if (this.listener !== c) return;
      this.listener = undefined;
      c.end().catch(() => undefined);
      const t = setTimeout(() => void this.listen().catch(() => undefined), 1000);
      t.unref();
    };
    c.on('error', (err) => {
      this.log('warn', `turn queue: the LISTEN connection failed (${err.message}); reconnecting, polling meanwhile`);
      retry();
    });
    c.on('end', retry);
    c.on('notification', () => this.wake());
    await c.connect();
    await c.query(`LISTEN ${CHANNEL}`);
    // Beats of processes gone for a day are of no use (a holder without one is dead anyway).
    await c.query("DELETE FROM replica_beats WHERE beat_at < now() - interval '1 day'");
    await this.beat(c);
    this.listener = c;
    this.wake(); // anything sent while not listening
  }

  start(handle: TurnHandler, hooks: DeliveryHooks = {}): void {
    this.handle = handle;
    this.hooks = hooks;
    this.wake();
  }

  async enqueue(conversation: string, queued: QueuedTurn): Promise<boolean> {
    // The fast path: stored and, when nobody holds the conversation, taken, in one statement; run here.
    if (this.handle && !this.closed && this.listener && this.opts.capacity > 0) {
      this.mine.set(queued.id, conversation);
      const stored = await this.owned.enqueue(conversation, queued, randomUUID()).catch((err: unknown) => {
        this.forget(queued.id);
        throw err;
      });
      if (!stored) this.forget(queued.id);
      return stored;
    }
    const stored = await sendTurnJob(this.opts.db, this.boss, conversation, queued, (this.opts.now ?? Date.now)());
    if (!stored) return false;
    this.mine.set(queued.id, conversation);
    this.wake();
    return true;
  }

  async resume(which?: (conversation: string) => boolean): Promise<number> {
    // Left alone: what the process a client is attached to runs (`local`), and what `which` says
    // belongs to another kind of process on the store.
    const skip = (conversation: string) => this.opts.local?.(conversation) === true || (which !== undefined && !which(conversation));
    let n = 0;
    for (const row of await this.opts.runs.records()) {
      if (skip(row.conversation)) continue;
      const rec = row.record as { runId?: unknown } | null;
      const runKey = typeof rec?.runId === 'string' ? rec.runId : createHash('sha1').update(JSON.stringify(row.record)).digest('hex');
      const sent = await this.boss.send(TURN_QUEUE, { conversation: row.conversation } satisfies JobData, {
        id: jobIdOf(`resume:${row.conversation}:${runKey}`),
        singletonKey: row.conversation,
      });
      if (sent) n++;
    }
    for (const row of await this.opts.runs.queuedTurns()) {
      if (skip(row.conversation)) continue;
      if (!this.opts.parse(row.turn)) {
        this.log('warn', `dropping an unreadable queued turn of ${row.conversation} (${row.id})`);
        await this.opts.runs.dropTurn(row.conversation, row.id);
        continue;
      }
      const sent = await this.boss.send(TURN_QUEUE, { conversation: row.conversation, turnId: row.id } satisfies JobData, {
        id: jobIdOf(row.id),
        singletonKey: row.conversation,
      });
      if (sent) n++;
    }
    if (n > 0) {
      this.log('info', `turn queue: sent ${n} stored run(s) and turn(s) that had no job`);
      await this.notifyAll();
    }
    this.wake();
    return n;
  }

  exclusive(conversation: string, task: () => Promise<void>): Promise<void> {
    // Held here: between its turns, under its fence; a lane that let it go first hands the task back.
    const held = this.owned.exclusive(conversation, task);
    if (held) return held.then((r) => (r === 'done' ? undefined : this.exclusive(conversation, task)));
    const before = Promise.all([this.lanes.get(conversation), ...[...this.held.values()].filter((h) => h.conversation === conversation).map((h) => h.done)]);
    const run = before.then(async () => {
      // Whoever runs this conversation elsewhere is fenced off from here on, and lets it go: what
      // is stored behind the task goes to whichever replica fetches the hand-over job.
      const r = await this.opts.db.query(
        `claim ${conversation}`,
        'idempotent',
        `INSERT INTO leases AS l (conversation, owner, epoch, taken_at) VALUES ($1, $2, 1, $3)
         ON CONFLICT (conversation) DO UPDATE SET owner = EXCLUDED.owner, epoch = l.epoch + 1, taken_at = EXCLUDED.taken_at, holder = NULL
         RETURNING epoch`,
        [conversation, this.opts.owner, (this.opts.now ?? Date.now)()],
      );
      try {
        await task();
      } finally {
        await this.sendOver(conversation, `exclusive:${conversation}:${num((r.rows[0] as { epoch: string }).epoch)}`);
        await this.notifyAll();
      }
    });
    const settled = run.catch((err: unknown) => this.log('error', `[${conversation}] ${(err as Error).stack ?? String(err)}`));
    this.lanes.set(conversation, settled);
    void settled.finally(() => {
      if (this.lanes.get(conversation) === settled) this.lanes.delete(conversation);
      this.changes.notify();
    });
    return settled;
  }

  busy(conversation: string): boolean {
    return this.lanes.has(conversation) || this.owned.holds(conversation) || [...this.held.values()].some((h) => h.conversation === conversation);
  }

  /** Turns this process stored that another replica finished (no longer stored): `hooks.finished` for each. */
  private async settleMine(): Promise<void> {
    const mine = [...this.mine];
    const r = await this.opts.db.query(
      'read the queued turns',
      'read',
      'SELECT q.id FROM queued_turns q JOIN unnest($1::text[], $2::text[]) AS u(conv, id) ON q.conversation = u.conv AND q.id = u.id',
      [mine.map(([, c]) => c), mine.map(([id]) => id)],
    );
    const open = new Set((r.rows as Array<{ id: string }>).map((x) => x.id));
    for (const [id] of mine) if (!open.has(id) && this.mine.has(id)) this.finish(id);
  }

  private finish(turnId: string): void {
    this.forget(turnId);
    this.hooks.finished?.(turnId);
  }

  private forget(turnId: string): void {
    this.mine.delete(turnId);
    this.changes.notify();
  }

  async idle(): Promise<void> {
    for (;;) {
      if (this.mine.size > 0) await this.settleMine();
      if (this.held.size === 0 && this.lanes.size === 0 && this.mine.size === 0 && this.owned.size() === 0) return;
      // The next change, or 25 ms for turns another replica finishes (seen only in the store).
      await this.changes.next(25);
    }
  }

  async close(graceMs: number): Promise<void> {
    this.closed = true;
    const end = Date.now() + graceMs;
    const running = () => this.owned.busy() || [...this.held.values()].some((h) => !h.handedBack && !this.opts.settled?.(h.conversation));
    // The next change, or 50 ms for a run parking on a human (settled() changes unseen).
    while (Date.now() < end && running()) await this.changes.next(Math.min(50, end - Date.now()));
    await this.handBack().catch((err: unknown) =>
      this.log('warn', `turn queue: handing back failed (${messageOf(err)}); those jobs go to another replica when their heartbeat lapses`),
    );
    // Lanes handed back are fenced: a parked one may never end, so only jobs not handed back are waited for.
    if (this.held.size > 0 && [...this.held.values()].some((h) => !h.handedBack)) return; // called again to wait again
    for (const t of this.timers.splice(0)) clearInterval(t);
    const l = this.listener;
    this.listener = undefined;
    await l?.query('DELETE FROM replica_beats WHERE tag = $1', [this.tag]).catch(() => undefined);
    await l?.end().catch(() => undefined);
    await this.boss.stop({ graceful: false, close: true, timeout: 1000 }).catch(() => undefined);
  }

  /**
   * Gives back every conversation held here and every job still held: the fences move on first
   * (no run here can write any more), then each held conversation gets a job and each job goes to `retry`.
   */
  private async handBack(): Promise<void> {
    const back = [...this.held.values()].filter((h) => !h.handedBack);
    for (const h of back) h.handedBack = true;
    const released = await this.owned.handBack();
    for (const h of back) {
      if (released.some((r) => r.conversation === h.conversation)) continue;
      await this.opts.leases.take(h.conversation, `${this.opts.owner}:handed-back`, (this.opts.now ?? Date.now)()).catch(() => undefined);
    }
    for (const h of back) this.held.delete(h.job.id);
    this.changes.notify();
    if (back.length > 0)
      await this.boss.fail(
        TURN_QUEUE,
        back.map((h) => ({ id: h.job.id, retryCount: h.job.retryCount })),
        { reason: `handed back by ${this.opts.owner} (shutting down)` },
      );
    for (const r of released) await this.sendOver(r.conversation, `handback:${r.conversation}:${r.epoch}`);
    const convs = [...new Set([...back.map((h) => h.conversation), ...released.map((r) => r.conversation)])];
    if (convs.length === 0) return;
    await this.notifyAll();
    this.log('info', `turn queue: handed back ${convs.length} conversation(s) to the other replicas: ${convs.join(', ')}`);
  }

  /** A job that makes whichever replica fetches it take the conversation over (idempotent per key). */
  private async sendOver(conversation: string, key: string): Promise<void> {
    await this.boss.send(TURN_QUEUE, { conversation } satisfies JobData, { id: jobIdOf(key), singletonKey: conversation });
  }

  /** Conversations held by dead replicas: a hand-over job each (every survivor sends the same ids). */
  private async sweep(): Promise<void> {
    if (this.closed || !this.handle || this.opts.capacity <= 0) return;
    const r = await this.opts.db.query(
      'look for dead holders',
      'read',
      `SELECT conversation, epoch FROM leases l WHERE holder IS NOT NULL AND holder <> $1 AND NOT ${aliveSql('l.holder', this.staleSeconds)} LIMIT 100`,
      [this.tag],
    );
    const dead = r.rows as Array<{ conversation: string; epoch: string }>;
    if (dead.length === 0) return;
    for (const d of dead) await this.sendOver(d.conversation, `orphan:${d.conversation}:${d.epoch}`);
    this.log('info', `turn queue: ${dead.length} conversation(s) held by a replica that stopped: handing them over`);
    this.wake();
  }

  /** This replica's beat, on its liveness session. */
  private async beat(c: pg.Client): Promise<void> {
    await c.query('INSERT INTO replica_beats (tag, owner, beat_at) VALUES ($1, $2, now()) ON CONFLICT (tag) DO UPDATE SET beat_at = now()', [
      this.tag,
      this.opts.owner,
    ]);
  }

  private running(): number {
    let n = 0;
    for (const h of this.held.values()) if (!this.opts.settled?.(h.conversation) && !this.owned.holds(h.conversation)) n++;
    return n + this.owned.running();
  }

  /** Asks the fetch loop to look for work now (coalesced). */
  wake(): void {
    if (this.closed || !this.handle) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      do {
        this.again = false;
        const free = this.opts.capacity - this.running();
        if (free <= 0 || this.closed) break;
        const claimed = await this.claim(free);
        for (const c of claimed) this.take(c);
        if (claimed.length === free) this.again = true;
      } while (this.again && !this.closed);
    } catch (err) {
      this.log('warn', `turn queue: fetching work failed (${messageOf(err)}); trying again at the next poll`);
    } finally {
      this.pumping = false;
    }
  }

  /**
   * ONE transaction (one commit): fetch up to `n` jobs, take each one's conversation unless a live
   * replica holds it (its epoch up by one, this replica its holder), then read each taken one's run
   * record. The read is its own statement, so it sees what the previous holder committed while
   * the take waited for it.
   */
  private async claim(n: number): Promise<Claimed[]> {
    const db = this.opts.db;
    const claimed = await db.tx('fetch turns', async (c) => {
      const jobs = await this.boss.fetch<JobData>(TURN_QUEUE, {
        batchSize: n,
        includeMetadata: true,
        db: { executeSql: (text, values) => c.query(text, values) },
      });
      if (jobs.length === 0) return [];
      // key_strict_fifo: at most one active job per conversation, so these are distinct.
      const convs = jobs.map((j) => j.data.conversation);
      const taken = await db.q(c, takeSql('SELECT conv, $2::text, 1, $3::bigint, $4::text FROM unnest($1::text[]) AS u(conv)', this.staleSeconds), [
        convs,
        this.opts.owner,
        (this.opts.now ?? Date.now)(),
        this.tag,
      ]);
      const epochs = new Map<string, number>();
      for (const r of taken.rows as Array<{ conversation: string; holder: string | null; epoch: string }>)
        if (r.holder === this.tag) epochs.set(r.conversation, num(r.epoch));
      const mine = convs.filter((conv) => epochs.has(conv));
      const read = mine.length
        ? await db.q(c, 'SELECT conversation AS conv, record FROM run_records WHERE conversation = ANY($1::text[])', [mine])
        : { rows: [] };
      const records = new Map((read.rows as Array<{ conv: string; record: string }>).map((r) => [r.conv, dec(r.record)]));
      return jobs.map((job): Claimed => {
        const conversation = job.data.conversation;
        const epoch = epochs.get(conversation);
        if (epoch === undefined) return { job };
        return { job, fence: { conversation, owner: this.opts.owner, epoch }, ...(records.has(conversation) ? { record: records.get(conversation) } : {}) };
      });
    });
    // Started in the order they were sent (a batch comes back in no particular order).
    return claimed.sort((x, y) => x.job.createdOn.getTime() - y.job.createdOn.getTime());
  }

  private take(c: Claimed): void {
    const { job } = c;
    const h: Held = { job, conversation: job.data.conversation, ...(c.fence ? { fence: c.fence } : {}), done: Promise.resolve(), handedBack: false };
    this.held.set(job.id, h);
    h.done = this.deliver(h, c).finally(() => {
      if (this.held.get(job.id) === h) this.held.delete(job.id);
      this.changes.notify();
      this.wake();
    });
  }

  /**
   * A taken conversation runs in this replica's lane (its record first, then every stored turn,
   * oldest first) until the lane lets it go; then the job is completed. A job for a conversation
   * another live replica holds is completed at once: that holder runs what is stored.
   */
  private async deliver(h: Held, c: Claimed): Promise<void> {
    try {
      if (c.fence) {
        // This process may hold it already at that epoch (its own lane): joined, the record is that lane's.
        const joined = this.owned.holds(h.conversation);
        await this.owned.hold(h.conversation, c.fence.epoch, joined ? {} : { readRecord: false, ...(c.record !== undefined ? { record: c.record } : {}) });
      }
      if (h.handedBack) return;
      await this.boss.complete(TURN_QUEUE, { id: h.job.id, retryCount: h.job.retryCount });
    } catch (err) {
      // The store or the queue failed under the run: give the job back so it is delivered again.
      this.log('error', `[${h.conversation}] ${(err as Error).stack ?? String(err)}`);
      if (!h.handedBack) await this.boss.fail(TURN_QUEUE, { id: h.job.id, retryCount: h.job.retryCount }, { reason: String(err) }).catch(() => undefined);
    }
    if (c.fence) await this.notifyAll(); // its successor is fetchable now, on any replica
  }

  private async heartbeat(): Promise<void> {
    const l = this.listener;
    if (l) await this.beat(l).catch((err: unknown) => this.log('warn', `turn queue: the liveness beat failed (${messageOf(err)})`));
    const jobs = [...this.held.values()].filter((h) => !h.handedBack).map((h) => ({ id: h.job.id, retryCount: h.job.retryCount }));
    if (jobs.length === 0) return;
    try {
      const r = (await this.boss.touch(TURN_QUEUE, jobs)) as { affected?: number; settled?: string[] };
      if (r.affected !== undefined && r.affected < jobs.length) {
        const alive = new Set(r.settled ?? []);
        for (const j of jobs) {
          if (alive.has(j.id)) continue;
          const h = this.held.get(j.id);
          if (h) this.log('warn', `turn queue: the claim on ${h.conversation} lapsed (another replica may have it now); its writes are fenced`);
        }
      }
    } catch (err) {
      this.log('warn', `turn queue: heartbeat failed (${messageOf(err)})`);
    }
  }

  private async notifyAll(): Promise<void> {
    await this.opts.db.query('wake the replicas', 'idempotent', `SELECT pg_notify('${CHANNEL}', '')`, []).catch(() => undefined);
  }

  private log(level: LogLevel, msg: string): void {
    (this.opts.log ?? fallbackLog)(level, msg);
  }
}
