// The PostgreSQL engine's own behaviour beyond the shared contract: start-up errors an operator can
// act on, the password kept out of every message, migrations once under concurrent start, and
// calls that survive their connections being killed (pg_terminate_backend).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { allowConnections, createDatabase, openPostgresStore, terminateConnections, type PostgresStore } from '../../../agent/store/postgres/index.js';
import { checkServerVersion, parseTarget, redact } from '../../../agent/store/postgres/errors.js';
import { MIGRATIONS } from '../../../agent/store/postgres/migrations.js';
import { Db } from '../../../agent/store/postgres/db.js';
import { StoreConflictError, StoreError } from '../../../agent/store/types.js';
import { startPrivatePostgres, testPostgresAdminUrl, testPostgresUrl, type PrivatePostgres } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../../', import.meta.url));

let adminUrl = '';
let password = '';
const logs: string[] = [];
const log = (_level: string, m: string) => logs.push(m);
const opened: PostgresStore[] = [];

async function open(url?: string): Promise<PostgresStore> {
  const s = await openPostgresStore({ url: url ?? (await testPostgresUrl()), log, sweepEveryMs: 3_600_000 });
  opened.push(s);
  return s;
}

/** A store whose log lines are kept (here and in `logs`); `seen` resolves at the first one matching `re`. */
async function openWatching(url: string, re: RegExp): Promise<{ s: PostgresStore; lines: string[]; seen: Promise<void> }> {
  const lines: string[] = [];
  let hit: () => void = () => undefined;
  const seen = new Promise<void>((r) => (hit = r));
  const s = await openPostgresStore({
    url,
    log: (level, m) => {
      lines.push(m);
      log(level, m);
      if (re.test(m)) hit();
    },
    sweepEveryMs: 3_600_000,
  });
  opened.push(s);
  return { s, lines, seen };
}

function withPassword(url: string, pw: string): string {
  const u = new URL(url);
  u.password = pw;
  return u.toString();
}

async function failure(p: Promise<unknown>): Promise<StoreError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(StoreError);
    return err as StoreError;
  }
  throw new Error('expected the open to fail');
}

function unusedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 1));
    });
  });
}

beforeAll(async () => {
  adminUrl = await testPostgresAdminUrl();
  password = decodeURIComponent(new URL(adminUrl).password);
}, 200_000);

afterAll(async () => {
  for (const s of opened) await s.close();
  // No password in any log line of any test here (pg's own error texts included).
  if (password) for (const line of logs) expect(line).not.toContain(password);
});

