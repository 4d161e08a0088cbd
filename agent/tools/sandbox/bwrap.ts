/**
 * The bubblewrap command line for one boxed process. Pure: paths in, argv out (tested on its own; the
 * attacks in test/agent/sandbox*.e2e.test.ts show what it does).
 *
 * Contract (mount order matters: bwrap applies mounts left to right):
 * 1. Default-deny view: the box's root is an empty tmpfs, made read-only at the end (`--remount-ro /`), so
 *    the box can write nowhere but the workspace, /tmp and /dev/shm. Into it go only `system` (read-only
 *    /usr, the /bin /sbin /lib* links or directories, the /etc files tools read, the directory of the
 *    Node binary), a new `/dev`, a new procfs (only the box's own PID namespace), a private `/tmp` of
 *    `limits.tmpBytes` and a /dev/shm of shmBytes(limits), then `readPaths` read-only and the workspace
 *    read-write. Nothing else of the host exists in the box: not /root, /home, /srv, /var, /opt, /run, the
 *    host's /tmp, another agent's workspace, the bot's folder, nor the unix sockets in any of them.
 * 2. Binds go parents first. A mask that is an ancestor of the workspace (an empty tmpfs) comes before the
 *    workspace `--bind` and is remounted read-only after it.
 * 3. Every other mask inside something bound: a directory becomes an empty read-only tmpfs, a file
 *    /dev/null read-only. Masks outside everything bound are dropped (not there to hide).
 * 4. New user (no further user namespaces inside), PID, IPC and UTS namespaces; a new network namespace
 *    (only its own loopback, which bwrap brings up) unless `network`; `--die-with-parent` (the box dies with the bot);
 *    `--new-session` (no terminal injection into the bot's tty); `--seccomp FD` when `seccompFd` is set.
 * 4a. `extraBinds` (the egress proxy's socket, agent/egress/box.ts) are bound read-only last, before `/`
 *    is remounted read-only.
 * 5. `--clearenv` and one `--setenv` per variable: the box sees exactly `env`. bwrap itself must be
 *    started with an EMPTY environment: its own copy is pid 1 inside the box, and /proc/1/environ is
 *    readable there. The options (with the variables' values) are meant to reach bwrap through
 *    `--args FD`, not its command line, which every host user can read in /proc/<pid>/cmdline.
 * 6. The command runs under `prlimit` (inside the box, so the process count is the box's own, not every
 *    process of the sandbox user on the host): processes, open files, memory (RLIMIT_DATA), CPU seconds (soft; the hard
 *    limit a second later, so SIGXCPU, which says why, comes before SIGKILL).
 */
import path from 'node:path';
import { shmBytes, type SandboxLimits } from './limits.js';
import type { HiddenPath } from './masks.js';

/** One piece of the host's system put into the box: a read-only bind or a symlink. */
export type SystemEntry = { kind: 'ro-bind'; path: string; optional?: boolean } | { kind: 'symlink'; path: string; target: string };

export interface BwrapSpec {
  /** Real path of the workspace: bound read-write at the same path. */
  workspace: string;
  /** Real path of the working directory, inside the workspace. */
  cwd: string;
  network: boolean;
  masks: readonly HiddenPath[];
  env: Readonly<Record<string, string>>;
  limits: SandboxLimits;
  /** Absolute path of prlimit (inside /usr, which the box has read-only). */
  prlimit: string;
  /** The program and its arguments. */
  argv: readonly string[];
  /** The host's system directories and files the box gets (index.ts systemView). */
  system: readonly SystemEntry[];
  /** Further host paths, read-only, bound at the path as written (a symlink: its target there); missing ones are skipped. The masks for them, also through a symlink, come in `masks` (index.ts). */
  readPaths?: readonly string[];
  /** The fd bwrap reads the seccomp filter from. */
  seccompFd?: number;
  /** Host files bound read-only at another path in the box (the egress proxy's socket, egress/box.ts). */
  extraBinds?: ReadonlyArray<{ source: string; dest: string }>;
}

function isAncestorOrSelf(dir: string, p: string): boolean {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

const depth = (p: string): number => p.split('/').filter(Boolean).length;

/** `options` go to bwrap through `--args FD` (NUL-terminated); `command` follows on its command line. */
export function bwrapArgs(spec: BwrapSpec): { options: string[]; command: string[] } {
  const args: string[] = [
    '--unshare-user',
    '--disable-userns',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    ...(spec.network ? [] : ['--unshare-net']),
    '--die-with-parent',
    '--new-session',
  ];
  for (const e of spec.system) {
    if (e.kind === 'symlink') args.push('--symlink', e.target, e.path);
    else args.push(e.optional ? '--ro-bind-try' : '--ro-bind', e.path, e.path);
  }
  args.push(
    '--dev',
    '/dev',
    '--size',
    String(shmBytes(spec.limits)),
    '--tmpfs',
    '/dev/shm',
    // bwrap's /dev is a tmpfs the box user owns: read-only, or it would be an unbounded /tmp.
    '--remount-ro',
    '/dev',
    '--proc',
    '/proc',
    '--size',
    String(spec.limits.tmpBytes),
    '--tmpfs',
    '/tmp',
  );
  const readPaths = [...new Set(spec.readPaths ?? [])].filter((p) => p !== spec.workspace).sort((a, b) => depth(a) - depth(b));
  const bound = ['/usr', ...spec.system.filter((e) => e.kind === 'ro-bind').map((e) => e.path), ...readPaths, spec.workspace];
  const masks = spec.masks.filter((m) => bound.some((b) => isAncestorOrSelf(b, m.path)) || isAncestorOrSelf(m.path, spec.workspace));
  // Read paths above the workspace first (its mount point must exist when it is bound), the rest after.
  const above = readPaths.filter((p) => isAncestorOrSelf(p, spec.workspace));
  for (const p of above) args.push('--ro-bind-try', p, p);
  const around = masks.filter((m) => m.kind === 'dir' && isAncestorOrSelf(m.path, spec.workspace));
  for (const m of around) args.push('--tmpfs', m.path);
  args.push('--bind', spec.workspace, spec.workspace);
  for (const m of around) args.push('--remount-ro', m.path);
  for (const p of readPaths) if (!above.includes(p)) args.push('--ro-bind-try', p, p);
  for (const m of masks) {
    if (around.includes(m)) continue;
    if (m.kind === 'dir') args.push('--tmpfs', m.path, '--remount-ro', m.path);
    else args.push('--ro-bind', '/dev/null', m.path);
  }
  for (const b of spec.extraBinds ?? []) args.push('--ro-bind', b.source, b.dest);
  args.push('--remount-ro', '/');
  if (spec.seccompFd !== undefined) args.push('--seccomp', String(spec.seccompFd));
  args.push('--clearenv');
  for (const [name, value] of Object.entries(spec.env)) args.push('--setenv', name, value);
  args.push('--chdir', spec.cwd);
  const l = spec.limits;
  const command = [
    '--',
    spec.prlimit,
    `--nproc=${l.processes}`,
    `--nofile=${l.openFiles}`,
    `--data=${l.memoryBytes}`,
    `--cpu=${l.cpuSeconds}:${l.cpuSeconds + 1}`,
    '--',
    ...spec.argv,
  ];
  return { options: args, command };
}
