// Hostile documents run for real through the real tools: a page of 2 MB of repeated `<title>`
// through web_fetch from a 127.0.0.1 server, and a ~1 KB PDF whose three nested FlateDecode streams
// decode to 4 GB through read_pdf. What must NOT happen: the bot's event loop stalling (a /healthz
// server on this same loop must answer while the page is being converted) and the process' memory
// exploding (the bomb ends as a tool error with RSS bounded). Controls show the probes can fail:
// the same parse on the main thread starves /healthz, and the same bomb without the per-stream cap
// is still stopped, by the memory watch.
import { createRequire } from 'node:module';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { readPdfTool } from '../../../agent/tools/builtin/pdf.js';
import { webFetchTool } from '../../../agent/tools/builtin/web/tools.js';
import { ToolError } from '../../../agent/tools/types.js';
import { closeDocWorkers, docWorkerEvents, docWorkerStats } from '../../../agent/tools/untrusted/doc-worker.js';
import { makeCtx, removeDir, run, tempDir } from './builtin-helpers.js';
import { healthzProbe } from '../../helpers/loop-probe.js';

const SLOW = 90_000;

// ---- servers on 127.0.0.1 -------------------------------------------------------------------

const closers: Array<() => Promise<void>> = [];
async function listen(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterAll(async () => {
  await Promise.all(closers.map((c) => c()));
  await closeDocWorkers();
});

// ---- web_fetch --------------------------------------------------------------------------------

const TITLE_BOMB = '<title>'.repeat(300_000); // 2.1 MB: the old regexes took minutes on this

describe('web_fetch on a hostile page', () => {
  test(
    '2 MB of repeated <title> is converted off the event loop: /healthz answers during the conversion',
    async () => {
      const site = await listen((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(TITLE_BOMB));
      const probe = await healthzProbe(closers);
      const onStart = ({ kind }: { kind: string }) => kind === 'html' && probe.begin();
      const onEnd = ({ kind }: { kind: string }) => kind === 'html' && probe.end();
      docWorkerEvents.on('start', onStart);
      docWorkerEvents.on('end', onEnd);
      try {
        const out = await run(webFetchTool({ network: () => ({ allow: ['127.0.0.1'] }) }), { url: site }, makeCtx('/nonexistent'));
        expect(out).toContain('Status: 200 OK');
        // The title is everything after the first <title> (RCDATA), cut to a header-sized line.
        const title = out.split('\n').find((l) => l.startsWith('Title: '))!;
        expect(title.length).toBeLessThan(600);
        expect(title).toMatch(/^Title: <title><title>.*…$/);
      } finally {
        docWorkerEvents.off('start', onStart);
        docWorkerEvents.off('end', onEnd);
        await probe.settled();
      }
      expect(probe.answeredWhileBusy()).toBeGreaterThan(0);
    },
    SLOW,
  );

  test(
    'control: the same page parsed on the main thread starves /healthz (the probe can fail)',
    async () => {
      const domino = createRequire(import.meta.url)('@mixmark-io/domino') as { createDocument(html: string): { title: string } };
      const probe = await healthzProbe(closers);
      probe.begin();
      domino.createDocument(TITLE_BOMB); // synchronous, as the old in-process conversion was
      probe.end();
      await probe.settled();
      expect(probe.answeredWhileBusy()).toBe(0);
    },
    SLOW,
  );

  test(
    'the end of the time budget is a clear tool error, and the next page converts normally',
    async () => {
      const site = await listen((req, res) =>
        res.writeHead(200, { 'content-type': 'text/html' }).end(req.url === '/ok' ? '<title>Fine</title><main><h1>Hello</h1></main>' : TITLE_BOMB),
      );
      const ctx = makeCtx('/nonexistent');
      const network = () => ({ allow: ['127.0.0.1'] });
      const err = await run(webFetchTool({ network, htmlBudget: { timeMs: 1 } }), { url: `${site}/bomb` }, ctx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ToolError);
      expect((err as Error).message).toMatch(/^converting the page took longer than its time budget of 0\.001 s and was stopped/);
      const out = await run(webFetchTool({ network }), { url: `${site}/ok` }, ctx);
      expect(out).toContain('Title: Fine');
      expect(out).toContain('# Hello');
    },
    SLOW,
  );

  test(
    'an abort (/stop, the executor timeout) during the conversion ends the worker and answers a tool error',
    async () => {
      const site = await listen((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(TITLE_BOMB));
      const ac = new AbortController();
      const onStart = () => ac.abort();
      docWorkerEvents.once('start', onStart);
      const before = docWorkerStats().live;
      const err = await run(webFetchTool({ network: () => ({ allow: ['127.0.0.1'] }) }), { url: site }, makeCtx('/nonexistent', { signal: ac.signal })).catch(
        (e: unknown) => e,
      );
      docWorkerEvents.off('start', onStart);
      expect(err).toBeInstanceOf(ToolError);
      expect((err as Error).message).toBe('converting the page was stopped.');
      expect(docWorkerStats().live).toBeLessThanOrEqual(before); // the aborted worker was terminated, not pooled
    },
    SLOW,
  );

  test(
    'a page whose DOM outgrows the heap budget is a clear tool error, not a dead bot',
    async () => {
      // 4 MB of empty elements: tens of bytes of markup each become a DOM node of hundreds of bytes.
      const site = await listen((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<b></b>'.repeat(600_000)));
      const err = await run(
        webFetchTool({ network: () => ({ allow: ['127.0.0.1'] }), htmlBudget: { heapMb: 32 } }),
        { url: site },
        makeCtx('/nonexistent'),
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ToolError);
      expect((err as Error).message).toMatch(/converting the page used more memory than its budget \(a 32 MB heap\) and was stopped/);
    },
    SLOW,
  );
});

// ---- read_pdf ---------------------------------------------------------------------------------

/** zlib data of `mb` MiB of zeros, made without ever holding them: one full-flushed 1 MiB block repeated. */
function zerosDeflated(mb: number): Buffer {
  const block = zlib.deflateRawSync(Buffer.alloc(1 << 20), { level: 9, finishFlush: zlib.constants.Z_FULL_FLUSH });
  const n = mb * (1 << 20);
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE((((n % 65521) << 16) | 1) >>> 0);
  return Buffer.concat([Buffer.from([0x78, 0xda]), ...Array<Buffer>(mb).fill(block), Buffer.from([0x03, 0x00]), adler]);
}

/** A one-page PDF whose content stream is `data` with the given filter chain. */
function pdfWithContent(data: Buffer, filters: string[]): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n')];
  const offsets: number[] = [];
  let at = parts[0]!.length;
  const add = (b: Buffer) => {
    parts.push(b);
    at += b.length;
  };
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << >> >>',
  ];
  objects.forEach((o, i) => {
    offsets.push(at);
    add(Buffer.from(`${i + 1} 0 obj\n${o}\nendobj\n`));
  });
  offsets.push(at);
  add(Buffer.from(`4 0 obj\n<< /Length ${data.length} /Filter [${filters.map((f) => `/${f}`).join(' ')}] >>\nstream\n`));
  add(data);
  add(Buffer.from('\nendstream\nendobj\n'));
  const xref = at;
  add(Buffer.from(['xref', '0 5', '0000000000 65535 f ', ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n `), ''].join('\n')));
  add(Buffer.from(`trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`));
  return Buffer.concat(parts);
}

/** Three nested FlateDecode layers that decode to 4 GiB of zeros. */
function nestedFlateBomb(): Buffer {
  const inner = zerosDeflated(4096); // 4 GiB -> ~4 MB
  const middle = zlib.deflateSync(inner, { level: 9 }); // -> ~10 KB
  const outer = zlib.deflateSync(middle, { level: 9 }); // -> a few hundred bytes
  return pdfWithContent(outer, ['FlateDecode', 'FlateDecode', 'FlateDecode']);
}

/**
 * The same class through pdf.js's own JavaScript decoders: Flate (native) to 32 MB of RunLength
 * data, each 2 bytes of which become 128 zeros: 2 GB.
 */
function runLengthBomb(): Buffer {
  const rl = Buffer.alloc(32 * 1024 * 1024);
  for (let i = 0; i < rl.length; i += 2) rl[i] = 129; // 257 - 129 = 128 copies of the next byte (0)
  const data = zlib.deflateSync(zlib.deflateSync(rl, { level: 9 }), { level: 9 });
  return pdfWithContent(data, ['FlateDecode', 'FlateDecode', 'RunLengthDecode']);
}

/** Peak growth of this process' RSS while `work` runs (sampled on this loop, which stays free). */
async function peakRssGrowth<T>(work: () => Promise<T>): Promise<{ result: T | unknown; growth: number }> {
  const start = process.memoryUsage.rss();
  let peak = start;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
  try {
    const result = await work().catch((e: unknown) => e);
    return { result, growth: Math.max(peak, process.memoryUsage.rss()) - start };
  } finally {
    clearInterval(timer);
  }
}

describe('read_pdf on a compression bomb', () => {
  let base: string;
  let ws: string;
  beforeAll(async () => {
    base = await tempDir('gh-docbomb-');
    ws = path.join(base, 'ws');
    await mkdir(ws);
    const bomb = nestedFlateBomb();
    expect(bomb.length).toBeLessThan(5 * 1024);
    await writeFile(path.join(ws, 'bomb.pdf'), bomb);
    await writeFile(path.join(ws, 'rl-bomb.pdf'), runLengthBomb());
    await writeFile(path.join(ws, 'fine.pdf'), pdfWithContent(zlib.deflateSync('BT /F1 12 Tf 72 700 Td (Hello) Tj ET'), ['FlateDecode']));
  });
  afterAll(async () => {
    await removeDir(base);
  });

  test(
    'a 1 KB PDF whose nested FlateDecode streams decode to 4 GB: a clear tool error, memory bounded, the bot alive',
    async () => {
      const { result, growth } = await peakRssGrowth(() => run(readPdfTool(), { path: 'bomb.pdf' }, makeCtx(ws)));
      expect(result).toBeInstanceOf(ToolError);
      expect((result as Error).message).toMatch(
        /^reading bomb\.pdf was stopped: one decoded stream or buffer went over its memory budget of 64 MB \(a compression bomb/,
      );
      expect(growth).toBeLessThan(600 * 1024 * 1024);
      expect(docWorkerStats().live).toBeLessThanOrEqual(1); // the bomb's worker is gone; at most the idle one is left
      // The pool still reads PDFs.
      expect(await run(readPdfTool(), { path: 'fine.pdf' }, makeCtx(ws))).toContain('fine.pdf: 1 page');
    },
    SLOW,
  );

  test(
    'a RunLength bomb (decoded by pdf.js in JavaScript, not by zlib) is stopped at the same per-stream cap',
    async () => {
      const { result, growth } = await peakRssGrowth(() => run(readPdfTool(), { path: 'rl-bomb.pdf' }, makeCtx(ws)));
      expect(result).toBeInstanceOf(ToolError);
      expect((result as Error).message).toMatch(/^reading rl-bomb\.pdf was stopped: one decoded stream or buffer went over its memory budget of 64 MB/);
      expect(growth).toBeLessThan(600 * 1024 * 1024);
    },
    SLOW,
  );

  test(
    'control: without the per-stream cap the same bomb is stopped by the memory watch',
    async () => {
      const budget = { maxAllocationBytes: Infinity, maxBufferBytes: Infinity, maxRssGrowthBytes: 200 * 1024 * 1024 };
      const { result, growth } = await peakRssGrowth(() => run(readPdfTool({ budget }), { path: 'bomb.pdf' }, makeCtx(ws)));
      expect(result).toBeInstanceOf(ToolError);
      expect((result as Error).message).toMatch(/^reading bomb\.pdf used more memory than its budget \(the bot grew by over 200 MB\) and was stopped/);
      expect(growth).toBeLessThan(1500 * 1024 * 1024);
    },
    SLOW,
  );

  test(
    "control: without the per-stream cap, the worker's total of decoded buffers stops it",
    async () => {
      const budget = { maxAllocationBytes: Infinity, maxBufferBytes: 100 * 1024 * 1024 };
      const result = await run(readPdfTool({ budget }), { path: 'bomb.pdf' }, makeCtx(ws)).catch((e: unknown) => e);
      expect(result).toBeInstanceOf(ToolError);
      expect((result as Error).message).toMatch(
        /^reading bomb\.pdf used more memory than its budget \(\d+ MB of decoded data; the budget is 100 MB\) and was stopped/,
      );
    },
    SLOW,
  );
});
