/**
 * What one box may use, and how to say which limit a failed command ran into.
 *
 * Contract:
 * - `SandboxLimits` are per box: `processes` (RLIMIT_NPROC, counted in the box's own user namespace),
 *   `openFiles` (RLIMIT_NOFILE), `memoryBytes` (RLIMIT_DATA per process: private writable memory, heap
 *   and anonymous mappings; RLIMIT_AS is NOT used because Node's WebAssembly, undici's fetch among it,
 *   reserves over 10 GB of address space it never touches), `cpuSeconds` (RLIMIT_CPU per process: SIGXCPU
 *   at the limit, SIGKILL a second later), `tmpBytes` (the size of the box's private /tmp tmpfs; /dev/shm
 *   gets min(tmpBytes, 64 MiB)). tmpfs pages count in no rlimit, so the sizes are what bound them.
 * - The box is also the OOM killer's first choice (oom_score_adj 1000, set before bwrap starts): if the
 *   host runs short anyway (many processes each under the per-process limit), a box dies, not the bot.
 * - `memoryMechanism()` says how memory is bounded here: a cgroup v2 memory controller delegated to the
 *   bot (not used yet: reported, so the operator knows) or the rlimit. The start log prints it.
 * - `limitNote(limits, exit)` turns an exit that looks like a limit into one plain line for the tool
 *   result ("killed: CPU limit ...", "memory limit ...", "tmp full ..."), or undefined.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import path from 'node:path';
import { messageOf } from '../../log.js';

export interface SandboxLimits {
  /** RLIMIT_NPROC: processes and threads in the box. */
  processes: number;
  /** RLIMIT_NOFILE: open files per process. */
  openFiles: number;
  /** RLIMIT_DATA: private writable memory per process, in bytes. */
  memoryBytes: number;
  /** RLIMIT_CPU: CPU seconds per process. */
  cpuSeconds: number;
  /** Size of the box's private /tmp (tmpfs), in bytes. */
  tmpBytes: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  processes: 256,
  openFiles: 4096,
  memoryBytes: 1024 * MiB,
  cpuSeconds: 300,
  tmpBytes: 512 * MiB,
};

/** /dev/shm is a tmpfs of its own (bwrap's /dev would otherwise give it half the host's memory). */
const SHM_MAX_BYTES = 64 * MiB;

export function shmBytes(limits: SandboxLimits): number {
  return Math.min(limits.tmpBytes, SHM_MAX_BYTES);
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: MiB, mb: MiB, mib: MiB, g: 1024 * MiB, gb: 1024 * MiB, gib: 1024 * MiB };

/** "512M", "1.5G", "1024" (bytes) or a number of bytes; undefined when it is not a size. Units are binary. */
export function parseSize(v: string | number): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v > 0 ? v : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(v);
  if (!m) return undefined;
  const unit = UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) return undefined;
  const n = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function formatBytes(n: number): string {
  if (n % (1024 * MiB) === 0) return `${n / (1024 * MiB)} GiB`;
  if (n >= MiB) return `${Math.round((n / MiB) * 10) / 10} MiB`;
  return `${n} bytes`;
}

interface MemoryMechanism {
  kind: 'cgroup2' | 'rlimit';
  /** One line for the start log. */
  detail: string;
}

let mechanism: MemoryMechanism | undefined;

/**
 * cgroup v2 counts for a whole box (tmpfs, page cache, every process); it needs a cgroup2 hierarchy with
 * the memory controller enabled for the bot's own cgroup, writable by the bot. Detected, then reported;
 * boxes use the rlimit either way in this version (see the README's sandbox section).
 */
