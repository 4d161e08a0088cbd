/**
 * The sandbox every process started for the model runs in (execute_command today; any future tool that
 * spawns uses `boxCommand` too).
 *
 * Contract:
 * - `boxCommand(policy, { workspace, cwd, env, argv })` says how to start `argv`: under `sandbox: none` the
 *   program itself with `env`; under `bubblewrap` a launcher shell (launcher.ts: closes the bot's stray
 *   descriptors, oom_score_adj 1000) that execs bwrap (bwrap.ts has the box's layout: a default-deny view
 *   of the host, `systemView()` plus the workspace and `policy.readPaths`; the masks of the bot's and
 *   credential files apply inside those, also where a read path reaches them through a symlink), started with an EMPTY
 *   environment, bwrap's options (including `env`) in `optionsData` for fd 3 (`--args 3`), the seccomp
 *   filter (seccomp.ts) in `seccompData` for fd 4, and, when the bot runs as root, `uid`/`gid` 65534
 *   (nobody/nogroup) for the spawn: inside the box the command is never root, and the process limit
 *   applies (the kernel exempts root from RLIMIT_NPROC). When the bot is not root the box runs as the
 *   bot's own uid (bwrap makes the user namespace). `limits` are what the box runs under
 *   (`sandboxLimits(policy)`: DEFAULT_SANDBOX_LIMITS for unset keys), and `after()` must be called once
 *   the box has ended: it strips setuid/setgid bits and device nodes from the workspace (strip.ts) and
 *   returns a line for the result when it changed something. `boxLimitNote` names a limit a command hit.
 * - `policy.egress` (sandboxNetwork: { allow }): the box keeps its empty network namespace; the proxy's
 *   socket is bound in, the proxy variables are added to `env`, and `argv` runs under the forwarder
 *   (agent/egress/box.ts). Ignored when `network` is true (the host's network needs no proxy).
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
 * - `prepareWorkspace` also makes the workspace root 0700 (owner: the bot user, or 65534 for a root bot)
 *   and strips setuid/setgid bits and devices already in it.
 * - `probeSandbox` runs `true` in the same kind of box as the same user; it throws SandboxUnavailableError
 *   whose message names the cause and the fixes (install bubblewrap; the container flags that allow user
 *   namespaces; or `sandbox: none`).
 */
