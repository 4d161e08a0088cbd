/**
 * Replicas of the shared turn queue as child processes (./replica-child.ts), for the queue's
 * end-to-end tests: each prints one JSON line per event, which `until` waits on.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const childPath = join(import.meta.dirname, 'replica-child.ts');

export type Event = {
  replica: string;
  ev: string;
  id?: string;
  conversation?: string;
  epoch?: number;
  level?: string;
  msg?: string;
  message?: string;
  runId?: string;
};

export class Replica {
  readonly events: Event[] = [];
  stderr = '';
  private waiters: Array<() => void> = [];
  readonly exited: Promise<number | null>;
  /** Set once the process ended and its output was read: `until` then fails at once, with its stderr. */
  exit: { code: number | null; signal: string | null } | undefined;
  constructor(
    readonly name: string,
    readonly p: ChildProcessWithoutNullStreams,
  ) {
    let buf = '';
    p.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.startsWith('{')) this.events.push(JSON.parse(line) as Event);
        for (const w of this.waiters.splice(0)) w();
      }
    });
    p.stderr.on('data', (d: Buffer) => {
      this.stderr += d.toString();
      for (const w of this.waiters.splice(0)) w();
    });
    this.exited = new Promise((r) => p.on('exit', (code) => r(code)));
    // 'close', not 'exit': by then every line it printed has been read.
    p.on('close', (code, signal) => {
      this.exit = { code, signal };
      for (const w of this.waiters.splice(0)) w();
    });
  }
  async until(what: string, check: (e: Event) => boolean, timeoutMs = 60_000): Promise<Event> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.events.find(check);
      if (e) return e;
      if (this.exit) throw new Error(`${this.name}: no ${what}, it exited (${JSON.stringify(this.exit)}; stderr: ${this.stderr.slice(-2000)})`);
      if (Date.now() > deadline)
        throw new Error(`${this.name}: no ${what} (events: ${JSON.stringify(this.events.slice(-20))}; stderr: ${this.stderr.slice(-2000)})`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
  /** Waits until the replica's stderr holds `text`: stderr is its own pipe, so a line written there before an event may be read after it. */
  async untilStderr(text: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.stderr.includes(text)) {
      if (this.exit || Date.now() > deadline) throw new Error(`${this.name}: stderr never said ${JSON.stringify(text)} (stderr: ${this.stderr.slice(-2000)})`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
  send(line: string): void {
    this.p.stdin.write(`${line}\n`);
  }
}

/** Starts a replica on the database `url` (node run with `nodeArgs`) and waits until it is ready. */
export async function startReplica(url: string, name: string, capacity = 4, nodeArgs: string[] = []): Promise<Replica> {
  const p = spawn(process.execPath, [...nodeArgs, '--import', register, childPath, url, name, String(capacity)], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const r = new Replica(name, p);
  await r.until('ready', (e) => e.ev === 'ready');
  return r;
}

/**
 * The runs of `events` (in their order), as the ids of the turns started: a second start of a turn
 * is left out when the lane logged a failed attempt of it (a failed run runs again, as it should, on
 * a loaded machine a store call can fail). A turn started twice with no failure logged shows twice.
 */
export function runsOf(events: Event[]): string[] {
  const failed = new Map<string, number>();
  for (const e of events) {
    const id = e.ev === 'log' && e.level === 'error' ? /turn (\S+) failed on attempt/.exec(e.msg ?? '')?.[1] : undefined;
    if (id) failed.set(id, (failed.get(id) ?? 0) + 1);
  }
  const seen = new Set<string>();
  const runs: string[] = [];
  for (const e of events) {
    if (e.ev !== 'start' || e.id === undefined) continue;
    const left = failed.get(e.id) ?? 0;
    if (seen.has(e.id) && left > 0) {
      failed.set(e.id, left - 1);
      continue;
    }
    seen.add(e.id);
    runs.push(e.id);
  }
  return runs;
}

/** The warnings and errors the replicas logged, to print beside a mismatch. */
export const warningsOf = (events: Event[]): string[] =>
  events.filter((e) => e.ev === 'log' && (e.level === 'error' || e.level === 'warn')).map((e) => `${e.replica}: ${e.msg}`);
