/**
 * The store as an operator meets it, on real processes (bot/main.ts from source):
 * `gatehouse backup FILE` while the bot runs; a store folder the bot may not write (a read-only
 * bind mount made with bubblewrap, which binds even for root); a redis:// or postgres:// store.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../bot/service/storage.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.js';
import { gatehouseMain as main, registerTs as register, startGatehouse } from '../helpers/process.js';

let dir: string;
let model: FakeAnthropic;
const env = () => ({ PATH: process.env.PATH ?? '', HOME: dir, ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: model.url });

/** Runs `gatehouse ...args` to the end; `wrap` prefixes the command (bubblewrap). */
function gatehouse(args: string[], extraEnv: Record<string, string> = {}, wrap: string[] = []) {
  const cmd = [...wrap, process.execPath, '--import', register, main, ...args];
  const r = spawnSync(cmd[0]!, cmd.slice(1), { cwd: dir, env: { ...env(), ...extraEnv }, encoding: 'utf8', input: '', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-store-cmd-'));
  model = await startFakeAnthropic({ apiKey: 'sk-test' });
});
afterEach(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test('gatehouse backup FILE copies the live store while the bot runs: integrity ok, the conversation in it', async () => {
  model.setHandler(() => ({ text: 'noted: the blue key opens the shed' }));
  const p = startGatehouse([], { cwd: dir, env: env(), onlyEnv: true });
  const bot = p.child;
  const exited = p.exited.then((e) => e.code);
  try {
    const until = (what: string, times = 1) => p.waitForOutput((screen) => screen.split(what).length - 1 >= times, `${what} (${times})`, 60_000);
    await until('Gatehouse terminal chat');
    bot.stdin.write('remember: the blue key opens the shed\n');
    await until('agent> noted');

    // While the bot runs (and keeps the store open with its WAL), back it up in another process.
    const result = gatehouse(['backup', 'backups/first.sqlite']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const copyPath = join(dir, 'backups', 'first.sqlite');
    expect(result.stdout).toMatch(new RegExp(`^Backed up .*gatehouse\\.sqlite to ${copyPath}: \\d+ conversations, integrity check ok\\.\\n$`));
    // The copy is a store of its own: opened through the repositories, the conversation is in it.
    const copy = await openStore({ kind: 'sqlite', path: copyPath, url: `sqlite://${copyPath}` }, { mustExist: true });
    try {
      const [listed] = await copy.transcripts.listRecent({ limit: 10 });
      expect(listed).toBeDefined();
      expect(JSON.stringify(await copy.transcripts.load(listed!.conversation))).toContain('blue key');
    } finally {
      await copy.close();
    }

    // An existing file is never overwritten.
    const again = gatehouse(['backup', 'backups/first.sqlite']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/first\.sqlite already exists; choose a new file/);

    // The bot was not disturbed: it still answers.
    bot.stdin.write('and the red one?\n');
    await until('agent> noted', 2);
  } finally {
    bot.stdin.end();
  }
  expect(await exited).toBe(0);
}, 90_000);

test('gatehouse backup: no store there, or no FILE, says so and exits non-zero', () => {
  const none = gatehouse(['backup', 'x.sqlite'], { GATEHOUSE_STORE: 'sqlite://./nowhere/g.sqlite' });
  expect(none.code).toBe(1);
  expect(none.stderr).toMatch(/There is no store at .*nowhere\/g\.sqlite \(GATEHOUSE_STORE\); nothing was backed up/);
  expect(existsSync(join(dir, 'x.sqlite'))).toBe(false);
  const usage = gatehouse(['backup']);
  expect(usage.code).toBe(2);
  expect(usage.stderr).toMatch(/^Usage: gatehouse backup FILE/);
}, 60_000);

// bubblewrap is installed wherever Gatehouse's tests run (.ci/run installs it).
test('a store folder the bot may not write: start-up fails naming the folder as a permission problem', () => {
  // Read-only for every user, root included: a read-only bind mount over the folder.
  const ro = join(dir, 'readonly');
  mkdirSync(join(ro, 'data'), { recursive: true });
  const wrap = ['bwrap', '--dev-bind', '/', '/', '--ro-bind', ro, ro];
  // The folder exists but cannot be written.
  const existing = gatehouse([], { GATEHOUSE_STORE: `sqlite://${join(ro, 'data', 'g.sqlite')}` }, wrap);
  expect(existing.code).toBe(1);
  expect(existing.stderr).toContain(`permission problem: the store folder ${join(ro, 'data')} is not writable`);
  expect(existing.stderr).toMatch(/make it writable for the user Gatehouse runs as, or point GATEHOUSE_STORE at a writable folder/);
  // The folder would have to be created inside a read-only one.
  const missing = gatehouse([], { GATEHOUSE_STORE: `sqlite://${join(ro, 'state', 'g.sqlite')}` }, wrap);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain(`permission problem: cannot create the store folder ${join(ro, 'state')}`);
  // An existing store file that is read-only.
  writeFileSync(join(dir, 'locked.sqlite'), '');
  const file = join(dir, 'locked.sqlite');
  const locked = gatehouse([], { GATEHOUSE_STORE: `sqlite://${file}` }, ['bwrap', '--dev-bind', '/', '/', '--ro-bind', file, file]);
  expect(locked.code).toBe(1);
  expect(locked.stderr).toContain(`permission problem: the store file ${file} is not writable`);
}, 60_000);

test('a path where a folder is expected is a file: start-up fails naming it', () => {
  writeFileSync(join(dir, 'data'), 'not a folder');
  const r = gatehouse([]);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`the store folder ${join(dir, 'data')} is a file, not a folder`);
  const deeper = gatehouse([], { GATEHOUSE_STORE: 'sqlite://./data/sub/g.sqlite' });
  expect(deeper.code).toBe(1);
  expect(deeper.stderr).toContain(
    `the store folder ${join(dir, 'data', 'sub')} cannot be created: part of that path (${join(dir, 'data')}) is a file, not a folder`,
  );
}, 60_000);

test('a redis:// store is a config error naming GATEHOUSE_STORE and sqlite://; a postgres:// one that cannot be opened exits 1 without its password', () => {
  const r = gatehouse([], { GATEHOUSE_STORE: 'redis://127.0.0.1:6379' });
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/GATEHOUSE_STORE: redis:\/\/ stores are not supported; use sqlite:\/\//);
  expect(r.stderr).not.toMatch(/not installed/);
  const pg = gatehouse([], { GATEHOUSE_STORE: 'postgres://gh:s3cret@127.0.0.1:9/gatehouse' });
  expect(pg.code).toBe(1);
  expect(pg.stderr).not.toContain('s3cret');
}, 60_000);
