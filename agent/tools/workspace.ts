/**
 * Workspace confinement: the one place a path the model wrote becomes a path the process touches.
 *
 * Contract of `resolveInWorkspace(workspace, userPath, { mustExist })`:
 * - Returns an absolute, symlink-resolved path that lies inside the (symlink-resolved) workspace,
 *   or throws a `ToolError` that names the path and the workspace and says what to do instead.
 * - Relative paths resolve against the workspace. An absolute path is accepted when it lies inside
 *   the workspace, spelled either through its real path or through the path as configured.
 * - Refused: NUL bytes; `..` that climbs out; absolute paths elsewhere; any symlink (an
 *   intermediate directory, the final component, or a dangling link a new file would be written
 *   through) whose target lies outside. Resolution uses realpath on the deepest existing ancestor
 *   and follows dangling links by hand, so a not-yet-existing file is judged by where it would land.
 * - Callers use the RETURNED path for every fs call (never the user's string), so what was checked
 *   is what is touched.
 *
 * Contract of `openInWorkspace(root, abs, mode)` (race-free opening; every write and every file read
 * of read_file / write_file / edit_file goes through it):
 * - The realpath check above is only advice: a command running at the same time can swap a checked
 *   directory for a symlink to elsewhere before the file is opened (TOCTOU). So the file is opened
 *   again WITHOUT trusting the path: the workspace root is opened as a directory fd, then each
 *   component of the (already symlink-free) relative path is opened relative to the previous fd with
 *   O_NOFOLLOW|O_DIRECTORY, and the file last with O_NOFOLLOW (plus O_CREAT|O_TRUNC to write).
 *   Node has no openat(2), so "relative to fd N" is spelled `/proc/self/fd/N/<name>`: the kernel
 *   resolves that magic link to the open directory itself (not to a path that could be rewired) and
 *   looks up only `<name>` in it. O_NOFOLLOW on every step means a symlink swapped in anywhere makes
 *   the open fail (ELOOP/ENOTDIR) instead of following it: a ToolError, nothing is written outside.
 * - `mode.directory` opens the last component as a directory too (mkdir/rm/mv/cp work on such fds
 *   through `atDir(fd, name)`, the same openat-style path, see builtin/files/tree.ts).
 * - Missing directories are created one by one (mkdir relative to the fd, which never follows a
 *   symlink at its last component) when `mode.createDirs` is set, then opened the same way.
 * - Reads and writes open with O_NONBLOCK so a FIFO planted at the path cannot hang the tool; the
 *   caller fstat()s the handle and refuses anything that is not a regular file.
 * - Needs Linux's /proc (checked: a clear ToolError otherwise).
 * - Not covered (documented limits): hard links to outside files (indistinguishable from ordinary
 *   files), and a process that can write OUTSIDE the workspace moving an opened directory out of it
 *   (inside the sandbox the workspace is its own bind mount, where such a rename fails with EXDEV).
 */
