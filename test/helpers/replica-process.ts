/**
 * Starts test/helpers/replica-child.ts as a real node process on a store URL and reads its lines by
 * kind (`next('woke')` resolves with the rest of the next `woke ...` line; `all('fired')` is every
 * one seen so far). See replica-child.ts for the commands.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const script = join(root, 'test', 'helpers', 'replica-child.ts');

export interface Replica {
  child: ChildProcessWithoutNullStreams;
  send(line: string): void;
  next(kind: string): Promise<string>;
  /** Every line of that kind seen so far (consumed by next or not). */
  all(kind: string): string[];
  /** Resolves when `pred` holds over `all(kind)` (checked at each new line of that kind). */
  until(kind: string, pred: (lines: string[]) => boolean): Promise<void>;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

export function startReplica(storeUrl: string, env: Record<string, string> = {}): Replica {
  const child = spawn(process.execPath, ['--import', register, script, storeUrl], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const queued = new Map<string, string[]>();
  const seen = new Map<string, string[]>();
  const waiting = new Map<string, Array<(l: string) => void>>();
  const watchers = new Set<{ kind: string; check(): void }>();
  let stderr = '';
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  createInterface({ input: child.stdout }).on('line', (l) => {
    const kind = l.split(' ', 1)[0]!;
    const rest = l.slice(kind.length + 1);
    seen.set(kind, [...(seen.get(kind) ?? []), rest]);
    const w = waiting.get(kind)?.shift();
    if (w) w(rest);
    else queued.set(kind, [...(queued.get(kind) ?? []), rest]);
    for (const x of [...watchers]) if (x.kind === kind) x.check();
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const failOnExit = <T>(p: Promise<T>, what: string): Promise<T> =>
    Promise.race([p, exited.then((code) => Promise.reject<T>(new Error(`replica exited (${code}) before ${what}: ${stderr.slice(-2000)}`)))]);
  return {
    child,
    send: (line) => void child.stdin.write(`${line}\n`),
    next(kind) {
      const q = queued.get(kind);
      if (q?.length) return Promise.resolve(q.shift()!);
      return failOnExit(new Promise<string>((r) => waiting.set(kind, [...(waiting.get(kind) ?? []), r])), `a "${kind}" line`);
    },
    all: (kind) => [...(seen.get(kind) ?? [])],
    until(kind, pred) {
      return failOnExit(
        new Promise<void>((resolve) => {
          const x = {
            kind,
            check: () => {
              if (pred(seen.get(kind) ?? [])) {
                watchers.delete(x);
                resolve();
              }
            },
          };
          watchers.add(x);
          x.check();
        }),
        `"${kind}" lines as expected`,
      );
    },
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin.write('stop\n');
      await exited;
    },
  };
}