describe('start-up errors name the server, the database and the fix, never the password', () => {
  test('an unreachable server', async () => {
    const port = await unusedPort();
    const secret = 'S3cret-unreachable';
    const err = await failure(openPostgresStore({ url: `postgres://bot:${secret}@127.0.0.1:${port}/gatehouse`, log }));
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).toContain('"gatehouse"');
    expect(err.message).toMatch(/Start the server|GATEHOUSE_STORE/);
    expect(err.code).toBe('unreachable');
    expect(err.message).not.toContain(secret);
  });

  test('a host that does not resolve', async () => {
    const err = await failure(openPostgresStore({ url: 'postgres://bot:hunter2-dns@no-such-host.invalid:5432/gatehouse', log }));
    expect(err.message).toContain('no-such-host.invalid');
    expect(err.code).toBe('unreachable');
    expect(err.message).not.toContain('hunter2-dns');
  });

  test('wrong credentials', async () => {
    const wrong = 'Wrong-Pa55word-xyz';
    const url = withPassword(await testPostgresUrl(), wrong);
    const err = await failure(openPostgresStore({ url, log }));
    expect(err.code).toBe('auth');
    const t = parseTarget(url);
    expect(err.message).toContain(`${t.host}:${t.port}`);
    expect(err.message).toContain(t.database);
    expect(err.message).toMatch(/password/);
    expect(err.message).not.toContain(wrong);
    expect(err.message).not.toContain(password);
  });

  test('a missing database', async () => {
    const u = new URL(adminUrl);
    u.pathname = '/gh_no_such_database';
    const err = await failure(openPostgresStore({ url: u.toString(), log }));
    expect(err.code).toBe('no-database');
    expect(err.message).toContain('gh_no_such_database');
    expect(err.message).toContain('createdb');
    expect(err.message).not.toContain(password);
  });

  test('a server older than 13', () => {
    const t = parseTarget('postgres://bot:pw-old-1@db.example:5433/gatehouse');
    const err = checkServerVersion(120017, '12.17', t);
    expect(err?.message).toContain('12.17');
    expect(err?.message).toContain('13 or newer');
    expect(err?.message).toContain('db.example:5433');
    expect(err?.message).not.toContain('pw-old-1');
    expect(checkServerVersion(170010, '17.10', t)).toBeUndefined();
  });

  test('a password with URL-special characters is redacted in every form', () => {
    const pw = 'p@ss:w/rd%21';
    expect(redact(`x ${pw} y ${encodeURIComponent(pw)}`, pw)).toBe('x *** y ***');
  });

  test('a short password is redacted where it stands, not inside the words of the message', async () => {
    expect(redact('fix the port in postgres://u:p@h/db (password=p)', 'p')).toBe('fix the port in postgres://u:***@h/db (password=***)');
    expect(redact('user "bot" with password "hunter2", not hunter2x', 'hunter2')).toBe('user "bot" with password "***", not hunter2x');
    // The operator's message for an unreachable server keeps its own words whole.
    const err = await failure(openPostgresStore({ url: `postgres://bot:p@127.0.0.1:${await unusedPort()}/gatehouse`, log }));
    expect(err.message).toContain('fix the host and port in GATEHOUSE_STORE');
    expect(err.message).not.toContain('***');
  });
});

test('the description carries user, host, port and database but no password', async () => {
  const url = await testPostgresUrl();
  const s = await open(url);
  const t = parseTarget(url);
  expect(s.engine).toBe('postgres');
  expect(s.description).toBe(`postgres://${t.user}@${t.host}:${t.port}/${t.database}`);
  expect(s.description).not.toContain(password);
});

test('two processes starting at once on a new database migrate it once', async () => {
  const url = await testPostgresUrl();
  const child = () =>
    run(process.execPath, ['--import', './test/helpers/register-ts.mjs', 'test/helpers/postgres-child.ts', url, 'open'], {
      cwd: repo,
      env: { ...process.env, NODE_OPTIONS: '' },
    });
  const outs = await Promise.all([child(), child()]);
  const lines = outs.flatMap((o) => JSON.parse(o.stdout.trim()) as string[]);
  const applied = lines.filter((l) => l.includes('applied schema migration'));
  expect(applied).toHaveLength(MIGRATIONS.length);
  for (const l of lines) expect(l).not.toContain(password);
  // A third open finds the schema current and applies nothing.
  const before = logs.length;
  await open(url);
  expect(logs.slice(before).filter((l) => l.includes('applied schema migration'))).toEqual([]);
}, 60_000);

