/**
 * grep (read-only): walking and reading here, fd by fd (./walk.ts: no workspace path string past the
 * root reaches the kernel, so a swap in the box cannot redirect a read outside), the RegExp in a
 * worker (../grep-worker.ts).
 */
import { constants as fsc } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Tool } from '../../types.js';
import { ToolError } from '../../types.js';
import { displayPath, errCode, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../../workspace.js';
import type { FileMatch } from '../grep-worker.js';
import { GrepMatcher } from '../grep-worker.js';
import {
  GREP_DEFAULT_MATCHES,
  GREP_MAX_FILE_BYTES,
  GREP_MAX_LINE_CHARS,
  GREP_MAX_MATCHES,
  GREP_MAX_OUTPUT_BYTES,
  globMatcher,
  looksBinary,
  text,
  truncatedLine,
} from './shared.js';
import { type DirRef, walkNotes, walkTree, type WalkStats } from './walk.js';
import { messageOf } from '../../../log.js';

// ---------------------------------------------------------------------------------------------
// grep

export const GrepInput = z.strictObject({
  pattern: z.string().min(1).describe('JavaScript regular expression matched against each line (or a plain string with fixedString).'),
  path: z.string().optional().describe('File or directory to search, relative to the workspace root (default: the root).'),
  fixedString: z.boolean().optional().describe('Treat pattern as a literal string, not a regex.'),
  ignoreCase: z.boolean().optional().describe('Match case-insensitively.'),
  glob: z.string().optional().describe('Only search files whose name matches this glob ("*.ts"); with "/" it matches the relative path.'),
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

type FileRead = { kind: 'text'; shown: string; buf: Buffer } | { kind: 'binary' | 'large' | 'skip'; shown: string };

/** Where grep reads a file from: a name in an open directory of the walk, or a handle opened already. */
type FileSource = { dir: DirRef; name: string; shown: string } | { fh: FileHandle; shown: string };

/** Files are opened without following a symlink and without blocking on a FIFO; fstat decides. */
const GREP_OPEN_FLAGS = fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK;

/**
 * Never rejects (read-ahead promises may be abandoned when the search stops early). A walked entry's
 * directory must have been retained by the caller: it is released here, once the file is open.
 */
async function readForGrep(src: FileSource, signal: AbortSignal): Promise<FileRead> {
  const shown = src.shown;
  let fh: FileHandle | undefined;
  try {
    if ('fh' in src) fh = src.fh;
    else {
      try {
        if (signal.aborted) return { kind: 'skip', shown };
        fh = await open(src.dir.at(src.name), GREP_OPEN_FLAGS);
      } finally {
        src.dir.release();
      }
    }
    if (signal.aborted) return { kind: 'skip', shown };
    const st = await fh.stat();
    if (!st.isFile()) return { kind: 'skip', shown };
    if (st.size > GREP_MAX_FILE_BYTES) return { kind: 'large', shown };
    // One read of the stat'ed size (fh.readFile would stat again and probe for EOF). Not from
    // Buffer's shared pool: the bytes are transferred to the matching worker without a copy.
    const buf = Buffer.allocUnsafeSlow(st.size);
    let got = 0;
    while (got < st.size) {
      const { bytesRead } = await fh.read(buf, got, st.size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return looksBinary(buf.subarray(0, got)) ? { kind: 'binary', shown } : { kind: 'text', shown, buf: buf.subarray(0, got) };
  } catch {
    return { kind: 'skip', shown }; // vanished, unreadable, or a symlink swapped in
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
        throw new ToolError(`The pattern is not a valid regular expression (${messageOf(err)}); fix it or pass fixedString: true.`);
      }
      const fileMatch = input.glob ? globMatcher(input.glob) : undefined;
      const limit = input.limit ?? GREP_DEFAULT_MATCHES;
      const out: string[] = [];
      let filesSearched = 0;
      let skippedBinary = 0;
      let skippedLarge = 0;
      let cut: string | undefined;

      // The start is opened fd by fd like read_file's file; everything below it relative to its fd.
      const startFh = await openInWorkspace(root, start).catch((err: unknown) => {
        if (err instanceof ToolError) throw err;
        throw new ToolError(`${displayPath(root, start)} cannot be opened (${errCode(err)}); use ls or find to see what is there.`);
      });
      let startIsDir: boolean;
      try {
        startIsDir = (await startFh.stat()).isDirectory();
      } catch (err) {
        await startFh.close();
        throw new ToolError(`${displayPath(root, start)} cannot be read (${errCode(err)}).`);
      }
      const shownStart = displayPath(root, start);
      const walkStats: WalkStats = { vanished: 0, tooDeep: 0 };
      let walkOwnsStart = false; // once walkTree runs, it closes startFh itself
      const files: AsyncGenerator<FileSource & { rel: string; name: string }> = startIsDir
        ? (async function* () {
            walkOwnsStart = true;
            for await (const e of walkTree(startFh, ctx.signal, { includeIgnored: input.includeIgnored ?? false, stats: walkStats })) {
              if (e.kind === 'file') yield { dir: e.dir, name: e.name, rel: e.rel, shown: shownStart === '.' ? e.rel : `${shownStart}/${e.rel}` };
            }
          })()
        : (async function* () {
            yield { fh: startFh, rel: path.basename(start), name: path.basename(start), shown: shownStart };
          })();

      let matcher: GrepMatcher;
      try {
        matcher = GrepMatcher.start(
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
      } catch (err) {
        await startFh.close();
        throw err;
      }
      try {
        // Two stages, both strictly in walk order: a few files read ahead (the fs thread pool
        // works in parallel), then up to GREP_IN_FLIGHT_* files handed to the matching worker.
        const readAhead: Array<Promise<FileRead>> = [];
        const iter = files;
        let walkDone = false;
        const fill = async (): Promise<void> => {
          while (!walkDone && readAhead.length < GREP_READ_AHEAD) {
            const next = await iter.next();
            if (next.done) {
              walkDone = true;
              break;
            }
            const f = next.value;
            if (fileMatch && !fileMatch(f.rel, f.name)) continue;
            // Retained for the read: the walk may close its fd before the read-ahead opens the file.
            readAhead.push(readForGrep('dir' in f ? { dir: f.dir.retain(), name: f.name, shown: f.shown } : f, ctx.signal));
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
            batch.push({ slot, shown: f.shown, bytes: f.buf });
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
      } finally {
        // Closes the walk's directory fds (the generator's finally) when the search stopped early.
        await files.return(undefined).catch(() => undefined);
        if (!walkOwnsStart) await startFh.close().catch(() => undefined);
      }
      matcher.release();

      const notes: string[] = [];
      const parts: string[] = [];
      if (skippedBinary) parts.push(`${skippedBinary} binary file${skippedBinary === 1 ? '' : 's'}`);
      if (skippedLarge) parts.push(`${skippedLarge} file${skippedLarge === 1 ? '' : 's'} over ${GREP_MAX_FILE_BYTES / 1024 / 1024} MB`);
      parts.push(...walkNotes(walkStats));
      if (parts.length) notes.push(`[skipped: ${parts.join(', ')}]`);
      if (out.length === 0) {
        return text([`No matches for ${JSON.stringify(input.pattern)} in ${shownStart} (${filesSearched} files searched).`, ...notes].join('\n'));
      }
      if (cut) {
        notes.push(truncatedLine(cut, 'narrow the pattern, path or glob' + (limit < GREP_MAX_MATCHES ? `, or pass limit (max ${GREP_MAX_MATCHES})` : '')));
      }
      return text([...out, ...notes].join('\n'));
    },
  };
}
