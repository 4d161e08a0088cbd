/**
 * Contract: the pool and the retry policy, the only place that runs SQL against the pool.
 * - `read` and `idempotent` calls are retried on a lost connection (server restart,
 *   pg_terminate_backend, a failover) until `retryForMs` has passed: sending them twice is harmless.
 * - `once` calls (a claim, decide-once, compare-and-set) are retried only when pg refused before
 *   sending anything, or through their `verify`, which reads whether the first attempt took effect
 *   (each such write stamps a nonce in its row). Without a verify, a lost connection rejects.
 * - `tx` runs BEGIN ... COMMIT on one connection. Lost before COMMIT was sent: nothing was
 *   committed, so the whole transaction runs again. Lost during COMMIT: `verify` decides, and with
 *   none the call rejects saying the outcome is unknown. A call never resolves before its commit.
 * - Serialization failures and deadlocks (40001, 40P01) rerun the transaction.
 * - A login the server refuses for now (no connection slot free, the database closed to logins)
 *   is tried again until `retryForMs`, for every call: nothing was sent.
 * Every error that leaves here is scrubbed of the password (StoreConflictError passes unchanged).
 */
import type pg from 'pg';
import { storeRoundTrips } from '../round-trips.js';
import { StoreConflictError, StoreError } from '../types.js';
import { isConnectionLoss, isRefusedForNow, isRetryableConflict, notSent, redact, runtimeError, type Target } from './errors.js';
import type { Log } from '../../log.js';
import { messageOf } from '../../log.js';

export type Safety = 'read' | 'idempotent' | 'once';
export type Client = pg.PoolClient;
type Verify<T> = (c: Client) => Promise<T | undefined>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** The most statement texts prepared on a connection (see `statementName`). */
const MAX_NAMED = 200;
const guarded = new WeakSet<Client>();

export class Db {
  /** Round trips sent, for the bench and for tests of the per-operation cost. */
  roundTrips = 0;

  constructor(
    readonly pool: pg.Pool,
    readonly target: Target,
    private readonly log: Log,
    private readonly retryForMs: number,
  ) {}

  private wrap(err: unknown, what: string): Error {
    if (err instanceof StoreConflictError) return err;
    return runtimeError(err, this.target, what);
  }

  async q(c: Client, sql: string, params?: unknown[]): Promise<pg.QueryResult> {
    this.roundTrips++;
    storeRoundTrips.count++;
    const name = params && params.length > 0 ? this.statementName(sql) : undefined;
    return name ? c.query({ name, text: sql, values: params ?? [] }) : c.query(sql, params);
  }

  /**
   * A name per statement text, so each connection parses and plans a statement once, not at every
   * call (the server's CPU per message was mostly that). Texts are a fixed set (SQL with `$n`
   * parameters, shaped by which parts a write has); past MAX_NAMED a new text runs unnamed, so a
   * connection never holds more than that many prepared statements.
   */
  private statementName(sql: string): string | undefined {
    let name = this.names.get(sql);
    if (name === undefined && this.names.size < MAX_NAMED) {
      name = `gh_${this.names.size}`;
      this.names.set(sql, name);
    }
    return name;
  }

  private readonly names = new Map<string, string>();

  /** A single statement. */
  async query(what: string, safety: Safety, sql: string, params: unknown[], verify?: Verify<pg.QueryResult>): Promise<pg.QueryResult> {
    return this.run(what, safety, (c) => this.q(c, sql, params), verify);
  }

  async run<T>(what: string, safety: Safety, fn: (c: Client) => Promise<T>, verify?: Verify<T>): Promise<T> {
    const deadline = Date.now() + this.retryForMs;
    let ambiguous = false;
    for (let attempt = 0; ; attempt++) {
      const c = await this.checkout(what, deadline, attempt);
      try {
        if (ambiguous && verify) {
          const v = await verify(c);
          if (v !== undefined) {
            c.release();
            return v;
          }
        }
        const r = await fn(c);
        c.release();
        return r;
      } catch (err) {
        const lost = isConnectionLoss(err);
        c.release(lost ? (err as Error) : undefined);
        if (!lost) throw this.wrap(err, what);
        const safe = notSent(err) || safety !== 'once' || verify !== undefined;
        if (!safe) throw this.unknownOutcome(err, what);
        if (Date.now() > deadline) throw this.wrap(err, what);
        if (!notSent(err)) ambiguous = true;
        this.log('warn', `postgres: ${what}: connection lost (${this.scrub(err)}); retrying`);
        await sleep(backoff(attempt));
      }
    }
  }

