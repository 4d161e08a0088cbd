/**
 * The sandbox every process started for the model runs in (execute_command today; any future tool that
 * spawns uses `boxCommand` too).
 *
 * Contract:
 * - `boxCommand(policy, { workspace, cwd, env, argv })` says how to start `argv`: under `sandbox: none` the
 *   program itself with `env`; under `bubblewrap` bwrap (bwrap.ts has the box's layout) started with an
 *   EMPTY environment, its options (including `env`) in `optionsData` for fd 3 (`--args 3`), and, when the
 *   bot runs as root, `uid`/`gid` 65534 (nobody/nogroup) for the spawn: inside the box the command is
 *   never root, and the process limit applies (the kernel exempts root from RLIMIT_NPROC). When the bot
 *   is not root the box runs as the bot's own uid (bwrap makes the user namespace).
 * - Killing the bwrap process kills the whole box: `--die-with-parent` SIGKILLs the box's pid 1 when
 *   bwrap dies, and a PID namespace ends with its pid 1. Nothing started in the box outlives it, not even
 *   a background job of a command that finished.
 * - Ownership when the bot runs as root (the one design choice to know): the workspace belongs to the
 *   sandbox user. `prepareWorkspace` hands the workspace and everything in it owned by root to 65534:65534
 *   at start (coreutils `chown -R -P --from=0`: never follows symlinks); files the file tools write are
 *   handed over with `handOver` (fchown on the open handle) and the directories they create through
 *   openInWorkspace's `onCreatedDir` hook (each opened fd by fd, O_NOFOLLOW). Files of other owners
 *   are left alone: the box can read what its user may read, nothing more. The bot, as root, keeps full
 *   access. Bot user not root: nothing is chowned.
 * - A root bot's boxes all run as 65534: they cannot see each other (PID namespaces), and the process
 *   limit is counted per box (prlimit runs inside the box's user namespace).
 * - The workspace must be reachable by the sandbox user: bwrap resolves bind sources with the rights of
 *   the user it runs as. `probeSandbox` refuses a workspace behind a directory 65534 cannot traverse
 *   (e.g. /root, mode 0700) and names the fix.
 * - `probeSandbox` runs `true` in the same kind of box as the same user; it throws SandboxUnavailableError
 *   whose message names the cause and the fixes (install bubblewrap; the container flags that allow user
 *   namespaces; or `sandbox: none`).
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { execa, type Options } from 'execa';
import { bwrapArgs, type SandboxLimits } from './bwrap.js';
import { hiddenPaths } from './masks.js';

export type { SandboxLimits } from './bwrap.js';
export { hiddenPaths, HOME_CREDENTIALS, SYSTEM_SECRETS } from './masks.js';

export const SANDBOX_MODES = ['bubblewrap', 'none'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** The user a root bot's boxes run as: nobody/nogroup. */
export const SANDBOX_UID = 65534;
export const SANDBOX_GID = 65534;

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { processes: 256, openFiles: 4096 };

export interface SandboxPolicy {
  mode: SandboxMode;
  /** Network inside the box (the host's); false: a network namespace of its own with nothing in it. */
  network: boolean;
  /** The bot's own files to hide: config file, the .env loaded, the store directory or files. */
  botFiles: readonly string[];
  limits?: SandboxLimits;
  /** Home directories whose credential files are hidden (default: the bot user's HOME and /root). */
  homes?: readonly string[];
}

export const DEFAULT_SANDBOX_POLICY: SandboxPolicy = { mode: 'bubblewrap', network: false, botFiles: [] };

export interface BoxedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** For fd 3 when set: bwrap's NUL-terminated options (`--args 3`). */
  optionsData?: Buffer;
  uid?: number;
  gid?: number;
}

export interface BoxRequest {
  /** Real path of the workspace. */
  workspace: string;
  /** Real path of the working directory inside it. */
  cwd: string;
  env: Record<string, string>;
  argv: readonly string[];
}

/** The sandbox user for spawns, when the bot is root; undefined: the bot's own uid. */
export function sandboxUser(): { uid: number; gid: number } | undefined {
  return process.getuid?.() === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_GID } : undefined;
}

const executables = new Map<string, string | undefined>();

