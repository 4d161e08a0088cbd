/**
 * The store's privacy on a real start (bot/main.ts from source, the terminal chat): the data folder
 * is 0700, the SQLite file, its -wal and -shm 0600, a backup 0600; as root, another local user
 * (uid 65534, nobody) cannot read a transcript. Control: the same `cat` as nobody reads a 0644 copy.
 * A store made by an older version (0644 files in a 0755 folder) is narrowed at the next start.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.js';
import { gatehouseMain as main, registerTs as register, startGatehouse } from '../helpers/process.js';

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

let dir: string;
let model: FakeAnthropic;
const env = () => ({ PATH: process.env.PATH ?? '', HOME: dir, ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: model.url });
const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-store-perm-'));
  chmodSync(dir, 0o755); // so that uid 65534 could reach the data folder if its own mode let it
  model = await startFakeAnthropic({ apiKey: 'sk-test' });
  model.setHandler(() => ({ text: 'noted: the canary-7731 opens the shed' }));
});
afterEach(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the bot, says one thing, runs `whileUp` with the bot still running, then quits. */
async function withBot(whileUp: () => void | Promise<void>): Promise<string> {
  const p = startGatehouse([], { cwd: dir, env: env(), onlyEnv: true });
  const bot = p.child;
  const until = (what: string) => p.waitForOutput(what, what, 90_000);
  try {
    await until('Gatehouse terminal chat');
    bot.stdin.write('remember: canary-7731 opens the shed\n');
    await until('agent> noted');
    await whileUp();
  } finally {
    bot.stdin.end();
  }
  expect((await p.exited).code).toBe(0);
  return p.output();
}

/** `cat FILE` as uid/gid 65534: its exit code and what it printed. */
function catAsNobody(file: string) {
  const r = spawnSync('cat', [file], { uid: 65534, gid: 65534, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('a fresh start: data folder 0700, store, WAL and SHM 0600; nobody else can read a transcript', async () => {
  const data = join(dir, 'data');
  const store = join(data, 'gatehouse.sqlite');
  await withBot(() => {
    expect(mode(data)).toBe('700');
    for (const f of [store, `${store}-wal`, `${store}-shm`]) {
      expect(existsSync(f)).toBe(true);
      expect(mode(f)).toBe('600');
    }
    if (isRoot) {
      // The attack: another local user reads the store (the WAL holds the newest transcript).
      for (const f of [store, `${store}-wal`]) {
        const r = catAsNobody(f);
        expect(r.code).not.toBe(0);
        expect(r.out).not.toContain('canary-7731');
        expect(r.err).toMatch(/Permission denied/);
      }
      // Control: the same user reads a copy with the old modes (0644 in a 0755 folder).
      const open = join(dir, 'open');
      mkdirSync(open, { mode: 0o755 });
      chmodSync(open, 0o755);
      copyFileSync(`${store}-wal`, join(open, 'copy-wal'));
      chmodSync(join(open, 'copy-wal'), 0o644);
      const control = catAsNobody(join(open, 'copy-wal'));
      expect(control.code).toBe(0);
      expect(control.out).toContain('canary-7731');
    }
  });
}, 200_000);

test('gatehouse backup writes a 0600 copy in a 0700 folder it creates', async () => {
  await withBot(() => {
    const r = spawnSync(process.execPath, ['--import', register, main, 'backup', 'backups/b1.sqlite'], {
      cwd: dir,
      env: env(),
      encoding: 'utf8',
      input: '',
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(mode(join(dir, 'backups'))).toBe('700');
    expect(mode(join(dir, 'backups', 'b1.sqlite'))).toBe('600');
    if (isRoot) expect(catAsNobody(join(dir, 'backups', 'b1.sqlite')).code).not.toBe(0);
  });
}, 200_000);

test('a store left 0644 in a 0755 folder by an older version is narrowed at start; a shared folder is left with a warning', async () => {
  const data = join(dir, 'data');
  const store = join(data, 'gatehouse.sqlite');
  await withBot(() => undefined);
  chmodSync(data, 0o755);
  for (const f of [store, `${store}-wal`, `${store}-shm`]) if (existsSync(f)) chmodSync(f, 0o644);
  await withBot(() => {
    expect(mode(data)).toBe('700');
    for (const f of [store, `${store}-wal`, `${store}-shm`]) expect(mode(f)).toBe('600');
  });

  // A folder that also holds something else (a workspace the sandbox user enters) keeps its mode.
  mkdirSync(join(data, 'workspace'));
  chmodSync(data, 0o755);
  const screen = await withBot(() => {
    expect(mode(data)).toBe('755');
    expect(mode(store)).toBe('600');
  });
  expect(screen).toMatch(/the store folder .*data is open to other users \(mode 755\) and holds other things/);
}, 400_000);
