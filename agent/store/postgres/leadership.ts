/**
 * Leadership on PostgreSQL (the contract is Leadership's in ../types.ts).
 *
 * Contract (mechanics):
 * - One `pg.Client` per Leadership, outside the pool: a session advisory lock is held by its
 *   connection, and a pooled connection would carry it off to other work. The key is the two-int4
 *   form (LOCK_CLASS, hashtext(role)), a key space apart from the migration lock's single bigint.
 * - Every `retryEveryMs`: a standby (re)connects when needed, LISTENs on `gatehouse_leadership` and
 *   tries `pg_try_advisory_lock`; a holder runs a heartbeat (`SELECT 1`) that must answer within
 *   `patience` (2 x retryEveryMs, 2-8 s). A failed heartbeat, a connection error or end means "not
 *   leading" at once (onChange(false)); the connection is dropped, which releases the lock if the
 *   server still had it. The session's TCP keepalives make the server drop a silent holder (a
 *   partition: no FIN, no RST) a few seconds after that holder has given up by itself, never before.
 * - release(): `pg_advisory_unlock`, then `NOTIFY gatehouse_leadership, role`: a standby LISTENing
 *   tries at once instead of at its next tick.
 */
import pg from 'pg';
import type { Leadership, LeadershipOptions } from '../types.js';
import { redact, type Target } from './errors.js';
import type { LogLevel } from '../../log.js';
import { messageOf } from '../../log.js';

const LOCK_CLASS = 0x6761_7465; // "gate": any fixed int4
const CHANNEL = 'gatehouse_leadership';

export function postgresLeadership(url: string, target: Target, role: string, opts: LeadershipOptions = {}): Leadership {
  const every = opts.retryEveryMs ?? 2_000;
  // A holder gives up within every + patience of its connection going silent; the server is told
  // (TCP keepalives on this session) to drop a silent holder, and with it the lock, only later:
  // never two holders, and a standby still takes over well within 30 s at the default interval.
  const patience = Math.min(Math.max(2 * every, 2_000), 8_000);
  const serverIdleS = Math.ceil((every + patience) / 1000) + 2;
  const log = (level: LogLevel, msg: string) => opts.log?.(level, redact(msg, target.password));
  const listeners = new Set<(leading: boolean) => void>();
  let leading = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  /** One attempt or heartbeat at a time; a NOTIFY arriving meanwhile asks for one more. */
  let busy: Promise<void> | undefined;
  let again = false;
  /** A connection failure is logged once until the next success. */
  let failing = false;

  const set = (next: boolean) => {
    if (next === leading) return;
    leading = next;
    for (const fn of [...listeners]) {
      try {
        fn(next);
      } catch (err) {
        log('warn', `leadership ${role}: a listener failed: ${messageOf(err)}`);
      }
    }
  };

  /** Drops the connection (and with it the lock, if the server still has it). */
  const drop = (c: pg.Client | undefined) => {
    if (client === c) client = undefined;
    if (c) void c.end().catch(() => undefined);
  };

  const lost = (c: pg.Client, why: string) => {
    if (client !== c) return;
    drop(c);
    if (leading) log('warn', `leadership ${role}: lost (${why}); standing by`);
    set(false);
  };

  async function connect(): Promise<pg.Client> {
    const c = new pg.Client({
      connectionString: url,
      keepAlive: true,
      keepAliveInitialDelayMillis: every,
      connectionTimeoutMillis: Math.max(every, 2_000),
      application_name: `gatehouse leader ${role}`.slice(0, 63),
    });
    c.on('error', (err) => lost(c, err.message));
    c.on('end', () => lost(c, 'connection closed'));
    c.on('notification', (n) => {
      if (n.channel === CHANNEL && n.payload === role && !leading) kick();
    });
    try {
      await c.connect();
      await c.query(`SET tcp_keepalives_idle = ${serverIdleS}; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3; LISTEN ${CHANNEL}`);
    } catch (err) {
      void c.end().catch(() => undefined);
      throw err;
    }
    return c;
  }

  /** A query that must answer in time, or the connection counts as lost. */
  async function bounded(c: pg.Client, sql: string, params: unknown[]): Promise<pg.QueryResult> {
    let t: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        c.query(sql, params),
        new Promise<never>((_, reject) => {
          t = setTimeout(() => reject(new Error(`no answer within ${patience} ms`)), patience);
        }),
      ]);
    } finally {
      clearTimeout(t);
    }
  }

  async function tick(): Promise<void> {
    if (stopped) return;
    let c = client;
    try {
      if (!c) {
        c = await connect();
        if (stopped) return drop(c);
        client = c;
      }
      if (leading) {
        await bounded(c, 'SELECT 1', []);
      } else {
        const r = await bounded(c, 'SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [LOCK_CLASS, role]);
        if (stopped) return;
        if ((r.rows[0] as { ok: boolean } | undefined)?.ok === true) {
          log('info', `leadership ${role}: taken`);
          set(true);
        }
      }
      if (failing) log('info', `leadership ${role}: the database answers again`);
      failing = false;
    } catch (err) {
      if (!failing) log('warn', `leadership ${role}: ${messageOf(err)}; trying again every ${every} ms`);
      failing = true;
      if (c) lost(c, messageOf(err));
    }
  }

  function kick(): Promise<void> {
    if (busy) {
      again = true;
      return busy;
    }
    busy = (async () => {
      do {
        again = false;
        await tick();
      } while (again && !stopped);
    })().finally(() => {
      busy = undefined;
    });
    return busy;
  }

  return {
    role,
    get leading() {
      return leading;
    },
    onChange(fn) {
      listeners.add(fn);
      return () => void listeners.delete(fn);
    },
    async start() {
      if (timer || stopped) return;
      timer = setInterval(() => void kick(), every);
      timer.unref();
      await kick();
    },
    async release() {
      if (stopped) return;
      stopped = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await busy?.catch(() => undefined);
      const c = client;
      const was = leading;
      set(false);
      if (!c) return;
      client = undefined;
      try {
        if (was) {
          await bounded(c, 'SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_CLASS, role]);
          await bounded(c, 'SELECT pg_notify($1, $2)', [CHANNEL, role]);
          log('info', `leadership ${role}: released`);
        }
      } catch (err) {
        // Ending the connection below releases the lock anyway; the standby then finds it at its next try.
        log('warn', `leadership ${role}: releasing: ${messageOf(err)}`);
      } finally {
        await c.end().catch(() => undefined);
      }
    },
  };
}
