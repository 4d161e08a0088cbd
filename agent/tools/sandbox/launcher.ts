/**
 * The step between the bot and bwrap: a shell that makes the box the OOM killer's first choice and closes
 * every descriptor the box must not inherit, then execs bwrap.
 *
 * Contract:
 * - `strayDescriptors(keep)` lists the bot process's descriptors above 2 that a child would inherit: open
 *   without close-on-exec (read from /proc/self/fdinfo) and not among `keep` (the ones the spawn sets
 *   itself: bwrap's options on fd 3, the seccomp filter on fd 4). Node opens its own with O_CLOEXEC, so
 *   these are what the bot's parent left open (a supervisor's pipe at fd 251, a socket at fd 9).
 * - `launcherArgv(bwrap, args, stray)` is the argv to spawn: `sh -c '<script>' bwrap <args>`, the script
 *   raising /proc/self/oom_score_adj to 1000 (allowed unprivileged; bwrap and the box inherit it) and
 *   closing each stray fd. dash cannot name descriptors above 9, so bash is used when one is; without
 *   bash such a descriptor is an error (SandboxUnavailableError names it) rather than a leak.
 */
import { readdirSync, readFileSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

export function strayDescriptors(keep: readonly number[]): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2 || keep.includes(fd)) continue;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
      if (flags !== undefined && (parseInt(flags, 8) & O_CLOEXEC) === 0) out.push(fd);
    } catch {
      // closed meanwhile (readdir's own descriptor among them): nothing to inherit
    }
  }
  return out.sort((a, b) => a - b);
}

export interface LauncherShells {
  sh: string;
  bash: string | undefined;
}

/** The program and arguments that start `bwrap args` with `stray` closed; throws when it cannot close one. */
export function launcherArgv(shells: LauncherShells, bwrap: string, args: readonly string[], stray: readonly number[]): { file: string; args: string[] } {
  const needsBash = stray.some((fd) => fd > 9);
  const shell = needsBash ? shells.bash : shells.sh;
  if (shell === undefined) {
    throw new Error(
      `descriptor(s) ${stray.filter((fd) => fd > 9).join(', ')} of the bot are open without close-on-exec and would reach every box; ` +
        'closing a descriptor above 9 needs bash (apt-get install bash), or start the bot without them (close them in the service that starts it)',
    );
  }
  const closes = stray.map((fd) => `${fd}>&-`).join(' ');
  const script = `echo 1000 > /proc/self/oom_score_adj 2>/dev/null; exec ${closes} "$0" "$@"`;
  return { file: shell, args: ['-c', script, bwrap, ...args] };
}
