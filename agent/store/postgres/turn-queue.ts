/**
 * Contract: the replicas' TurnQueue (agent/run/turn-queue.ts) on pg-boss 12, for every process
 * sharing one PostgreSQL store. pg-boss is loaded only here, by dynamic import.
 * - ONE pg-boss queue (`gatehouse-turns`, schema `gatehouse_queue`) with the `key_strict_fifo`
 *   policy, singletonKey = the conversation key: one job of a conversation is active at a time,
 *   across replicas, in the order sent; different conversations go to whichever replica fetches.
 * - `enqueue` is ONE transaction: the turn in `queued_turns` (the durable record, as on one
 *   process), the job (id = the turn's id: sending it again is a no-op) and a NOTIFY that wakes
 *   every replica's fetch loop. The job carries only {conversation, turnId}.
 * - A replica fetches while it has capacity (`capacity` minus its running jobs; jobs parked on a
 *   human do not count), one fetch loop per process, woken by NOTIFY, by its own enqueues and
 *   completions, and by a backstop poll. A fetch is ONE transaction: the jobs, each one's fence
 *   (the conversation's epoch up by one, as leases.take), then its run record and turn; it lets the runner continue a
 *   stored run first (`takeover`: a run whose replica died or handed it back) and then runs the turn
 *   if it is still stored. A job redelivered after its turn's checkpoint finds it gone: it never runs
 *   twice. Then the job is completed (attempt-fenced) and the replicas are woken for the successor.
 * - Heartbeats (`heartbeatSeconds`, pg-boss's minimum 10) for every held job, parked ones included,
 *   in one statement; pg-boss fails a job whose heartbeat stopped (a killed replica) back to `retry`
 *   at its next supervise pass (`superviseSeconds`), and a survivor fetches it. Jobs expire after
 *   pg-boss's maximum (24 h): a run parked longer is taken over as if its replica had died. The
 *   retry limit is effectively unbounded: a `failed` job would block its conversation for good.
 * - `close(graceMs)` stops fetching, waits up to the grace for running jobs (not parked ones), then
 *   hands back every job still held: its fence is moved on first (so this replica's run cannot
 *   write any more), then the job is failed to `retry`, which another replica fetches at once.
 * - `resume()` sends, idempotently, a job for every stored turn and run record that may have none
 *   (a crash before this queue existed): records first, then turns, oldest first. It never runs a
 *   record itself: only the replica that gets the conversation's job does (never one another live
 *   replica is waiting on).
 */
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Job, JobWithMetadata, PgBoss as PgBossType } from 'pg-boss';
import type { DeliveryHooks, SharedTurnQueueOptions, TurnHandler, TurnQueue } from '../../run/turn-queue.js';
import type { QueuedTurn } from '../../run/turn.js';
import type { Fence, LeaseRepo, RunRepo } from '../types.js';
import { dec, enc, num, type Db } from './db.js';
import { claimedTurnSql } from './repos.js';
import { CHANNEL, EXPIRE_SECONDS, jobIdOf, MAX_DELIVERIES, QUEUE_SCHEMA, RETRY_LIMIT, TURN_QUEUE } from './turn-jobs.js';
import { fallbackLog, type LogLevel } from '../../log.js';

export { jobIdOf, QUEUE_SCHEMA, TURN_QUEUE } from './turn-jobs.js';

export interface PgBossTurnQueueOptions extends SharedTurnQueueOptions {
  url: string;
  db: Db;
  runs: RunRepo;
  leases: LeaseRepo;
}

interface JobData {
  conversation: string;
  turnId?: string;
}

interface Claimed {
  job: JobWithMetadata<JobData>;
  fence: Fence;
  pending: { record?: unknown; turn?: unknown };
}

interface Held {
  job: Job<JobData>;
  conversation: string;
  fence?: Fence;
  done: Promise<void>;
  handedBack: boolean;
}

