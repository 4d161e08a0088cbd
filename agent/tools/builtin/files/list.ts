/**
 * ls and find (read-only). Both open their start through openInWorkspace and reach everything below
 * it relative to the open directory's fd (atDir, ./walk.ts), never by a workspace path string, so a
 * directory swapped for a symlink by a command in the box cannot make them list outside. Symlinks are
 * shown (ls: with their target text), never entered.
 */
import type { FileHandle } from 'node:fs/promises';
import { lstat, readlink } from 'node:fs/promises';
import { z } from 'zod';
import type { Tool } from '../../types.js';
import { ToolError } from '../../types.js';
import { atDir, displayPath, errCode, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../../workspace.js';
import { FIND_DEFAULT_RESULTS, FIND_MAX_RESULTS, globMatcher, LS_DEFAULT_ENTRIES, LS_MAX_ENTRIES, text, truncatedLine } from './shared.js';
import { listDir, walkNotes, walkTree, type WalkStats } from './walk.js';

/** The start of ls/find, opened fd by fd (the caller closes it). */
async function openStart(root: string, abs: string): Promise<FileHandle>;
async function openStart(root: string, abs: string, opts: { socketOk: true }): Promise<FileHandle | 'socket'>;
async function openStart(root: string, abs: string, opts?: { socketOk: true }): Promise<FileHandle | 'socket'> {
  return openInWorkspace(root, abs).catch((err: unknown) => {
    if (err instanceof ToolError) throw err;
    if (opts?.socketOk && errCode(err) === 'ENXIO') return 'socket' as const;
    throw new ToolError(`${displayPath(root, abs)} cannot be opened (${errCode(err)}); use ls on its parent to see what is there.`);
  });
}

// ---------------------------------------------------------------------------------------------
// ls

export const LsInput = z.strictObject({
  path: z.string().optional().describe('Directory to list, relative to the workspace root (default: the root).'),
  limit: z.number().int().min(1).max(LS_MAX_ENTRIES).optional().describe(`Maximum entries to show (default ${LS_DEFAULT_ENTRIES}, max ${LS_MAX_ENTRIES}).`),
});
export type LsInput = z.infer<typeof LsInput>;

/** ls: read-only. One line per entry: type, size, name (dirs end in '/', links show their target). */
export function lsTool(): Tool<LsInput> {
  return {
    name: 'ls',
    description:
      'List a directory in the workspace, directories first, including hidden entries. Each line is ' +
      '"<type> <size> <name>" where type is dir, file, link or other; directories end in "/" and links ' +
      'show "-> target". When cut, the last line is "[truncated: true; ...]".',
    input: LsInput,
    tier: 'read-only',
    async execute(input, ctx) {
      const root = await workspaceRoot(ctx.workspace);
      const abs = await resolveInWorkspace(ctx.workspace, input.path ?? '.', { mustExist: true });
      const shown = displayPath(root, abs);
      const limit = input.limit ?? LS_DEFAULT_ENTRIES;
      // A socket cannot be opened (ENXIO): it is still an entry to show, not an error.
      const dir = await openStart(root, abs, { socketOk: true });
      if (dir === 'socket') return text(formatEntry('other', undefined, shown));
      try {
        const st = await dir.stat();
        if (!st.isDirectory()) return text(formatEntry(st.isFile() ? 'file' : 'other', st.isFile() ? st.size : undefined, shown));
        const entries = await listDir(dir);
        entries.sort((a, b) => {
          const da = a.isDirectory() ? 0 : 1;
          const db = b.isDirectory() ? 0 : 1;
          return da - db || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
        });
        if (entries.length === 0) return text(`(${shown} is an empty directory)`);
        const lines: string[] = [];
        for (const e of entries.slice(0, limit)) {
          ctx.signal.throwIfAborted();
          // Relative to the open directory: the entry itself, wherever the directory now sits.
          const p = atDir(dir, e.name);
          if (e.isDirectory()) lines.push(formatEntry('dir', undefined, `${e.name}/`));
          else if (e.isSymbolicLink()) {
            const target = await readlink(p).catch(() => '?');
            lines.push(formatEntry('link', undefined, `${e.name} -> ${target}`));
          } else if (e.isFile()) {
            const size = await lstat(p).then(
              (s) => s.size,
              () => undefined,
            );
            lines.push(formatEntry('file', size, e.name));
          } else lines.push(formatEntry('other', undefined, e.name));
        }
        if (entries.length > limit) {
          lines.push(
            truncatedLine(
              `showing ${limit} of ${entries.length} entries`,
              limit < LS_MAX_ENTRIES ? `pass limit (max ${LS_MAX_ENTRIES}) or use find with a pattern` : 'use find with a pattern to narrow',
            ),
          );
        }
        return text(lines.join('\n'));
      } finally {
        await dir.close().catch(() => undefined);
      }
    },
  };
}

function formatEntry(type: string, size: number | undefined, name: string): string {
  return `${type.padEnd(5)} ${(size === undefined ? '-' : String(size)).padStart(10)}  ${name}`;
}

// ---------------------------------------------------------------------------------------------
// find

export const FindInput = z.strictObject({
  pattern: z
    .string()
    .min(1)
    .describe(
      'Glob for names: "*.ts", "README*", "{a,b}.json". Without "/" it matches the file or directory name ' +
        'at any depth; with "/" it matches the path relative to `path`, e.g. "src/**/*.test.ts".',
    ),
  path: z.string().optional().describe('Directory to search under, relative to the workspace root (default: the root).'),
  limit: z.number().int().min(1).max(FIND_MAX_RESULTS).optional().describe(`Maximum results (default ${FIND_DEFAULT_RESULTS}, max ${FIND_MAX_RESULTS}).`),
  includeIgnored: z.boolean().optional().describe('Also search inside node_modules and .git (skipped by default).'),
});
export type FindInput = z.infer<typeof FindInput>;

/** find: read-only. Bounded; skips node_modules and .git; never follows symlinked directories. */
export function findTool(): Tool<FindInput> {
  return {
    name: 'find',
    description:
      'Find files and directories in the workspace by name pattern (glob). Prints workspace-relative ' +
      'paths, one per line, directories ending in "/". Skips node_modules and .git unless includeIgnored. ' +
      'When cut, the last line is "[truncated: true; ...]".',
    input: FindInput,
    tier: 'read-only',
    async execute(input, ctx) {
      const root = await workspaceRoot(ctx.workspace);
      const start = await resolveInWorkspace(ctx.workspace, input.path ?? '.', { mustExist: true });
      const shownStart = displayPath(root, start);
      const match = globMatcher(input.pattern); // before the open: an invalid glob leaks no fd
      const dir = await openStart(root, start);
      let isDir: boolean;
      try {
        isDir = (await dir.stat()).isDirectory();
      } catch (err) {
        await dir.close();
        throw new ToolError(`${shownStart} cannot be read (${errCode(err)}).`);
      }
      if (!isDir) {
        await dir.close();
        throw new ToolError(`${shownStart} is not a directory; pass a directory as path.`);
      }
      const limit = input.limit ?? FIND_DEFAULT_RESULTS;
      const found: string[] = [];
      let truncated = false;
      const stats: WalkStats = { vanished: 0, tooDeep: 0 };
      // walkTree owns `dir` from here and closes it (and every fd below) however the loop ends.
      for await (const e of walkTree(dir, ctx.signal, { includeIgnored: input.includeIgnored ?? false, stats })) {
        if (!match(e.rel, e.name)) continue;
        if (found.length >= limit) {
          truncated = true;
          break;
        }
        found.push((shownStart === '.' ? e.rel : `${shownStart}/${e.rel}`) + (e.kind === 'dir' ? '/' : ''));
      }
      const skipped = walkNotes(stats);
      const note = skipped.length && !truncated ? [`[skipped: ${skipped.join(', ')}]`] : [];
      if (found.length === 0) return text([`No files match "${input.pattern}" under ${shownStart}.`, ...note].join('\n'));
      found.push(...note);
      if (truncated) {
        found.push(
          truncatedLine(
            `stopped at ${limit} results`,
            limit < FIND_MAX_RESULTS ? `narrow the pattern or path, or pass limit (max ${FIND_MAX_RESULTS})` : 'narrow the pattern or path',
          ),
        );
      }
      return text(found.join('\n'));
    },
  };
}