/** The absolute path of `name` on the bot's PATH (cached), or undefined. */
export function findExecutable(name: string, searchPath = process.env.PATH ?? '/usr/bin:/bin'): string | undefined {
  const key = `${name}\u0000${searchPath}`;
  if (executables.has(key)) return executables.get(key);
  let found: string | undefined;
  for (const dir of [...searchPath.split(':'), '/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) {
        found = candidate;
        break;
      }
    } catch {
      // not here
    }
  }
  executables.set(key, found);
  return found;
}

export function boxCommand(policy: SandboxPolicy, req: BoxRequest): BoxedCommand {
  const [program, ...rest] = req.argv;
  if (program === undefined) throw new Error('boxCommand: argv is empty');
  if (policy.mode === 'none') return { file: program, args: rest, env: req.env, cwd: req.cwd };
  const bwrap = findExecutable('bwrap');
  const prlimit = findExecutable('prlimit');
  if (!bwrap) throw new SandboxUnavailableError(missingBwrapMessage());
  if (!prlimit) throw new SandboxUnavailableError(missingPrlimitMessage());
  const user = sandboxUser();
  if (user) {
    const blocked = untraversableAncestor(req.workspace, user.uid, user.gid);
    if (blocked !== undefined) throw new SandboxUnavailableError(unreachableMessage(req.workspace, blocked, user.uid));
  }
  // A mask the box's user could not reach anyway (behind a directory it cannot enter) is not needed, and
  // bwrap, running as that user, could not make its mount point.
  const reachable = (p: string): boolean =>
    user ? untraversableAncestor(path.dirname(p), user.uid, user.gid) === undefined : canEnterAll(path.dirname(p));
  const masks = hiddenPaths({ botFiles: policy.botFiles, workspace: req.workspace, ...(policy.homes ? { homes: policy.homes } : {}) }).filter((m) =>
    reachable(m.path),
  );
  const { options, command } = bwrapArgs({
    workspace: req.workspace,
    cwd: req.cwd,
    network: policy.network,
    masks,
    env: req.env,
    limits: policy.limits ?? DEFAULT_SANDBOX_LIMITS,
    prlimit,
    argv: req.argv,
  });
  return {
    file: bwrap,
    args: ['--args', '3', ...command],
    env: {},
    cwd: '/',
    optionsData: Buffer.from(options.map((o) => `${o}\u0000`).join('')),
    ...(user ?? {}),
  };
}

/** Thrown when commands cannot run in the sandbox here; the message says why and what to do. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}

const FIX_NONE = 'or, accepting that commands then run unconfined with the bot\'s own rights, set `sandbox: none` for the agent';

function missingBwrapMessage(): string {
  return `bubblewrap (bwrap) is not installed. Install it: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap, apk add bubblewrap; ${FIX_NONE}`;
}

function missingPrlimitMessage(): string {
  return `prlimit (util-linux) is not installed; the sandbox uses it to limit processes and open files. Install it: apt-get install util-linux; ${FIX_NONE}`;
}

function namespaceMessage(detail: string): string {
  return (
    `bubblewrap cannot create its namespaces here (${detail}). ` +
    'Unprivileged user namespaces must be allowed: on a host, sysctl kernel.unprivileged_userns_clone=1 (Debian) ' +
    'and user.max_user_namespaces > 0 (kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04+); ' +
    'in Docker, run with --security-opt seccomp=unconfined --security-opt apparmor=unconfined ' +
    '(or a seccomp profile that allows clone/unshare with CLONE_NEWUSER, and mount/pivot_root inside it), and ' +
    'if mounting /proc is refused, also --security-opt systempaths=unconfined (the box mounts a fresh /proc); ' +
    `under systemd, do not set RestrictNamespaces= or PrivateUsers= for the unit; ${FIX_NONE}`
  );
}

function unreachableMessage(workspace: string, blocked: string, uid: number): string {
  const mode = existsSync(blocked) ? (statSync(blocked).mode & 0o777).toString(8).padStart(4, '0') : 'missing';
  return (
    `the workspace ${workspace} is not reachable by the sandbox user (uid ${uid}): it cannot enter ${blocked} (mode ${mode}), ` +
    'and commands run as that user because the bot runs as root. Move the workspace somewhere it can reach ' +
    `(e.g. /srv/gatehouse/workspace or /var/lib/gatehouse/workspace), or allow entering ${blocked} (chmod o+x ${blocked}; ` +
    `credential files in it stay hidden in the box); ${FIX_NONE}`
  );
}

/**
 * When the bot runs as root: hands the workspace, and everything in it that root owns, to the sandbox user
 * (coreutils chown -R -P --from=0: physical walk, symlinks never followed, other owners' files untouched).
 * Run at start, before any box exists. A no-op when the bot is not root.
 */