export async function openPgBossTurnQueue(opts: PgBossTurnQueueOptions): Promise<PgBossTurnQueue> {
  const { PgBoss } = await import('pg-boss');
  const superviseSeconds = opts.tuning?.superviseSeconds ?? 5;
  const boss = new PgBoss({
    connectionString: opts.url,
    schema: QUEUE_SCHEMA,
    max: 4,
    application_name: 'gatehouse-queue',
    schedule: false,
    superviseIntervalSeconds: superviseSeconds,
    monitorIntervalSeconds: superviseSeconds,
    instanceName: opts.owner,
  });
  boss.on('error', (err) => opts.log?.('warn', `turn queue (pg-boss): ${err.message}`));
  await boss.start();
  const heartbeatSeconds = Math.max(10, opts.tuning?.heartbeatSeconds ?? 10);
  if (!(await boss.getQueue(TURN_QUEUE))) {
    await boss
      .createQueue(TURN_QUEUE, {
        policy: 'key_strict_fifo',
        heartbeatSeconds,
        expireInSeconds: EXPIRE_SECONDS,
        retryLimit: RETRY_LIMIT,
        retryDelay: 0,
        deleteAfterSeconds: 3600,
      })
      .catch(async (err: unknown) => {
        if (!(await boss.getQueue(TURN_QUEUE))) throw err; // another replica created it meanwhile: fine
      });
  }
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
  /** Turns this process enqueued and has not seen finished (idle() waits for them). */
  private readonly mine = new Set<string>();
  private closed = false;
  private pumping = false;
  private again = false;
  private listener: pg.Client | undefined;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly opts: PgBossTurnQueueOptions,
    private readonly boss: PgBossType,
    private readonly heartbeatSeconds: number,
  ) {
    const beat = setInterval(() => void this.heartbeat(), (heartbeatSeconds * 1000) / 2);
    const poll = setInterval(() => {
      this.wake();
      if (this.mine.size > 0) void this.settleMine().catch(() => undefined);
    }, opts.tuning?.pollMs ?? 2000);
    beat.unref();
    poll.unref();
    this.timers.push(beat, poll);
  }

  /** A dedicated connection LISTENing for new and freed work; lost, it reconnects (the poll covers the gap). */
  async listen(): Promise<void> {
    if (this.closed) return;
    const c = new pg.Client({ connectionString: this.opts.url, application_name: 'gatehouse-queue-listen', keepAlive: true });
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
    this.listener = c;
    this.wake(); // anything sent while not listening
  }

  start(handle: TurnHandler, hooks: DeliveryHooks = {}): void {
    this.handle = handle;
    this.hooks = hooks;
    this.wake();
  }

  async enqueue(conversation: string, queued: QueuedTurn): Promise<boolean> {
    const id = jobIdOf(queued.id);
    const now = (this.opts.now ?? Date.now)();
    const claim = queued.claim;
    const nonce = randomUUID();
    const stored = await this.opts.db.tx(
      'queue a turn',
      async (c) => {
        if (claim) {
          // The platform event is claimed in this transaction: claimed and stored, or neither.
          const r = await this.opts.db.q(c, claimedTurnSql, [conversation, queued.id, enc(queued.turn), now, claim.event, now + claim.ttlMs, nonce]);
          if (r.rows.length === 0) return false; // a redelivery of an event already taken
          await this.opts.db.q(c, `SELECT pg_notify('${CHANNEL}', '')`, []);
        } else {
          await this.opts.db.q(
            c,
            `WITH t AS (INSERT INTO queued_turns (conversation, id, turn, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (conversation, id) DO NOTHING)
             SELECT pg_notify('${CHANNEL}', '')`,
            [conversation, queued.id, enc(queued.turn), now],
          );
        }
        const data: JobData = { conversation, turnId: queued.id };
        await this.boss.send(TURN_QUEUE, data, { id, singletonKey: conversation, db: { executeSql: (text, values) => c.query(text, values) } });
        return true;
      },
      // A commit lost in flight: with a claim, ours when the ledger holds our nonce; without one,
      // both parts are idempotent and are simply sent again.
      async (c) => {
        if (!claim) return undefined;
        const v = await this.opts.db.q(c, 'SELECT 1 FROM events WHERE id = $1 AND claimer = $2', [claim.event, nonce]);
        return v.rows.length > 0 ? true : undefined;
      },
    );
    if (!stored) return false;
    this.mine.add(queued.id);
    this.wake();
    return true;
  }

  async resume(): Promise<number> {
    let n = 0;
    for (const row of await this.opts.runs.records()) {
      if (this.opts.local?.(row.conversation)) continue; // run by the process its client is attached to
      const rec = row.record as { runId?: unknown } | null;
      const runKey = typeof rec?.runId === 'string' ? rec.runId : createHash('sha1').update(JSON.stringify(row.record)).digest('hex');
      const sent = await this.boss.send(TURN_QUEUE, { conversation: row.conversation } satisfies JobData, {
        id: jobIdOf(`resume:${row.conversation}:${runKey}`),
        singletonKey: row.conversation,
      });
      if (sent) n++;
    }
    for (const row of await this.opts.runs.queuedTurns()) {
      if (this.opts.local?.(row.conversation)) continue;
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
    const before = Promise.all([this.lanes.get(conversation), ...[...this.held.values()].filter((h) => h.conversation === conversation).map((h) => h.done)]);
    const run = before.then(async () => {
      // Whoever runs this conversation elsewhere is fenced off from here on.
      await this.opts.leases.take(conversation, this.opts.owner, (this.opts.now ?? Date.now)());
      await task();
    });
    const settled = run.catch((err: unknown) => this.log('error', `[${conversation}] ${(err as Error).stack ?? String(err)}`));
    this.lanes.set(conversation, settled);
    void settled.finally(() => {
      if (this.lanes.get(conversation) === settled) this.lanes.delete(conversation);
    });
    return settled;
  }

  busy(conversation: string): boolean {
    return this.lanes.has(conversation) || [...this.held.values()].some((h) => h.conversation === conversation);
  }

  /**
   * Turns this process sent that another replica finished: `hooks.finished` for each. One read of
   * pg-boss's job table (its documented SQL surface): a job gone or past `active` is finished.
   */
  private async settleMine(): Promise<void> {
    const ids = [...this.mine];
    const r = await this.opts.db.query(
      'read the turn jobs',
      'read',
      `SELECT id::text AS id FROM ${QUEUE_SCHEMA}.job WHERE name = $1 AND id = ANY($2::uuid[]) AND state < 'completed'`,
      [TURN_QUEUE, ids.map(jobIdOf)],
    );
    const open = new Set((r.rows as Array<{ id: string }>).map((x) => x.id));
    for (const id of ids) {
      if (open.has(jobIdOf(id)) || !this.mine.has(id)) continue;
      this.mine.delete(id);
      this.hooks.finished?.(id);
    }
  }

  async idle(): Promise<void> {
    for (;;) {
      if (this.mine.size > 0) await this.settleMine();
      if (this.held.size === 0 && this.lanes.size === 0 && this.mine.size === 0) return;
      await Promise.race([Promise.all([...this.held.values()].map((h) => h.done)), sleep(25)]);
    }
  }

  async close(graceMs: number): Promise<void> {
    this.closed = true;
    const end = Date.now() + graceMs;
    const running = () => [...this.held.values()].some((h) => !h.handedBack && !this.opts.settled?.(h.conversation));
    while (Date.now() < end && running())
      await Promise.race([Promise.all([...this.held.values()].map((h) => h.done)), sleep(Math.min(50, Math.max(1, end - Date.now())))]);
    await this.handBack().catch((err: unknown) =>
      this.log('warn', `turn queue: handing back failed (${(err as Error).message}); those jobs go to another replica when their heartbeat lapses`),
    );
    if (this.held.size > 0 && [...this.held.values()].some((h) => !h.handedBack)) return; // called again to wait again
    for (const t of this.timers.splice(0)) clearInterval(t);
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => undefined);
    await this.boss.stop({ graceful: false, close: true, timeout: 1000 }).catch(() => undefined);
  }

  /** Gives back every job still held: our fence moves on first, then the job goes to `retry`. */
  private async handBack(): Promise<void> {
    const back = [...this.held.values()].filter((h) => !h.handedBack);
    if (back.length === 0) return;
    for (const h of back) {
      h.handedBack = true;
      await this.opts.leases.take(h.conversation, `${this.opts.owner}:handed-back`, (this.opts.now ?? Date.now)()).catch(() => undefined);
    }
    for (const h of back) this.held.delete(h.job.id);
    await this.boss.fail(
      TURN_QUEUE,
      back.map((h) => ({ id: h.job.id, retryCount: h.job.retryCount })),
      { reason: `handed back by ${this.opts.owner} (shutting down)` },
    );
    await this.notifyAll();
    this.log('info', `turn queue: handed back ${back.length} conversation(s) to the other replicas: ${back.map((h) => h.conversation).join(', ')}`);
  }

  private running(): number {
    let n = 0;
    for (const h of this.held.values()) if (!this.opts.settled?.(h.conversation)) n++;
    return n;
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
      this.log('warn', `turn queue: fetching work failed (${(err as Error).message}); trying again at the next poll`);
    } finally {
      this.pumping = false;
    }
  }

  /**
   * ONE transaction (one commit): fetch up to `n` jobs, take each one's conversation (its epoch up
   * by one), then read each one's run record and turn. The read is its own statement, so it sees
   * what the previous owner committed while the take waited for it.
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
      const taken = await db.q(
        c,
        `INSERT INTO leases AS l (conversation, owner, epoch, taken_at) SELECT conv, $2, 1, $3 FROM unnest($1::text[]) AS u(conv)
         ON CONFLICT (conversation) DO UPDATE SET owner = EXCLUDED.owner, epoch = l.epoch + 1, taken_at = EXCLUDED.taken_at
         RETURNING conversation, epoch`,
        [convs, this.opts.owner, (this.opts.now ?? Date.now)()],
      );
      const epochs = new Map((taken.rows as Array<{ conversation: string; epoch: string }>).map((r) => [r.conversation, num(r.epoch)]));
      const read = await db.q(
        c,
        `SELECT u.conv, (SELECT record FROM run_records r WHERE r.conversation = u.conv) AS record,
                (SELECT turn FROM queued_turns q WHERE q.conversation = u.conv AND q.id = u.turn) AS turn
           FROM unnest($1::text[], $2::text[]) AS u(conv, turn)`,
        [convs, jobs.map((j) => j.data.turnId ?? null)],
      );
      const found = new Map((read.rows as Array<{ conv: string; record: string | null; turn: string | null }>).map((r) => [r.conv, r]));
      return jobs.map((job): Claimed => {
        const conversation = job.data.conversation;
        const r = found.get(conversation);
        return {
          job,
          fence: { conversation, owner: this.opts.owner, epoch: epochs.get(conversation)! },
          pending: { ...(r?.record != null ? { record: dec(r.record) } : {}), ...(r?.turn != null ? { turn: dec(r.turn) } : {}) },
        };
      });
    });
    // Started in the order they were sent (a batch comes back in no particular order).
    return claimed.sort((x, y) => x.job.createdOn.getTime() - y.job.createdOn.getTime());
  }

  private take(c: Claimed): void {
    const { job } = c;
    const h: Held = { job, conversation: job.data.conversation, fence: c.fence, done: Promise.resolve(), handedBack: false };
    this.held.set(job.id, h);
    h.done = this.deliver(h, c.fence, c.pending).finally(() => {
      if (this.held.get(job.id) === h) this.held.delete(job.id);
      this.wake();
    });
  }

  private async deliver(h: Held, fence: Fence, pending: { record?: unknown; turn?: unknown }): Promise<void> {
    const { conversation, turnId } = h.job.data;
    try {
      if (pending.record !== undefined && this.hooks.takeover) await this.hooks.takeover(conversation, pending.record, { fence });
      if (turnId !== undefined && pending.turn !== undefined && !h.handedBack) {
        const turn = this.opts.parse(pending.turn);
        if (!turn) {
          this.log('warn', `dropping an unreadable queued turn of ${conversation} (${turnId})`);
          await this.opts.runs.dropTurn(conversation, turnId);
        } else if (h.job.retryCount >= MAX_DELIVERIES) {
          this.log(
            'error',
            `[${conversation}] dropping turn ${turnId}: delivered ${h.job.retryCount + 1} times without reaching its checkpoint (each replica running it died?)`,
          );
          await this.opts.runs.dropTurn(conversation, turnId);
        } else {
          await this.handle!(conversation, { id: turnId, turn }, { fence });
        }
      }
      if (h.handedBack) return;
      await this.boss.complete(TURN_QUEUE, { id: h.job.id, retryCount: h.job.retryCount });
    } catch (err) {
      // The store or the queue failed under the run: give the job back so it is delivered again.
      this.log('error', `[${conversation}] ${(err as Error).stack ?? String(err)}`);
      if (!h.handedBack) await this.boss.fail(TURN_QUEUE, { id: h.job.id, retryCount: h.job.retryCount }, { reason: String(err) }).catch(() => undefined);
    } finally {
      if (turnId !== undefined) {
        this.mine.delete(turnId);
        this.hooks.finished?.(turnId);
      }
    }
    await this.notifyAll(); // its successor is fetchable now, on any replica
  }

  private async heartbeat(): Promise<void> {
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
      this.log('warn', `turn queue: heartbeat failed (${(err as Error).message})`);
    }
  }

  private async notifyAll(): Promise<void> {
    await this.opts.db.query('wake the replicas', 'idempotent', `SELECT pg_notify('${CHANNEL}', '')`, []).catch(() => undefined);
  }

  private log(level: LogLevel, msg: string): void {
    (this.opts.log ?? fallbackLog)(level, msg);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