import { constants as fsc, statSync } from 'node:fs';
import { lstat, mkdir, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './types.js';

export interface ResolveOptions {
  /** Throw a ToolError when the path does not exist (default false: a file about to be created). */
  mustExist?: boolean;
}

/** Linux's own limit on symlinks followed while resolving one path. */
const MAX_LINK_HOPS = 40;

/** The workspace's real path; a ToolError when it is missing (a configuration problem). */
export async function workspaceRoot(workspace: string): Promise<string> {
  if (!path.isAbsolute(workspace)) {
    throw new ToolError(
      `The workspace "${workspace}" is not an absolute path; set the agent's workspace to an absolute directory.`,
    );
  }
  try {
    return await realpath(workspace);
  } catch (err) {
    throw new ToolError(
      `The workspace ${workspace} cannot be opened (${errCode(err)}); create the directory or fix the agent's workspace setting.`,
    );
  }
}

/** True when `p` is `root` or lies below it (both absolute and normalized). */
export function isInside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** How a resolved path is shown to the model and on cards: workspace-relative, '/' separators. */
export function displayPath(root: string, abs: string): string {
  const rel = path.relative(root, abs);
  return rel === '' ? '.' : rel.split(path.sep).join('/');
}

export async function resolveInWorkspace(
  workspace: string,
  userPath: string,
  opts: ResolveOptions = {},
): Promise<string> {
  if (userPath.includes('\0')) {
    throw new ToolError(
      `The path ${JSON.stringify(userPath)} contains a NUL byte; file paths cannot contain NUL. Pass the plain path.`,
    );
  }
  const root = await workspaceRoot(workspace);
  const configured = path.resolve(workspace);
  let lexical = path.resolve(root, userPath === '' ? '.' : userPath);
  // An absolute path spelled through the configured (pre-realpath) workspace is the same place.
  if (!isInside(root, lexical) && isInside(configured, lexical)) {
    lexical = path.join(root, path.relative(configured, lexical));
  }
  if (!isInside(root, lexical)) {
    throw new ToolError(
      `The path "${userPath}" is outside the workspace ${root}: file tools only reach files inside it. ` +
        `Use a path inside the workspace (relative paths resolve against it).`,
    );
  }
  const { real, exists } = await physical(lexical, userPath, 0);
  if (!isInside(root, real)) {
    throw new ToolError(
      `The path "${userPath}" leads outside the workspace ${root} through a symlink (it resolves to ${real}); ` +
        `file tools only reach files inside the workspace. Use the file's real location inside the workspace.`,
    );
  }
  if (opts.mustExist && !exists) {
    throw new ToolError(
      `"${userPath}" does not exist in the workspace ${root}. Use ls or find to see what is there.`,
    );
  }
  return real;
}

/** Where the kernel would land for `p`: realpath of the deepest existing ancestor plus the rest. */
async function physical(p: string, userPath: string, hops: number): Promise<{ real: string; exists: boolean }> {
  const tail: string[] = [];
  let cur = p;
  for (;;) {
    try {
      const real = await realpath(cur);
      return { real: tail.length ? path.join(real, ...tail) : real, exists: tail.length === 0 };
    } catch (err) {
      const code = errCode(err);
      if (code === 'ELOOP') {
        throw new ToolError(`The path "${userPath}" runs into a symlink loop; use a path without it.`);
      }
      if (code !== 'ENOENT' && code !== 'ENOTDIR') {
        throw new ToolError(`The path "${userPath}" cannot be resolved (${code}).`);
      }
    }
    // `cur` does not resolve. A dangling symlink there still decides where a write would land.
    const st = await lstat(cur).catch(() => undefined);
    if (st?.isSymbolicLink()) {
      if (hops >= MAX_LINK_HOPS) {
        throw new ToolError(`The path "${userPath}" follows too many symlinks; use a path without them.`);
      }
      // A concurrent swap can change `cur` between lstat and readlink: a clear refusal, not a crash.
      const changed = (): never => {
        throw new ToolError(`The path "${userPath}" changed while it was being resolved; try again once the workspace is stable.`);
      };
      const dir = await realpath(path.dirname(cur)).catch(changed);
      const target = path.resolve(dir, await readlink(cur).catch(changed));
      const r = await physical(target, userPath, hops + 1);
      return { real: tail.length ? path.join(r.real, ...tail) : r.real, exists: false };
    }
    const parent = path.dirname(cur);
    if (parent === cur) return { real: path.join(cur, ...tail), exists: false };
    tail.unshift(path.basename(cur));
    cur = parent;
  }
}

export function errCode(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}

export interface OpenMode {
  /** Open for writing: create the file when missing and truncate it (default: read only). */
  write?: boolean;
  /** Create missing parent directories inside the workspace (writes only). */
  createDirs?: boolean;
  /** Called with each directory createDirs made, still open (the sandbox hands it to its user). */
  onCreatedDir?: (dir: FileHandle) => Promise<void>;
  /** Open the last component as a directory (O_DIRECTORY; created too when createDirs is set). */
  directory?: boolean;
}

/** Where a directory fd can be named as a path; Linux only. */
const FD_DIR = '/proc/self/fd';

/**
 * `name` inside the open directory `dir`, as a path the kernel resolves relative to that fd (the
 * openat(2) of the Contract above). unlink, rmdir, rename, mkdir and lstat never follow a symlink at
 * the last component, so with a plain `name` they act on the entry itself, wherever `dir` now sits.
 */
export function atDir(dir: FileHandle, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new ToolError(`${JSON.stringify(name)} is not a plain file name.`);
  }
  return `${FD_DIR}/${dir.fd}/${name}`;
}

