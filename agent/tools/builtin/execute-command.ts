/**
 * execute_command: run one shell command in the agent's workspace.
 *
 * Contract:
 * - Tier `unknown`: the gate judges `proposal.command` (denylist, then classifier/allowlists). This tool
 *   only runs what the gate let through, and runs exactly the string the gate saw.
 * - propose() resolves `cwd` inside ctx.workspace with resolveInWorkspace (`..`, an absolute path
 *   elsewhere or a symlink leading out are refused with a ToolError) and mutates nothing. execute()
 *   re-resolves it, so a symlink swapped in while an approval waited cannot move the command out.
 * - The child runs under a shell (`/bin/sh -c`, or opts.shell), as the leader of its own process group,
 *   with stdin ignored and ONLY the sanitized environment (policies/env.ts, the agent's envAllowlist).
 * - Sandbox (opts.sandbox, default bubblewrap with the network off): EVERY command this tool starts,
 *   auto-approved and allowlisted ones included, runs in the box agent/tools/sandbox builds (a default-deny
 *   view of the host: read-only system, the workspace the only writable host directory, private sized /tmp, own PID/IPC/UTS/network
 *   namespaces, the bot's files and credential dotfiles masked, an unprivileged user, process and
 *   open-file limits, memory, CPU-time and /tmp size limits). Only `sandbox: { mode: 'none' }` runs it on the host.
 *   A command that ran into a limit gets a line after the exit code naming it ("killed: CPU limit ...",
 *   "memory limit: ...", "tmp full: ..."); the box's after-step (setuid/device strip) runs before the
 *   result is returned, and says so when it changed something. In the box a shell killed by
 *   a signal shows as exit code 128+N (bwrap reports it so), and background jobs end with the command
 *   (the box's PID namespace ends with it).
 * - stdout and stderr are each capped at maxOutputBytes, counted in bytes while reading: the first half
 *   and the last half of the cap are kept, the middle is dropped as it streams past and replaced by
 *   "[... output truncated: N bytes omitted ...]". The pipes are always drained, so a flood neither
 *   blocks the child nor grows memory.
 * - Timeout (input.timeoutMs, clamped to maxTimeoutMs; default defaultTimeoutMs) or ctx.signal abort
 *   kills the WHOLE process group: SIGTERM, then SIGKILL after killGraceMs. Background jobs and
 *   grandchildren die with it. The result is then isError: true and says what killed it and why.
 * - A non-zero exit code or death by a signal the tool did not send is a normal result (isError: false):
 *   `grep` finding nothing exits 1, and the model needs the output and the code, not an error. The exit
 *   code is always the first line.
 * - The call returns when the shell has exited AND its output pipes are closed: a background job that
 *   keeps stdout open keeps the call running (until the timeout). Detach it with `>/dev/null 2>&1 &`
 *   (outside the sandbox only: in it, nothing outlives the command).
 * - Egress (`sandbox.egress` and `ctx.egress`): each command gets its own proxy socket (agent/egress/hub.ts
 *   `session`), closed once the command ended; hosts it declined are listed after stderr under
 *   "--- network ---", with what would allow them.
 * - Killing the group kills bwrap (SIGKILL at once: SIGTERM may be lost while bwrap sets the box up), and
 *   with it the whole box (its PID namespace).
 */
