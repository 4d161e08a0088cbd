/**
 * What the platform benches (bench/slack.ts, bench/discord.ts) share: fake servers forked into their
 * own processes, the load generator driven over IPC, the bot's main-thread CPU, the machine's load from
 * other jobs, percentiles.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Forks a bench/ script and waits for its first IPC message (what it is listening on). */
export function forkReady(script: string, args: string[] = []): Promise<{ child: ChildProcess; ready: unknown }> {
  const child = fork(join(here, script), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ child, ready: m }));
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready`)));
  });
}

/** user + system CPU time (ms) in a /proc stat file (clock ticks are 10 ms); NaN when unreadable. */
function statCpuMs(path: string): number {
  try {
    const f = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

/** CPU time (user + system) of this process's main thread so far, from /proc; NaN elsewhere. */
export function mainThreadCpuMs(): number {
  return statCpuMs(`/proc/${process.pid}/task/${process.pid}/stat`);
}

/** CPU time (user + system, all threads) of a process so far, from /proc; NaN elsewhere. */
export function processCpuMs(pid: number | undefined): number {
  return pid === undefined ? NaN : statCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU time (ms) the whole machine spent busy so far (all cores; not idle, not iowait), from
 * /proc/stat; NaN elsewhere. Less what the bench's own processes used, it is the load from other
 * jobs: high values make a row's numbers unreliable.
 */
export function machineBusyMs(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    return (total - f[3]! - f[4]!) * 10;
  } catch {
    return NaN;
  }
}

export const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

export interface LoadResult {
  latenciesMs: number[];
  elapsedMs: number;
  errors: number;
}

let nextId = 1;
/** Asks a fake platform process to send a load and report what came back (its `run` message). */
export function runLoad(child: ChildProcess, req: { channels: number; total: number; ratePerSec?: number } & Record<string, unknown>): Promise<LoadResult> {
  const id = nextId++;
  return new Promise<LoadResult>((resolve, reject) => {
    const on = (m: unknown) => {
      const r = m as { id: number; type: string; message?: string };
      if (r.id !== id) return;
      child.off('message', on);
      if (r.type === 'result') resolve(m as LoadResult);
      else reject(new Error(r.message));
    };
    child.on('message', on);
    child.send({ type: 'run', id, ...req });
  });
}

/**
 * Sends `total` messages through `send` (which resolves when that message is answered or given up):
 * closed loop, one in flight per channel, without `ratePerSec`; open loop at that fixed rate with it.
 * Returns when every message is done; the elapsed time is measured by the caller.
 */
export async function driveLoad(req: { channels: number; total: number; ratePerSec?: number }, send: (i: number) => Promise<void>): Promise<void> {
  if (req.ratePerSec === undefined) {
    let next = 0;
    const lane = async () => {
      while (next < req.total) await send(next++);
    };
    await Promise.all(Array.from({ length: req.channels }, lane));
    return;
  }
  const start = performance.now();
  const pending: Array<Promise<void>> = [];
  for (let i = 0; i < req.total; i++) {
    const wait = start + (i * 1000) / req.ratePerSec - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(send(i));
  }
  await Promise.all(pending);
}
