/**
 * Benchmark (not a test): one `gatehouse run --json` message through a running service (attach over
 * its socket) vs a cold in-process run (no service: the process loads the agent, opens the store),
 * with the fake model (bench/fake-model-process.ts, its own process) answering at once.
 *
 * Rows, each N messages one after another, wall time from spawn to exit of `node bin/gatehouse.js run`
 * (the built CLI, as a script would call it):
 *   attached   a `gatehouse serve` runs in the same folder: the run goes through its socket
 *   cold       no service: the run loads the agent in its own process
 * plus `attach request`: the same message sent by this process straight to the socket (no process
 * start), i.e. what a message costs the service itself.
 *
 * Run: npm run bench:headless   (or: npm run build && node dist/bench/headless.js [--runs 20])
 */
import { fork, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { attachRun, findService } from '../bot/headless/attach.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const bin = join(root, 'bin', 'gatehouse.js');
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 20;

function stats(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
  return `median ${at(0.5).toFixed(1)} ms   p95 ${at(0.95).toFixed(1)} ms   (n=${s.length})`;
}

const modelProc = fork(join(here, 'fake-model-process.js'), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
const modelUrl = await new Promise<string>((r) => modelProc.once('message', (m) => r(String(m))));
const dir = mkdtempSync(join(tmpdir(), 'gh-bench-headless-'));
writeFileSync(join(dir, 'gatehouse.yaml'), `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file]\n    workspace: "${join(dir, 'ws')}"\n`);
const env = {
  PATH: process.env.PATH ?? '',
  HOME: dir,
  ANTHROPIC_API_KEY: 'bench',
  ANTHROPIC_BASE_URL: modelUrl,
  GATEHOUSE_HTTP_PORT: '0',
  GATEHOUSE_LOG_LEVEL: 'warn',
};

function runOnce(): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [bin, 'run', '--json', 'hello'], { cwd: dir, env, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0 || !(JSON.parse(r.stdout) as { ok: boolean }).ok) throw new Error(`run failed (${r.status}): ${r.stdout} ${r.stderr}`);
  return ms;
}

try {
  runOnce(); // builds dist/ if needed, warms the disk cache
  const cold: number[] = [];
  for (let i = 0; i < RUNS; i++) cold.push(runOnce());

  const service = spawn(process.execPath, [bin, 'serve'], { cwd: dir, env, stdio: 'ignore' });
  const dataDir = join(dir, 'data');
  const deadline = Date.now() + 30_000;
  while (!existsSync(join(dataDir, 'gatehouse.sock'))) {
    if (Date.now() > deadline) throw new Error('the service did not open its socket');
    await new Promise((r) => setTimeout(r, 50));
  }
  runOnce();
  const attached: number[] = [];
  for (let i = 0; i < RUNS; i++) attached.push(runOnce());

  const addr = findService(dataDir)!;
  const direct: number[] = [];
  for (let i = 0; i < RUNS * 5; i++) {
    const t0 = performance.now();
    const r = await attachRun(addr, { message: 'hello', interactive: false }, () => undefined);
    direct.push(performance.now() - t0);
    if (!r.ok) throw new Error(r.error);
  }
  service.kill('SIGTERM');
  await new Promise((r) => service.once('exit', r));

  console.log(`gatehouse run --json, fake model answering at once (${RUNS} runs per row)`);
  console.log(`  cold (in-process)      ${stats(cold)}`);
  console.log(`  attached (service)     ${stats(attached)}`);
  console.log(`  attach request alone   ${stats(direct)}`);
} finally {
  modelProc.disconnect();
  rmSync(dir, { recursive: true, force: true });
}
