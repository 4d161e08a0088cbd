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
 *   is what is touched. Writers still open with O_NOFOLLOW and re-resolve right before writing, to
 *   narrow the window in which a concurrent command could swap a directory for a symlink.
 * - Not covered (documented limits): hard links to outside files (indistinguishable from ordinary
 *   files) and races against another process that rewires directories between check and use.
 */
import { lstat, readlink, realpath } from 'node:fs/promises';
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
      const dir = await realpath(path.dirname(cur));
      const target = path.resolve(dir, await readlink(cur));
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
