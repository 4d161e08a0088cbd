/**
 * The directory walk of find and grep, fd by fd: nothing below the start directory is ever named to
 * the kernel by a workspace path string, so a command in the box that swaps a directory for a symlink
 * (rename or renameat2 RENAME_EXCHANGE) while the walk runs cannot make it list or read outside.
 *
 * Contract:
 * - `walkTree(start, signal, opts)` takes an OPEN directory handle (from openInWorkspace) and owns it
 *   from then on (closed when the walk ends, however it ends: finish, return(), throw).
 * - Each directory is listed through `/proc/self/fd/N` (the kernel resolves that magic link to the
 *   open directory itself, not to a path that could be rewired), and each subdirectory is entered by
 *   opening its plain name relative to its parent's fd with O_DIRECTORY|O_NOFOLLOW (atDir): a symlink
 *   swapped in makes that open fail, and the subdirectory is skipped (counted in `stats.vanished`).
 *   Symlinks are listed (kind 'link'), never entered.
 * - Entries come depth-first, name-sorted, directories' entries before their contents, each with its
 *   parent `dir` (a refcounted handle) and its plain `name`. A consumer that opens the entry AFTER
 *   asking for the next one (grep reads ahead) must `retain()` the dir first and `release()` it when
 *   done, so its fd number is never closed (and reused by an unrelated open) under it.
 * - Bounded: fds held at once are at most the depth (ancestors with subdirectories still to visit)
 *   plus what consumers retain; directories deeper than `maxDepth` (default WALK_MAX_DEPTH) are not
 *   entered (counted in `stats.tooDeep`). EMFILE/ENFILE is a ToolError, never a silently short walk.
 *   `node_modules` and `.git` are skipped unless includeIgnored. The signal is checked per entry.
 */
import type { Dirent } from 'node:fs';
import { open, readdir, type FileHandle } from 'node:fs/promises';
import { ToolError } from '../../types.js';
import { atDir, DIR_OPEN_FLAGS, errCode } from '../../workspace.js';
import { IGNORED_DIRS } from './shared.js';

/** Directories below the start deeper than this are not entered (each level holds one fd). */
export const WALK_MAX_DEPTH = 64;

type EntryKind = 'file' | 'dir' | 'link' | 'other';

/** An open directory shared by the walk and the consumers still reading entries in it. */
export class DirRef {
  private refs = 1;
  constructor(readonly fh: FileHandle) {}
  retain(): this {
    if (this.refs <= 0) throw new Error('DirRef retained after it was closed');
    this.refs++;
    return this;
  }
  release(): void {
    if (--this.refs === 0) void this.fh.close().catch(() => undefined);
  }
  /** `name` in this directory as an openat-style path (see workspace.ts atDir). */
  at(name: string): string {
    return atDir(this.fh, name);
  }
}

export interface WalkEntry {
  /** The open directory the entry is in (see the Contract on retain/release). */
  dir: DirRef;
  name: string;
  /** Relative to the walk's start directory, '/'-separated. */
  rel: string;
  kind: EntryKind;
}

export interface WalkStats {
  /** Subdirectories that could not be entered: gone, or no longer a directory (a swap), when reached. */
  vanished: number;
  /** Subdirectories not entered because they lie deeper than maxDepth. */
  tooDeep: number;
}

export interface WalkOptions {
  includeIgnored: boolean;
  maxDepth?: number;
  stats?: WalkStats;
}

function kindOf(d: Dirent): EntryKind {
  return d.isDirectory() ? 'dir' : d.isSymbolicLink() ? 'link' : d.isFile() ? 'file' : 'other';
}

function tooMany(err: unknown): ToolError | undefined {
  const code = errCode(err);
  if (code !== 'EMFILE' && code !== 'ENFILE') return undefined;
  return new ToolError(`The bot has too many files open right now (${code}); try again, or narrow the path.`);
}

/** Lists an open directory through its fd (never through a path). */
export async function listDir(fh: FileHandle): Promise<Dirent[]> {
  return readdir(`/proc/self/fd/${fh.fd}`, { withFileTypes: true });
}

interface Pending {
  parent: DirRef;
  name: string;
  rel: string;
  depth: number;
}

export async function* walkTree(start: FileHandle, signal: AbortSignal, opts: WalkOptions): AsyncGenerator<WalkEntry> {
  const maxDepth = opts.maxDepth ?? WALK_MAX_DEPTH;
  const stats = opts.stats ?? { vanished: 0, tooDeep: 0 };
  const stack: Pending[] = [];
  // Subdirectories of the directory being listed, each holding a ref on it until pushed on the stack.
  let subdirs: Pending[] = [];
  let current: DirRef | undefined = new DirRef(start);
  let currentRel = '';
  let currentDepth = 0;
  try {
    for (;;) {
      if (!current) {
        const next = stack.pop();
        if (!next) return;
        signal.throwIfAborted();
        let fh: FileHandle | undefined;
        try {
          fh = await open(next.parent.at(next.name), DIR_OPEN_FLAGS);
        } catch (err) {
          const limit = tooMany(err);
          if (limit) throw limit;
          stats.vanished++; // gone, or swapped for a symlink / file since it was listed: not entered
        } finally {
          next.parent.release();
        }
        if (!fh) continue;
        current = new DirRef(fh);
        currentRel = next.rel;
        currentDepth = next.depth;
      }
      const dir: DirRef = current;
      let entries: Dirent[];
      try {
        entries = await listDir(dir.fh);
      } catch (err) {
        const limit = tooMany(err);
        if (limit) throw limit;
        entries = []; // unreadable directory: skip it rather than fail the whole search
      }
      signal.throwIfAborted();
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const dirent of entries) {
        signal.throwIfAborted();
        const kind = kindOf(dirent);
        const rel = currentRel ? `${currentRel}/${dirent.name}` : dirent.name;
        if (kind === 'dir') {
          if (!opts.includeIgnored && IGNORED_DIRS.has(dirent.name)) continue;
          if (currentDepth + 1 > maxDepth) stats.tooDeep++;
          else subdirs.push({ parent: dir.retain(), name: dirent.name, rel, depth: currentDepth + 1 });
        }
        yield { dir, name: dirent.name, rel, kind };
      }
      for (let i = subdirs.length - 1; i >= 0; i--) stack.push(subdirs[i] as Pending);
      subdirs = [];
      current = undefined;
      dir.release();
    }
  } finally {
    current?.release();
    for (const p of [...subdirs, ...stack]) p.parent.release();
  }
}

/** The parts of a "[skipped: …]" note for directories the walk did not enter (none when complete). */
export function walkNotes(stats: WalkStats, maxDepth = WALK_MAX_DEPTH): string[] {
  const parts: string[] = [];
  if (stats.tooDeep) parts.push(`${stats.tooDeep} director${stats.tooDeep === 1 ? 'y' : 'ies'} deeper than ${maxDepth} levels`);
  if (stats.vanished) parts.push(`${stats.vanished} director${stats.vanished === 1 ? 'y' : 'ies'} that changed during the walk`);
  return parts;
}