import { access, constants } from 'node:fs/promises';
import { z } from 'zod';
import { sanitizeEnv } from '../../../policies/env.js';
import { ToolError, type Proposal, type Tool, type ToolContext } from '../types.js';
import { errCode, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../workspace.js';
import type { SandboxKill, SandboxReport } from '../../telemetry/types.js';
import { whenAborted } from '../../run/abort.js';
import {
  boxCommand,
  boxLimitNote,
  boxLimitsHit,
  DEFAULT_SANDBOX_POLICY,
  execaOptions,
  SandboxUnavailableError,
  type BoxedCommand,
  type SandboxPolicy,
} from '../sandbox/index.js';

export interface ExecuteCommandOptions {
  /** Used when the model gives no timeoutMs. Default 5 minutes. */
  defaultTimeoutMs?: number;
  /** Upper bound for input.timeoutMs. Default: defaultTimeoutMs (the model may only shorten it). */
  maxTimeoutMs?: number;
  /** Cap per stream (stdout and stderr each), in bytes. Default 256 KB. */
  maxOutputBytes?: number;
  /** Environment before sanitizing. Default process.env. */
  baseEnv?: Record<string, string | undefined>;
  /** Shell binary; default /bin/sh. */
  shell?: string;
  /** Time between SIGTERM and SIGKILL to the process group. Default 2 s. */
  killGraceMs?: number;
  /** Where commands run. Default: bubblewrap, network off, no bot files to hide beyond the dotfiles. */
  sandbox?: SandboxPolicy;
}

export interface ExecuteCommandInput {
  command: string;
  cwd?: string;
  timeoutMs?: number;
}

const DEFAULT_COMMAND_TIMEOUT_MS = 5 * 60_000;
const DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024;
const DEFAULT_KILL_GRACE_MS = 2_000;
const SUMMARY_MAX_CHARS = 100;

const inputSchema = z.object({
  command: z.string().min(1, 'command must not be empty').describe('The shell command line to run (POSIX sh).'),
  cwd: z.string().optional().describe('Working directory, relative to the workspace root (default: the workspace root).'),
  timeoutMs: z.number().int().positive().optional().describe('Kill the command after this many milliseconds (capped by the configured maximum).'),
});

export function executeCommandTool(opts: ExecuteCommandOptions = {}): Tool<ExecuteCommandInput> {
  const defaultTimeoutMs = positive(opts.defaultTimeoutMs, DEFAULT_COMMAND_TIMEOUT_MS, 'defaultTimeoutMs');
  const maxTimeoutMs = positive(opts.maxTimeoutMs, defaultTimeoutMs, 'maxTimeoutMs');
  const maxOutputBytes = positive(opts.maxOutputBytes, DEFAULT_MAX_OUTPUT_BYTES, 'maxOutputBytes');
  const killGraceMs = positive(opts.killGraceMs, DEFAULT_KILL_GRACE_MS, 'killGraceMs');
  const sandbox = opts.sandbox ?? DEFAULT_SANDBOX_POLICY;

  return {
    name: 'execute_command',
    description:
      'Run a shell command (POSIX sh) in the workspace and return its exit code, stdout and stderr. ' +
      `stdout and stderr are each cut to ${Math.round(maxOutputBytes / 1024)} KB (start and end kept). ` +
      `The command is killed after ${Math.round(Math.min(defaultTimeoutMs, maxTimeoutMs) / 1000)} s unless timeoutMs says ` +
      `otherwise (at most ${Math.round(maxTimeoutMs / 1000)} s). stdin is closed; secrets are removed from the ` +
      'environment. ' +
      (sandbox.mode === 'bubblewrap'
        ? `It runs in a sandbox: only the workspace and /tmp (private, emptied after) are writable, the network is ${sandbox.network ? 'on' : sandbox.egress ? 'reachable only through an HTTP(S) proxy to the allowed hosts (HTTP_PROXY is set; another host needs approval or is refused)' : 'off'}, ` +
          'and every process it started ends with it.'
        : 'A background job that should outlive the call must redirect its output: `cmd >/dev/null 2>&1 &`.'),
    input: inputSchema,
    tier: 'unknown',
    // Leave room for our own timeout and kill grace to fire first, so the model gets our explanation.
    timeoutMs: maxTimeoutMs + 2 * killGraceMs + 5_000,

    async propose(input: ExecuteCommandInput, ctx: ToolContext): Promise<Proposal> {
      const cwd = await resolveCwd(ctx.workspace, input.cwd);
      return {
        summary: `$ ${summarize(input.command)}`,
        preview: input.command,
        command: input.command,
        data: { cwd },
      };
    },

    async execute(input, ctx, prepared) {
      const proposed = prepared.proposal?.command;
      if (proposed !== undefined && proposed !== input.command) {
        throw new ToolError('The command differs from the one that was approved; propose it again.');
      }
      if (ctx.signal.aborted) {
        throw new ToolError('The run was stopped before the command started; it did not run.');
      }
      const cwd = await resolveCwd(ctx.workspace, input.cwd);
      const timeoutMs = Math.min(input.timeoutMs ?? defaultTimeoutMs, maxTimeoutMs);
      const shell = opts.shell ?? '/bin/sh';
      // In the box a missing shell would only show as an exit code: say it plainly, before starting.
      await access(shell, constants.X_OK).catch((err: NodeJS.ErrnoException) => {
        throw new ToolError(`The command could not be started: the shell ${shell} cannot be run (${err.code ?? err.message}).`);
      });
      // Its own egress proxy (agent/egress/hub.ts session): a host not on the list can then be asked for here.
      const egress = sandbox.mode === 'bubblewrap' && sandbox.egress && !sandbox.network && ctx.egress ? await ctx.egress(input.command) : undefined;
      let boxed: BoxedCommand;
      try {
        boxed = boxCommand(egress ? { ...sandbox, egress: { socket: egress.socket } } : sandbox, {
          workspace: await workspaceRoot(ctx.workspace),
          cwd,
          env: sanitizeEnv(opts.baseEnv ?? process.env, ctx.envAllowlist),
          argv: [shell, '-c', input.command],
        });
      } catch (err) {
        await egress?.close();
        if (err instanceof SandboxUnavailableError) throw new ToolError(`The command did not run: the sandbox is unavailable: ${err.message}`);
        throw err;
      }
      let notes: string[] = [];
      let result: { content: string; isError: boolean };
      try {
        result = await runCommand(boxed, {
          sandboxed: sandbox.mode === 'bubblewrap',
          timeoutMs,
          killGraceMs,
          maxOutputBytes,
          signal: ctx.signal,
          ...(ctx.telemetry ? { report: (r: SandboxReport) => ctx.telemetry?.sandbox(r) } : {}),
        });
      } finally {
        // The box is gone: its proxy goes too (a held connection's card is closed with it).
        if (egress) notes = await egress.close();
      }
      return notes.length > 0 ? { ...result, content: `${result.content}\n--- network ---\n${notes.join('\n')}` } : result;
    },
  };
}

export interface RunOptions {
  sandboxed: boolean;
  timeoutMs: number;
  killGraceMs: number;
  maxOutputBytes: number;
  signal: AbortSignal;
  /** Told how the command ended: killed (and why), box limits hit (metrics and traces). */
  report?: (r: SandboxReport) => void;
}

export async function runCommand(boxed: BoxedCommand, o: RunOptions): Promise<{ content: string; isError: boolean }> {
  // Loaded on the first command (cached after): a bot whose agents have no shell tool never loads it.
  const { execa } = await import('execa');
  // A /stop during the awaits before this point fired its 'abort' event before anyone listened.
  if (o.signal.aborted) throw new ToolError('The run was stopped before the command started; it did not run.');
  const started = Date.now();
  const sub = execa(boxed.file, boxed.args, execaOptions(boxed, { stdin: 'ignore' }, { detached: true, buffer: false }));
  const stdout = new CappedOutput(o.maxOutputBytes);
  const stderr = new CappedOutput(o.maxOutputBytes);
  sub.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
  sub.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));

  const pid = sub.pid;
  let killedBy: string | undefined;
  let killKind: SandboxKill | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const killGroup = (why: string, kind: SandboxKill): void => {
    if (killedBy !== undefined || pid === undefined) return;
    killedBy = why;
    killKind = kind;
    // A box has nothing to wind down gracefully (its PID namespace dies with bwrap), and bwrap may not
    // act on a SIGTERM that lands while it is still setting the box up: SIGKILL it.
    signalGroup(pid, o.sandboxed ? 'SIGKILL' : 'SIGTERM');
    killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), o.killGraceMs);
  };
  const timer = setTimeout(() => killGroup(`it ran longer than its timeout of ${formatMs(o.timeoutMs)}`, 'timeout'), o.timeoutMs);
  const unlink = whenAborted(o.signal, () => killGroup('the run was stopped (timeout or /stop)', 'stopped'));

  let result: Awaited<typeof sub>;
  try {
    result = await sub;
  } finally {
    clearTimeout(timer);
    unlink();
  }

  if (killedBy !== undefined && pid !== undefined) {
    // The shell is gone; give the rest of its group the grace period, then SIGKILL whatever is left.
    const gone = await waitForGroupExit(pid, o.killGraceMs);
    clearTimeout(killTimer);
    if (!gone) signalGroup(pid, 'SIGKILL');
  }
  const durationMs = Date.now() - started;

  if (killedBy === undefined && result.exitCode === undefined && result.signal === undefined) {
    // Spawn failed (no shell, cwd vanished): nothing ran.
    throw new ToolError(`The command could not be started: ${result.shortMessage ?? 'unknown error'}.`);
  }

  // bwrap reports its own setup failures (a mount it could not make) as exit code 1 with "bwrap: ..."
  // before anything ran: that is not the command's result.
  const errText = stderr.text();
  if (o.sandboxed && killedBy === undefined && result.exitCode === 1 && stdout.text() === '' && /^bwrap: /.test(errText)) {
    throw new ToolError(`The command did not run: the sandbox could not be set up (${errText.trim()}).`);
  }

  // The box is gone: strip what it may have left that another user could abuse (setuid bits, devices).
  const cleaned = boxed.after?.();
  let status: string;
  if (killedBy !== undefined) {
    status = o.sandboxed
      ? `killed: ${killedBy}; its sandbox was terminated with every process in it (its process group got SIGKILL, which ends the box and everything in it at once)`
      : `killed: ${killedBy}; its whole process group was terminated (SIGTERM, then SIGKILL after ${formatMs(o.killGraceMs)})`;
  } else if (result.exitCode !== undefined) {
    status = `exit code: ${result.exitCode}`;
  } else {
    status = `terminated by signal ${result.signal ?? 'unknown'} (not sent by Gatehouse)`;
  }
  const limit = killedBy === undefined && o.sandboxed ? boxLimitNote(boxed, { exitCode: result.exitCode, stderr: errText }) : undefined;
  const hit = o.sandboxed ? boxLimitsHit(boxed, { exitCode: result.exitCode, stderr: errText }) : [];
  // A limit that ended the command (CPU, SIGKILL in the box) counts as what killed it.
  const killed = killKind ?? hit.find((k) => k === 'cpu' || k === 'sigkill');
  o.report?.({ boxed: o.sandboxed, ...(killed !== undefined ? { killed } : {}), limits: hit });
  const content = [
    status,
    ...(limit ? [limit] : []),
    ...(cleaned ? [cleaned] : []),
    `duration: ${formatMs(durationMs)}`,
    `--- stdout ---\n${stdout.text() || '(empty)'}`,
    `--- stderr ---\n${errText || '(empty)'}`,
  ].join('\n');
  return { content, isError: killedBy !== undefined };
}

