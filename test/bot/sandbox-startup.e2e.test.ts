/**
 * Start-up and the sandbox: the `gatehouse` executable as a real process in an environment where the box
 * cannot work (bwrap missing; user namespaces forbidden, as Docker's default seccomp profile does) must
 * exit non-zero naming the agent and the fix. The environment is made with bwrap itself: the bot runs as a
 * non-root user in a user namespace where further user namespaces are disabled, or where bwrap is hidden.
 * And `sandbox: none` is logged as a warning naming the agent at every start.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAnthropicModel } from '../../agent/model/anthropic.js';
import { builtinToolNames } from '../../agent/tools/catalog.js';
import { findExecutable } from '../../agent/tools/sandbox/index.js';
import { createGatehouse } from '../../bot/service/app.js';
import { loadConfig } from '../../bot/config/index.js';
import { openStore } from '../../bot/service/storage.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');
const bwrap = findExecutable('bwrap')!;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-sandbox-start-'));
  chmodSync(dir, 0o777);
  writeFileSync(join(dir, 'gatehouse.yaml'), 'agents:\n  ops:\n    model: m\n    tools: [read_file, execute_command]\n');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `gatehouse` (start) as uid 1000 inside an outer bwrap with `extra` options; resolves on exit. */
function startInside(extra: string[]): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const args = [
    '--unshare-user',
    '--uid',
    '1000',
    '--gid',
    '1000',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    // The checkout itself may live under /tmp (a CI clone): bring it back over the private /tmp.
    '--ro-bind',
    root,
    root,
    '--bind',
    dir,
    dir,
    ...extra,
    '--chdir',
    dir,
    '--',
    process.execPath,
    '--import',
    register,
    main,
  ];
  const child = spawn(bwrap, args, {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

test('user namespaces forbidden: start-up fails, naming the agent, the container flags and sandbox: none', async () => {
  const r = await startInside(['--disable-userns']);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('agents.ops: sandbox: bubblewrap cannot run commands here');
  expect(r.stderr).toMatch(/cannot create its namespaces/);
  expect(r.stderr).toContain('--security-opt seccomp=unconfined --security-opt apparmor=unconfined');
  expect(r.stderr).toContain('`sandbox: none`');
}, 30_000);

test('bwrap missing: start-up fails, naming the package to install', async () => {
  const masks = ['/usr/bin/bwrap', '/bin/bwrap'].flatMap((p) => ['--ro-bind-try', '/dev/null', p]);
  const r = await startInside(masks);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('agents.ops: sandbox: bubblewrap cannot run commands here');
  expect(r.stderr).toContain('apt-get install bubblewrap');
}, 30_000);

test('the same agent with sandbox: none starts, with a warning naming it', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), 'agents:\n  ops:\n    model: m\n    tools: [execute_command]\n    sandbox: none\n');
  const config = loadConfig({
    env: { ANTHROPIC_API_KEY: 'sk-test', GATEHOUSE_STORE: 'sqlite://:memory:' },
    cwd: dir,
    knownTools: builtinToolNames(),
  });
  const store = await openStore(config.store);
  const logs: string[] = [];
  const gh = await createGatehouse({
    config,
    store,
    model: createAnthropicModel({ apiKey: 'sk-test', baseURL: 'http://127.0.0.1:9' }),
    adapters: [],
    log: (level, msg) => logs.push(`${level} ${msg}`),
  });
  try {
    expect(logs.filter((l) => l.startsWith('warn ') && l.includes('agent ops') && l.includes('sandbox: none'))).toHaveLength(1);
  } finally {
    await gh.stop({ graceMs: 0 });
    await store.close();
  }
});

test('a bubblewrap agent starts with one info line naming its view, its limits and how memory is bounded', async () => {
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    'agents:\n  ops:\n    model: m\n    tools: [execute_command]\n    sandboxLimits: { memory: 768M, tmpSize: 100M, cpuSeconds: 42 }\n    sandboxReadPaths: [/usr/share/doc]\n',
  );
  const config = loadConfig({ env: { ANTHROPIC_API_KEY: 'sk-test', GATEHOUSE_STORE: 'sqlite://:memory:' }, cwd: dir, knownTools: builtinToolNames() });
  const store = await openStore(config.store);
  const logs: string[] = [];
  const gh = await createGatehouse({
    config,
    store,
    model: createAnthropicModel({ apiKey: 'sk-test', baseURL: 'http://127.0.0.1:9' }),
    adapters: [],
    log: (level, msg) => logs.push(`${level} ${msg}`),
  });
  try {
    const line = logs.filter((l) => l.startsWith('info ') && l.includes('agent ops: sandbox: bubblewrap'));
    expect(line).toHaveLength(1);
    expect(line[0]).toContain('/usr/share/doc (read-only)');
    expect(line[0]).toMatch(/memory 768 MiB per process \(RLIMIT_DATA\), CPU 42 s per process \(RLIMIT_CPU\), \/tmp 100 MiB/);
    // Which mechanism bounds memory is said either way (this host: cgroup v1 hybrid, so the rlimit).
    expect(line[0]).toMatch(/cgroup v2 is not used: |cgroup v2/);
  } finally {
    await gh.stop({ graceMs: 0 });
    await store.close();
  }
}, 30_000);
