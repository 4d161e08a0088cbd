/**
 * An MCP stdio transport that owns its child process as a process group.
 *
 * Why not the SDK's StdioClientTransport: it signals only the direct child, so a server started through
 * a launcher (`npx ...`, `uvx ...`, a shell script) leaves its real process behind on shutdown, and it
 * does not say how the process ended. Here:
 * - the server runs in its own process group (detached), with the SDK's minimal inherited environment
 *   (HOME, LOGNAME, PATH, SHELL, TERM, USER) plus the configured `env`: none of Gatehouse's secrets;
 * - the last 4 KB of stderr are kept for error messages (`stderrTail`), and `exit` says how it ended;
 * - `close()` ends stdin, then SIGTERM, then SIGKILL to the whole group, and resolves when the leader
 *   is reaped and no process of the group is left (or after the SIGKILL).
 * JSON-RPC framing reuses the SDK's ReadBuffer / serializeMessage.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

const STDERR_TAIL_BYTES = 4096;
const GRACE_MS = 2000;

export interface ProcessTransportOptions {
  command: string;
  args: readonly string[];
  env: Readonly<Record<string, string>>;
  cwd?: string;
}

export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  private child: ChildProcess | undefined;
  private readonly buffer = new ReadBuffer();
  private tail = '';
  private exited: Promise<void> | undefined;
  /** How the process ended: "exit code 1", "signal SIGKILL", or undefined while running. */
  exit: string | undefined;

  constructor(private readonly opts: ProcessTransportOptions) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last few KB the server wrote to stderr (trimmed). */
  get stderrTail(): string {
    return this.tail.trim();
  }

  start(): Promise<void> {
    if (this.child) throw new Error('ProcessTransport already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.opts.command, [...this.opts.args], {
        env: { ...getDefaultEnvironment(), ...this.opts.env },
        ...(this.opts.cwd !== undefined ? { cwd: this.opts.cwd } : {}),
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
      this.child = child;
      this.exited = new Promise((done) => {
        child.once('close', (code, signal) => {
          this.exit = signal ? `signal ${signal}` : `exit code ${code ?? '?'}`;
          done();
          this.onclose?.();
        });
      });
      // `on`, not `once`: a later 'error' (a failed kill) must not become an uncaught exception.
      child.on('error', (err) => {
        if (child.pid === undefined) this.exit ??= `could not start (${(err as NodeJS.ErrnoException).code ?? err.message})`;
        reject(err);
        this.onerror?.(err);
      });
      child.once('spawn', () => resolve());
      child.stdout!.on('data', (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (err) {
            this.onerror?.(err as Error); // a line that is not JSON-RPC (a server logging to stdout)
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      child.stderr!.on('data', (chunk: Buffer) => {
        this.tail = (this.tail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
      });
      child.stdin!.on('error', (err) => this.onerror?.(err));
      child.stdout!.on('error', (err) => this.onerror?.(err));
      child.stderr!.on('error', () => undefined);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || !stdin.writable) {
        reject(new Error('the server process is not running'));
        return;
      }
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', () => resolve());
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.pid === undefined) return;
    const pgid = child.pid;
    const exited = this.exited ?? Promise.resolve();
    const waitExit = (ms: number) => Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // already closed
    }
    if (this.exit === undefined && !(await waitExit(GRACE_MS))) {
      signalGroup(pgid, 'SIGTERM');
      if (!(await waitExit(GRACE_MS))) signalGroup(pgid, 'SIGKILL');
      await waitExit(GRACE_MS);
    }
    // The leader is gone; anything it started in its group goes too.
    if (groupAlive(pgid)) {
      signalGroup(pgid, 'SIGTERM');
      for (let i = 0; i < 20 && groupAlive(pgid); i++) await new Promise((r) => setTimeout(r, 100));
      if (groupAlive(pgid)) signalGroup(pgid, 'SIGKILL');
    }
    this.buffer.clear();
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already empty
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
