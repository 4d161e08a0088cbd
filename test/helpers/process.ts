/**
 * Contract: the one way a test starts a real process of ours.
 * - `startGatehouse(args, opts)` runs the `gatehouse` executable from source (bot/main.ts through
 *   test/helpers/register-ts.mjs) in `opts.cwd`, with a minimal environment: PATH, HOME=cwd, a
 *   fake model key and an unreachable model URL, plus `opts.env` (the test's own environment is
 *   not passed on unless `inheritEnv`).
 * - `startScript(file, args, opts)` runs any TypeScript file of the repository the same way.
 * - `finishGatehouse(args, opts)` runs one `gatehouse` to its end, stdin closed; `runGatehouse(args,
 *   dir, modelUrl)` does so in `dir` with the environment `unattendedEnv` names (an unattended run
 *   against the fake model); `jsonReport` reads a `--json` report.
 * - Waits are event-driven: `waitForOutput` checks at every chunk of output, and rejects at once
 *   when the process exits first, or after its bound, with the output in the message.
 * - `exited` resolves after the process exited AND its pipes closed (all output read).
 * - Every process started here is SIGKILLed after the test file if it is still running.
 * - Refused under TEST_FAST=1 (`npm run test:fast` runs unit tests only).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_WAIT_MS, waitFor } from './wait.js';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const registerTs = join(repoRoot, 'test', 'helpers', 'register-ts.mjs');
export const gatehouseMain = join(repoRoot, 'bot', 'main.ts');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ProcessOptions {
  cwd: string;
  /** Added to the minimal environment (or to this process's, with inheritEnv). */
  env?: Record<string, string>;
  /** Start from this process's environment instead of the minimal one. */
  inheritEnv?: boolean;
  /** `env` is the whole environment (nothing of the minimal one is added). */
  onlyEnv?: boolean;
  /** Extra node flags before `--import register-ts.mjs`. */
  nodeArgs?: string[];
}

export interface TestProcess {
  child: ChildProcessWithoutNullStreams;
  readonly pid: number;
  /** stdout and stderr as they arrived, interleaved. */
  output(): string;
  stdout(): string;
  stderr(): string;
  write(text: string): void;
  /**
   * Resolves when the output so far contains `match` (a string, a pattern, or a predicate over the
   * output); rejects when the process exits first or after `timeoutMs`.
   */
  waitForOutput(match: string | RegExp | ((output: string) => boolean), what?: string, timeoutMs?: number): Promise<void>;
  /** After the exit and the last output. */
  exited: Promise<Exit>;
  /** Still running? */
  running(): boolean;
  /** Exited, and all its output read (what `exited` waits for). */
  ended(): boolean;
  /** Sends `signal` (default SIGTERM) and waits for the exit; SIGKILL after `graceMs`. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<Exit>;
}

const started = new Set<TestProcess>();
// A safety net, not the way to stop a process: a test that fails half-way leaves none behind.
if (typeof afterAll === 'function') {
  afterAll(async () => {
    await Promise.all([...started].map((p) => (p.running() ? p.stop('SIGKILL') : undefined)));
    started.clear();
  });
}

/**
 * `waitFor` for a condition about a process (its output, or what it did elsewhere): fails at once,
 * with the output, when the process has ended without the condition holding.
 */
export function waitForProcess(p: TestProcess, what: string, check: () => boolean, timeoutMs = DEFAULT_WAIT_MS): Promise<true> {
  return waitFor(
    what,
    () => {
      if (check()) return true;
      if (p.ended()) throw new Error(`the process ended (${p.child.exitCode ?? p.child.signalCode}) before ${what}; output:\n${p.output().slice(-4000)}`);
      return false;
    },
    { timeoutMs, intervalMs: 20, detail: () => `output so far:\n${p.output().slice(-4000)}` },
  );
}

/** The minimal environment a started `gatehouse` gets. */
export function baseEnv(cwd: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: cwd, ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' };
}

/** What an unattended `gatehouse run` in `dir` gets: PATH, HOME=dir, the fake model's key 'test-key' at `modelUrl`, any free HTTP port. */
export function unattendedEnv(dir: string, modelUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: dir, ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: modelUrl, GATEHOUSE_HTTP_PORT: '0', ...extra };
}

