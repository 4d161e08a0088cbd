/**
 * Race-free whole-tree operations for mkdir, rm, mv and cp: everything here works on directory
 * file descriptors opened fd by fd with O_NOFOLLOW (workspace.ts openInWorkspace / atDir), never on
 * a path string the model wrote, so a directory swapped for a symlink at any moment cannot redirect a
 * removal, a copy or a rename outside the workspace: the open fails, or the link itself is acted on.
 *
 * Contract:
 * - `locateEntry(ctx, userPath)` confines the PARENT of the path (resolveInWorkspace) and keeps the
 *   last component as a plain name: `rm link` removes the link, never what it points to (a symlink
 *   to a place outside the workspace can still be removed or renamed, its target is never touched).
 *   The workspace root itself and `..`/`.` as last component are refused.
 * - `scanEntry` lists an entry and (for a directory) everything below it, without following
 *   symlinks, as a manifest: kind, size, inode and mtime per entry, in name order, with counts and a
 *   fingerprint (sha256 of the manifest). At most MANAGE_MAX_ENTRIES entries; more is a ToolError.
 *   The propose half puts the fingerprint on the card's data; execute scans again and refuses when it
 *   differs ("changed since the card was shown"), so what is removed or overwritten is what was shown.
 * - `removeEntry` unlinks files and links and removes directories bottom-up, each relative to its
 *   open parent fd. `copyEntry` creates with O_EXCL (an entry that appeared meanwhile is never
 *   overwritten), copies regular files and directories, and skips symlinks and special files (counted).
 *   Created files and directories are handed to the sandbox user (handOver), as write_file does.
 */