/**
 * Sends `signal` to every process in group `pgid`. Never throws: it runs from timers, and a group that is
 * already gone (ESRCH) is the goal, not a failure.
 */
function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left to kill. EPERM would mean the id now belongs to someone else's group: leave it.
  }
}

/**
 * True once group `pgid` has no members, false when `graceMs` passed first. A zombie still counts as a
 * member (an init that never reaps keeps it), so this may wait the full grace; the caller then SIGKILLs.
 */
async function waitForGroupExit(pgid: number, graceMs: number): Promise<boolean> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return true;
    }
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Keeps at most `cap` bytes of a stream: the first half as it arrives and a rolling last half, counting
 * every byte that went past so the omitted amount is exact.
 */
class CappedOutput {
  private readonly headCap: number;
  private readonly tailCap: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;

  constructor(cap: number) {
    this.headCap = Math.ceil(cap / 2);
    this.tailCap = cap - this.headCap;
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.headBytes < this.headCap) {
      const take = Math.min(this.headCap - this.headBytes, rest.length);
      // Copy: a subarray would pin the whole 64 KB read buffer.
      this.head.push(Buffer.from(rest.subarray(0, take)));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.tailCap === 0) return;
    if (rest.length >= this.tailCap) {
      this.tail = [rest.subarray(rest.length - this.tailCap)];
      this.tailBytes = this.tailCap;
      return;
    }
    // No copy here: the tail holds at most a few read buffers, and copying every chunk of a flood
    // would double the garbage it makes.
    this.tail.push(rest);
    this.tailBytes += rest.length;
    // Drop whole chunks from the front while the rest still fills the tail, then trim the first one.
    while (this.tailBytes - (this.tail[0]?.length ?? 0) >= this.tailCap) {
      this.tailBytes -= this.tail.shift()?.length ?? 0;
    }
    const excess = this.tailBytes - this.tailCap;
    const first = this.tail[0];
    if (excess > 0 && first) {
      this.tail[0] = first.subarray(excess);
      this.tailBytes -= excess;
    }
  }

  text(): string {
    const head = Buffer.concat(this.head);
    const tail = Buffer.concat(this.tail);
    const omitted = this.total - head.length - tail.length;
    if (omitted === 0) return Buffer.concat([head, tail]).toString('utf8');
    // Cut on character boundaries so the model does not see replacement characters at the seam.
    const headEnd = utf8BoundaryBefore(head, head.length);
    const tailStart = utf8BoundaryAfter(tail, 0);
    const shown = head.subarray(0, headEnd).toString('utf8');
    const shownTail = tail.subarray(tailStart).toString('utf8');
    const omittedBytes = omitted + (head.length - headEnd) + tailStart;
    return `${shown}\n[... output truncated: ${omittedBytes} bytes omitted ...]\n${shownTail}`;
  }
}