/** How a process run to its end ended, and all it wrote. */
export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `gatehouse <args>` with nothing on stdin, awaited to its exit (async: servers in this process keep answering meanwhile). */
export async function finishGatehouse(args: string[], opts: ProcessOptions): Promise<Finished> {
  const p = startGatehouse(args, opts);
  p.child.stdin.end('');
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** `finishGatehouse` in `dir` with `unattendedEnv` (plus `extra`) and nothing else. */
export function runGatehouse(args: string[], dir: string, modelUrl: string, extra: Record<string, string> = {}): Promise<Finished> {
  return finishGatehouse(args, { cwd: dir, env: unattendedEnv(dir, modelUrl, extra), onlyEnv: true });
}

/** The `--json` report a run printed; without one, an error with the exit code and both outputs. */
export function jsonReport<T>(r: Finished): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`no JSON report (exit ${r.code}); stdout: ${r.stdout}\nstderr: ${r.stderr}`);
  }
}

/** `gatehouse <args>` from source. */
export function startGatehouse(args: string[], opts: ProcessOptions): TestProcess {
  return startScript(gatehouseMain, args, opts);
}

/** Any TypeScript (or JavaScript) file run through the test's TypeScript loader. */
export function startScript(file: string, args: string[], opts: ProcessOptions): TestProcess {
  if (process.env.TEST_FAST === '1') {
    throw new Error(
      'a process started in `npm run test:fast` (the unit tests): a test that starts a process is an end-to-end test; name its file *.e2e.test.ts.',
    );
  }
  const env = opts.onlyEnv
    ? { ...opts.env }
    : opts.inheritEnv
      ? { ...(process.env as Record<string, string>), ...opts.env }
      : { ...baseEnv(opts.cwd), ...opts.env };
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', registerTs, file, ...args], {
    cwd: opts.cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let stdout = '';
  let stderr = '';
  const watchers = new Set<() => void>();
  const onData = (which: 'out' | 'err') => (d: Buffer) => {
    const s = d.toString();
    out += s;
    if (which === 'out') stdout += s;
    else stderr += s;
    for (const w of [...watchers]) w();
  };
  child.stdout.on('data', onData('out'));
  child.stderr.on('data', onData('err'));
  let exit: Exit | undefined;
  const exited = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      exit = { code, signal };
      for (const w of [...watchers]) w();
      resolve(exit);
    });
    child.once('error', (err) => {
      out += `\n[spawn error] ${err.message}\n`;
    });
  });
  const proc: TestProcess = {
    child,
    get pid() {
      return child.pid ?? -1;
    },
    output: () => out,
    stdout: () => stdout,
    stderr: () => stderr,
    write: (text) => void child.stdin.write(text),
    running: () => child.exitCode === null && child.signalCode === null,
    ended: () => exit !== undefined,
    exited,
    waitForOutput(match, what, timeoutMs = DEFAULT_WAIT_MS) {
      const test = typeof match === 'string' ? (o: string) => o.includes(match) : match instanceof RegExp ? (o: string) => match.test(o) : match;
      const name = what ?? (typeof match === 'function' ? 'the expected output' : `output ${String(match)}`);
      return new Promise<void>((resolve, reject) => {
        const done = (err?: Error) => {
          watchers.delete(check);
          clearTimeout(timer);
          if (err) reject(err);
          else resolve();
        };
        const check = () => {
          if (test(out)) done();
          else if (exit) done(new Error(`the process exited (${exit.code ?? exit.signal}) before ${name}; output:\n${out.slice(-4000)}`));
        };
        const timer = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for ${name}; output so far:\n${out.slice(-4000)}`)), timeoutMs);
        watchers.add(check);
        check();
      });
    },
    async stop(signal = 'SIGTERM', graceMs = 30_000) {
      if (exit) return exit;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  started.add(proc);
  void exited.then(() => started.delete(proc));
  return proc;
}
