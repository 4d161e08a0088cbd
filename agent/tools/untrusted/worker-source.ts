/**
 * The body of the document worker (./doc-worker.ts), as plain JavaScript run with `eval: true`: it
 * needs no file next to the compiled module and no TypeScript loader inside the worker (jest's
 * @swc/jest transform does not apply inside a Worker). Libraries are loaded by the absolute paths
 * the main thread resolved (workerData.modules), on first use.
 *
 * Protocol (one job at a time per worker):
 *   in:  { id, kind: 'html' | 'pdf' | 'mcp', payload, limits: { maxAllocationBytes, maxBufferBytes } }
 *   out: { id, ok: true, value, mem } | { id, ok: false, name, message }
 *        | { id, over: 'allocation' | 'buffers', bytes }  -- then the worker exits with OVER_EXIT_CODE
 *
 * Decoded buffers live outside the V8 heap, so resourceLimits do not bound them. Every typed-array
 * and ArrayBuffer constructor is wrapped, before any library loads: one allocation over
 * maxAllocationBytes (pdf.js grows one buffer per decoded stream, so this bounds each stream, nested
 * filter chains included), or this worker's ArrayBuffer total over maxBufferBytes, ends the worker at
 * once. It exits rather than throws because libraries catch and carry on (pdf.js skips a broken
 * content stream and tries the next).
 */
import { MCP_RESULT_SOURCE } from './mcp-result-source.js';

export const OVER_EXIT_CODE = 87;

export const WORKER_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const OVER_EXIT_CODE = ${OVER_EXIT_CODE};
// pdf.js warns on the console about every broken file: not the bot's log. (A piped stdout would
// keep the process alive for an idle, unref'd worker.)
for (const k of ['log', 'info', 'warn', 'error', 'debug', 'trace']) console[k] = () => {};
let job = null;
let sinceCheck = 0;
const CHECK_EVERY = 8 * 1024 * 1024;

function over(kind, bytes) {
  try { parentPort.postMessage({ id: job ? job.id : 0, over: kind, bytes }); } catch {}
  process.exit(OVER_EXIT_CODE);
}

// One buffer (or one decoded stream) of "bytes"; every CHECK_EVERY bytes the worker's ArrayBuffer
// total is checked as well.
function account(bytes, single) {
  if (!job || !(bytes > 0)) return;
  if (single > job.limits.maxAllocationBytes) over('allocation', single);
  sinceCheck += bytes;
  if (bytes >= CHECK_EVERY || sinceCheck >= CHECK_EVERY) {
    sinceCheck = 0;
    const m = process.memoryUsage();
    if (m.arrayBuffers + bytes > job.limits.maxBufferBytes) over('buffers', m.arrayBuffers + bytes);
  }
}

function sizeOf(C, args) {
  const a = args[0];
  const per = C.BYTES_PER_ELEMENT || 1;
  if (typeof a === 'number') return a * per;
  if (a === null || typeof a !== 'object') return 0;
  if (a instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && a instanceof SharedArrayBuffer)) return 0; // a view: no new memory
  if (typeof a.length === 'number') return a.length * per;
  return 0;
}

// JavaScript decoders (pdf.js's own Flate, LZW, RunLength... streams) grow one buffer per stream.
for (const name of ['ArrayBuffer', 'Uint8Array', 'Uint8ClampedArray', 'Int8Array', 'Uint16Array', 'Int16Array', 'Uint32Array',
  'Int32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
  const C = globalThis[name];
  if (typeof C !== 'function') continue;
  globalThis[name] = new Proxy(C, {
    construct(target, args, newTarget) {
      const n = sizeOf(target, args);
      account(n, n);
      return Reflect.construct(target, args, newTarget);
    },
  });
}

// Native decompression (pdf.js 5 inflates content streams through DecompressionStream; its chunks
// are allocated by zlib, which no constructor above sees): count each stream's output as it comes.
const NativeDecompressionStream = globalThis.DecompressionStream;
if (typeof NativeDecompressionStream === 'function') {
  globalThis.DecompressionStream = class DecompressionStream {
    constructor(format) {
      const inner = new NativeDecompressionStream(format);
      let total = 0;
      this.writable = inner.writable;
      this.readable = inner.readable.pipeThrough(new TransformStream({
        transform(chunk, controller) {
          total += chunk.byteLength;
          account(chunk.byteLength, total);
          controller.enqueue(chunk);
        },
      }));
    }
  };
}

// ---- HTML -> markdown (turndown on a DOM built by domino, turndown's own HTML parser) ----
const REMOVED = ['head', 'title', 'script', 'style', 'noscript', 'template', 'nav', 'header', 'footer', 'aside', 'form', 'iframe',
  'svg', 'canvas', 'button', 'select', 'input', 'textarea', 'object', 'embed'];
const TITLE_MAX = 500;
let turndownLib = null;
let dominoLib = null;
function html(p) {
  dominoLib = dominoLib || require(workerData.modules.domino);
  turndownLib = turndownLib || require(workerData.modules.turndown);
  const doc = dominoLib.createDocument(p.html);
  let title = (doc.title || '').replace(/\s+/g, ' ').trim();
  if (title.length > TITLE_MAX) title = title.slice(0, TITLE_MAX) + '\u2026';
  const root = doc.querySelector('main') || doc.querySelector('article') || doc.body || doc.documentElement;
  const td = new turndownLib({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
  td.remove(REMOVED);
  const markdown = root ? td.turndown(root).replace(/\n{3,}/g, '\n\n').trim() : '';
  return { title, markdown };
}

// ---- PDF text (unpdf / pdf.js) ----
let unpdfLib = null;
async function pdf(p) {
  unpdfLib = unpdfLib || (await import(workerData.modules.unpdf));
  const doc = await unpdfLib.getDocumentProxy(new Uint8Array(p.bytes));
  try {
    const pages = [];
    let chars = 0;
    for (const n of p.pages) {
      if (n > doc.numPages || chars >= p.maxChars) break;
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items) {
        if (typeof item.str !== 'string') continue;
        text += item.str;
        if (item.hasEOL) text += '\n';
      }
      page.cleanup();
      chars += text.length;
      pages.push({ n, text });
    }
    return { numPages: doc.numPages, pages };
  } finally {
    await doc.destroy().catch(() => {});
  }
}

// ---- an MCP server's tools/call result (./mcp-result-source.ts) ----
${MCP_RESULT_SOURCE}

const KINDS = { html, pdf, mcp };
parentPort.on('message', async (m) => {
  job = m;
  sinceCheck = 0;
  try {
    const run = KINDS[m.kind];
    if (!run) throw new Error('unknown job kind ' + m.kind);
    const value = await run(m.payload);
    job = null;
    const u = process.memoryUsage();
    parentPort.postMessage({ id: m.id, ok: true, value, mem: { heapUsed: u.heapUsed, arrayBuffers: u.arrayBuffers } });
  } catch (e) {
    job = null;
    parentPort.postMessage({ id: m.id, ok: false, name: (e && e.name) || 'Error', message: String((e && e.message) || e) });
  }
});
`;