/** Flags that open a directory and nothing else, never through a symlink. */
export const DIR_OPEN_FLAGS = fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW;

/**
 * Open `abs` (a path returned by resolveInWorkspace, so inside the real `root` and free of symlinks)
 * walking from `root` fd by fd, never following a symlink (see the Contract above). The caller owns
 * and closes the returned handle and must fstat it before trusting what kind of file it is.
 */
export async function openInWorkspace(root: string, abs: string, mode: OpenMode = {}): Promise<FileHandle> {
  const rel = path.relative(root, abs);
  if (!isInside(root, abs) || path.isAbsolute(rel)) {
    throw new ToolError(`${abs} is outside the workspace ${root}; file tools only reach files inside it.`);
  }
  const parts = rel === '' ? [] : rel.split(path.sep);
  if (parts.some((part) => part === '' || part === '.' || part === '..')) {
    throw new ToolError(`${abs} is not a normalized path inside the workspace; use a plain relative path.`);
  }
  const fileFlags = mode.write
    ? fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | fsc.O_NOFOLLOW | fsc.O_NONBLOCK
    : fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK;
  const dirFlags = fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW;
  let dir: FileHandle;
  try {
    dir = await open(root, dirFlags);
  } catch (err) {
    throw new ToolError(`The workspace ${root} cannot be opened (${errCode(err)}).`);
  }
  // The workspace root itself: hand over its fd (the caller's fstat sees a directory).
  if (parts.length === 0) return dir;
  try {
    for (const part of parts.slice(0, -1)) {
      const next = `${FD_DIR}/${dir.fd}/${part}`;
      let child: FileHandle;
      try {
        child = await open(next, dirFlags);
      } catch (err) {
        if (errCode(err) !== 'ENOENT' || !mode.createDirs) throw raceOrFail(err, abs);
        await mkdir(next, 0o755).catch((e: unknown) => {
          if (errCode(e) !== 'EEXIST') throw raceOrFail(e, abs);
        });
        child = await open(next, dirFlags).catch((e: unknown) => {
          throw raceOrFail(e, abs);
        });
        await mode.onCreatedDir?.(child);
      }
      await dir.close();
      dir = child;
    }
    const last = `${FD_DIR}/${dir.fd}/${parts[parts.length - 1]}`;
    try {
      if (mode.directory) {
        try {
          return await open(last, dirFlags);
        } catch (err) {
          if (errCode(err) !== 'ENOENT' || !mode.createDirs) throw err;
          await mkdir(last, 0o755).catch((e: unknown) => {
            if (errCode(e) !== 'EEXIST') throw e;
          });
          const made = await open(last, dirFlags);
          await mode.onCreatedDir?.(made);
          return made;
        }
      }
      return await open(last, fileFlags, 0o644);
    } catch (err) {
      throw raceOrFail(err, abs);
    }
  } finally {
    await dir.close().catch(() => undefined);
  }
}

/** A symlink met on the way (ELOOP, or ENOTDIR for a link to a non-directory) means the path changed. */
function raceOrFail(err: unknown, abs: string): unknown {
  const code = errCode(err);
  if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EMLINK') {
    return new ToolError(
      `${abs} changed while it was being opened (a symlink or file now sits where a directory was); nothing outside the workspace was touched. Try again once the workspace is stable.`,
    );
  }
  if (!existsProc()) return new ToolError(`Opening files safely needs Linux's ${FD_DIR}, which is not available here.`);
  return err;
}

let procChecked: boolean | undefined;
function existsProc(): boolean {
  procChecked ??= (() => {
    try {
      return statSync(FD_DIR).isDirectory();
    } catch {
      return false;
    }
  })();
  return procChecked;
}
