/**
 * Defence in depth behind the seccomp filter: after a box ends (and when a workspace is prepared), the
 * workspace is walked and every setuid/setgid bit is removed and every device node deleted, so nothing a
 * box made can give another local user the box's uid or a device.
 *
 * Contract:
 * - Race-free against a box still running in the same workspace: directories are opened fd by fd with
 *   O_NOFOLLOW|O_DIRECTORY and entries reached as `/proc/self/fd/<dir>/<name>` (the openat idiom of
 *   agent/tools/workspace.ts); a file's bits are changed through an O_PATH|O_NOFOLLOW handle of the inode
 *   that was checked, never through a path a symlink could redirect. Symlinks are never followed.
 * - Bounded: at most `maxEntries` entries (default 100,000) and `maxDepth` levels; `truncated` says the
 *   bound was hit. Errors on single entries (vanished, unreadable) are skipped, not thrown.
 */
import { closeSync, chmodSync, fstatSync, openSync, readdirSync, unlinkSync, constants as fsc } from 'node:fs';

/** Linux O_PATH (same value on x86_64 and aarch64); Node does not export it. */
const O_PATH = 0o10000000;
const SETID = 0o6000;

export interface StripResult {
  /** Workspace-relative paths whose setuid/setgid bits were removed. */
  stripped: string[];
  /** Workspace-relative device nodes deleted. */
  removed: string[];
  truncated: boolean;
}

export function stripSpecialFiles(root: string, opts: { maxEntries?: number; maxDepth?: number } = {}): StripResult {
  const maxEntries = opts.maxEntries ?? 100_000;
  const maxDepth = opts.maxDepth ?? 64;
  const result: StripResult = { stripped: [], removed: [], truncated: false };
  let seen = 0;
  let rootFd: number;
  try {
    rootFd = openSync(root, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  } catch {
    return result;
  }
  const fix = (fd: number, rel: string): void => {
    const st = fstatSync(fd);
    if ((st.mode & SETID) !== 0 && (st.isFile() || st.isDirectory())) {
      // chmod through the handle's magic link: the inode checked, wherever its name has moved.
      chmodSync(`/proc/self/fd/${fd}`, st.mode & 0o1777);
      result.stripped.push(rel);
    }
  };
  const walk = (dirFd: number, rel: string, depth: number): void => {
    let names: string[];
    try {
      names = readdirSync(`/proc/self/fd/${dirFd}`);
    } catch {
      return;
    }
    for (const name of names) {
      if (++seen > maxEntries) {
        result.truncated = true;
        return;
      }
      const at = `/proc/self/fd/${dirFd}/${name}`;
      const childRel = rel === '' ? name : `${rel}/${name}`;
      let fd: number;
      try {
        fd = openSync(at, O_PATH | fsc.O_NOFOLLOW);
      } catch {
        continue;
      }
      try {
        const st = fstatSync(fd);
        if (st.isCharacterDevice() || st.isBlockDevice()) {
          unlinkSync(at);
          result.removed.push(childRel);
        } else if (st.isFile()) fix(fd, childRel);
        else if (st.isDirectory()) {
          fix(fd, childRel);
          if (depth >= maxDepth) {
            result.truncated = true;
            continue;
          }
          let sub: number;
          try {
            sub = openSync(`/proc/self/fd/${fd}`, fsc.O_RDONLY | fsc.O_DIRECTORY);
          } catch {
            continue;
          }
          try {
            walk(sub, childRel, depth + 1);
          } finally {
            closeSync(sub);
          }
          if (result.truncated) return;
        }
      } catch {
        // vanished or not ours to change: skip it
      } finally {
        closeSync(fd);
      }
    }
  };
  try {
    fix(rootFd, '.');
    walk(rootFd, '', 1);
  } catch {
    // the root itself vanished
  } finally {
    closeSync(rootFd);
  }
  return result;
}