/** Largest index <= end that does not split a UTF-8 sequence. */
function utf8BoundaryBefore(buf: Buffer, end: number): number {
  let i = end;
  // Walk back over up to 3 continuation bytes to the lead byte of the last sequence.
  while (i > 0 && end - i < 4 && ((buf[i - 1] ?? 0) & 0xc0) === 0x80) i--;
  if (i === 0) return end;
  const lead = buf[i - 1] ?? 0;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return end - (i - 1) >= need ? end : i - 1;
}

/** Smallest index >= start that begins a UTF-8 sequence (skips orphaned continuation bytes). */
function utf8BoundaryAfter(buf: Buffer, start: number): number {
  let i = start;
  while (i < buf.length && i - start < 3 && ((buf[i] ?? 0) & 0xc0) === 0x80) i++;
  return i;
}

/**
 * The absolute, symlink-resolved directory for `cwd` inside `workspace` (agent/tools/workspace.ts does
 * the confinement), or a ToolError that says why not.
 */
async function resolveCwd(workspace: string, cwd: string | undefined): Promise<string> {
  if (cwd === undefined || cwd === '' || cwd === '.') return workspaceRoot(workspace);
  const root = await workspaceRoot(workspace);
  const real = await resolveInWorkspace(workspace, cwd, { mustExist: true });
  // Checked through an fd-by-fd open, never a stat by path (a swapped link would be followed).
  const fh = await openInWorkspace(root, real).catch((err: unknown) => {
    if (err instanceof ToolError) throw err;
    throw new ToolError(`cwd "${cwd}" cannot be opened (${errCode(err)}).`);
  });
  const isDir = await fh
    .stat()
    .then(
      (st) => st.isDirectory(),
      () => false,
    )
    .finally(() => fh.close().catch(() => undefined));
  if (!isDir) {
    throw new ToolError(`cwd "${cwd}" is a file, not a directory; give its parent directory instead.`);
  }
  return real;
}

function summarize(command: string): string {
  const lines = command.trim().split('\n');
  const first = lines[0] ?? '';
  const more = lines.length > 1;
  if (first.length > SUMMARY_MAX_CHARS) return `${first.slice(0, SUMMARY_MAX_CHARS - 1)}…`;
  return more ? `${first} …` : first;
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new Error(`executeCommandTool: ${name} must be a positive number of ${name.endsWith('Bytes') ? 'bytes' : 'milliseconds'}, got ${value}.`);
  }
  return value;
}
