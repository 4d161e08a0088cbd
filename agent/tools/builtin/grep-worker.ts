/**
 * grep's line matching, off the main thread. A model-supplied RegExp can backtrack for hours on
 * one line (`(a+)+$` against "aaaa…!"); run on the main thread that would freeze every
 * conversation on every platform, and neither the tool timeout nor /stop could interrupt it
 * because matching is synchronous. Here the matching runs in a worker_threads Worker that the main
 * thread can always terminate.
 *
 * Contract:
 *   const m = GrepMatcher.start(options, signal)   // takes an idle worker or spawns one
 *   const rs = await m.match([{ shown, bytes }, …])  // batches in walk order; the next batch may be
 *                                                  // sent before the previous answer arrives
 *   m.release()                                    // success: the worker goes back to the pool
 *   m.discard()                                    // failure: the worker is terminated
 * A FileMatch holds the output lines of one file (grep format, context and "--" separators already
 * decided) and `cut` once the match limit or output budget was reached; after a cut the worker
 * answers the remaining files of that search with `searched: false` without looking at them.
 *
 * Budget: the worker time one search may spend matching is bounded by `budgetMs` (default
 * GREP_MATCH_BUDGET_MS). When work is outstanding and the worker has not answered within the
 * budget left, the worker is terminated and every pending match() rejects with a ToolError that
 * says the pattern is too slow. When `signal` aborts, the worker is terminated and pending
 * match() calls reject with signal.reason. Either way the worker is gone (its exit was awaited)
 * before the rejection is observed.
 *
 * Pool: at most one idle worker is kept (unref'd, so it never keeps the process alive); busy
 * workers are ref'd. Concurrent searches each get their own worker, so one conversation's runaway
 * pattern never delays or kills another's search. closeGrepWorkers() ends the idle one.
 *
 * The worker body is a plain JavaScript string run with `eval: true`: it needs no file on disk
 * next to the compiled module, no TypeScript loader inside the worker (jest's @swc/jest transform
 * does not apply inside a Worker), and is immune to coverage instrumentation.
 */
import { Worker } from 'node:worker_threads';
import { ToolError } from '../types.js';

/** Worker time one grep call may spend matching before it is stopped as a runaway pattern. */
const GREP_MATCH_BUDGET_MS = 20_000;

export interface GrepMatchOptions {
  /** RegExp source (already escaped for fixedString) and flags; validated by the caller. */
  source: string;
  flags: string;
  /** The pattern as the model wrote it, for the error message. */
  pattern: string;
  limit: number;
  context: number;
  maxOutputBytes: number;
  maxLineChars: number;
  budgetMs?: number;
}

export interface FileMatch {
  /** false: the search had already stopped (cut) before this file; it was not looked at. */
  searched: boolean;
  lines: string[];
  /** Why output stopped ("stopped at 100 matching lines"); set on the file where it happened. */
  cut?: string;
}

