/**
 * The built-in file tools: read_file, ls, find, grep (read-only) and write_file, edit_file
 * (low-risk, two-phase). Every path goes through resolveInWorkspace; nothing here touches a path
 * the model wrote without it. Every file read_file / write_file / edit_file opens (and every
 * directory write_file creates) goes through openInWorkspace (workspace.ts): fd by fd, never following
 * a symlink, so a directory swapped for a symlink by a concurrent command cannot redirect it outside.
 * The one write path is writeInWorkspace. ls, find and grep list and read by path (grep's reads use
 * O_NOFOLLOW on the file only): a racing swap could make them show outside names, never write there.
 *
 * Tiers: reading and listing are `read-only`. write_file and edit_file are `low-risk`: they change
 * only files inside the agent's own workspace, and their propose half always produces the unified
 * diff an approver sees, so an agent configured `read-only` must ask before either runs.
 *
 * Output convention (what the model reads): plain text. When a bounded tool cut its output, the
 * LAST line is exactly one `[truncated: true; <what was cut>; <how to get the rest>]` line; when
 * the output is complete there is no such line. Other notes (skipped binary files) use the same
 * bracketed form on their own line, e.g. `[skipped: 2 binary files]`. Binary files are never dumped.
 *
 * Two-phase writes: propose resolves the path, reads the current bytes, computes the new content
 * and a unified diff, and returns Proposal { summary: 'edit_file src/a.ts (+3 -1)', preview: diff,
 * data: { path, newContent, baseHash } } without mutating anything. execute re-resolves the path,
 * refuses when the file's sha256 no longer equals baseHash (changed since the diff was shown), then
 * writes exactly the proposal's newContent (what was approved), creating parent directories inside
 * the workspace for write_file.
 */
