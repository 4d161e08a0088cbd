/**
 * Contract: the PostgreSQL engine's Signals (../types.ts), over LISTEN/NOTIFY.
 * - One channel per database (`gatehouse_signals`); a notification's payload is `<topic>\n<payload>`
 *   and is dispatched to this process's subscribers of the topic. NOTIFY goes through the pool
 *   (`pg_notify`, retried as an idempotent call: a duplicate wake-up is harmless).
 * - LISTEN holds ONE dedicated connection (a pg.Client, never a pooled one: a pooled connection is
 *   handed to other work and its notifications would be lost), opened on the first subscribe or
 *   onResync, so operator commands that only read never open it.
 * - A lost listening connection (pg_terminate_backend, a server restart, a failover, a ping not
 *   answered within `pingTimeoutMs`) is reconnected with backoff (50 ms doubling to 5 s, for as long
 *   as it takes), LISTEN is sent again, and only then are the onResync listeners called: whatever
 *   was notified while it was down is found by their re-read. The first LISTEN is followed by a
 *   resync too (a subscriber may have subscribed before it). `live()`: LISTEN is active now.
 * - Log lines name the server without the password (redact); one line on loss, one on recovery,
 *   and while it stays down one every ten failed attempts.
 */
import pg from 'pg';
import { checkSignal, SignalHub } from '../signal-hub.js';
import type { Signals } from '../types.js';
import type { Db } from './db.js';
import { describeTarget, redact, type Target } from './errors.js';
import { messageOf } from '../../log.js';
import type { Log } from '../../log.js';

const CHANNEL = 'gatehouse_signals';

export interface PostgresSignalsOptions {
  url: string;
  target: Target;
  db: Db;
  log: Log;
  connectTimeoutMs: number;
  /** How often the idle listening connection is pinged (default 30 s). */
  pingMs?: number;
  /** A ping not answered within this is a lost connection (default 10 s). */
  pingTimeoutMs?: number;
}

export interface PostgresSignals extends Signals {
  close(): Promise<void>;
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
const backoff = (attempt: number) => Math.min(5_000, 50 * 2 ** Math.min(attempt, 7));

export function postgresSignals(o: PostgresSignalsOptions): PostgresSignals {
  const hub = new SignalHub();
  const where = describeTarget(o.target);
  const scrub = (err: unknown) => redact(messageOf(err), o.target.password);
  let client: pg.Client | undefined;
  let started = false;
  let closed = false;
  let up = deferred();
  let downSince: number | undefined;
  let ping: NodeJS.Timeout | undefined;

  const dispatch = (raw: string) => {
    const nl = raw.indexOf('\n');
    if (nl > 0) hub.deliver(raw.slice(0, nl), raw.slice(nl + 1));
  };

  const lost = (c: pg.Client, err: unknown) => {
    if (c !== client || closed) return;
    client = undefined;
    if (ping) clearInterval(ping);
    ping = undefined;
    up = deferred();
    downSince = Date.now();
    o.log('warn', `postgres: signals: the listening connection to ${where} was lost (${scrub(err)}); reconnecting, then re-reading what may have been missed`);
    c.end().catch(() => undefined);
    void connect();
  };

  const startPing = (c: pg.Client) => {
    const every = o.pingMs ?? 30_000;
    const within = o.pingTimeoutMs ?? 10_000;
    ping = setInterval(() => {
      let answered = false;
      const t = setTimeout(() => answered || lost(c, new Error(`no answer to a ping within ${within} ms`)), within);
      t.unref();
      c.query('SELECT 1').then(
        () => {
          answered = true;
          clearTimeout(t);
        },
        (err: unknown) => {
          answered = true;
          clearTimeout(t);
          lost(c, err);
        },
      );
    }, every);
    ping.unref();
  };

  const connect = async (): Promise<void> => {
    for (let attempt = 0; !closed; attempt++) {
      const c = new pg.Client({ connectionString: o.url, connectionTimeoutMillis: o.connectTimeoutMs, keepAlive: true, application_name: 'gatehouse-signals' });
      // Before connect: an error event with no listener would crash the process.
      c.on('error', (err) => lost(c, err));
      c.on('end', () => lost(c, new Error('the server closed the connection')));
      c.on('notification', (m) => {
        if (m.channel === CHANNEL && m.payload) dispatch(m.payload);
      });
      try {
        await c.connect();
        await c.query(`LISTEN ${CHANNEL}`);
      } catch (err) {
        c.end().catch(() => undefined);
        if (attempt % 10 === 0) o.log('warn', `postgres: signals: cannot listen on ${where} (${scrub(err)}); retrying`);
        await sleep(backoff(attempt));
        continue;
      }
      if (closed) {
        await c.end().catch(() => undefined);
        return;
      }
      client = c;
      if (downSince !== undefined)
        o.log('info', `postgres: signals: listening on ${where} again after ${Date.now() - downSince} ms; re-reading what may have been missed`);
      downSince = undefined;
      startPing(c);
      up.resolve();
      hub.resync();
      return;
    }
  };

  const start = () => {
    if (started || closed) return;
    started = true;
    void connect();
  };

  return {
    async publish(topic, payload) {
      checkSignal(topic, payload);
      await o.db.query(`send a signal (${topic})`, 'idempotent', 'SELECT pg_notify($1, $2)', [CHANNEL, `${topic}\n${payload}`]);
    },
    subscribe(topic, fn) {
      const off = hub.subscribe(topic, fn);
      start();
      return off;
    },
    onResync(fn) {
      const off = hub.onResync(fn);
      start();
      return off;
    },
    ready() {
      start();
      return up.promise;
    },
    live: () => client !== undefined,
    async close() {
      closed = true;
      if (ping) clearInterval(ping);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