import { createHash } from 'node:crypto';
import { constants as fsc } from 'node:fs';
import { lstat, mkdir, open, readdir, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { ToolContext } from '../../types.js';
import { ToolError } from '../../types.js';
import { handOver } from '../../sandbox/index.js';
import { atDir, DIR_OPEN_FLAGS, displayPath, errCode, isInside, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../../workspace.js';
import { humanSize } from './shared.js';

/** A tree larger than this is not listed on a card nor managed by these tools. */
const MANAGE_MAX_ENTRIES = 10_000;
/** Lines of a manifest shown on a card. */
const CARD_MAX_LINES = 60;

type EntryKind = 'file' | 'dir' | 'link' | 'other';

export interface Entry {
  root: string;
  /** Absolute, confined parent directory (symlink-free). */
  parentAbs: string;
  name: string;
  /** Workspace-relative, for cards and results. */
  shown: string;
  abs: string;
}

interface ManifestLine {
  rel: string;
  kind: EntryKind;
  size: number;
}

export interface Manifest {
  /** undefined: nothing exists there. */
  kind?: EntryKind;
  lines: ManifestLine[];
  files: number;
  dirs: number;
  links: number;
  others: number;
  bytes: number;
  fingerprint: string;
}

export async function locateEntry(ctx: ToolContext, userPath: string, tool: string): Promise<Entry> {
  const root = await workspaceRoot(ctx.workspace);
  const trimmed = userPath.replace(/\/+$/, '');
  const normalized = path.normalize(trimmed === '' ? '.' : trimmed);
  const name = path.basename(normalized);
  const lexical = path.resolve(root, normalized);
  if (name === '..' || name === '.' || name === '' || lexical === root || lexical === path.resolve(ctx.workspace)) {
    throw new ToolError(`${tool} needs a path to an entry inside the workspace, not "${userPath}" (the workspace itself or a parent of it).`);
  }
  const parentAbs = await resolveInWorkspace(ctx.workspace, path.dirname(normalized));
  const abs = path.join(parentAbs, name);
  if (!isInside(root, abs) || abs === root) {
    throw new ToolError(`The path "${userPath}" is outside the workspace ${root}; ${tool} only works inside it.`);
  }
  return { root, parentAbs, name, shown: displayPath(root, abs), abs };
}

/** The open parent directory of an entry (fd by fd, never through a symlink). */
export async function openParent(entry: Entry, createDirs = false): Promise<FileHandle> {
  const fh = await openInWorkspace(entry.root, entry.parentAbs, {
    directory: true,
    ...(createDirs ? { createDirs: true, onCreatedDir: handOver } : {}),
  }).catch((err: unknown) => {
    if (err instanceof ToolError) throw err;
    const code = errCode(err);
    if (code === 'ENOENT') throw new ToolError(`The directory ${displayPath(entry.root, entry.parentAbs)} does not exist.`);
    throw new ToolError(`The directory ${displayPath(entry.root, entry.parentAbs)} cannot be opened (${code}).`);
  });
  return fh;
}

function kindOf(st: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): EntryKind {
  return st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
}

/** Lists `name` in the open `parent` and everything below it, never following a symlink. */
export async function scanEntry(parent: FileHandle, name: string, shown: string, signal: AbortSignal): Promise<Manifest> {
  const m: Manifest = { lines: [], files: 0, dirs: 0, links: 0, others: 0, bytes: 0, fingerprint: '' };
  const hash = createHash('sha256');
  const visit = async (dir: FileHandle, n: string, rel: string): Promise<EntryKind | undefined> => {
    signal.throwIfAborted();
    let st;
    try {
      st = await lstat(atDir(dir, n), { bigint: false });
    } catch (err) {
      if (errCode(err) === 'ENOENT') return undefined;
      throw new ToolError(`${rel} cannot be read (${errCode(err)}).`);
    }
    const kind = kindOf(st);
    if (m.lines.length >= MANAGE_MAX_ENTRIES) {
      throw new ToolError(`${shown} holds more than ${MANAGE_MAX_ENTRIES} entries; too many to list on a card. Work on a smaller part of it.`);
    }
    const size = kind === 'file' ? st.size : 0;
    m.lines.push({ rel, kind, size });
    hash.update(`${kind}\0${size}\0${st.ino}\0${st.mtimeMs}\0${rel}\n`);
    if (kind === 'file') m.files++;
    else if (kind === 'link') m.links++;
    else if (kind === 'other') m.others++;
    m.bytes += size;
    if (kind !== 'dir') return kind;
    m.dirs++;
    const child = await open(atDir(dir, n), DIR_OPEN_FLAGS).catch((err: unknown) => {
      throw changed(shown, err);
    });
    try {
      if ((await child.stat()).ino !== st.ino) throw changed(shown, 'swapped');
      const names = (await readdir(`/proc/self/fd/${child.fd}`)).sort();
      for (const c of names) await visit(child, c, `${rel}/${c}`);
    } finally {
      await child.close();
    }
    return kind;
  };
  const kind = await visit(parent, name, shown);
  if (kind) m.kind = kind;
  m.fingerprint = kind ? hash.digest('hex') : 'absent';
  return m;
}

function changed(shown: string, err: unknown): ToolError {
  return new ToolError(
    `${shown} changed while it was being read (${typeof err === 'string' ? err : errCode(err)}); nothing was changed. Try again once the workspace is stable.`,
  );
}

/** "directory: 3 files, 1 dir, 12.0 KB" / "file, 120 B" / "symlink". */
export function describeManifest(m: Manifest): string {
  if (m.kind === 'file') return `file, ${humanSize(m.bytes)}`;
  if (m.kind === 'link') return 'symlink (the link itself, not its target)';
  if (m.kind === 'other') return 'special file';
  const parts = [`${m.files} file${m.files === 1 ? '' : 's'}`, `${m.dirs - 1} subdirector${m.dirs - 1 === 1 ? 'y' : 'ies'}`];
  if (m.links) parts.push(`${m.links} symlink${m.links === 1 ? '' : 's'}`);
  if (m.others) parts.push(`${m.others} special file${m.others === 1 ? '' : 's'}`);
  parts.push(humanSize(m.bytes));
  return `directory: ${parts.join(', ')}`;
}

/** The manifest as card lines, cut at CARD_MAX_LINES with a count of the rest. */
export function manifestPreview(heading: string, m: Manifest): string {
  const lines = m.lines.slice(0, CARD_MAX_LINES).map((l) => {
    if (l.kind === 'dir') return `  ${l.rel}/`;
    if (l.kind === 'link') return `  ${l.rel} (symlink)`;
    if (l.kind === 'other') return `  ${l.rel} (special file)`;
    return `  ${l.rel} (${humanSize(l.size)})`;
  });
  if (m.lines.length > CARD_MAX_LINES) lines.push(`  … and ${m.lines.length - CARD_MAX_LINES} more`);
  return `${heading}\n${lines.join('\n')}`;
}

/** Removes `name` (and, for a directory, everything below it) from the open `parent`. */
export async function removeEntry(parent: FileHandle, name: string, signal: AbortSignal): Promise<void> {
  const st = await lstat(atDir(parent, name));
  if (!st.isDirectory()) {
    await unlink(atDir(parent, name));
    return;
  }
  const dir = await open(atDir(parent, name), DIR_OPEN_FLAGS);
  try {
    for (const c of await readdir(`/proc/self/fd/${dir.fd}`)) {
      signal.throwIfAborted();
      await removeEntry(dir, c, signal);
    }
  } finally {
    await dir.close();
  }
  await rmdir(atDir(parent, name));
}

export interface CopyCounts {
  files: number;
  dirs: number;
  bytes: number;
  skipped: number;
}

/** Copies `srcName` in `srcParent` to `dstName` in `dstParent`; the destination must not exist. */
export async function copyEntry(
  srcParent: FileHandle,
  srcName: string,
  dstParent: FileHandle,
  dstName: string,
  signal: AbortSignal,
  counts: CopyCounts = { files: 0, dirs: 0, bytes: 0, skipped: 0 },
): Promise<CopyCounts> {
  signal.throwIfAborted();
  const st = await lstat(atDir(srcParent, srcName));
  if (st.isDirectory()) {
    const src = await open(atDir(srcParent, srcName), DIR_OPEN_FLAGS);
    try {
      await mkdir(atDir(dstParent, dstName), 0o755); // EEXIST when something appeared there: refused
      const dst = await open(atDir(dstParent, dstName), DIR_OPEN_FLAGS);
      try {
        await handOver(dst);
        counts.dirs++;
        for (const c of (await readdir(`/proc/self/fd/${src.fd}`)).sort()) await copyEntry(src, c, dst, c, signal, counts);
      } finally {
        await dst.close();
      }
    } finally {
      await src.close();
    }
    return counts;
  }
  if (!st.isFile()) {
    counts.skipped++;
    return counts;
  }
  const src = await open(atDir(srcParent, srcName), fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
  try {
    if (!(await src.stat()).isFile()) {
      counts.skipped++;
      return counts;
    }
    const dst = await open(atDir(dstParent, dstName), fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, st.mode & 0o777);
    try {
      await handOver(dst);
      const buf = Buffer.allocUnsafe(256 * 1024);
      let pos = 0;
      for (;;) {
        signal.throwIfAborted();
        const { bytesRead } = await src.read(buf, 0, buf.length, pos);
        if (bytesRead === 0) break;
        await dst.write(buf, 0, bytesRead, pos);
        pos += bytesRead;
      }
      counts.files++;
      counts.bytes += pos;
    } finally {
      await dst.close();
    }
  } finally {
    await src.close();
  }
  return counts;
}