export async function prepareWorkspace(workspace: string): Promise<void> {
  const user = sandboxUser();
  if (!user) return;
  const chown = findExecutable('chown');
  if (!chown) throw new SandboxUnavailableError('chown (coreutils) is not installed; it hands the workspace to the sandbox user');
  const r = await execa(chown, ['-R', '-P', '--from=0', `${user.uid}:${user.gid}`, '--', workspace], { reject: false, env: {}, extendEnv: false });
  if (r.exitCode !== 0) {
    throw new SandboxUnavailableError(`could not hand the workspace ${workspace} to the sandbox user (uid ${user.uid}): ${String(r.stderr).trim() || r.shortMessage}`);
  }
}

/** True when the bot's own user can enter `dir` and every directory above it. */
function canEnterAll(dir: string): boolean {
  try {
    accessSync(dir, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Directories on the way to `dir` (itself included) that `uid`/`gid` cannot search. First one found. */
export function untraversableAncestor(dir: string, uid: number, gid: number): string | undefined {
  let cur = '/';
  for (const part of ['', ...dir.split(path.sep).filter(Boolean)]) {
    cur = part === '' ? '/' : path.join(cur, part);
    let st;
    try {
      st = statSync(cur);
    } catch {
      return cur;
    }
    const bit = st.uid === uid ? 0o100 : st.gid === gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return cur;
  }
  return undefined;
}

/**
 * Runs `true` in the box `policy` would build for `workspace`, as the same user. Resolves when it works;
 * throws SandboxUnavailableError naming the cause and the fix.
 */
export async function probeSandbox(policy: SandboxPolicy, workspace: string): Promise<void> {
  if (policy.mode === 'none') return;
  const boxed = boxCommand(policy, { workspace, cwd: workspace, env: { PATH: '/usr/bin:/bin' }, argv: ['/bin/sh', '-c', 'true'] });
  const result = await execa(boxed.file, boxed.args, execaOptions(boxed, { stdout: 'ignore' }, { timeout: 15_000 }));
  if (result.exitCode === 0) return;
  const said = String(result.stderr ?? '').trim().split('\n').slice(-3).join(' ') || (result.shortMessage ?? 'no output');
  if (/namespace|uid map|unshare|Operation not permitted|No space left on device|setting up|mount/i.test(said)) {
    throw new SandboxUnavailableError(namespaceMessage(said));
  }
  throw new SandboxUnavailableError(`a test command in the sandbox failed (${said}); ${FIX_NONE}`);
}

type Stream = 'ignore' | 'pipe';

/** execa options that start a BoxedCommand: its env only, bwrap's options on fd 3, its user. */
export function execaOptions(
  boxed: BoxedCommand,
  streams: { stdin?: Stream; stdout?: Stream; stderr?: Stream },
  extra: Omit<Options, 'stdin' | 'stdout' | 'stderr' | 'stdio' | 'env' | 'cwd' | 'uid' | 'gid'> = {},
): Options {
  const stdio = [streams.stdin ?? 'ignore', streams.stdout ?? 'pipe', streams.stderr ?? 'pipe'] as const;
  return {
    ...extra,
    env: boxed.env,
    extendEnv: false,
    cwd: boxed.cwd,
    reject: false,
    stdio: boxed.optionsData ? [...stdio, boxed.optionsData] : [...stdio],
    ...(boxed.uid !== undefined ? { uid: boxed.uid, gid: boxed.gid } : {}),
  };
}

/** Hands `fh` (a file the bot just wrote in a workspace) to the sandbox user when the bot runs as root. */
export async function handOver(fh: FileHandle): Promise<void> {
  const user = sandboxUser();
  if (user) await fh.chown(user.uid, user.gid);
}