// The worker. Mirrors the former in-process loop exactly: per file, decode as UTF-8, split on
// '\n' (a trailing empty line dropped), print matches with `context` lines around them, "--"
// between groups that are not adjacent, stop at `limit` matches or `maxOutputBytes` of output.
const WORKER_SOURCE = String.raw`
'use strict';
const { parentPort } = require('node:worker_threads');
let s = null;
function cutLine(line, max) {
  return line.length > max ? line.slice(0, max) + '\u2026 [line cut at ' + max + ' chars]' : line;
}
function searchFile(shown, text) {
  const re = s.re, context = s.context, out = [];
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  let lastPrinted = -1;
  for (let i = 0; i < lines.length; i++) {
    if (!re.test(lines[i])) continue;
    if (s.matches >= s.limit) return { lines: out, cut: 'stopped at ' + s.limit + ' matching lines' };
    s.matches++;
    const from = Math.max(0, i - context, lastPrinted + 1);
    const group = [];
    if (context > 0 && (lastPrinted >= 0 ? from > lastPrinted + 1 : s.hasOutput || out.length > 0)) group.push('--');
    for (let j = from; j < i; j++) group.push(shown + '-' + (j + 1) + '-' + cutLine(lines[j], s.maxLineChars));
    group.push(shown + ':' + (i + 1) + ':' + cutLine(lines[i], s.maxLineChars));
    // Trailing context stops early when another match follows: that match prints itself.
    let j = i + 1;
    for (; j <= Math.min(lines.length - 1, i + context); j++) {
      if (re.test(lines[j])) break;
      group.push(shown + '-' + (j + 1) + '-' + cutLine(lines[j], s.maxLineChars));
    }
    let size = 0;
    for (const l of group) size += Buffer.byteLength(l) + 1;
    if (s.outBytes + size > s.maxOutputBytes) {
      s.matches--;
      return { lines: out, cut: 'output reached ' + s.maxOutputBytes / 1024 + ' KB after ' + s.matches + ' matching lines' };
    }
    s.outBytes += size;
    for (const l of group) out.push(l);
    lastPrinted = j - 1;
    i = j - 1;
  }
  return { lines: out };
}
parentPort.on('message', (m) => {
  if (m.type === 'begin') {
    s = { id: m.id, re: new RegExp(m.source, m.flags), limit: m.limit, context: m.context, maxOutputBytes: m.maxOutputBytes,
      maxLineChars: m.maxLineChars, matches: 0, outBytes: 0, hasOutput: false, stopped: false };
    return;
  }
  const t = performance.now();
  const results = [];
  for (let k = 0; k < m.files.length; k++) {
    const f = m.files[k];
    if (!s || m.id !== s.id || s.stopped) {
      results.push({ searched: false, lines: [] });
      continue;
    }
    const r = searchFile(f.shown, Buffer.from(f.data, 0, f.length).toString('utf8'));
    if (r.lines.length > 0) s.hasOutput = true;
    if (r.cut) s.stopped = true;
    results.push({ searched: true, lines: r.lines, cut: r.cut });
  }
  parentPort.postMessage({ id: m.id, seq: m.seq, results, ms: performance.now() - t });
});
`;

interface Reply {
  id: number;
  seq: number;
  results: Array<{ searched: boolean; lines: string[]; cut?: string }>;
  ms: number;
}

interface Pending {
  resolve: (m: FileMatch[]) => void;
  reject: (err: unknown) => void;
}

let idle: Worker | undefined;
let live = 0;
let created = 0;
let nextSearchId = 1;

/** Counters for tests and diagnostics: workers alive now (busy or idle), and ever spawned. */
export function grepWorkerStats(): { live: number; created: number; idle: boolean } {
  return { live, created, idle: idle !== undefined };
}

/** Terminates the idle worker (busy ones end with their search). For shutdown and tests. */
export async function closeGrepWorkers(): Promise<void> {
  const w = idle;
  idle = undefined;
  if (w) await w.terminate();
}

function spawn(): Worker {
  const w = new Worker(WORKER_SOURCE, {
    eval: true,
    // A search holds at most a few files (each ≤ 10 MB) plus their lines; bound what a worker may use.
    resourceLimits: { maxOldGenerationSizeMb: 512 },
    stdout: false,
    stderr: false,
  });
  live++;
  created++;
  w.once('exit', () => {
    live--;
    if (idle === w) idle = undefined;
  });
  // An idle worker that dies on its own is simply forgotten (the exit handler above).
  w.on('error', () => undefined);
  return w;
}

