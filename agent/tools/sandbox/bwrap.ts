/**
 * The bubblewrap command line for one boxed process. Pure: paths in, argv out (tested on its own; the
 * attacks in test/agent/sandbox.e2e.test.ts show what it does).
 *
 * Contract (mount order matters: bwrap applies mounts left to right):
 * 1. `--ro-bind / /`, a new `/dev`, a new procfs (only the box's own PID namespace), an empty private
 *    `/tmp`.
 * 2. Masks that are ancestors of the workspace (an empty tmpfs), then the workspace `--bind` (the one
 *    writable host directory), then those masks are remounted read-only.
 * 3. Every other mask: a directory becomes an empty read-only tmpfs, a file becomes /dev/null read-only.
 *    A mask inside the workspace comes after the bind, so it still hides what it should.
 * 4. New user (no further user namespaces inside), PID, IPC and UTS namespaces; a new network namespace
 *    (loopback only, down) unless `network`; `--die-with-parent` (the box dies with the bot);
 *    `--new-session` (no terminal injection into the bot's tty).
 * 5. `--clearenv` and one `--setenv` per variable: the box sees exactly `env`. bwrap itself must be
 *    started with an EMPTY environment: its own copy is pid 1 inside the box, and /proc/1/environ is
 *    readable there. The options (with the variables' values) are meant to reach bwrap through
 *    `--args FD`, not its command line, which every host user can read in /proc/<pid>/cmdline.
 * 6. The command runs under `prlimit` (inside the box, so the process count is the box's own, not every
 *    process of the sandbox user on the host).
 */
import path from 'node:path';
import type { HiddenPath } from './masks.js';

export interface SandboxLimits {
  /** RLIMIT_NPROC: processes and threads in the box. */
  processes: number;
  /** RLIMIT_NOFILE: open files per process. */
  openFiles: number;
}

export interface BwrapSpec {
  /** Real path of the workspace: bound read-write at the same path. */
  workspace: string;
  /** Real path of the working directory, inside the workspace. */
  cwd: string;
  network: boolean;
  masks: readonly HiddenPath[];
  env: Readonly<Record<string, string>>;
  limits: SandboxLimits;
  /** Absolute path of prlimit (the host's root is the box's root, read-only). */
  prlimit: string;
  /** The program and its arguments. */
  argv: readonly string[];
}

function isAncestorOrSelf(dir: string, p: string): boolean {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

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
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    '--proc', '/proc',
    '--tmpfs', '/tmp',
  ];
  const around = spec.masks.filter((m) => m.kind === 'dir' && isAncestorOrSelf(m.path, spec.workspace));
  for (const m of around) args.push('--tmpfs', m.path);
  args.push('--bind', spec.workspace, spec.workspace);
  for (const m of around) args.push('--remount-ro', m.path);
  for (const m of spec.masks) {
    if (around.includes(m)) continue;
    if (m.kind === 'dir') args.push('--tmpfs', m.path, '--remount-ro', m.path);
    else args.push('--ro-bind', '/dev/null', m.path);
  }
  args.push('--clearenv');
  for (const [name, value] of Object.entries(spec.env)) args.push('--setenv', name, value);
  args.push('--chdir', spec.cwd);
  const command = ['--', spec.prlimit, `--nproc=${spec.limits.processes}`, `--nofile=${spec.limits.openFiles}`, '--', ...spec.argv];
  return { options: args, command };
}
