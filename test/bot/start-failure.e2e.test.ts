/**
 * A start that fails leaves nothing behind, on a real process: with its PostgreSQL store out of
 * reach, `gatehouse serve` exits 1 with a message that names the server and the fix, never the
 * password, and creates no folder (not the agent's workspace, not a data folder), over TCP or a Unix socket. A workspace that
 * cannot be created is still a config error naming the key, found before the store is opened.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGatehouse } from '../helpers/process.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-start-fail-'));
});
afterEach(() => {
  chmodSync(dir, 0o700);
  rmSync(dir, { recursive: true, force: true });
});

/** What the start left in the folder. HOME is this folder in tests: the TypeScript loader's compile
 * cache (HOME/.cache) is the test harness's, not the bot's. */
const leftIn = (d: string) =>
  readdirSync(d)
    .filter((n) => n !== '.cache')
    .sort();

function unusedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 1));
    });
  });
}

test('serve with an unreachable PostgreSQL store exits 1, names the server and the fix, and creates no folder', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), 'agents:\n  default:\n    model: claude-sonnet-5-5\n');
  const port = await unusedPort();
  // A one-letter password: found in the URL, not in the words of the message ("port").
  const p = startGatehouse(['serve'], { cwd: dir, env: { GATEHOUSE_STORE: `postgres://bot:p@127.0.0.1:${port}/gatehouse`, GATEHOUSE_HTTP_PORT: '0' } });
  expect(await p.exited).toEqual({ code: 1, signal: null });
  expect(p.output()).toContain(`cannot reach PostgreSQL at 127.0.0.1:${port} (database "gatehouse", user "bot")`);
  expect(p.output()).toContain('fix the host and port in GATEHOUSE_STORE');
  expect(p.output()).not.toContain('bot:p@');
  expect(leftIn(dir)).toEqual(['gatehouse.yaml']);
}, 30_000);

test('serve with a PostgreSQL Unix socket that is not there exits 1, names the socket file and the fix, and creates no folder', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), 'agents:\n  default:\n    model: claude-sonnet-5-5\n');
  const sockets = join(dir, 'no-server-here');
  mkdirSync(sockets);
  const p = startGatehouse(['serve'], {
    cwd: dir,
    env: { GATEHOUSE_STORE: `postgres://bot:s3cret-pw@/gatehouse?host=${sockets}&port=5499`, GATEHOUSE_HTTP_PORT: '0' },
  });
  expect(await p.exited).toEqual({ code: 1, signal: null });
  expect(p.output()).toContain(`cannot reach PostgreSQL at socket ${sockets}/.s.PGSQL.5499 (database "gatehouse", user "bot")`);
  expect(p.output()).toContain('fix host= and the port in GATEHOUSE_STORE');
  expect(p.output()).not.toContain('s3cret-pw');
  expect(leftIn(dir)).toEqual(['gatehouse.yaml', 'no-server-here']);
  expect(leftIn(sockets)).toEqual([]);
}, 30_000);

test('a workspace that cannot be created is a config error naming the key, and the store is not opened', async () => {
  // The workspace would go inside a folder nobody may write to; root may write anywhere, so a file
  // stands in the way instead when the test runs as root.
  const blocked = join(dir, 'blocked');
  if (process.getuid?.() === 0) writeFileSync(blocked, 'a file, not a folder\n');
  else {
    mkdirSync(blocked);
    chmodSync(blocked, 0o500);
  }
  writeFileSync(join(dir, 'gatehouse.yaml'), `agents:\n  default:\n    model: claude-sonnet-5-5\n    workspace: ${join(blocked, 'ws')}\n`);
  const p = startGatehouse(['serve'], { cwd: dir, env: { GATEHOUSE_HTTP_PORT: '0' } });
  expect(await p.exited).toEqual({ code: 1, signal: null });
  expect(p.output()).toMatch(/agents\.default\.workspace: cannot create or open .*blocked\/ws \((permission denied|a file is in the way)\)/);
  // No SQLite store (and no data folder) was made for a start that could not run.
  expect(leftIn(dir)).toEqual(['blocked', 'gatehouse.yaml']);
  chmodSync(blocked, 0o700);
}, 30_000);
