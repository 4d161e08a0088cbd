// Prints what hostile and normal documents cost through the real tools: web_fetch of a normal
// ~200 KB page (median of 10), of 1 MB of repeated `<title>`, and read_pdf of a ~1 KB PDF whose
// three nested FlateDecode streams decode to 4 GB; for each, the worst event-loop stall seen meanwhile.
// Usage: npm run build && node dist/bench/documents.js [titleBytes]
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import zlib from 'node:zlib';
import { readPdfTool } from '../agent/tools/builtin/pdf.js';
import { webFetchTool } from '../agent/tools/builtin/web/tools.js';
import type { Tool, ToolContext } from '../agent/tools/types.js';

const NORMAL =
  '<!doctype html><html><head><title>Guide</title></head><body><nav>menu</nav><main>' +
  '<h2>Section</h2><p>Some <b>bold</b> text with a <a href="/x">link</a>.</p><ul><li>one</li><li>two</li></ul>'.repeat(2000) +
  '</main></body></html>';

function ctx(workspace: string): ToolContext {
  const data = new Map<string, unknown>();
  return {
    workspace,
    signal: new AbortController().signal,
    conversationKey: 'console:bench',
    agentName: 'default',
    envAllowlist: [],
    state: { get: <T>(k: string) => data.get(k) as T | undefined, set: (k: string, v: unknown) => void data.set(k, v) },
  };
}

async function timed<I>(tool: Tool<I>, input: I, c: ToolContext): Promise<{ ms: number; maxStallMs: number; outcome: string }> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  const t = performance.now();
  let outcome: string;
  try {
    const r = await tool.execute(tool.input.parse(input), c, {});
    outcome = `ok (${typeof r.content === 'string' ? r.content.length : 'blocks'} chars)`;
  } catch (err) {
    outcome = `error: ${(err as Error).message.slice(0, 120)}`;
  }
  const ms = performance.now() - t;
  h.disable();
  return { ms, maxStallMs: h.max / 1e6, outcome };
}

function zerosDeflated(mb: number): Buffer {
  const block = zlib.deflateRawSync(Buffer.alloc(1 << 20), { level: 9, finishFlush: zlib.constants.Z_FULL_FLUSH });
  const n = mb * (1 << 20);
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE((((n % 65521) << 16) | 1) >>> 0);
  return Buffer.concat([Buffer.from([0x78, 0xda]), ...Array<Buffer>(mb).fill(block), Buffer.from([0x03, 0x00]), adler]);
}

function bombPdf(): Buffer {
  const data = zlib.deflateSync(zlib.deflateSync(zerosDeflated(4096), { level: 9 }), { level: 9 });
  const head = '%PDF-1.7\n';
  const objs = [
    '1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n',
    '2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n',
    '3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << >> >>\nendobj\n',
  ];
  const parts = [Buffer.from(head)];
  const offsets: number[] = [];
  let at = head.length;
  for (const o of objs) {
    offsets.push(at);
    parts.push(Buffer.from(o));
    at += o.length;
  }
  offsets.push(at);
  const s = Buffer.concat([
    Buffer.from(`4 0 obj\n<< /Length ${data.length} /Filter [/FlateDecode /FlateDecode /FlateDecode] >>\nstream\n`),
    data,
    Buffer.from('\nendstream\nendobj\n'),
  ]);
  parts.push(s);
  at += s.length;
  parts.push(Buffer.from(['xref', '0 5', '0000000000 65535 f ', ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n `), ''].join('\n')));
  parts.push(Buffer.from(`trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${at}\n%%EOF\n`));
  return Buffer.concat(parts);
}

async function main(): Promise<void> {
  const titleBytes = Number(process.argv[2] ?? 1024 * 1024);
  const bomb = '<title>'.repeat(Math.ceil(titleBytes / 7));
  const server = http.createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(req.url === '/bomb' ? bomb : NORMAL));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fetch = webFetchTool({ network: () => ({ allow: ['127.0.0.1'] }) });
  const c = ctx('/nonexistent');
  const runs: number[] = [];
  for (let i = 0; i < 10; i++) runs.push((await timed(fetch, { url: `${base}/normal` }, c)).ms);
  runs.sort((a, b) => a - b);
  console.log(
    `web_fetch normal page (${(NORMAL.length / 1024).toFixed(0)} KB): median ${runs[5]!.toFixed(0)} ms, slowest ${runs.at(-1)!.toFixed(0)} ms (the first pays for starting the worker)`,
  );
  const b = await timed(fetch, { url: `${base}/bomb` }, c);
  console.log(
    `web_fetch ${(bomb.length / 1024).toFixed(0)} KB of <title>: ${b.ms.toFixed(0)} ms, worst event-loop stall ${b.maxStallMs.toFixed(0)} ms, ${b.outcome}`,
  );
  server.closeAllConnections();
  server.close();

  const dir = await mkdtemp(path.join(os.tmpdir(), 'gh-bench-docs-'));
  await mkdir(path.join(dir, 'ws'));
  const pdf = bombPdf();
  await writeFile(path.join(dir, 'ws', 'bomb.pdf'), pdf);
  const rssBefore = process.memoryUsage.rss();
  const p = await timed(readPdfTool(), { path: 'bomb.pdf' }, ctx(path.join(dir, 'ws')));
  console.log(
    `read_pdf ${pdf.length}-byte nested-Flate bomb: ${p.ms.toFixed(0)} ms, worst stall ${p.maxStallMs.toFixed(0)} ms, RSS +${((process.memoryUsage.rss() - rssBefore) / 1048576).toFixed(0)} MB after, ${p.outcome}`,
  );
  process.exit(0);
}

void main();
