/**
 * The document worker: where untrusted documents are parsed, never on the bot's event loop. A page
 * of 1 MB of repeated `<title>` or a 5 KB PDF whose nested streams decode to gigabytes must cost
 * one tool call a clear error, not the bot its /healthz or its life.
 *
 * Contract:
 *   const value = await runDocJob('html' | 'pdf' | 'mcp', payload, { what, signal, budget?, transfer? })
 * - The job runs in a worker_threads Worker (body: ./worker-source.ts) with a budget:
 *   timeMs (wall time, default per kind), heapMb (resourceLimits, old and young generation),
 *   maxAllocationBytes (one buffer: one decoded PDF stream), maxBufferBytes (all the worker's
 *   ArrayBuffers), maxRssGrowthBytes (the process's RSS over its value when the job started,
 *   sampled from the main thread: the backstop for memory no wrapper sees, e.g. WebAssembly; it is
 *   the whole process's, so a job that runs while another one blows up may be stopped with it).
 * - Over any budget the worker is terminated (its exit awaited) and the call rejects with a ToolError
 *   that names `what` and the budget that ran out; an abort of `signal` terminates it too and
 *   rejects with a ToolError, as does a payload the structured clone refuses (nested too deeply for
 *   it: the main thread never walks the payload itself). An error thrown by the job itself rejects with a DocJobError carrying
 *   the library's name and message, for the caller to word.
 * - Pools: per heap size (documents: DOC_WORKER_HEAP_MB; MCP results: MCP_WORKER_HEAP_MB) at most
 *   one idle worker is kept (unref'd: it never holds the process open) and reused after a job that
 *   ended normally and left little memory behind; concurrent jobs each get their own worker. A worker that ran over, failed or was aborted is never reused. closeDocWorkers()
 *   ends the idle one.
 * - docWorkerEvents emits 'start' and 'end' (with the job's id and kind) so tests can tell, by
 *   events, that the bot's event loop answered while a job was running.
 */
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ToolError } from '../types.js';
import { OVER_EXIT_CODE, WORKER_SOURCE } from './worker-source.js';
import { messageOf } from '../../log.js';

export type DocJobKind = 'html' | 'pdf' | 'mcp';

export interface DocBudget {
  timeMs: number;
  heapMb: number;
  maxAllocationBytes: number;
  maxBufferBytes: number;
  maxRssGrowthBytes: number;
}

const MB = 1024 * 1024;
/** Heap of every document worker (one pool, so one size): a 5 MB page's DOM fits well within it. */
const DOC_WORKER_HEAP_MB = 512;
/** Heap of the workers that convert MCP results. */
const MCP_WORKER_HEAP_MB = 256;
export const DOC_BUDGETS: Readonly<Record<DocJobKind, DocBudget>> = {
  html: { timeMs: 20_000, heapMb: DOC_WORKER_HEAP_MB, maxAllocationBytes: 64 * MB, maxBufferBytes: 256 * MB, maxRssGrowthBytes: 1024 * MB },
  // One decoded PDF stream may be 64 MB (a content stream or font; images are not decoded for text).
  pdf: { timeMs: 60_000, heapMb: DOC_WORKER_HEAP_MB, maxAllocationBytes: 64 * MB, maxBufferBytes: 512 * MB, maxRssGrowthBytes: 1024 * MB },
  // An MCP result is one message of at most 16 MB (the transport's cap): parsing and converting it
  // takes well under a second and a few times its size in heap; its own, smaller pool of one.
  mcp: { timeMs: 15_000, heapMb: MCP_WORKER_HEAP_MB, maxAllocationBytes: 64 * MB, maxBufferBytes: 128 * MB, maxRssGrowthBytes: 1024 * MB },
};
/** How often the main thread samples the process's RSS while a job runs. */
const RSS_SAMPLE_MS = 25;
/** An idle worker is reused only while it holds less than this (heap plus buffers) after its job. */
const REUSE_MAX_BYTES = 256 * MB;
const REUSE_MAX_JOBS = 100;