test('calls survive their connections being terminated', async () => {
  const url = await testPostgresUrl();
  const db = parseTarget(url).database;
  const s = await open(url);
  await s.transcripts.write({ conversation: 'c1', agent: 'a', state: {}, changes: [{ op: 'append', rows: [{ seq: 1, message: 'hi' }] }], now: 1 });
  await s.approvals.create({ id: 'r1', conversation: 'c1', request: { k: 1 }, tokens: [{ token: 't1', choice: 'yes' }], createdAt: 1, keepUntil: 1_000 });

  expect(await terminateConnections(adminUrl, db)).toBeGreaterThan(0);
  expect((await s.transcripts.load('c1'))?.rows).toEqual([{ seq: 1, message: 'hi' }]);

  await terminateConnections(adminUrl, db);
  expect(await s.approvals.decideOnce('r1', { by: 'u' }, 2, 1_000)).toBe(true);
  await terminateConnections(adminUrl, db);
  expect(await s.events.claim('e1', 1_000, 2)).toBe(true);
  await terminateConnections(adminUrl, db);
  const w = await s.transcripts.write({ conversation: 'c1', agent: 'a', state: {}, changes: [{ op: 'append', rows: [{ seq: 2, message: 'again' }] }], now: 3 });
  expect(w.created).toBe(false);
  await terminateConnections(adminUrl, db);
  await s.checkpoint({ record: { conversation: 'c1', record: { step: 1 } } });

  expect((await s.transcripts.load('c1'))?.rows.map((r) => r.message)).toEqual(['hi', 'again']);
  expect(await s.approvals.decideOnce('r1', { by: 'v' }, 2, 1_000)).toBe(false);
  expect(await s.events.claim('e1', 1_000, 3)).toBe(false);
  expect(await s.runs.records()).toEqual([{ conversation: 'c1', record: { step: 1 } }]);
}, 60_000);

test('with no connection slot free, calls wait for one instead of failing (a role at its CONNECTION LIMIT)', async () => {
  const url = await testPostgresUrl();
  const db = parseTarget(url).database;
  const role = `gh_slots_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'slots-pw'`);
    await admin.query(`ALTER DATABASE ${db} OWNER TO ${role}`);
    const u = new URL(url);
    u.username = role;
    u.password = 'slots-pw';
    const { s, lines, seen: waiting } = await openWatching(u.toString(), /cannot connect \(.*too many connections.*\); retrying/);
    try {
      await s.transcripts.write({ conversation: 'c1', agent: 'a', state: {}, changes: [{ op: 'append', rows: [{ seq: 1, message: 'hi' }] }], now: 1 });
      await s.approvals.create({ id: 'r1', conversation: 'c1', request: {}, tokens: [{ token: 't1', choice: 'yes' }], createdAt: 1, keepUntil: 1_000 });
      // No new login for the role, and the store's open connections ended: its next call needs a slot.
      await admin.query(`ALTER ROLE ${role} CONNECTION LIMIT 0`);
      await terminateConnections(adminUrl, db);
      const read = s.transcripts.load('c1');
      const decide = s.approvals.decideOnce('r1', { by: 'u' }, 2, 1_000);
      await Promise.race([waiting, read, decide]); // a refusal that is not retried rejects here at once
      await admin.query(`ALTER ROLE ${role} CONNECTION LIMIT -1`);
      expect((await read)?.rows).toEqual([{ seq: 1, message: 'hi' }]);
      expect(await decide).toBe(true);
      expect(await s.approvals.decideOnce('r1', { by: 'v' }, 2, 1_000)).toBe(false);
      for (const l of lines) expect(l).not.toContain('slots-pw');
    } finally {
      await s.close();
    }
  } finally {
    await admin.query(`ALTER DATABASE ${db} OWNER TO CURRENT_USER`).catch(() => undefined);
    await admin.query(`DROP OWNED BY ${role}`).catch(() => undefined);
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    await admin.end();
  }
}, 60_000);

test('a database closed to logins (ALLOW_CONNECTIONS false, maintenance): calls wait until it opens again', async () => {
  const url = await testPostgresUrl();
  const db = parseTarget(url).database;
  const { s, seen: waiting } = await openWatching(url, /cannot connect \(.*not currently accepting connections.*\); retrying/);
  await s.cache.set('k', { v: 1 });
  await allowConnections(adminUrl, db, false);
  try {
    await terminateConnections(adminUrl, db);
    const read = s.cache.get('k');
    await Promise.race([waiting, read]);
    await allowConnections(adminUrl, db, true);
    expect(await read).toEqual({ v: 1 });
  } finally {
    await allowConnections(adminUrl, db, true);
  }
}, 60_000);