/** One grep call's use of a worker. */
export class GrepMatcher {
  private readonly pending = new Map<number, Pending>();
  private seq = 0;
  private usedMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private failed: unknown;
  private stopped = false;
  private ended = false;
  private terminated: Promise<void> | undefined;
  private readonly budgetMs: number;
  private readonly onAbort = (): void => {
    void this.fail(this.signal.reason);
  };
  private readonly onMessage = (r: Reply): void => this.reply(r);
  private readonly onError = (err: Error): void => {
    const what = (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'ran out of memory' : `failed (${err.message})`;
    void this.fail(new ToolError(`grep's matching ${what}; narrow the path or glob, or simplify the pattern.`));
  };
  private readonly onExit = (): void => {
    if (!this.ended) void this.fail(new ToolError("grep's matching worker stopped unexpectedly; try the search again."));
  };

  private constructor(
    private readonly worker: Worker,
    private readonly id: number,
    private readonly opts: GrepMatchOptions,
    private readonly signal: AbortSignal,
  ) {
    this.budgetMs = opts.budgetMs ?? GREP_MATCH_BUDGET_MS;
    worker.ref();
    worker.on('message', this.onMessage);
    worker.on('error', this.onError);
    worker.on('exit', this.onExit);
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Takes the idle worker (or spawns one) and starts a search on it. Throws if signal is aborted. */
  static start(opts: GrepMatchOptions, signal: AbortSignal): GrepMatcher {
    signal.throwIfAborted();
    const worker = idle ?? spawn();
    idle = undefined;
    const id = nextSearchId++;
    const m = new GrepMatcher(worker, id, opts, signal);
    const { source, flags, limit, context, maxOutputBytes, maxLineChars } = opts;
    worker.postMessage({ type: 'begin', id, source, flags, limit, context, maxOutputBytes, maxLineChars });
    return m;
  }

  /**
   * Matches a batch of files (one message each way: per-file messages cost more than small files'
   * matching). A `bytes` view that spans its whole ArrayBuffer is transferred (zero copy, unusable
   * afterwards); other views are copied. The returned promise is already guarded against
   * unhandled rejection, so it may be awaited later.
   */
  match(files: ReadonlyArray<{ shown: string; bytes: Uint8Array }>): Promise<FileMatch[]> {
    if (this.failed !== undefined) return guarded(Promise.reject(this.failed));
    if (this.ended) return guarded(Promise.reject(new Error('GrepMatcher used after release')));
    const seq = this.seq++;
    const p = new Promise<FileMatch[]>((resolve, reject) => this.pending.set(seq, { resolve, reject }));
    const transfer: ArrayBuffer[] = [];
    const items = files.map(({ shown, bytes }) => {
      const ab = bytes.buffer as ArrayBuffer;
      // Only a view that owns its whole ArrayBuffer is moved; anything else (a pool slice) is copied.
      const owns = bytes.byteOffset === 0 && bytes.byteLength === ab.byteLength && !transfer.includes(ab);
      const data = owns ? ab : ab.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
      transfer.push(data);
      return { shown, data, length: bytes.byteLength };
    });
    this.worker.postMessage({ type: 'files', id: this.id, seq, files: items }, transfer);
    if (this.pending.size === 1) this.arm();
    return guarded(p);
  }

  /** The search finished normally: keep the worker for the next call (or end it if one is kept). */
  release(): void {
    if (this.ended) return; // already released, or failed (and terminated by fail)
    // In-flight files after a cut are skipped by the worker at once; anything else outstanding
    // is unknown work, so such a worker is not reused.
    const reusable = this.failed === undefined && (this.pending.size === 0 || this.stopped);
    this.detach();
    if (reusable && idle === undefined) {
      this.worker.unref();
      idle = this.worker;
    } else {
      this.terminated = this.worker.terminate().then(() => undefined);
    }
  }

  /** The search failed or was abandoned: terminate the worker (awaited). */
  discard(): Promise<void> {
    if (this.ended && !this.terminated) return Promise.resolve(); // released: the worker is no longer ours
    if (!this.terminated) {
      this.detach();
      this.terminated = this.worker.terminate().then(() => undefined);
    }
    return this.terminated;
  }

  private detach(): void {
    this.ended = true;
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this.onAbort);
    this.worker.off('message', this.onMessage);
    this.worker.off('error', this.onError);
    this.worker.off('exit', this.onExit);
  }

  private arm(): void {
    clearTimeout(this.timer);
    const left = Math.max(0, this.budgetMs - this.usedMs);
    this.timer = setTimeout(() => void this.fail(this.tooSlow()), left);
  }

  private tooSlow(): ToolError {
    return new ToolError(
      `The pattern ${JSON.stringify(this.opts.pattern)} took too long to match (over ${this.budgetMs / 1000} s; possible ` +
        'catastrophic backtracking, e.g. nested quantifiers like (a+)+); simplify it, narrow the path or glob, or pass fixedString: true.',
    );
  }

  private reply(r: Reply): void {
    if (r.id !== this.id) return; // a stale answer from an earlier search on this worker
    const p = this.pending.get(r.seq);
    if (!p) return;
    this.pending.delete(r.seq);
    this.usedMs += r.ms;
    if (r.results.some((f) => f.cut !== undefined)) this.stopped = true;
    if (this.usedMs > this.budgetMs) {
      p.reject(this.tooSlow());
      void this.fail(this.tooSlow());
      return;
    }
    if (this.pending.size > 0) this.arm();
    else clearTimeout(this.timer);
    p.resolve(r.results.map((f) => (f.cut === undefined ? { searched: f.searched, lines: f.lines } : { searched: f.searched, lines: f.lines, cut: f.cut })));
  }

  private async fail(err: unknown): Promise<void> {
    if (this.failed !== undefined || this.ended) return;
    this.failed = err;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    await this.discard();
    for (const p of waiting) p.reject(err);
  }
}

function guarded<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}