/** An error the job's own code threw (a broken or encrypted PDF): name and message of the library's error. */
export class DocJobError extends Error {
  constructor(
    readonly libName: string,
    message: string,
  ) {
    super(message);
    this.name = 'DocJobError';
  }
}

export const docWorkerEvents = new EventEmitter<{ start: [{ id: number; kind: DocJobKind }]; end: [{ id: number; kind: DocJobKind }] }>();

let modules: { turndown: string; domino: string; unpdf: string } | undefined;
function moduleEntries(): NonNullable<typeof modules> {
  if (!modules) {
    const req = createRequire(import.meta.url);
    const turndown = req.resolve('turndown'); // its Node build (CommonJS), which requires domino itself
    const domino = createRequire(turndown).resolve('@mixmark-io/domino');
    const cjs = req.resolve('unpdf');
    const mjs = cjs.replace(/\.cjs$/, '.mjs');
    modules = { turndown, domino, unpdf: pathToFileURL(existsSync(mjs) ? mjs : cjs).href };
  }
  return modules;
}

interface Slot {
  worker: Worker;
  jobs: number;
}

/** The idle worker of each pool, by heap size (DOC_WORKER_HEAP_MB, MCP_WORKER_HEAP_MB). */
const idle = new Map<number, Slot>();
const POOLED_HEAPS = new Set([DOC_WORKER_HEAP_MB, MCP_WORKER_HEAP_MB]);
let nextId = 1;
let live = 0;

/** Workers alive now (busy or idle): for tests and diagnostics. */
export function docWorkerStats(): { live: number; idle: boolean } {
  return { live, idle: idle.size > 0 };
}

/** Ends the idle worker (busy ones end with their job). For shutdown and tests. */
export async function closeDocWorkers(): Promise<void> {
  const all = [...idle.values()];
  idle.clear();
  await Promise.all(all.map((s) => s.worker.terminate()));
}

function spawn(heapMb: number): Slot {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { modules: moduleEntries() },
    resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: Math.min(32, Math.max(4, Math.floor(heapMb / 8))) },
  });
  live++;
  worker.once('exit', () => {
    live--;
    if (idle.get(heapMb)?.worker === worker) idle.delete(heapMb);
  });
  worker.on('error', () => undefined); // an idle worker that dies is just forgotten (exit above)
  return { worker, jobs: 0 };
}

type Answer =
  | { id: number; ok: true; value: unknown; mem: { heapUsed: number; arrayBuffers: number } }
  | { id: number; ok: false; name: string; message: string };
type Reply = Answer | { id: number; over: 'allocation' | 'buffers'; bytes: number };

export interface DocJobOptions {
  /** What is being read, for the error: "reading report.pdf", "converting the page". */
  what: string;
  signal: AbortSignal;
  budget?: Partial<DocBudget>;
  /** ArrayBuffers in the payload to move rather than copy. */
  transfer?: ArrayBuffer[];
}

function mb(bytes: number): string {
  return `${Math.round(bytes / MB)} MB`;
}