import { accessSync, chmodSync, constants, existsSync, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
// execa is imported where a command starts: a bot with no shell tool never loads it.
import type { Options } from 'execa';
import { bwrapArgs, type SystemEntry } from './bwrap.js';
import { launcherArgv, strayDescriptors } from './launcher.js';
import { DEFAULT_SANDBOX_LIMITS, limitNote, limitsHit, type SandboxLimits } from './limits.js';
import { hiddenPaths, type HiddenPath } from './masks.js';
import { seccompFilter } from './seccomp.js';
import { stripSpecialFiles } from './strip.js';
import { BOX_SOCKET, forwardedArgv, proxyEnv } from '../../egress/box.js';
import { messageOf } from '../../log.js';

export { DEFAULT_SANDBOX_LIMITS, describeLimits, parseSize, type SandboxLimits } from './limits.js';
export { hiddenPaths } from './masks.js';

export const SANDBOX_MODES = ['bubblewrap', 'none'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** The user a root bot's boxes run as: nobody/nogroup. */
export const SANDBOX_UID = 65534;
const SANDBOX_GID = 65534;

export interface SandboxPolicy {
  mode: SandboxMode;
  /** Network inside the box (the host's); false: a network namespace of its own with nothing in it. */
  network: boolean;
  /** The bot's own files to hide: config file, the .env loaded, the store directory or files. */
  botFiles: readonly string[];
  /** Unset ones: DEFAULT_SANDBOX_LIMITS. */
  limits?: Partial<SandboxLimits>;
  /** Host paths the box may read besides the system and the workspace (sandboxReadPaths; absolute). */
  readPaths?: readonly string[];
  /** Home directories whose credential files are hidden (default: the bot user's HOME and /root). */
  homes?: readonly string[];
  /**
   * The setuid/device defences (default on). Off only so a test's control can show what they stop: the
   * seccomp filter, and the walk that strips setuid/setgid bits and device nodes after each command.
   */
  seccomp?: boolean;
  stripAfter?: boolean;
  /**
   * `sandboxNetwork: { allow }`: the box keeps no network of its own (`network` must be false) and reaches
   * the egress proxy listening on `socket` (a host path) through a forwarder (agent/egress/box.ts).
   */
  egress?: { socket: string };
}

export function sandboxLimits(policy: SandboxPolicy): SandboxLimits {
  return { ...DEFAULT_SANDBOX_LIMITS, ...policy.limits };
}

export const DEFAULT_SANDBOX_POLICY: SandboxPolicy = { mode: 'bubblewrap', network: false, botFiles: [] };

export interface BoxedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** For fd 3 when set: bwrap's NUL-terminated options (`--args 3`). */
  optionsData?: Buffer;
  /** For fd 4 when set: the seccomp filter (`--seccomp 4`). */
  seccompData?: Buffer;
  uid?: number;
  gid?: number;
  /** The limits the box runs under (for `limitNote`). */
  limits?: SandboxLimits;
  /**
   * Run after the box has ended: strips setuid/setgid bits and device nodes in the workspace (strip.ts);
   * returns a line for the tool result when it changed something.
   */
  after?: () => string | undefined;
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

/**
 * /etc files that ordinary tools read: users, the dynamic linker, Debian's alternatives (/usr/bin/awk
 * links through /etc/alternatives), local names, time. Kept short on purpose: each bind is a mount bwrap
 * makes for every command (a few ms on a busy host), while a symlink into /usr (os-release, localtime)
 * costs nothing and is used where the host has one. Name resolution and TLS roots only with the network.
 */
const ETC_FILES = ['passwd', 'group', 'nsswitch.conf', 'hosts', 'ld.so.cache', 'alternatives', 'localtime', 'os-release'];
const ETC_NETWORK = ['resolv.conf', 'host.conf', 'gai.conf', 'protocols', 'services', 'ssl', 'ca-certificates', 'pki', 'crypto-policies'];
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

const systemCache = new Map<boolean, SystemEntry[]>();

/**
 * The host's system as the box sees it: /usr, the /bin, /sbin, /lib* links or directories, /etc's files
 * (with `network`, also those of name resolution and TLS).
 */
function systemView(network = false): SystemEntry[] {
  const cached = systemCache.get(network);
  if (cached) return cached;
  const out: SystemEntry[] = [];
  for (const dir of SYSTEM_DIRS) {
    try {
      const st = lstatSync(dir);
      if (st.isSymbolicLink()) out.push({ kind: 'symlink', path: dir, target: readlinkSync(dir) });
      else if (st.isDirectory()) out.push({ kind: 'ro-bind', path: dir });
    } catch {
      // not on this host
    }
  }
  for (const f of network ? [...ETC_FILES, ...ETC_NETWORK] : ETC_FILES) {
    const p = `/etc/${f}`;
    try {
      if (lstatSync(p).isSymbolicLink()) {
        const target = readlinkSync(p);
        const real = realpathSync(p);
        if (inside('/usr', real)) {
          out.push({ kind: 'symlink', path: p, target });
          continue;
        }
      }
      if (existsSync(p)) out.push({ kind: 'ro-bind', path: p, optional: true });
    } catch {
      // not on this host, or a dangling link: nothing to show
    }
  }
  out.push({ kind: 'symlink', path: '/etc/mtab', target: '../proc/self/mounts' });
  systemCache.set(network, out);
  return out;
}

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The directory of the Node binary, when it is outside what the box has anyway (/usr) and not in the
 * bot's own folder (next to its config, .env or store): commands run `node`, the bot's files stay out.
 */
function nodeDir(botFiles: readonly string[]): string | undefined {
  let dir: string;
  try {
    dir = path.dirname(realpathSync(process.execPath));
  } catch {
    return undefined;
  }
  if (SYSTEM_DIRS.some((d) => inside(d, dir))) return undefined;
  if (botFiles.some((f) => inside(path.dirname(f), dir) || inside(f, dir))) return undefined;
  return dir;
}

/**
 * Masks are real paths; a read path reached through a symlink (`/srv/tools` -> `/home/ops`) is bound
 * at the path as written, where those real paths do not appear. The same masks at the read path.
 */
function throughLinks(readPaths: readonly string[], masks: readonly HiddenPath[]): HiddenPath[] {
  const out: HiddenPath[] = [];
  for (const p of readPaths) {
    let r: string;
    try {
      r = realpathSync(p);
    } catch {
      continue; // missing: bwrap skips it (--ro-bind-try)
    }
    if (r === p) continue;
    for (const m of masks) if (inside(r, m.path)) out.push({ path: path.join(p, path.relative(r, m.path)), kind: m.kind });
  }
  return out;
}

export function boxCommand(policy: SandboxPolicy, req: BoxRequest): BoxedCommand {
  const [program, ...rest] = req.argv;
  if (program === undefined) throw new Error('boxCommand: argv is empty');
  if (policy.mode === 'none') return { file: program, args: rest, env: req.env, cwd: req.cwd };
  const bwrap = findExecutable('bwrap');
  const prlimit = findExecutable('prlimit');
  if (!bwrap) throw new SandboxUnavailableError(missingBwrapMessage());
  if (!prlimit) throw new SandboxUnavailableError(missingPrlimitMessage());
  const sh = findExecutable('sh');
  if (!sh) throw new SandboxUnavailableError(`no sh on the bot's PATH; it starts bwrap; ${FIX_NONE}`);
  const user = sandboxUser();
  if (user) {
    const blocked = untraversableAncestor(req.workspace, user.uid, user.gid);
    if (blocked !== undefined) throw new SandboxUnavailableError(unreachableMessage(req.workspace, blocked, user.uid));
  }
  // A mask the box's user could not reach anyway (behind a directory it cannot enter) is not needed, and
  // bwrap, running as that user, could not make its mount point.
  const reachable = (p: string): boolean => (user ? untraversableAncestor(path.dirname(p), user.uid, user.gid) === undefined : canEnterAll(path.dirname(p)));
  const real = hiddenPaths({ botFiles: policy.botFiles, workspace: req.workspace, ...(policy.homes ? { homes: policy.homes } : {}) }).filter((m) =>
    reachable(m.path),
  );
  const masks = [...real, ...throughLinks(policy.readPaths ?? [], real)];
  const limits = sandboxLimits(policy);
  const node = nodeDir(policy.botFiles);
  const seccomp = policy.seccomp !== false;
  const egress = policy.egress && !policy.network ? policy.egress : undefined;
  // With the proxy the box needs TLS roots and name files for its tools, not a network.
  const view = systemView(policy.network || egress !== undefined);
  const { options, command } = bwrapArgs({
    workspace: req.workspace,
    cwd: req.cwd,
    network: policy.network,
    masks,
    env: egress ? { ...req.env, ...proxyEnv() } : req.env,
    limits,
    prlimit,
    argv: egress ? forwardedArgv(realpathSync(process.execPath), req.argv) : req.argv,
    system: node ? [...view, { kind: 'ro-bind', path: node }] : view,
    ...(egress ? { extraBinds: [{ source: egress.socket, dest: BOX_SOCKET }] } : {}),
    ...(policy.readPaths ? { readPaths: policy.readPaths } : {}),
    ...(seccomp ? { seccompFd: 4 } : {}),
  });
  let launch: { file: string; args: string[] };
  try {
    launch = launcherArgv({ sh, bash: findExecutable('bash') }, bwrap, ['--args', '3', ...command], strayDescriptors([3, 4]));
  } catch (err) {
    throw new SandboxUnavailableError(messageOf(err));
  }
  const workspace = req.workspace;
  return {
    file: launch.file,
    args: launch.args,
    env: {},
    cwd: '/',
    optionsData: Buffer.from(options.map((o) => `${o}\u0000`).join('')),
    ...(seccomp ? { seccompData: seccompFilter() } : {}),
    ...(user ?? {}),
    limits,
    ...(policy.stripAfter !== false ? { after: () => stripNote(workspace) } : {}),
  };
}

function stripNote(workspace: string): string | undefined {
  const r = stripSpecialFiles(workspace);
  const parts: string[] = [];
  if (r.stripped.length > 0)
    parts.push(`setuid/setgid bits removed from ${r.stripped.slice(0, 10).join(', ')}${r.stripped.length > 10 ? ` and ${r.stripped.length - 10} more` : ''}`);
  if (r.removed.length > 0) parts.push(`device nodes deleted: ${r.removed.slice(0, 10).join(', ')}`);
  return parts.length > 0 ? `sandbox: ${parts.join('; ')} (files made in the box may not carry them)` : undefined;
}

/** The limit a finished box's command ran into, as a line for the tool result; undefined if none. */
export function boxLimitNote(boxed: BoxedCommand, exit: { exitCode?: number | undefined; stderr: string }): string | undefined {
  return boxed.limits ? limitNote(boxed.limits, exit) : undefined;
}

/** The limits a finished box's command ran into, by kind (none outside a box). */
export function boxLimitsHit(boxed: BoxedCommand, exit: { exitCode?: number | undefined; stderr: string }): ReturnType<typeof limitsHit> {
  return boxed.limits ? limitsHit(exit) : [];
}

/** Thrown when commands cannot run in the sandbox here; the message says why and what to do. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}

const FIX_NONE = "or, accepting that commands then run unconfined with the bot's own rights, set `sandbox: none` for the agent";

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
 * Run at start, before any box exists. When the bot runs as root: hands the workspace, and everything in
 * it that root owns, to the sandbox user (coreutils chown -R -P --from=0: physical walk, symlinks never
 * followed, other owners' files untouched). Then the workspace root is made 0700 (its owner only: the bot
 * user, or the sandbox user for a root bot, whose boxes must write it; root enters anyway), so no other
 * local user can enter it, and setuid/setgid bits and device nodes already in it are removed.
 */
export async function prepareWorkspace(workspace: string): Promise<void> {
  const user = sandboxUser();
  if (user) {
    const chown = findExecutable('chown');
    if (!chown) throw new SandboxUnavailableError('chown (coreutils) is not installed; it hands the workspace to the sandbox user');
    const { execa } = await import('execa');
    const r = await execa(chown, ['-R', '-P', '--from=0', `${user.uid}:${user.gid}`, '--', workspace], { reject: false, env: {}, extendEnv: false });
    if (r.exitCode !== 0) {
      throw new SandboxUnavailableError(
        `could not hand the workspace ${workspace} to the sandbox user (uid ${user.uid}): ${String(r.stderr).trim() || r.shortMessage}`,
      );
    }
  }
  const st = statSync(workspace);
  const owner = user ? user.uid : process.getuid?.();
  if (st.uid === owner && (st.mode & 0o7777) !== 0o700) {
    try {
      chmodSync(workspace, 0o700);
    } catch (err) {
      throw new SandboxUnavailableError(`could not make the workspace ${workspace} private (chmod 0700): ${messageOf(err)}`);
    }
  }
  stripSpecialFiles(workspace);
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
  const { execa } = await import('execa');
  const result = await execa(boxed.file, boxed.args, execaOptions(boxed, { stdout: 'ignore' }, { timeout: 15_000 }));
  if (result.exitCode === 0) return;
  const said =
    String(result.stderr ?? '')
      .trim()
      .split('\n')
      .slice(-3)
      .join(' ') ||
    (result.shortMessage ?? 'no output');
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
  const fds = boxed.optionsData ? (boxed.seccompData ? [boxed.optionsData, boxed.seccompData] : [boxed.optionsData]) : [];
  return {
    ...extra,
    env: boxed.env,
    extendEnv: false,
    cwd: boxed.cwd,
    reject: false,
    stdio: [...stdio, ...fds],
    ...(boxed.uid !== undefined ? { uid: boxed.uid, gid: boxed.gid } : {}),
  };
}

/** Hands `fh` (a file the bot just wrote in a workspace) to the sandbox user when the bot runs as root. */
export async function handOver(fh: FileHandle): Promise<void> {
  const user = sandboxUser();
  if (user) await fh.chown(user.uid, user.gid);
}
