/**
 * The terminal chat as a real process: bot/main.ts from source (test/helpers/register-ts.mjs), stdin
 * and stdout as pipes (no pty), the environment a fresh clone has (a model key, nothing else), so a
 * test types lines and reads the screen as a person at the keyboard would. `until` waits on the
 * screen (polling; the deadline only bounds a hang, it is not what the test asserts).
 * `pty: true` runs it on a real terminal instead (util-linux `script` allocates one): stdin, stdout and
 * stderr are then a TTY, typed text is echoed, lines end in \r\n, and `child` is `script`, not Gatehouse.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');

export interface ChatProcess {
  child: ChildProcessWithoutNullStreams;
  /** Everything written to stdout so far. */
  screen(): string;
  /** Everything written to stderr so far (the log). */
  log(): string;
  type(line: string): void;
  until(what: string, check: (screen: string) => boolean, timeoutMs?: number): Promise<void>;
  /** The exit code (null when killed by a signal), once the process has exited. */
  exit: Promise<number | null>;
}

const alive = new Set<ChatProcess>();

/** Kills what a failed test left running (by its own child's pid), so jest can exit. Call in afterEach. */
export async function killLeftovers(): Promise<void> {
  for (const p of alive) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exit;
  }
  alive.clear();
}

export function startChat(opts: { cwd: string; modelUrl: string; args?: string[]; env?: Record<string, string>; pty?: boolean }): ChatProcess {
  const argv = [process.execPath, '--import', register, main, ...(opts.args ?? [])];
  const quoted = argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  // exec: Gatehouse alone in the terminal's foreground group (a shell left waiting there would take
  // a Ctrl-C too, and exit 130 after Gatehouse's clean exit).
  const [cmd, ...args] = opts.pty ? ['script', '-qfec', `exec ${quoted}`, '/dev/null'] : argv;
  const child = spawn(cmd!, args, {
    cwd: opts.cwd,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: opts.cwd,
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: opts.modelUrl,
      GATEHOUSE_HTTP_PORT: '0',
      ...opts.env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((r) => child.once('close', (c) => r(c)));
  const proc: ChatProcess = {
    child,
    screen: () => out,
    log: () => err,
    type: (line) => child.stdin.write(line + '\n'),
    async until(what, check, timeoutMs = 30_000) {
      const end = Date.now() + timeoutMs;
      while (!check(out)) {
        if (child.exitCode !== null || Date.now() > end) {
          throw new Error(`${child.exitCode !== null ? `exited (${child.exitCode})` : 'timed out'} waiting for ${what}\n--- screen:\n${out}\n--- log:\n${err}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    exit,
  };
  alive.add(proc);
  void exit.then(() => alive.delete(proc));
  return proc;
}