import { createHash } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { constants as fsc } from 'node:fs';
import { lstat, open, readdir, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { createTwoFilesPatch } from 'diff';
import { z } from 'zod';
import type { Prepared, Proposal, Tool, ToolContext, ToolResult } from '../types.js';
import { ToolError } from '../types.js';
import { handOver } from '../sandbox/index.js';
import { displayPath, errCode, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../workspace.js';
import type { FileMatch } from './grep-worker.js';
import { GrepMatcher } from './grep-worker.js';

export { closeGrepWorkers, GREP_MATCH_BUDGET_MS, grepWorkerStats } from './grep-worker.js';

// ---------------------------------------------------------------------------------------------
// Limits (exported so tests and docs agree with the code)

export const READ_DEFAULT_LINES = 2000;
export const READ_MAX_BYTES = 50 * 1024;
export const LS_DEFAULT_ENTRIES = 500;
export const LS_MAX_ENTRIES = 2000;
export const FIND_DEFAULT_RESULTS = 200;
export const FIND_MAX_RESULTS = 1000;
export const GREP_DEFAULT_MATCHES = 100;
export const GREP_MAX_MATCHES = 1000;
export const GREP_MAX_OUTPUT_BYTES = 50 * 1024;
export const GREP_MAX_LINE_CHARS = 500;
/** grep skips larger files (reported as skipped). */
export const GREP_MAX_FILE_BYTES = 10 * 1024 * 1024;
/** write_file/edit_file refuse to diff and rewrite larger files. */
export const EDIT_MAX_FILE_BYTES = 2 * 1024 * 1024;
/** Directories find and grep skip unless includeIgnored is set. */
export const IGNORED_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git']);

const SNIFF_BYTES = 8000;
/** read_file stops counting the total lines of a huge file after this many bytes. */
const COUNT_SCAN_BYTES = 64 * 1024 * 1024;
const PREVIEW_MAX_CHARS = 100_000;

// ---------------------------------------------------------------------------------------------
// Shared helpers

export function truncatedLine(what: string, hint: string): string {
  return `[truncated: true; ${what}; ${hint}]`;
}

/** Like git: a NUL byte in the first 8000 bytes means binary. */
export function looksBinary(buf: Uint8Array): boolean {
  return buf.subarray(0, SNIFF_BYTES).includes(0);
}

function sha256(buf: Uint8Array | string): string {
  return createHash('sha256').update(buf).digest('hex');
}

function humanSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Glob to an anchored RegExp over '/'-separated paths: `*` any run within a segment, `?` one
 * character, `**` any number of segments, `[abc]`/`[!abc]` a class, `{a,b}` alternatives.
 */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const atSegStart = i === 0 || glob[i - 1] === '/';
        i++;
        if (atSegStart && glob[i + 1] === '/') {
          re += '(?:.*/)?';
          i++;
        } else {
          re += '.*';
        }
      } else {
        re += '[^/]*';
      }
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) {
        re += '\\[';
      } else {
        let body = glob.slice(i + 1, end);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        re += `[${body.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '{') {
      braces++;
      re += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      re += ')';
    } else if (c === ',' && braces > 0) {
      re += '|';
    } else {
      re += c.replace(/[.+^${}()|\\/]/g, '\\$&');
    }
  }
  while (braces-- > 0) re += ')';
  try {
    return new RegExp(`^${re}$`);
  } catch {
    throw new ToolError(`The glob "${glob}" is not valid; use *, ?, **, [abc] and {a,b}.`);
  }
}

/** A glob without '/' matches the base name at any depth; with '/' it matches the relative path. */
function globMatcher(glob: string): (rel: string, base: string) => boolean {
  const re = globToRegExp(glob);
  return glob.includes('/') ? (rel) => re.test(rel) : (_rel, base) => re.test(base);
}

interface WalkEntry {
  abs: string;
  /** Relative to the walk's start directory, '/'-separated. */
  rel: string;
  dirent: Dirent;
}

/**
 * Depth-first, name-sorted walk that never follows symlinks (they are listed, not entered, so a
 * link cannot lead the walk out of the workspace or into a loop). Checks the signal per entry.
 */
async function* walk(
  start: string,
  signal: AbortSignal,
  includeIgnored: boolean,
): AsyncGenerator<WalkEntry> {
  const stack: Array<{ abs: string; rel: string }> = [{ abs: start, rel: '' }];
  while (stack.length) {
    signal.throwIfAborted();
    const dir = stack.pop() as { abs: string; rel: string };
    let entries: Dirent[];
    try {
      entries = await readdir(dir.abs, { withFileTypes: true });
    } catch {
      continue; // unreadable directory: skip it rather than fail the whole search
    }
    signal.throwIfAborted();
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const subdirs: Array<{ abs: string; rel: string }> = [];
    for (const dirent of entries) {
      signal.throwIfAborted();
      const abs = path.join(dir.abs, dirent.name);
      const rel = dir.rel ? `${dir.rel}/${dirent.name}` : dirent.name;
      if (dirent.isDirectory()) {
        if (!includeIgnored && IGNORED_DIRS.has(dirent.name)) continue;
        subdirs.push({ abs, rel });
      }
      yield { abs, rel, dirent };
    }
    for (let i = subdirs.length - 1; i >= 0; i--) stack.push(subdirs[i] as { abs: string; rel: string });
  }
}

function text(content: string): ToolResult {
  return { content };
}

// ---------------------------------------------------------------------------------------------
// read_file

export const ReadFileInput = z.strictObject({
  path: z.string().min(1).describe('File to read, relative to the workspace root (or absolute inside it).'),
  offset: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('1-based line number to start at (default 1). Use it to read on after a truncated read.'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(READ_DEFAULT_LINES)
    .optional()
    .describe(`Maximum number of lines to return (default and maximum ${READ_DEFAULT_LINES}).`),
});
export type ReadFileInput = z.infer<typeof ReadFileInput>;

/** read_file: read-only. At most 2000 lines / 50 KB per call; offset/limit page through. */
export function readFileTool(): Tool<ReadFileInput> {
  return {
    name: 'read_file',
    description:
      'Read a text file from the workspace. Returns the raw lines (no line numbers). Reads at most ' +
      `${READ_DEFAULT_LINES} lines or ${READ_MAX_BYTES / 1024} KB per call; when cut, the last line is ` +
      '"[truncated: true; ...]" and says which offset to pass to read on. Binary files are reported, not shown.',
    input: ReadFileInput,
    tier: 'read-only',
    async execute(input, ctx) {
      const root = await workspaceRoot(ctx.workspace);
      const abs = await resolveInWorkspace(ctx.workspace, input.path, { mustExist: true });
      return text(await readWindow(root, abs, displayPath(root, abs), input.offset ?? 1, input.limit ?? READ_DEFAULT_LINES, ctx.signal));
    },
  };
}

async function readWindow(root: string, abs: string, shown: string, offset: number, limit: number, signal: AbortSignal): Promise<string> {
  // Opened fd by fd without following symlinks: a directory swapped for a symlink is not read through.
  const fh = await openInWorkspace(root, abs).catch((err: unknown) => {
    if (err instanceof ToolError) throw err;
    throw new ToolError(`${shown} cannot be opened (${errCode(err)}); use ls or find to see what is there.`);
  });
  try {
    const st = await fh.stat();
    if (st.isDirectory()) throw new ToolError(`${shown} is a directory; use ls to list it.`);
    if (!st.isFile()) throw new ToolError(`${shown} is not a regular file (a device, socket or pipe); it cannot be read.`);
    if (st.size === 0) return `(${shown} is empty)`;
    const buf = Buffer.alloc(64 * 1024);
    const decoder = new StringDecoder('utf8');
    const out: string[] = [];
    let bytes = 0;
    let lineNo = 0; // lines counted so far (complete, or cut and counted early)
    let carry = ''; // the unfinished last line while still splitting text
    let collecting = true; // false once the window is full: from then on only newlines are counted
    let cutReason: 'lines' | 'bytes' | 'longline' | undefined;
    let pos = 0;
    let countedToEnd = true;
    let openLineCounted = false; // the line in progress was already counted (its '\n' is still ahead)
    let tailHasText = false; // the bytes after the last '\n' seen so far are not empty

    const take = (line: string): void => {
      lineNo++;
      if (!collecting || lineNo < offset) return;
      if (out.length >= limit) {
        collecting = false;
        cutReason = 'lines';
        return;
      }
      const size = Buffer.byteLength(line) + 1;
      if (bytes + size > READ_MAX_BYTES) {
        collecting = false;
        if (out.length === 0) {
          // One line longer than the whole budget: show its head rather than nothing.
          out.push(Buffer.from(line).subarray(0, READ_MAX_BYTES).toString('utf8'));
          cutReason = 'longline';
        } else {
          cutReason = 'bytes';
        }
        return;
      }
      bytes += size;
      out.push(line);
    };

    for (;;) {
      signal.throwIfAborted();
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      const first = pos === 0;
      pos += bytesRead;
      const chunk = buf.subarray(0, bytesRead);
      if (first && looksBinary(chunk)) {
        return `${shown} is a binary file (${humanSize(st.size)}); it is not shown. Use a command that understands the format.`;
      }
      if (!collecting) {
        // Past the window: count newlines on the raw bytes to report the total, up to a bound.
        if (pos > COUNT_SCAN_BYTES) {
          countedToEnd = false;
          break;
        }
        let i = -1;
        while ((i = chunk.indexOf(10, i + 1)) !== -1) {
          if (openLineCounted) openLineCounted = false;
          else lineNo++;
        }
        tailHasText = chunk[bytesRead - 1] !== 10;
        continue;
      }
      const parts = (carry + decoder.write(chunk)).split('\n');
      carry = parts.pop() ?? '';
      for (const part of parts) take(part);
      if (!collecting) {
        tailHasText = carry.length > 0;
        continue;
      }
      if (carry.length > READ_MAX_BYTES * 2) {
        if (lineNo + 1 >= offset) {
          // An enormous line inside the window: it is cut anyway, count it now.
          take(carry);
          openLineCounted = true;
          tailHasText = true;
        } else {
          // Before the window: its text is never shown, only its end matters for counting.
          carry = carry.slice(-1);
        }
      }
    }
    if (collecting) {
      const last = carry + decoder.end();
      if (last.length > 0) take(last);
    } else if (tailHasText && !openLineCounted) {
      lineNo++; // a final line without a trailing newline
    }
    if (out.length === 0) {
      throw new ToolError(`offset ${offset} is past the end of ${shown} (${lineNo} lines). Use a smaller offset.`);
    }
    const body = out.join('\n');
    if (!cutReason) return body;
    const last = offset + out.length - 1;
    if (cutReason === 'longline') {
      return `${body}\n${truncatedLine(
        `line ${last} is longer than ${READ_MAX_BYTES / 1024} KB and was cut`,
        `use grep to find what you need in it` + (lineNo > last ? `; offset=${last + 1} reads the lines after it` : ''),
      )}`;
    }
    const of = countedToEnd ? `of ${lineNo}` : `of more than ${lineNo}`;
    const why = cutReason === 'bytes' ? ` (${READ_MAX_BYTES / 1024} KB limit)` : '';
    return `${body}\n${truncatedLine(`showing lines ${offset}-${last} ${of}${why}`, `call read_file with offset=${last + 1} to read on`)}`;
  } finally {
    await fh.close();
  }
}

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

// ---------------------------------------------------------------------------------------------
// grep

export const GrepInput = z.strictObject({
  pattern: z
    .string()
    .min(1)
    .describe('JavaScript regular expression matched against each line (or a plain string with fixedString).'),
  path: z
    .string()
    .optional()
    .describe('File or directory to search, relative to the workspace root (default: the root).'),
  fixedString: z.boolean().optional().describe('Treat pattern as a literal string, not a regex.'),
  ignoreCase: z.boolean().optional().describe('Match case-insensitively.'),
  glob: z
    .string()
    .optional()
    .describe('Only search files whose name matches this glob ("*.ts"); with "/" it matches the relative path.'),
  context: z.number().int().min(0).max(10).optional().describe('Lines of context before and after each match (0-10, default 0).'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(GREP_MAX_MATCHES)
    .optional()
    .describe(`Maximum matching lines (default ${GREP_DEFAULT_MATCHES}, max ${GREP_MAX_MATCHES}).`),
  includeIgnored: z.boolean().optional().describe('Also search inside node_modules and .git (skipped by default).'),
});
export type GrepInput = z.infer<typeof GrepInput>;

const GREP_READ_AHEAD = 8;
/** Files handed to the matching worker before the oldest answer is awaited (pipelining). */
const GREP_IN_FLIGHT_FILES = 64;
const GREP_IN_FLIGHT_BYTES = 8 * 1024 * 1024;
/** Files per message to the worker: one round trip per small file would cost more than matching it. */
const GREP_BATCH_FILES = 32;
const GREP_BATCH_BYTES = 1024 * 1024;

type FileRead = { kind: 'text'; abs: string; buf: Buffer } | { kind: 'binary' | 'large' | 'skip'; abs: string };

/** Never rejects (read-ahead promises may be abandoned when the search stops early). */
async function readForGrep(abs: string, signal: AbortSignal): Promise<FileRead> {
  if (signal.aborted) return { kind: 'skip', abs };
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  try {
    fh = await open(abs, fsc.O_RDONLY | fsc.O_NOFOLLOW);
    const st = await fh.stat();
    if (!st.isFile()) return { kind: 'skip', abs };
    if (st.size > GREP_MAX_FILE_BYTES) return { kind: 'large', abs };
    // One read of the stat'ed size (fh.readFile would stat again and probe for EOF). Not from
    // Buffer's shared pool: the bytes are transferred to the matching worker without a copy.
    const buf = Buffer.allocUnsafeSlow(st.size);
    let got = 0;
    while (got < st.size) {
      const { bytesRead } = await fh.read(buf, got, st.size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return looksBinary(buf.subarray(0, got)) ? { kind: 'binary', abs } : { kind: 'text', abs, buf: buf.subarray(0, got) };
  } catch {
    return { kind: 'skip', abs }; // vanished, unreadable, or a symlink swapped in
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

export interface GrepToolOptions {
  /** Worker time one call may spend matching (default GREP_MATCH_BUDGET_MS, 20 s). */
  matchBudgetMs?: number;
}

/**
 * grep: read-only. Bounded matches and bytes; binary and huge files skipped and reported.
 *
 * Walking and reading stay on the main thread (async fs); the RegExp runs in a worker
 * (grep-worker.ts) so a catastrophic pattern cannot block the event loop: it is stopped by
 * ctx.signal or by the matching budget, and the call fails with a ToolError saying to simplify it.
 */
export function grepTool(opts: GrepToolOptions = {}): Tool<GrepInput> {
  return {
    name: 'grep',
    description:
      'Search file contents in the workspace. Output is grep-like: "path:line:text" for matches, ' +
      '"path-line-text" for context lines, "--" between separate groups. Skips node_modules, .git and binary ' +
      'files. When cut, the last line is "[truncated: true; ...]".',
    input: GrepInput,
    tier: 'read-only',
    async execute(input, ctx) {
      const root = await workspaceRoot(ctx.workspace);
      const start = await resolveInWorkspace(ctx.workspace, input.path ?? '.', { mustExist: true });
      const source = input.fixedString ? input.pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : input.pattern;
      const flags = input.ignoreCase ? 'i' : '';
      try {
        new RegExp(source, flags); // compiling is cheap and safe; only matching can run away
      } catch (err) {
        throw new ToolError(
          `The pattern is not a valid regular expression (${err instanceof Error ? err.message : String(err)}); fix it or pass fixedString: true.`,
        );
      }
      const fileMatch = input.glob ? globMatcher(input.glob) : undefined;
      const limit = input.limit ?? GREP_DEFAULT_MATCHES;
      const out: string[] = [];
      let filesSearched = 0;
      let skippedBinary = 0;
      let skippedLarge = 0;
      let cut: string | undefined;

      const files: AsyncIterable<{ abs: string; rel: string; name: string }> = (await stat(start)).isDirectory()
        ? (async function* () {
            for await (const e of walk(start, ctx.signal, input.includeIgnored ?? false)) {
              if (e.dirent.isFile()) yield { abs: e.abs, rel: e.rel, name: e.dirent.name };
            }
          })()
        : (async function* () {
            yield { abs: start, rel: path.basename(start), name: path.basename(start) };
          })();

      const matcher = GrepMatcher.start(
        {
          source,
          flags,
          pattern: input.pattern,
          limit,
          context: input.context ?? 0,
          maxOutputBytes: GREP_MAX_OUTPUT_BYTES,
          maxLineChars: GREP_MAX_LINE_CHARS,
          ...(opts.matchBudgetMs === undefined ? {} : { budgetMs: opts.matchBudgetMs }),
        },
        ctx.signal,
      );
      try {
        // Two stages, both strictly in walk order: a few files read ahead (the fs thread pool
        // works in parallel), then up to GREP_IN_FLIGHT_* files handed to the matching worker.
        const readAhead: Array<Promise<FileRead>> = [];
        const iter = files[Symbol.asyncIterator]();
        let walkDone = false;
        const fill = async (): Promise<void> => {
          while (!walkDone && readAhead.length < GREP_READ_AHEAD) {
            const next = await iter.next();
            if (next.done) {
              walkDone = true;
              break;
            }
            if (fileMatch && !fileMatch(next.value.rel, next.value.name)) continue;
            readAhead.push(readForGrep(next.value.abs, ctx.signal));
          }
        };
        type Slot = { kind: 'binary' | 'large' | 'skip' } | { kind: 'text'; bytes: number; result?: Promise<FileMatch> };
        const inFlight: Slot[] = [];
        let inFlightBytes = 0;
        let batch: Array<{ slot: Slot & { kind: 'text' }; shown: string; bytes: Buffer }> = [];
        let batchBytes = 0;
        const flush = (): void => {
          if (batch.length === 0) return;
          const sent = matcher.match(batch.map(({ shown, bytes }) => ({ shown, bytes })));
          batch.forEach(({ slot }, k) => {
            slot.result = sent.then((rs) => rs[k] as FileMatch);
            slot.result.catch(() => undefined); // awaited later, in order; a failure surfaces there
          });
          batch = [];
          batchBytes = 0;
        };
        for (;;) {
          while (inFlight.length < GREP_IN_FLIGHT_FILES && (inFlightBytes < GREP_IN_FLIGHT_BYTES || inFlight.length === 0)) {
            await fill();
            const pending = readAhead.shift();
            if (!pending) break;
            const f = await pending;
            ctx.signal.throwIfAborted();
            if (f.kind !== 'text') {
              inFlight.push({ kind: f.kind });
              continue;
            }
            const slot = { kind: 'text' as const, bytes: f.buf.byteLength };
            inFlight.push(slot);
            inFlightBytes += slot.bytes;
            batch.push({ slot, shown: displayPath(root, f.abs), bytes: f.buf });
            batchBytes += slot.bytes;
            if (batch.length >= GREP_BATCH_FILES || batchBytes >= GREP_BATCH_BYTES) flush();
          }
          const slot = inFlight.shift();
          if (!slot) break;
          if (slot.kind === 'large') skippedLarge++;
          if (slot.kind === 'binary') skippedBinary++;
          if (slot.kind !== 'text') continue;
          inFlightBytes -= slot.bytes;
          if (!slot.result) flush(); // only send a part-filled batch when its answer is needed now
          const r = await (slot.result as Promise<FileMatch>);
          filesSearched++;
          for (const line of r.lines) out.push(line);
          if (r.cut) {
            cut = r.cut;
            break;
          }
        }
      } catch (err) {
        await matcher.discard();
        throw err;
      }
      matcher.release();

      const notes: string[] = [];
      if (skippedBinary || skippedLarge) {
        const parts: string[] = [];
        if (skippedBinary) parts.push(`${skippedBinary} binary file${skippedBinary === 1 ? '' : 's'}`);
        if (skippedLarge) parts.push(`${skippedLarge} file${skippedLarge === 1 ? '' : 's'} over ${GREP_MAX_FILE_BYTES / 1024 / 1024} MB`);
        notes.push(`[skipped: ${parts.join(', ')}]`);
      }
      if (out.length === 0) {
        return text([`No matches for ${JSON.stringify(input.pattern)} in ${displayPath(root, start)} (${filesSearched} files searched).`, ...notes].join('\n'));
      }
      if (cut) {
        notes.push(
          truncatedLine(cut, 'narrow the pattern, path or glob' + (limit < GREP_MAX_MATCHES ? `, or pass limit (max ${GREP_MAX_MATCHES})` : '')),
        );
      }
      return text([...out, ...notes].join('\n'));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// write_file / edit_file (two-phase)

/** What propose hands to execute (persisted while an approval waits, so validated on the way back). */
export const ChangeData = z.object({
  /** Workspace-relative path, re-resolved (and re-confined) at execute time. */
  path: z.string(),
  newContent: z.string(),
  /** sha256 hex of the file's bytes when proposed; null when the file did not exist. */
  baseHash: z.string().nullable(),
});
export type ChangeData = z.infer<typeof ChangeData>;

interface Current {
  abs: string;
  shown: string;
  /** undefined: the file does not exist yet. */
  content?: string;
  hash: string | null;
}

async function readCurrent(ctx: ToolContext, userPath: string, tool: string): Promise<Current> {
  const root = await workspaceRoot(ctx.workspace);
  const abs = await resolveInWorkspace(ctx.workspace, userPath);
  const shown = displayPath(root, abs);
  let buf: Buffer;
  try {
    const fh = await openInWorkspace(root, abs);
    try {
      const st = await fh.stat();
      if (st.isDirectory()) throw new ToolError(`${shown} is a directory; ${tool} needs a file path.`);
      if (!st.isFile()) throw new ToolError(`${shown} is not a regular file; ${tool} only writes regular files.`);
      if (st.size > EDIT_MAX_FILE_BYTES) {
        throw new ToolError(`${shown} is ${humanSize(st.size)}; ${tool} only changes files up to ${humanSize(EDIT_MAX_FILE_BYTES)}.`);
      }
      buf = await fh.readFile();
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (err instanceof ToolError) throw err;
    const code = errCode(err);
    if (code === 'ENOENT') return { abs, shown, hash: null };
    throw new ToolError(`${shown} cannot be read (${code}).`);
  }
  if (looksBinary(buf)) throw new ToolError(`${shown} is a binary file; ${tool} only changes text files.`);
  return { abs, shown, content: buf.toString('utf8'), hash: sha256(buf) };
}

/** A diff that takes longer than this (huge rewrites) is summarized instead of shown. */
const DIFF_TIMEOUT_MS = 5000;

function diffOf(shown: string, before: string | undefined, after: string): { preview: string; counts: string } {
  const patch = createTwoFilesPatch(before === undefined ? '/dev/null' : `a/${shown}`, `b/${shown}`, before ?? '', after, undefined, undefined, {
    context: 3,
    timeout: DIFF_TIMEOUT_MS,
  });
  if (patch === undefined) {
    const n = (s: string) => s.split('\n').length;
    return {
      preview: `[diff too large to compute: ${before === undefined ? 0 : n(before)} lines become ${n(after)} lines]`,
      counts: 'diff too large to show',
    };
  }
  let added = 0;
  let removed = 0;
  let inHunks = false;
  for (const line of patch.split('\n')) {
    if (line.startsWith('@@')) inHunks = true;
    else if (!inHunks) continue;
    else if (line.startsWith('+')) added++;
    else if (line.startsWith('-')) removed++;
  }
  const preview =
    patch.length > PREVIEW_MAX_CHARS ? `${patch.slice(0, PREVIEW_MAX_CHARS)}\n[preview cut at ${PREVIEW_MAX_CHARS} chars]` : patch;
  return { preview, counts: before === undefined ? `new file, +${added}` : `+${added} -${removed}` };
}

function proposal(tool: string, cur: Current, newContent: string): Proposal {
  const { preview, counts } = diffOf(cur.shown, cur.content, newContent);
  const data: ChangeData = { path: cur.shown, newContent, baseHash: cur.hash };
  return { summary: `${tool} ${cur.shown} (${counts})`, preview, data };
}

async function applyChange(ctx: ToolContext, prepared: Prepared, tool: string, fallback: () => Promise<Proposal>): Promise<ToolResult> {
  const parsed = ChangeData.safeParse(prepared.proposal?.data);
  const change = parsed.success ? parsed.data : (ChangeData.parse((await fallback()).data) as ChangeData);
  const root = await workspaceRoot(ctx.workspace);
  // Re-resolve: the path is confined again now, not trusted from when it was proposed.
  const abs = await resolveInWorkspace(ctx.workspace, change.path);
  const shown = displayPath(root, abs);
  let nowHash: string | null = null;
  try {
    const fh = await openInWorkspace(root, abs);
    try {
      nowHash = sha256(await fh.readFile());
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (err instanceof ToolError) throw err;
    if (errCode(err) !== 'ENOENT') throw new ToolError(`${shown} cannot be read before writing (${errCode(err)}).`);
  }
  if (nowHash !== change.baseHash) {
    const how = change.baseHash === null ? 'was created' : nowHash === null ? 'was deleted' : 'was modified';
    throw new ToolError(
      `${shown} ${how} after this ${tool} was proposed, so the diff that was shown no longer applies; nothing was written. ` +
        `Read the file again and propose the change anew.`,
    );
  }
  await writeInWorkspace(root, abs, shown, change.newContent);
  const lines = change.newContent === '' ? 0 : change.newContent.split('\n').length - (change.newContent.endsWith('\n') ? 1 : 0);
  const verb = change.baseHash === null ? 'Created' : 'Wrote';
  return text(`${verb} ${shown} (${lines} lines, ${humanSize(Buffer.byteLength(change.newContent))}).`);
}

/**
 * THE write path of write_file and edit_file: creates missing parent directories and the file inside
 * `root` without ever following a symlink (openInWorkspace), so a directory swapped for a symlink
 * while this runs makes the write fail instead of landing outside the workspace.
 */
async function writeInWorkspace(root: string, abs: string, shown: string, content: string): Promise<void> {
  try {
    // A root bot hands what it writes (and the folders it makes) to the sandbox user, so the agent's
    // commands can change it too.
    const fh = await openInWorkspace(root, abs, { write: true, createDirs: true, onCreatedDir: handOver });
    try {
      // O_CREAT|O_TRUNC already ran: refuse (after the fact, but harmlessly) anything that is no regular file.
      if (!(await fh.stat()).isFile()) throw new ToolError(`${shown} is not a regular file; only regular files are written.`);
      await handOver(fh);
      await fh.writeFile(content, 'utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (err instanceof ToolError) throw err;
    throw new ToolError(`${shown} could not be written (${errCode(err)}); nothing or only part of it was written.`);
  }
}

export const WriteFileInput = z.strictObject({
  path: z.string().min(1).describe('File to create or overwrite, relative to the workspace root. Parent directories are created.'),
  content: z.string().describe('The complete new content of the file.'),
});
export type WriteFileInput = z.infer<typeof WriteFileInput>;

/**
 * write_file: low-risk. Changes only the agent's own workspace and always shows a diff first; an
 * agent configured read-only asks an approver.
 */
export function writeFileTool(): Tool<WriteFileInput> {
  const tool: Tool<WriteFileInput> = {
    name: 'write_file',
    description:
      'Create a file or replace its whole content, inside the workspace. Parent directories are created. ' +
      'For a small change to an existing file prefer edit_file. The change may need approval; a diff is shown.',
    input: WriteFileInput,
    tier: 'low-risk',
    async propose(input, ctx) {
      const cur = await readCurrent(ctx, input.path, 'write_file');
      return proposal('write_file', cur, input.content);
    },
    async execute(input, ctx, prepared) {
      return applyChange(ctx, prepared, 'write_file', () => tool.propose!(input, ctx));
    },
  };
  return tool;
}

export const EditFileInput = z.strictObject({
  path: z.string().min(1).describe('Existing text file to edit, relative to the workspace root.'),
  edits: z
    .array(
      z.strictObject({
        oldText: z
          .string()
          .min(1)
          .describe('Exact text to replace, including whitespace and indentation; must occur exactly once in the file.'),
        newText: z.string().describe('The replacement text.'),
      }),
    )
    .min(1)
    .max(100)
    .describe('Replacements applied in order; each oldText must match exactly once at the time it is applied.'),
});
export type EditFileInput = z.infer<typeof EditFileInput>;

function countOccurrences(hay: string, needle: string): number {
  let n = 0;
  let i = hay.indexOf(needle);
  while (i !== -1) {
    n++;
    i = hay.indexOf(needle, i + 1); // overlapping matches count too: "aa" is ambiguous in "aaa"
  }
  return n;
}

/**
 * edit_file: low-risk (same reasoning as write_file). Exact, unique-match replacements; a CRLF file
 * also accepts LF-only oldText/newText (converted to CRLF).
 */
export function editFileTool(): Tool<EditFileInput> {
  const tool: Tool<EditFileInput> = {
    name: 'edit_file',
    description:
      'Edit an existing text file in the workspace by exact replacements: each edit replaces oldText, which ' +
      'must occur exactly once, with newText. Read the file first and copy oldText exactly. The change may need ' +
      'approval; a diff is shown.',
    input: EditFileInput,
    tier: 'low-risk',
    async propose(input, ctx) {
      const cur = await readCurrent(ctx, input.path, 'edit_file');
      if (cur.content === undefined) {
        throw new ToolError(`${cur.shown} does not exist; use write_file to create it, or ls/find to locate the file.`);
      }
      const crlf = cur.content.includes('\r\n');
      let next = cur.content;
      input.edits.forEach((edit, k) => {
        let { oldText, newText } = edit;
        let n = countOccurrences(next, oldText);
        if (n === 0 && crlf && !oldText.includes('\r\n')) {
          const o = oldText.replace(/\n/g, '\r\n');
          const m = countOccurrences(next, o);
          if (m > 0) {
            oldText = o;
            newText = newText.replace(/\r?\n/g, '\r\n');
            n = m;
          }
        }
        const which = input.edits.length > 1 ? `edits[${k}].oldText` : 'oldText';
        if (n === 0) {
          throw new ToolError(
            `${which} was not found in ${cur.shown}` +
              (k > 0 ? ' (after the earlier edits were applied)' : '') +
              '; read the file again and copy the text exactly, including whitespace and indentation. Nothing was changed.',
          );
        }
        if (n > 1) {
          throw new ToolError(
            `${which} occurs ${n} times in ${cur.shown}; it must occur exactly once. Include more surrounding lines ` +
              'so it matches one place. Nothing was changed.',
          );
        }
        const at = next.indexOf(oldText);
        next = next.slice(0, at) + newText + next.slice(at + oldText.length);
      });
      if (next === cur.content) throw new ToolError(`These edits leave ${cur.shown} unchanged; nothing to do.`);
      return proposal('edit_file', cur, next);
    },
    async execute(input, ctx, prepared) {
      return applyChange(ctx, prepared, 'edit_file', () => tool.propose!(input, ctx));
    },
  };
  return tool;
}