  /** BEGIN; fn; COMMIT on one connection, with the retry policy above. */
  async tx<T>(what: string, fn: (c: Client) => Promise<T>, verify?: Verify<T>): Promise<T> {
    const deadline = Date.now() + this.retryForMs;
    let ambiguous = false;
    for (let attempt = 0; ; attempt++) {
      const c = await this.checkout(what, deadline, attempt);
      let committing = false;
      try {
        if (ambiguous && verify) {
          const v = await verify(c);
          if (v !== undefined) {
            c.release();
            return v;
          }
        }
        await this.q(c, 'BEGIN');
        const r = await fn(c);
        committing = true;
        await this.q(c, 'COMMIT');
        c.release();
        return r;
      } catch (err) {
        const lost = isConnectionLoss(err);
        if (!lost && !committing) {
          try {
            await this.q(c, 'ROLLBACK');
            c.release();
          } catch (rollbackErr) {
            c.release(rollbackErr as Error);
          }
        } else {
          c.release(lost ? (err as Error) : undefined);
        }
        const again = Date.now() <= deadline;
        if (!lost) {
          if (!committing && isRetryableConflict(err) && again) {
            await sleep(backoff(attempt));
            continue;
          }
          throw this.wrap(err, what);
        }
        if (committing && !verify) throw this.unknownOutcome(err, what);
        if (!again) throw this.wrap(err, what);
        if (committing) ambiguous = true;
        this.log('warn', `postgres: ${what}: connection lost (${this.scrub(err)}); retrying`);
        await sleep(backoff(attempt));
      }
    }
  }

  private async checkout(what: string, deadline: number, attempt: number): Promise<Client> {
    for (let n = attempt; ; n++) {
      try {
        const c = await this.pool.connect();
        // Checked out, a client has no 'error' listener (the pool's is for idle ones): the server
        // ending its session between two statements (a fenced transaction left idle past its
        // timeout by a stalled event loop) would crash the process. The next statement fails
        // instead, as a lost connection, and is retried from BEGIN.
        if (!guarded.has(c)) {
          guarded.add(c);
          c.on('error', (err: Error) => this.log('warn', `postgres: a connection in use failed: ${this.scrub(err)}`));
        }
        return c;
      } catch (err) {
        // A refused login sent nothing: waiting for a slot (or the server) is safe for any call.
        if (!(isConnectionLoss(err) || isRefusedForNow(err)) || Date.now() > deadline) throw this.wrap(err, what);
        if (n === attempt) this.log('warn', `postgres: ${what}: cannot connect (${this.scrub(err)}); retrying`);
        await sleep(backoff(n));
      }
    }
  }

  private scrub(err: unknown): string {
    return redact(messageOf(err), this.target.password);
  }

  private unknownOutcome(err: unknown, what: string): StoreError {
    return new StoreError(
      `PostgreSQL ${this.target.host}:${this.target.port}/${this.target.database}: the connection was lost while ${what} was committing, so whether it was stored is unknown (${this.scrub(err)}). It was not acknowledged; check the server and retry.`,
      'outcome-unknown',
    );
  }
}

function backoff(attempt: number): number {
  return Math.min(2000, 50 * 2 ** Math.min(attempt, 6));
}

/** JSON in, text out: values are stored as their JSON text (exact round trip, NUL-safe). */
export function enc(v: unknown): string {
  const s = JSON.stringify(v);
  if (s === undefined) throw new StoreError('a stored value must be JSON (got undefined or a function)', 'not-json');
  return s;
}

export function dec(s: unknown): unknown {
  return typeof s === 'string' ? (JSON.parse(s) as unknown) : s;
}

/** int8 comes back from pg as a string. */
export function num(v: unknown): number {
  return typeof v === 'number' ? v : Number(v);
}