function memoryMechanism(): MemoryMechanism {
  if (mechanism) return mechanism;
  const perProcess =
    'memory is limited per process (RLIMIT_DATA): a box with many processes can use the limit once per process, ' +
    "and the kernel's OOM killer takes a box first (oom_score_adj 1000)";
  const rlimit = (why: string): MemoryMechanism => ({ kind: 'rlimit', detail: `${perProcess}; cgroup v2 is not used: ${why}` });
  try {
    const own = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    const mount = readFileSync('/proc/self/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[2] === 'cgroup2');
    if (!own || !mount?.[1]) mechanism = rlimit('no cgroup v2 hierarchy is mounted');
    else {
      const dir = path.join(mount[1], own.slice(3).trim());
      const controllers = readFileSync(path.join(dir, 'cgroup.controllers'), 'utf8').split(/\s+/);
      if (!controllers.includes('memory'))
        mechanism = rlimit(`the cgroup v2 hierarchy at ${mount[1]} has no memory controller for the bot's cgroup (a cgroup v1 or hybrid host)`);
      else {
        try {
          accessSync(dir, constants.W_OK);
          mechanism = rlimit(`a delegated cgroup v2 memory controller is available at ${dir}, but boxes are not placed in cgroups in this version`);
        } catch {
          mechanism = rlimit(`the bot's cgroup ${dir} is not writable by the bot (not delegated)`);
        }
      }
    }
  } catch (err) {
    mechanism = rlimit(`cgroups could not be read (${messageOf(err)})`);
  }
  return mechanism;
}

/** One line for the start log: every limit and how memory is bounded. */
export function describeLimits(limits: SandboxLimits): string {
  return (
    `limits per box: memory ${formatBytes(limits.memoryBytes)} per process (RLIMIT_DATA), CPU ${limits.cpuSeconds} s per process (RLIMIT_CPU), ` +
    `/tmp ${formatBytes(limits.tmpBytes)} and /dev/shm ${formatBytes(shmBytes(limits))} (sized tmpfs), ${limits.processes} processes, ${limits.openFiles} open files; ` +
    memoryMechanism().detail
  );
}

/** SIGXCPU: RLIMIT_CPU's soft limit; a shell reports a child killed by it as 128 + 24. */
const SIGXCPU_EXIT = 128 + 24;
const SIGKILL_EXIT = 128 + 9;

/** The box limits a command ran into, from its exit code and stderr (metrics and traces count them). */
export function limitsHit(exit: { exitCode?: number | undefined; stderr: string }): Array<'cpu' | 'tmp_full' | 'memory' | 'sigkill'> {
  const hit: Array<'cpu' | 'tmp_full' | 'memory' | 'sigkill'> = [];
  if (exit.exitCode === SIGXCPU_EXIT) hit.push('cpu');
  if (/No space left on device|ENOSPC/.test(exit.stderr)) hit.push('tmp_full');
  if (/Cannot allocate memory|memory exhausted|[Oo]ut of memory|MemoryError|bad_alloc|allocation failed|ENOMEM/.test(exit.stderr)) hit.push('memory');
  else if (exit.exitCode === SIGKILL_EXIT && hit.length === 0) hit.push('sigkill');
  return hit;
}

/** A plain line naming the limit a command ran into, from its exit code and stderr; undefined if none. */
export function limitNote(limits: SandboxLimits, exit: { exitCode?: number | undefined; stderr: string }): string | undefined {
  const notes = limitsHit(exit).map((k) => {
    switch (k) {
      case 'cpu':
        return `killed: CPU limit (a process used its ${limits.cpuSeconds} s of CPU time; sandboxLimits.cpuSeconds)`;
      case 'tmp_full':
        return `tmp full: no space left on a device (the box's /tmp holds ${formatBytes(limits.tmpBytes)}, /dev/shm ${formatBytes(shmBytes(limits))}; sandboxLimits.tmpSize), or the workspace's disk is full`;
      case 'memory':
        return `memory limit: a process could not get more memory (${formatBytes(limits.memoryBytes)} per process; sandboxLimits.memory)`;
      case 'sigkill':
        return `killed by SIGKILL inside the box: a process passed its CPU limit (${limits.cpuSeconds} s) or the kernel's OOM killer chose it (memory)`;
    }
  });
  return notes.length > 0 ? notes.join('\n') : undefined;
}
