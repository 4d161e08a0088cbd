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
 *   through) whose target lies outside. Resolution walks fd by fd from the open root (see
 *   `physical`): no workspace path string past the root is ever handed to the kernel to resolve
 *   (no realpath/stat by path), symlinks are read with readlink and followed by hand, so a
 *   not-yet-existing file is judged by where it would land and a swap mid-walk cannot make the
 *   kernel follow a link out. The workspace root itself is realpath'ed once (configuration).
 * - Callers use the RETURNED path for every fs call (never the user's string), and only through
 *   openInWorkspace, so what was checked is what is opened, fd by fd.
 *
 * Contract of `openInWorkspace(root, abs, mode)` (race-free opening; every file or directory any
 * host-side tool reads, lists or writes in the workspace is opened through it, and everything below
 * an opened directory is reached relative to its fd: atDir here, the walk in builtin/files/walk.ts):
 * - The resolution above is only advice: a command running at the same time can swap a checked
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
import { messageOf } from '../log.js';

export interface ResolveOptions {
  /** Throw a ToolError when the path does not exist (default false: a file about to be created). */
  mustExist?: boolean;
}

/** Linux's own limit on symlinks followed while resolving one path. */
const MAX_LINK_HOPS = 40;
/** Directories deep a resolved path may go (each level holds an fd while resolving). */
const MAX_RESOLVE_DEPTH = 256;

/** The workspace's real path; a ToolError when it is missing (a configuration problem). */
export async function workspaceRoot(workspace: string): Promise<string> {
  if (!path.isAbsolute(workspace)) {
    throw new ToolError(`The workspace "${workspace}" is not an absolute path; set the agent's workspace to an absolute directory.`);
  }
  try {
    return await realpath(workspace);
  } catch (err) {
    throw new ToolError(`The workspace ${workspace} cannot be opened (${errCode(err)}); create the directory or fix the agent's workspace setting.`);
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

export async function resolveInWorkspace(workspace: string, userPath: string, opts: ResolveOptions = {}): Promise<string> {
  if (userPath.includes('\0')) {
    throw new ToolError(`The path ${JSON.stringify(userPath)} contains a NUL byte; file paths cannot contain NUL. Pass the plain path.`);
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
  const { real, exists } = await physical(root, configured, lexical, userPath);
  if (!isInside(root, real)) {
    throw new ToolError(
      `The path "${userPath}" leads outside the workspace ${root} through a symlink (it resolves to ${real}); ` +
        `file tools only reach files inside the workspace. Use the file's real location inside the workspace.`,
    );
  }
  if (opts.mustExist && !exists) {
    throw new ToolError(`"${userPath}" does not exist in the workspace ${root}. Use ls or find to see what is there.`);
  }
  return real;
}

/**
 * Where the kernel would land for `lexical` (already inside `root`), decided fd by fd: each component
 * is lstat'ed relative to the open directory before it (atDir), a directory is entered by opening it
 * O_DIRECTORY|O_NOFOLLOW relative to that fd, and a symlink is never traversed by the kernel: its text
 * is read (readlink, which does not follow it) and spliced into the remaining components by hand, an
 * absolute target only when it lies under the workspace (as real or configured path), `..` popping the
 * physical chain of open directories. Nothing is handed to the kernel as a workspace path string after
 * the root, so a directory swapped for a symlink mid-resolution can neither be followed nor reveal what
 * lies behind it: the next step fails ("changed") or the link's own text decides, and outside targets
 * are refused. Past the first missing component the rest is taken lexically (a file about to be made).
 */
async function physical(root: string, configured: string, lexical: string, userPath: string): Promise<{ real: string; exists: boolean }> {
  const todo = path.relative(root, lexical).split(path.sep);
  const names: string[] = [];
  // dirs[i] is the open directory names[i] (below the root); the last name may be left unopened.
  const dirs: FileHandle[] = [];
  const changed = (): never => {
    throw new ToolError(`The path "${userPath}" changed while it was being resolved; try again once the workspace is stable.`);
  };
  const outside = (where: string): never => {
    throw new ToolError(
      `The path "${userPath}" leads outside the workspace ${root} through a symlink (it resolves to ${where}); ` +
        `file tools only reach files inside the workspace. Use the file's real location inside the workspace.`,
    );
  };
  let rootDir: FileHandle;
  try {
    rootDir = await open(root, DIR_OPEN_FLAGS);
  } catch (err) {
    throw new ToolError(`The workspace ${root} cannot be opened (${errCode(err)}).`);
  }
  let missing = false;
  let hops = 0;
  try {
    while (todo.length > 0) {
      const part = todo.shift() as string;
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (names.length === 0) outside(path.resolve(root, '..', ...todo));
        names.pop();
        if (dirs.length > names.length) await (dirs.pop() as FileHandle).close();
        continue;
      }
      if (missing) {
        names.push(part);
        continue;
      }
      // The last name may be an unopened directory when more components were spliced in after it.
      if (dirs.length < names.length) {
        // One fd per level is held (for `..`): bound it, a path this deep is no real project's.
        if (dirs.length >= MAX_RESOLVE_DEPTH) {
          throw new ToolError(`The path "${userPath}" is more than ${MAX_RESOLVE_DEPTH} directories deep; use a shorter path.`);
        }
        const prev = names[names.length - 1] as string;
        dirs.push(await open(atDir(dirs[dirs.length - 1] ?? rootDir, prev), DIR_OPEN_FLAGS).catch(changed));
      }
      const here = dirs[dirs.length - 1] ?? rootDir;
      let st;
      try {
        st = await lstat(atDir(here, part));
      } catch (err) {
        const code = errCode(err);
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new ToolError(`The path "${userPath}" cannot be resolved (${code}).`);
        missing = true;
        names.push(part);
        continue;
      }
      if (st.isSymbolicLink()) {
        if (++hops > MAX_LINK_HOPS) {
          throw new ToolError(`The path "${userPath}" runs into a symlink loop (more than ${MAX_LINK_HOPS} links); use a path without it.`);
        }
        const target = await readlink(atDir(here, part)).catch(changed);
        if (target === '' || target.includes('\0')) changed();
        if (path.isAbsolute(target)) {
          const rest = below(root, target) ?? below(configured, target);
          if (rest === undefined) outside(path.resolve(target, ...todo));
          // Start again from the root with the target's components (the link itself is left behind).
          while (dirs.length > 0) await (dirs.pop() as FileHandle).close();
          names.length = 0;
          todo.unshift(...(rest as string[]));
        } else {
          todo.unshift(...target.split('/'));
        }
        continue;
      }
      names.push(part);
      // A directory is entered (opened) only when something below it is still to be resolved.
      if (st.isDirectory()) continue;
      // Components below a file do not exist; the open that follows fails on them with a clear error.
      if (todo.some((p) => p !== '' && p !== '.')) missing = true;
    }
    return { real: path.join(root, ...names), exists: !missing };
  } finally {
    for (const d of dirs) await d.close().catch(() => undefined);
    await rootDir.close().catch(() => undefined);
  }
}

/** The components of absolute `target` below `base`, or undefined when it is not spelled under it. */
function below(base: string, target: string): string[] | undefined {
  const b = base.split('/').filter((p) => p !== '');
  const t = target.split('/').filter((p) => p !== '' && p !== '.');
  if (t.length < b.length || b.some((p, i) => t[i] !== p)) return undefined;
  return t.slice(b.length);
}

export function errCode(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return messageOf(err);
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
  const fileFlags = mode.write ? fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | fsc.O_NOFOLLOW | fsc.O_NONBLOCK : fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK;
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