/** Runs one job in a document worker within its budget (see the contract). */
export async function runDocJob<T>(kind: DocJobKind, payload: unknown, opts: DocJobOptions): Promise<T> {
  opts.signal.throwIfAborted();
  const budget: DocBudget = { ...DOC_BUDGETS[kind], ...opts.budget };
  // A pooled worker has its pool's heap; a job that asks for another heap size gets its own.
  const pooled = POOLED_HEAPS.has(budget.heapMb);
  let slot: Slot;
  const reuse = pooled ? idle.get(budget.heapMb) : undefined;
  if (reuse) {
    slot = reuse;
    idle.delete(budget.heapMb);
  } else slot = spawn(budget.heapMb);
  const { worker } = slot;
  worker.ref();
  const id = nextId++;
  const rssAtStart = process.memoryUsage.rss();
  let reusable = false;
  docWorkerEvents.emit('start', { id, kind });
  try {
    const reply = await new Promise<Answer>((resolve, reject) => {
      const cleanups: Array<() => void> = [];
      const settle = (fn: () => void) => {
        for (const c of cleanups.splice(0)) c();
        fn();
      };
      const timer = setTimeout(
        () => settle(() => reject(new ToolError(`${opts.what} took longer than its time budget of ${budget.timeMs / 1000} s and was stopped.`))),
        budget.timeMs,
      );
      cleanups.push(() => clearTimeout(timer));
      const sampler = setInterval(() => {
        const grown = process.memoryUsage.rss() - rssAtStart;
        if (grown > budget.maxRssGrowthBytes) {
          settle(() =>
            reject(new ToolError(`${opts.what} used more memory than its budget (the bot grew by over ${mb(budget.maxRssGrowthBytes)}) and was stopped.`)),
          );
        }
      }, RSS_SAMPLE_MS);
      cleanups.push(() => clearInterval(sampler));
      const onAbort = () => settle(() => reject(new ToolError(`${opts.what} was stopped.`)));
      opts.signal.addEventListener('abort', onAbort, { once: true });
      cleanups.push(() => opts.signal.removeEventListener('abort', onAbort));
      if (opts.signal.aborted) return onAbort(); // aborted before the listener was in place (e.g. by a 'start' listener)
      const onMessage = (m: Reply) => {
        if (m.id !== id) return;
        if ('over' in m) settle(() => reject(overError(opts.what, m.over, m.bytes, budget)));
        else settle(() => resolve(m));
      };
      worker.on('message', onMessage);
      cleanups.push(() => worker.off('message', onMessage));
      const onError = (err: Error) => {
        const oom = (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
        settle(() =>
          reject(
            new ToolError(
              oom ? `${opts.what} used more memory than its budget (a ${budget.heapMb} MB heap) and was stopped.` : `${opts.what} failed (${err.message}).`,
            ),
          ),
        );
      };
      worker.on('error', onError);
      cleanups.push(() => worker.off('error', onError));
      const onExit = (code: number) => {
        settle(() =>
          reject(
            code === OVER_EXIT_CODE
              ? overError(opts.what, 'allocation', 0, budget)
              : new ToolError(`${opts.what} failed: the document worker stopped unexpectedly (exit code ${code}).`),
          ),
        );
      };
      worker.on('exit', onExit);
      cleanups.push(() => worker.off('exit', onExit));
      try {
        worker.postMessage(
          { id, kind, payload, limits: { maxAllocationBytes: budget.maxAllocationBytes, maxBufferBytes: budget.maxBufferBytes } },
          opts.transfer ?? [],
        );
      } catch (err) {
        // The structured clone refused the payload (nested too deeply for its recursion, or not cloneable).
        const deep = (err as Error | undefined)?.name === 'RangeError'; // by name: the error may come from another realm
        settle(() =>
          reject(
            new ToolError(
              `${opts.what} failed: ${deep ? 'the data is nested too deeply to be handed to the document worker' : `the data could not be handed to the document worker (${messageOf(err)})`}.`,
            ),
          ),
        );
      }
    });
    if (!reply.ok) {
      reusable = true;
      throw new DocJobError(reply.name, reply.message);
    }
    reusable = reply.mem.heapUsed + reply.mem.arrayBuffers < REUSE_MAX_BYTES;
    return reply.value as T;
  } finally {
    docWorkerEvents.emit('end', { id, kind });
    slot.jobs++;
    if (reusable && !idle.has(budget.heapMb) && slot.jobs < REUSE_MAX_JOBS && pooled) {
      worker.unref();
      idle.set(budget.heapMb, slot);
    } else {
      await worker.terminate();
    }
  }
}

function overError(what: string, kind: 'allocation' | 'buffers', bytes: number, budget: DocBudget): ToolError {
  if (kind === 'buffers') {
    return new ToolError(
      `${what} used more memory than its budget (${mb(bytes)} of decoded data; the budget is ${mb(budget.maxBufferBytes)}) and was stopped.`,
    );
  }
  return new ToolError(
    `${what} was stopped: one decoded stream or buffer went over its memory budget of ${mb(budget.maxAllocationBytes)} ` +
      '(a compression bomb, or a stream too large to read).',
  );
}
