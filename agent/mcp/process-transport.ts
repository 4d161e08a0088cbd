/**
 * An MCP stdio transport that owns its child process as a process group.
 *
 * Why not the SDK's StdioClientTransport: it signals only the direct child, so a server started through
 * a launcher (`npx ...`, `uvx ...`, a shell script) leaves its real process behind on shutdown, it
 * does not say how the process ended, and its read buffer grows without bound. Here:
 * - the process is started exactly as given (`file`, `args`, `env` only, `cwd`; for a boxed server
 *   that is bwrap, with its options on fd 3, its seccomp filter on fd 4 and the sandbox user's
 *   uid/gid: see launch.ts) in its own
 *   process group (detached);
 * - one message (a line) may be at most `maxMessageBytes` (settable: the listing lowers it); a longer
 *   one closes the transport and stops the process, and `exit` says why;
 * - the last 4 KB of stderr are kept for error messages (`stderrTail`), and `exit` says how it ended;
 * - `close()` ends stdin, then SIGTERM, then SIGKILL to the whole group, and resolves when the leader
 *   is reaped and no process of the group is left (or after the SIGKILL).
 * - the answer to a tools/call request this transport sent is not parsed here: its envelope is
 *   scanned (envelope.ts: one linear pass, no objects built) and handed on with an empty stand-in
 *   `result`, and `rawResultText(stand-in)` gives the line, which the document worker parses and
 *   converts (mcp/result.ts). Any other message is parsed with JSON.parse and handed on as that made
 *   it (checked, not rebuilt, by the SDK's message schema), a result keeping its line the same way.
 *   So the bot's thread never walks, rebuilds or structured-clones a tool result's tree.
 * JSON-RPC framing reuses the SDK's serializeMessage.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { MAX_MESSAGE_BYTES, rememberRawResult, scanResultEnvelope } from './envelope.js';

const STDERR_TAIL_BYTES = 4096;
const GRACE_MS = 2000;

/**
 * One line as a JSON-RPC message. Unlike the SDK's deserializeMessage, the object handed on is
 * JSON.parse's own (the schema only checks it): its `result` keeps its identity for rawResultText.
 */
function parseLine(line: string): JSONRPCMessage {
  const parsed: unknown = JSON.parse(line);
  const checked = JSONRPCMessageSchema.safeParse(parsed);
  if (!checked.success) throw new Error(`not a JSON-RPC message: ${checked.error.message.slice(0, 200)}`);
  const result = (parsed as { result?: unknown }).result;
  if (result !== null && typeof result === 'object') rememberRawResult(result, line);
  return parsed as JSONRPCMessage;
}

export interface ProcessTransportOptions {
  /** The program to start (absolute, or found on the bot's PATH). */
  file: string;
  args: readonly string[];
  /** The whole environment of the process: nothing else is inherited. */
  env: Readonly<Record<string, string>>;
  cwd?: string;
  /** Written to fd 3 and closed (bwrap's `--args 3`). */
  fd3?: Buffer;
  /** Written to fd 4 and closed (bwrap's `--seccomp 4`); only with fd3. */
  fd4?: Buffer;
  uid?: number;
  gid?: number;
}

export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  private child: ChildProcess | undefined;
  private chunks: Buffer[] = [];
  private pending = 0;
  private tail = '';
  /** The longest line accepted from the server; a longer one ends the connection. */
  maxMessageBytes = MAX_MESSAGE_BYTES;
  /** Bytes read from the server's stdout so far. */
  bytesIn = 0;
  private overflowed = false;
  /** Ids of tools/call requests sent and not yet answered or cancelled. */
  private readonly calls = new Set<string | number>();
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
      const child = spawn(this.opts.file, [...this.opts.args], {
        env: { ...this.opts.env },
        ...(this.opts.cwd !== undefined ? { cwd: this.opts.cwd } : {}),
        stdio: this.opts.fd3 ? (this.opts.fd4 ? ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', 'pipe']) : ['pipe', 'pipe', 'pipe'],
        detached: true,
        ...(this.opts.uid !== undefined ? { uid: this.opts.uid, gid: this.opts.gid ?? this.opts.uid } : {}),
      });
      this.child = child;
      // Each extra descriptor gets its data and EOF (bwrap reads each to its end).
      [this.opts.fd3, this.opts.fd3 ? this.opts.fd4 : undefined].forEach((data, i) => {
        if (!data) return;
        const fd = child.stdio[3 + i] as Writable;
        fd.on('error', () => undefined);
        fd.end(data);
      });
      this.exited = new Promise((done) => {
        child.once('close', (code, signal) => {
          this.exit ??= signal ? `signal ${signal}` : `exit code ${code ?? '?'}`;
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
      child.stdout!.on('data', (chunk: Buffer) => this.receive(chunk));
      child.stderr!.on('data', (chunk: Buffer) => {
        this.tail = (this.tail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
      });
      child.stdin!.on('error', (err) => this.onerror?.(err));
      child.stdout!.on('error', (err) => this.onerror?.(err));
      child.stderr!.on('error', () => undefined);
    });
  }

  /** Splits stdout into lines without ever holding more than maxMessageBytes of one line. */
  private receive(chunk: Buffer): void {
    if (this.overflowed) return;
    this.bytesIn += chunk.length;
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      if (this.pending + (nl - start) > this.maxMessageBytes) {
        this.overflow();
        return;
      }
      this.chunks.push(chunk.subarray(start, nl));
      const line = Buffer.concat(this.chunks).toString('utf8').replace(/\r$/, '');
      this.chunks = [];
      this.pending = 0;
      start = nl + 1;
      if (line.trim() === '') continue;
      let message: JSONRPCMessage;
      try {
        message = this.parse(line);
      } catch (err) {
        this.onerror?.(err as Error); // a line that is not JSON-RPC (a server logging to stdout)
        continue;
      }
      this.onmessage?.(message);
      if (this.overflowed) return;
    }
    if (start < chunk.length) {
      this.pending += chunk.length - start;
      if (this.pending > this.maxMessageBytes) {
        this.overflow();
        return;
      }
      this.chunks.push(chunk.subarray(start));
    }
  }

  /** A tools/call answer by its envelope only (see the header); anything else by parseLine. */
  private parse(line: string): JSONRPCMessage {
    const env = this.calls.size > 0 ? scanResultEnvelope(line) : undefined;
    if (env && this.calls.delete(env.id)) {
      const standIn = {};
      rememberRawResult(standIn, line);
      return { jsonrpc: '2.0', id: env.id, result: standIn };
    }
    const message = parseLine(line);
    if ('id' in message && !('method' in message) && message.id !== undefined) this.calls.delete(message.id);
    return message;
  }

  /** A message over the cap: nothing more is read, and the server is stopped (its whole group). */
  private overflow(): void {
    this.overflowed = true;
    this.chunks = [];
    this.pending = 0;
    this.exit ??= `stopped: it sent a message over ${formatBytes(this.maxMessageBytes)}`;
    this.onerror?.(new Error(this.exit));
    const pid = this.child?.pid;
    if (pid !== undefined) signalGroup(pid, 'SIGKILL');
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || !stdin.writable) {
        reject(new Error('the server process is not running'));
        return;
      }
      if ('method' in message && message.method === 'tools/call' && 'id' in message) this.calls.add(message.id);
      if ('method' in message && message.method === 'notifications/cancelled')
        this.calls.delete((message.params as { requestId?: string | number } | undefined)?.requestId ?? '');
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
    this.chunks = [];
  }
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${Math.round(n / (1024 * 1024))} MB` : `${Math.round(n / 1024)} KB`;
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