test('a start with no connection slot free says so and names the fix', async () => {
  const url = await testPostgresUrl();
  const role = `gh_noslot_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'noslot-pw' CONNECTION LIMIT 0`);
    const u = new URL(url);
    u.username = role;
    u.password = 'noslot-pw';
    const err = await failure(openPostgresStore({ url: u.toString(), log }));
    expect(err.message).toContain('no connection slot free');
    expect(err.message).toContain('CONNECTION LIMIT');
    expect(err.message).toContain(`"${parseTarget(url).database}"`);
    expect(err.message).not.toContain('noslot-pw');
  } finally {
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    await admin.end();
  }
}, 60_000);

test('a transaction the server ends while it sits idle in it is retried from BEGIN; the process does not crash', async () => {
  // A fenced write's transaction may idle at most IDLE_IN_FENCED_TX_MS; a stalled event loop
  // outlives that, and the server's FATAL then arrives on a client checked out of the pool.
  const url = await testPostgresUrl();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  const warnings: string[] = [];
  const db = new Db(pool, parseTarget(url), (_l, m) => warnings.push(m), 30_000);
  const watcher = new pg.Client({ connectionString: url });
  await watcher.connect();
  let attempts = 0;
  try {
    const one = await db.tx('an idle transaction', async (c) => {
      attempts++;
      const pid = (await db.q(c, "SELECT set_config('idle_in_transaction_session_timeout', '100', true), pg_backend_pid() AS pid")).rows[0].pid as number;
      if (attempts === 1) {
        await waitFor(
          'the server to end the idle session',
          async () => (await watcher.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rows.length === 0,
        );
        await waitFor('its FATAL to reach the client', () => warnings.some((w) => w.includes('a connection in use failed')));
      }
      return (await db.q(c, 'SELECT 1 AS one')).rows[0].one as number;
    });
    expect(one).toBe(1);
    expect(attempts).toBe(2);
  } finally {
    await watcher.end();
    await pool.end();
  }
}, 60_000);

test('a checkpoint whose transcript write conflicts changes nothing', async () => {
  const s = await open();
  await s.runs.enqueueTurn('c', 't1', { text: 'x' }, 1);
  const first = await s.transcripts.write({ conversation: 'c', agent: 'a', state: {}, changes: [], now: 1 });
  await expect(
    s.checkpoint({
      transcript: {
        conversation: 'c',
        agent: 'a',
        state: {},
        changes: [{ op: 'append', rows: [{ seq: 1, message: 'm' }] }],
        now: 2,
        expectRevision: first.revision + 5,
      },
      dropTurn: { conversation: 'c', id: 't1' },
      record: { conversation: 'c', record: { r: 1 } },
    }),
  ).rejects.toBeInstanceOf(StoreConflictError);
  expect(await s.runs.queuedTurns()).toHaveLength(1);
  expect(await s.runs.records()).toEqual([]);
  expect((await s.transcripts.load('c'))?.rows).toEqual([]);
});

test('round trips: a read, an append and a whole checkpoint are one statement each; other writes one transaction', async () => {
  const s = await open();
  const w = { conversation: 'c', agent: 'a', state: {}, now: 1 };
  await s.transcripts.write({ ...w, changes: [{ op: 'append', rows: [{ seq: 1, message: 'a' }] }] });
  let n = s.roundTrips();
  await s.transcripts.load('c');
  expect(s.roundTrips() - n).toBe(1);
  n = s.roundTrips();
  await s.transcripts.write({
    ...w,
    changes: [
      {
        op: 'append',
        rows: [
          { seq: 2, message: 'b' },
          { seq: 3, message: 'c' },
        ],
      },
    ],
  });
  expect(s.roundTrips() - n).toBe(1);
  n = s.roundTrips();
  await s.checkpoint({
    transcript: { ...w, changes: [{ op: 'append', rows: [{ seq: 4, message: 'd' }] }] },
    dropTurn: { conversation: 'c', id: 'x' },
    record: { conversation: 'c', record: { r: 1 } },
  });
  expect(s.roundTrips() - n).toBe(1);
  n = s.roundTrips();
  // BEGIN, lock, replace, truncate, update, COMMIT
  await s.transcripts.write({
    ...w,
    changes: [
      { op: 'replace', rows: [{ seq: 1, message: 'A' }] },
      { op: 'truncate', afterSeq: 3 },
    ],
  });
  expect(s.roundTrips() - n).toBe(6);
  expect((await s.transcripts.load('c'))?.rows.map((r) => r.message)).toEqual(['A', 'b', 'c']);
  expect(await s.runs.records()).toEqual([{ conversation: 'c', record: { r: 1 } }]);
});

test('expired claims and approvals are swept', async () => {
  let now = 1_000;
  const s = await openPostgresStore({ url: await testPostgresUrl(), log, now: () => now, sweepEveryMs: 3_600_000 });
  opened.push(s);
  await s.events.claim('e', 100, 1_000);
  await s.approvals.create({ id: 'r', conversation: 'c', request: {}, tokens: [{ token: 'tok', choice: 'ok' }], createdAt: 1_000, keepUntil: 1_500 });
  expect(await s.sweep()).toBe(0);
  now = 2_000;
  expect(await s.sweep()).toBe(2);
  expect(await s.approvals.byToken('tok', 0)).toBeUndefined();
});

describe('a server restart mid-run', () => {
  let server: PrivatePostgres | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  test('reads and safe writes wait for the server to come back; with the retry window spent they reject without the password', async () => {
    server = await startPrivatePostgres();
    const url = await createDatabase(server.url, 'gh_restart');
    const pw = decodeURIComponent(new URL(url).password);
    const lines: string[] = [];
    let waiting: () => void = () => undefined;
    const retried = new Promise<void>((r) => (waiting = r));
    let connecting = 0;
    const s = await openPostgresStore({
      url,
      log: (_level, m) => {
        lines.push(m);
        if (/cannot connect .*retrying/.test(m) && ++connecting === 3) waiting();
      },
      sweepEveryMs: 3_600_000,
    });
    const impatient = await openPostgresStore({ url, log: (_level, m) => lines.push(m), retryForMs: 0, sweepEveryMs: 3_600_000 });
    try {
      await s.cache.set('k', { v: 1 });
      await s.approvals.create({ id: 'r', conversation: 'c', request: {}, tokens: [], createdAt: 1, keepUntil: 10 });
      await server.stop();

      const err = await failure(impatient.cache.get('k'));
      expect(err.message).toContain('127.0.0.1');
      expect(err.message).not.toContain(pw);

      const read = s.cache.get('k');
      const write = s.runs.saveRecord('c', { step: 1 });
      const decide = s.approvals.decideOnce('r', { ok: true }, 2, 10);
      await retried; // all three are waiting for a connection
      await server.start();
      expect(await read).toEqual({ v: 1 });
      await write;
      expect(await decide).toBe(true);
      expect(await s.runs.records()).toEqual([{ conversation: 'c', record: { step: 1 } }]);
      for (const l of lines) expect(l).not.toContain(pw);
    } finally {
      await s.close();
      await impatient.close();
    }
  }, 120_000);
});

test('a server that never answers: the open gives up after connectTimeoutMs, naming host and port', async () => {
  // A listener that accepts and says nothing (a firewall that drops, a wrong service on the port).
  const sockets = new Set<import('node:net').Socket>();
  const silent = createServer((sock) => void sockets.add(sock));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as { port: number }).port;
  try {
    const err = await failure(openPostgresStore({ url: `postgres://bot:quiet-pw-9@127.0.0.1:${port}/gatehouse`, log, connectTimeoutMs: 300 }));
    expect(err.code).toBe('unreachable');
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).toContain('"gatehouse"');
    expect(err.message).not.toContain('quiet-pw-9');
  } finally {
    for (const sock of sockets) sock.destroy();
    silent.close();
  }
});
