/**
 * File management inside the workspace: mkdir, rm, mv, cp. All four are `high-risk` (they remove or
 * replace whole trees the approver may not have looked at) and two-phase: propose lists on the card
 * exactly what will be created, removed or overwritten, with counts for directories (files,
 * subdirectories, bytes); execute scans again and refuses when anything it would remove, overwrite,
 * move or copy differs from what the card showed (tree.ts fingerprints), then acts on directory fds
 * that never follow a symlink (tree.ts), so neither a symlink pointing out nor a path swapped between
 * card and execute can make it touch anything outside the workspace.
 *
 * Overwriting is never implicit: a destination that exists needs `overwrite: true`, and the card then
 * lists what is replaced. A directory is removed only with `recursive: true` unless it is empty.
 */
import { lstat, open, rename } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Prepared, Proposal, Tool, ToolContext, ToolResult } from '../../types.js';
import { ToolError } from '../../types.js';
import { handOver } from '../../sandbox/index.js';
import { atDir, DIR_OPEN_FLAGS, displayPath, errCode, isInside, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../../workspace.js';
import { text } from './shared.js';
import { copyEntry, describeManifest, locateEntry, manifestPreview, openParent, removeEntry, scanEntry, type Entry, type Manifest } from './tree.js';

/** What propose hands to execute; persisted while the card waits, so validated on the way back. */
const ManageData = z.object({
  from: z.string().optional(),
  to: z.string(),
  fromPrint: z.string().optional(),
  toPrint: z.string(),
});
type ManageData = z.infer<typeof ManageData>;

async function dataOf(prepared: Prepared, again: () => Promise<Proposal>): Promise<ManageData> {
  const parsed = ManageData.safeParse(prepared.proposal?.data);
  return parsed.success ? parsed.data : ManageData.parse((await again()).data);
}

async function scanAt(entry: Entry, signal: AbortSignal): Promise<Manifest> {
  const parent = await openParent(entry);
  try {
    return await scanEntry(parent, entry.name, entry.shown, signal);
  } finally {
    await parent.close();
  }
}

function mustMatch(now: Manifest, print: string, shown: string, what: string): void {
  if (now.fingerprint === print) return;
  const how = print === 'absent' ? 'now exists' : now.kind === undefined ? 'no longer exists' : 'was changed';
  throw new ToolError(
    `${shown} ${how} since the approval card was shown, so ${what} is no longer what was approved; nothing was changed. ` +
      'Look again (ls) and propose the operation anew.',
  );
}

// ---------------------------------------------------------------------------------------------
// mkdir

/**
 * The directories mkdir would create for `abs`, found fd by fd from the root (lstat relative to each
 * open parent, never a workspace path string), so a swap cannot make the card describe outside.
 */
async function missingDirs(root: string, abs: string): Promise<string[]> {
  const parts = path.relative(root, abs).split(path.sep);
  let dir = await openInWorkspace(root, root, { directory: true });
  try {
    for (let i = 0; i < parts.length; i++) {
      const shown = parts.slice(0, i + 1).join('/');
      const st = await lstat(atDir(dir, parts[i] as string)).catch((err: unknown) => {
        if (errCode(err) === 'ENOENT') return undefined;
        throw new ToolError(`${shown} cannot be checked (${errCode(err)}).`);
      });
      if (!st) return parts.slice(i).map((_, k) => parts.slice(0, i + k + 1).join('/'));
      if (!st.isDirectory()) throw new ToolError(`${shown} exists and is not a directory; mkdir cannot create ${displayPath(root, abs)}.`);
      const next = await open(atDir(dir, parts[i] as string), DIR_OPEN_FLAGS).catch((err: unknown) => {
        throw new ToolError(`${shown} changed while it was being checked (${errCode(err)}); try again once the workspace is stable.`);
      });
      await dir.close();
      dir = next;
    }
    return [];
  } finally {
    await dir.close().catch(() => undefined);
  }
}

export const MkdirInput = z.strictObject({
  path: z.string().min(1).describe('Directory to create, relative to the workspace root. Missing parents are created too.'),
});
export type MkdirInput = z.infer<typeof MkdirInput>;

export function mkdirTool(): Tool<MkdirInput> {
  const tool: Tool<MkdirInput> = {
    name: 'mkdir',
    description: 'Create a directory (and its missing parents) inside the workspace. Needs approval; the card lists the directories created.',
    input: MkdirInput,
    tier: 'high-risk',
    async propose(input, ctx) {
      const root = await workspaceRoot(ctx.workspace);
      const abs = await resolveInWorkspace(ctx.workspace, input.path);
      if (abs === root) throw new ToolError('The workspace itself already exists; name a directory inside it.');
      const missing = await missingDirs(root, abs);
      const shown = displayPath(root, abs);
      if (missing.length === 0) throw new ToolError(`${shown} already exists; nothing to do.`);
      return {
        summary: `mkdir ${shown} (creates ${missing.length} director${missing.length === 1 ? 'y' : 'ies'})`,
        preview: `Will create:\n${missing.map((m) => `  ${m}/`).join('\n')}`,
        data: { to: shown, toPrint: 'absent' } satisfies ManageData,
      };
    },
    async execute(input, ctx, prepared) {
      const data = await dataOf(prepared, () => tool.propose!(input, ctx));
      const root = await workspaceRoot(ctx.workspace);
      const abs = await resolveInWorkspace(ctx.workspace, data.to);
      const fh = await openInWorkspace(root, abs, { directory: true, createDirs: true, onCreatedDir: handOver });
      await fh.close();
      return text(`Created directory ${displayPath(root, abs)}.`);
    },
  };
  return tool;
}

// ---------------------------------------------------------------------------------------------
// rm

export const RmInput = z.strictObject({
  path: z.string().min(1).describe('File, symlink or directory to remove, relative to the workspace root. A symlink is removed itself, never its target.'),
  recursive: z.boolean().optional().describe('Required to remove a directory that is not empty (everything below it is removed).'),
});
export type RmInput = z.infer<typeof RmInput>;

export function rmTool(): Tool<RmInput> {
  const tool: Tool<RmInput> = {
    name: 'rm',
    description:
      'Remove a file, symlink or directory inside the workspace (recursive: true for a non-empty directory). Needs ' +
      'approval; the card lists exactly what will be removed, with counts. Refused if it changes before approval.',
    input: RmInput,
    tier: 'high-risk',
    async propose(input, ctx) {
      const entry = await locateEntry(ctx, input.path, 'rm');
      const m = await scanAt(entry, ctx.signal);
      if (m.kind === undefined) throw new ToolError(`${entry.shown} does not exist; nothing to remove. Use ls to see what is there.`);
      if (m.kind === 'dir' && m.lines.length > 1 && !input.recursive) {
        throw new ToolError(
          `${entry.shown} is a directory that is not empty (${describeManifest(m)}); pass recursive: true to remove it and everything in it.`,
        );
      }
      return {
        summary: `rm ${entry.shown} (${describeManifest(m)})`,
        preview: manifestPreview('Will remove:', m),
        data: { to: entry.shown, toPrint: m.fingerprint } satisfies ManageData,
      };
    },
    async execute(input, ctx, prepared) {
      const data = await dataOf(prepared, () => tool.propose!(input, ctx));
      const entry = await locateEntry(ctx, data.to, 'rm');
      const parent = await openParent(entry);
      try {
        const now = await scanEntry(parent, entry.name, entry.shown, ctx.signal);
        mustMatch(now, data.toPrint, entry.shown, 'what would be removed');
        await removeEntry(parent, entry.name, ctx.signal).catch((err: unknown) => failed('rm', entry.shown, err, 'parts of it may be gone'));
        return text(`Removed ${entry.shown} (${describeManifest(now)}).`);
      } finally {
        await parent.close();
      }
    },
  };
  return tool;
}

function failed(tool: string, shown: string, err: unknown, state: string): never {
  if (err instanceof ToolError) throw err;
  throw new ToolError(`${tool} of ${shown} failed (${errCode(err)}); ${state}. Check with ls before retrying.`);
}

// ---------------------------------------------------------------------------------------------
// mv and cp

export const MoveInput = z.strictObject({
  from: z.string().min(1).describe('Existing file or directory, relative to the workspace root.'),
  to: z.string().min(1).describe('The exact new path (not a directory to move into); its parent directory must exist.'),
  overwrite: z.boolean().optional().describe('Replace what exists at `to` (listed on the approval card). Without it an existing `to` is refused.'),
});
export type MoveInput = z.infer<typeof MoveInput>;

interface Pair {
  from: Entry;
  to: Entry;
  src: Manifest;
  dst: Manifest;
}

async function preparePair(ctx: ToolContext, input: MoveInput, tool: 'mv' | 'cp'): Promise<Pair> {
  const from = await locateEntry(ctx, input.from, tool);
  const to = await locateEntry(ctx, input.to, tool);
  if (from.abs === to.abs) throw new ToolError(`from and to are the same path (${from.shown}); nothing to do.`);
  if (isInside(from.abs, to.abs))
    throw new ToolError(`${to.shown} lies inside ${from.shown}; a directory cannot be ${tool === 'mv' ? 'moved' : 'copied'} into itself.`);
  if (isInside(to.abs, from.abs)) throw new ToolError(`${from.shown} lies inside ${to.shown}; replacing a directory with something inside it is refused.`);
  const src = await scanAt(from, ctx.signal);
  if (src.kind === undefined) throw new ToolError(`${from.shown} does not exist. Use ls or find to see what is there.`);
  if (tool === 'cp' && src.kind !== 'file' && src.kind !== 'dir') {
    throw new ToolError(`${from.shown} is a ${src.kind === 'link' ? 'symlink' : 'special file'}; cp copies regular files and directories.`);
  }
  const dst = await scanAt(to, ctx.signal);
  if (dst.kind !== undefined && !input.overwrite) {
    throw new ToolError(`${to.shown} already exists (${describeManifest(dst)}); pass overwrite: true to replace it, or choose another path.`);
  }
  return { from, to, src, dst };
}

function pairProposal(tool: 'mv' | 'cp', p: Pair): Proposal {
  const verb = tool === 'mv' ? 'Will move' : 'Will copy';
  const parts = [manifestPreview(`${verb} ${p.from.shown} -> ${p.to.shown}:`, p.src)];
  let tail = '';
  if (p.dst.kind !== undefined) {
    parts.push(manifestPreview(`Will first remove (overwritten):`, p.dst));
    tail = `, overwrites ${p.to.shown}: ${describeManifest(p.dst)}`;
  }
  return {
    summary: `${tool} ${p.from.shown} -> ${p.to.shown} (${describeManifest(p.src)}${tail})`,
    preview: parts.join('\n\n'),
    data: { from: p.from.shown, to: p.to.shown, fromPrint: p.src.fingerprint, toPrint: p.dst.fingerprint } satisfies ManageData,
  };
}

/** Re-locates both ends, re-checks both fingerprints, clears an approved overwrite, then runs `act`. */
async function applyPair(
  ctx: ToolContext,
  data: ManageData,
  tool: 'mv' | 'cp',
  act: (src: Awaited<ReturnType<typeof openParent>>, from: Entry, dst: Awaited<ReturnType<typeof openParent>>, to: Entry) => Promise<string>,
): Promise<ToolResult> {
  if (data.from === undefined || data.fromPrint === undefined) throw new ToolError(`${tool} lost its source path; propose it again.`);
  const from = await locateEntry(ctx, data.from, tool);
  const to = await locateEntry(ctx, data.to, tool);
  const srcParent = await openParent(from);
  try {
    const dstParent = await openParent(to);
    try {
      mustMatch(
        await scanEntry(srcParent, from.name, from.shown, ctx.signal),
        data.fromPrint,
        from.shown,
        `what would be ${tool === 'mv' ? 'moved' : 'copied'}`,
      );
      const dst = await scanEntry(dstParent, to.name, to.shown, ctx.signal);
      mustMatch(dst, data.toPrint, to.shown, 'what would be overwritten');
      if (dst.kind !== undefined)
        await removeEntry(dstParent, to.name, ctx.signal).catch((err: unknown) => failed(tool, to.shown, err, 'the old destination may be partly removed'));
      return text(await act(srcParent, from, dstParent, to));
    } finally {
      await dstParent.close();
    }
  } finally {
    await srcParent.close();
  }
}

export function mvTool(): Tool<MoveInput> {
  const tool: Tool<MoveInput> = {
    name: 'mv',
    description:
      'Move or rename a file or directory inside the workspace (to is the exact new path). Needs approval; the card ' +
      'lists what moves and, with overwrite: true, what is replaced.',
    input: MoveInput,
    tier: 'high-risk',
    async propose(input, ctx) {
      return pairProposal('mv', await preparePair(ctx, input, 'mv'));
    },
    async execute(input, ctx, prepared) {
      const data = await dataOf(prepared, () => tool.propose!(input, ctx));
      return applyPair(ctx, data, 'mv', async (srcParent, from, dstParent, to) => {
        await rename(atDir(srcParent, from.name), atDir(dstParent, to.name)).catch((err: unknown) => failed('mv', from.shown, err, 'nothing was moved'));
        return `Moved ${from.shown} to ${to.shown}.`;
      });
    },
  };
  return tool;
}

export function cpTool(): Tool<MoveInput> {
  const tool: Tool<MoveInput> = {
    name: 'cp',
    description:
      'Copy a file or directory (recursively) inside the workspace; symlinks inside are skipped. to is the exact new ' +
      'path. Needs approval; the card lists what is copied and, with overwrite: true, what is replaced.',
    input: MoveInput,
    tier: 'high-risk',
    async propose(input, ctx) {
      return pairProposal('cp', await preparePair(ctx, input, 'cp'));
    },
    async execute(input, ctx, prepared) {
      const data = await dataOf(prepared, () => tool.propose!(input, ctx));
      return applyPair(ctx, data, 'cp', async (srcParent, from, dstParent, to) => {
        const c = await copyEntry(srcParent, from.name, dstParent, to.name, ctx.signal).catch((err: unknown) =>
          failed('cp', from.shown, err, `${to.shown} may be partly written`),
        );
        const skipped = c.skipped ? `; skipped ${c.skipped} symlink${c.skipped === 1 ? '' : 's'} or special file${c.skipped === 1 ? '' : 's'}` : '';
        const dirs = c.dirs ? `, ${c.dirs} director${c.dirs === 1 ? 'y' : 'ies'}` : '';
        return `Copied ${from.shown} to ${to.shown} (${c.files} file${c.files === 1 ? '' : 's'}${dirs}, ${c.bytes} bytes${skipped}).`;
      });
    },
  };
  return tool;
}
