/** ls and find (read-only): listing by path; symlinks are shown, never entered. */
import { lstat, readdir, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Tool } from '../../types.js';
import { ToolError } from '../../types.js';
import { displayPath, resolveInWorkspace, workspaceRoot } from '../../workspace.js';
import {
  FIND_DEFAULT_RESULTS,
  FIND_MAX_RESULTS,
  globMatcher,
  LS_DEFAULT_ENTRIES,
  LS_MAX_ENTRIES,
  text,
  truncatedLine,
  walk,
} from './shared.js';

// ---------------------------------------------------------------------------------------------
// ls

export const LsInput = z.strictObject({
  path: z.string().optional().describe('Directory to list, relative to the workspace root (default: the root).'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(LS_MAX_ENTRIES)
    .optional()
    .describe(`Maximum entries to show (default ${LS_DEFAULT_ENTRIES}, max ${LS_MAX_ENTRIES}).`),
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
      const st = await stat(abs);
      const limit = input.limit ?? LS_DEFAULT_ENTRIES;
      if (!st.isDirectory()) return text(formatEntry('file', st.size, shown));
      const entries = await readdir(abs, { withFileTypes: true });
      entries.sort((a, b) => {
        const da = a.isDirectory() ? 0 : 1;
        const db = b.isDirectory() ? 0 : 1;
        return da - db || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
      });
      if (entries.length === 0) return text(`(${shown} is an empty directory)`);
      const lines: string[] = [];
      for (const e of entries.slice(0, limit)) {
        ctx.signal.throwIfAborted();
        const p = path.join(abs, e.name);
        if (e.isDirectory()) lines.push(formatEntry('dir', undefined, `${e.name}/`));
        else if (e.isSymbolicLink()) {
          const target = await readlink(p).catch(() => '?');
          lines.push(formatEntry('link', undefined, `${e.name} -> ${target}`));
        } else if (e.isFile()) {
          const size = await lstat(p).then((s) => s.size, () => undefined);
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
  limit: z
    .number()
    .int()
    .min(1)
    .max(FIND_MAX_RESULTS)
    .optional()
    .describe(`Maximum results (default ${FIND_DEFAULT_RESULTS}, max ${FIND_MAX_RESULTS}).`),
  includeIgnored: z
    .boolean()
    .optional()
    .describe('Also search inside node_modules and .git (skipped by default).'),
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
      if (!(await stat(start)).isDirectory()) throw new ToolError(`${shownStart} is not a directory; pass a directory as path.`);
      const match = globMatcher(input.pattern);
      const limit = input.limit ?? FIND_DEFAULT_RESULTS;
      const found: string[] = [];
      let truncated = false;
      for await (const e of walk(start, ctx.signal, input.includeIgnored ?? false)) {
        if (!match(e.rel, e.dirent.name)) continue;
        if (found.length >= limit) {
          truncated = true;
          break;
        }
        found.push(displayPath(root, e.abs) + (e.dirent.isDirectory() ? '/' : ''));
      }
      if (found.length === 0) return text(`No files match "${input.pattern}" under ${shownStart}.`);
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
