/**
 * Hostile tools/call results from a real SDK McpServer (test/fakes/mcp-server.mjs, tool
 * hostile_result, over stdio, and over Streamable HTTP) through the real manager: 200k content blocks, 12 MB of text, a
 * structuredContent nested 100k deep. What must NOT happen: the bot's event loop stalling while the
 * result is converted (a /healthz server on this loop answers during the 'mcp' job, by events), the
 * bot crashing on the nesting, or an uncapped result. Over its budget the conversion is an error
 * result naming the server, the tool and the budget, and the next call converts normally.
 * Controls: the SDK's own result schema plus a structured clone of the same 200k blocks on the main
 * thread starve /healthz (the probe can fail), and the deep result cannot even be structured-cloned.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { scanResultEnvelope } from '../../../agent/mcp/envelope.js';
import { McpManager } from '../../../agent/mcp/manager.js';
import { convertResult, MAX_IMAGES, MAX_OUTPUT_BYTES } from '../../../agent/mcp/result.js';
import { closeDocWorkers, docWorkerEvents, docWorkerStats } from '../../../agent/tools/untrusted/doc-worker.js';
import { startHttpServer, stdioServer } from './helpers.js';
import { healthzProbe } from '../../helpers/loop-probe.js';

const SLOW = 120_000;
const never = new AbortController().signal;
let manager: McpManager | undefined;
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  await manager?.close();
  manager = undefined;
});
afterAll(async () => {
  await Promise.all(closers.map((c) => c()));
  await closeDocWorkers();
});

function managerFor(): McpManager {
  manager = new McpManager({ servers: (agent) => (agent === 'ops' ? { fx: stdioServer({}, 60_000) } : undefined) });
  return manager;
}

const text = (r: { content: unknown }) => (typeof r.content === 'string' ? r.content : JSON.stringify(r.content));

/** Runs `fn` with the probe busy exactly while an 'mcp' job runs in the worker. */
async function probed<T>(fn: () => Promise<T>): Promise<{ value: T; answered: number; jobs: number }> {
  const probe = await healthzProbe(closers);
  let jobs = 0;
  const onStart = ({ kind }: { kind: string }) => kind === 'mcp' && (jobs++, probe.begin());
  const onEnd = ({ kind }: { kind: string }) => kind === 'mcp' && probe.end();
  docWorkerEvents.on('start', onStart);
  docWorkerEvents.on('end', onEnd);
  try {
    const value = await fn();
    return { value, answered: probe.answeredWhileBusy(), jobs };
  } finally {
    docWorkerEvents.off('start', onStart);
    docWorkerEvents.off('end', onEnd);
    await probe.settled();
  }
}

/** The cap as the main thread used to apply it (one joined text; head and tail kept): the expected output. */
function capAsBefore(text: string, max = MAX_OUTPUT_BYTES): string {
  const buf = Buffer.from(text);
  if (buf.length <= max) return text;
  const head = buf
    .subarray(0, Math.floor(max / 2))
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  const tail = buf
    .subarray(buf.length - (max - Math.floor(max / 2)))
    .toString('utf8')
    .replace(/^\uFFFD/, '');
  return `${head}\n[... output truncated: ${buf.length - Buffer.byteLength(head) - Buffer.byteLength(tail)} bytes omitted ...]\n${tail}`;
}

const manyBlocks = (n: number) => ({ content: Array.from({ length: n }, (_, i) => ({ type: 'text', text: `b${i}` })) });
const deep = (depth: number): unknown => {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
};

describe('hostile tools/call results from a real MCP server', () => {
  test(
    '200k content blocks: converted in the worker while /healthz answers; the text is capped with the marker',
    async () => {
      const m = managerFor();
      const { value, answered, jobs } = await probed(() => m.call('ops', 'fx', 'hostile_result', { shape: 'many_blocks', blocks: 200_000 }, never));
      expect(value.isError).toBeUndefined();
      const out = text(value);
      expect(out.startsWith('b0\nb1\nb2\n')).toBe(true);
      expect(out).toMatch(/\n\[\.\.\. output truncated: \d+ bytes omitted \.\.\.\]\n/);
      expect(out.endsWith('b199999')).toBe(true);
      expect(out).toBe(capAsBefore(Array.from({ length: 200_000 }, (_, i) => `b${i}`).join('\n')));
      expect(Buffer.byteLength(out)).toBeLessThan(MAX_OUTPUT_BYTES + 200);
      expect(jobs).toBe(1);
      expect(answered).toBeGreaterThan(0);
    },
    SLOW,
  );

  test(
    '12 MB of text: head and tail kept within 256 KB, /healthz answers during the conversion',
    async () => {
      const m = managerFor();
      const { value, answered } = await probed(() => m.call('ops', 'fx', 'hostile_result', { shape: 'huge', mb: 12 }, never));
      const out = text(value);
      expect(out.startsWith('HEADhhh')).toBe(true);
      expect(out.endsWith('hhhTAIL')).toBe(true);
      expect(out).toContain('[... output truncated: ');
      expect(Buffer.byteLength(out)).toBeLessThan(MAX_OUTPUT_BYTES + 200);
      expect(answered).toBeGreaterThan(0);
    },
    SLOW,
  );

  test(
    'structuredContent nested 100k deep: a normal result that says so; the bot neither crashes nor stalls',
    async () => {
      const m = managerFor();
      const { value, answered } = await probed(() => m.call('ops', 'fx', 'hostile_result', { shape: 'deep', depth: 100_000 }, never));
      expect(value.isError).toBeUndefined();
      expect(text(value)).toBe('[structured content not shown: it is nested too deeply to print]');
      expect(answered).toBeGreaterThan(0);
      // The connection and the worker pool are fine afterwards.
      expect(text(await m.call('ops', 'fx', 'echo', { text: 'still here' }, never))).toBe('{"text":"still here"}');
    },
    SLOW,
  );

  test(
    'over Streamable HTTP (the JSON body goes to the worker as text): 200k blocks end in the same capped result while /healthz answers',
    async () => {
      const web = await startHttpServer();
      closers.push(() => web.stop());
      const m = new McpManager({ servers: () => ({ web: { kind: 'http', url: web.url, headers: {}, timeoutMs: 60_000 } }) });
      manager = m;
      const { value, answered } = await probed(() => m.call('ops', 'web', 'hostile_result', { shape: 'many_blocks', blocks: 200_000 }, never));
      expect(answered).toBeGreaterThan(0);
      const out = text(value);
      expect(out.startsWith('b0\nb1\n')).toBe(true);
      expect(out).toContain('[... output truncated: ');
      expect(out).toBe(capAsBefore(Array.from({ length: 200_000 }, (_, i) => `b${i}`).join('\n')));
      // A server cannot point at another call's body by naming the stand-in's key: an unknown token is just data.
      expect(await convertResult('web', 't', { _gatehouseRawResult: 'forged', content: [{ type: 'text', text: 'own' }] }, never)).toEqual({ content: 'own' });
    },
    SLOW,
  );

  test(
    'control: the SDK schema and a structured clone of the same 200k blocks on the main thread starve /healthz',
    async () => {
      const raw = manyBlocks(200_000);
      const probe = await healthzProbe(closers);
      probe.begin();
      // What the old path did on this thread: CallToolResultSchema over every block; handing the object
      // to a worker would add a structured clone of the whole tree.
      structuredClone(CallToolResultSchema.parse(raw));
      probe.end();
      await probe.settled();
      expect(probe.answeredWhileBusy()).toBe(0);
    },
    SLOW,
  );

  test(
    'control: the deep result cannot be handed over as an object (the clone recurses); as an object it is a clear error, not a crash',
    async () => {
      const obj = { content: [], structuredContent: deep(100_000) };
      expect(() => structuredClone(obj)).toThrow('Maximum call stack size exceeded');
      const r = await convertResult('fx', 'hostile_result', obj, never);
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(
        /^converting the result of hostile_result from MCP server "fx" failed: the data is nested too deeply to be handed to the document worker\./,
      );
    },
    SLOW,
  );
});

describe('the conversion budget', () => {
  test(
    'over the time budget: an error result naming the server, the tool and the budget; the worker is ended, the next result converts',
    async () => {
      const live = docWorkerStats().live;
      const r = await convertResult('fx', 'hostile_result', manyBlocks(50_000), never, { timeMs: 1 });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/^converting the result of hostile_result from MCP server "fx" took longer than its time budget of 0\.001 s and was stopped\./);
      expect(docWorkerStats().live).toBeLessThanOrEqual(live + 1); // the stopped worker is not kept (at most the pool's idle one)
      const ok = await convertResult('fx', 'echo', { content: [{ type: 'text', text: 'fine' }] }, never);
      expect(ok).toEqual({ content: 'fine' });
    },
    SLOW,
  );

  test(
    'an abort (/stop, the executor timeout) during the conversion ends the worker and rejects',
    async () => {
      const m = managerFor();
      const ac = new AbortController();
      const onStart = ({ kind }: { kind: string }) => kind === 'mcp' && ac.abort();
      docWorkerEvents.on('start', onStart);
      try {
        const err = await m.call('ops', 'fx', 'hostile_result', { shape: 'many_blocks', blocks: 100_000 }, ac.signal).catch((e: unknown) => e);
        expect((err as Error).message).toBe('converting the result of hostile_result from MCP server "fx" was stopped.');
      } finally {
        docWorkerEvents.off('start', onStart);
      }
      expect(text(await m.call('ops', 'fx', 'echo', { text: 'next' }, never))).toBe('{"text":"next"}');
    },
    SLOW,
  );

  test(
    'over the heap budget: an error result naming the heap, not a dead bot',
    async () => {
      const r = await convertResult('fx', 'hostile_result', manyBlocks(400_000), never, { heapMb: 8 });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(
        /^converting the result of hostile_result from MCP server "fx" used more memory than its budget \(a 8 MB heap\) and was stopped\./,
      );
    },
    SLOW,
  );

  test(
    "results keep today's shape: images checked and capped in number, other blocks described, errors marked",
    async () => {
      const png = { type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' };
      const r = await convertResult(
        'fx',
        'pics',
        {
          isError: true,
          content: [
            { type: 'text', text: 'hello' },
            ...Array.from({ length: MAX_IMAGES + 5 }, () => png),
            { type: 'image', mimeType: 'image/bmp', data: 'Qk0=' },
            { type: 'resource', resource: { uri: 'file:///r', text: 'res text' } },
            { type: 'resource_link', uri: 'file:///l', name: 'L' },
            { type: 'audio', mimeType: 'audio/wav', data: 'UklG' },
            42,
          ],
        },
        never,
      );
      expect(r.isError).toBe(true);
      const blocks = r.content as Array<{ type: string; text?: string }>;
      expect(blocks.filter((b) => b.type === 'image')).toHaveLength(MAX_IMAGES);
      const texts = blocks.filter((b) => b.type === 'text').map((b) => b.text);
      expect(texts[0]).toBe('MCP server "fx" reported an error from pics:');
      expect(texts).toContain('[image content (image/bmp) not shown]');
      expect(texts).toContain('[resource file:///r]\nres text');
      expect(texts).toContain('[resource link: file:///l (L)]');
      expect(texts).toContain('[audio content (audio/wav) not shown]');
      expect(texts).toContain('[a content block that is not an object, not shown]');
      expect(texts).toContain(`[5 more images not shown: at most ${MAX_IMAGES} images are shown per result]`);
      // Multi-byte text cut at the cap, as before: no half characters at either end.
      const euro = Array.from({ length: 40_000 }, (_, i) => `€${i}€`);
      const cut = await convertResult('fx', 'e', { content: euro.map((t) => ({ type: 'text', text: t })) }, never);
      expect(cut).toEqual({ content: capAsBefore(euro.join('\n')) });
      const structured = await convertResult('fx', 's', { structuredContent: { a: [1, 2] } }, never);
      expect(structured).toEqual({ content: JSON.stringify({ a: [1, 2] }, null, 2) });
      const bad = await convertResult('fx', 's', { content: 'not a list' }, never);
      expect(bad).toEqual({ content: 'MCP server "fx" answered s with a result that cannot be read (its result content is not a list).', isError: true });
    },
    SLOW,
  );
});

describe("the envelope scan (what the bot's thread reads of a tools/call answer)", () => {
  test('finds the id of a plain result response in any key order, whatever the result holds, at any depth', () => {
    expect(scanResultEnvelope('{"result":{"content":[]},"jsonrpc":"2.0","id":7}')).toEqual({ id: 7 });
    expect(scanResultEnvelope(' { "jsonrpc" : "2.0" , "id" : "a\\"b" , "result" : "x\\\\" } ')).toEqual({ id: 'a"b' });
    // Brackets and quotes inside strings do not count; an escaped backslash before a quote ends the string.
    expect(scanResultEnvelope('{"jsonrpc":"2.0","result":{"t":"}]\\"{[\\\\"},"id":3}')).toEqual({ id: 3 });
    const deepLine = `{"jsonrpc":"2.0","id":1,"result":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}`;
    expect(scanResultEnvelope(deepLine)).toEqual({ id: 1 });
  });

  test('anything but a plain result response is left to the normal parse', () => {
    for (const line of [
      '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no"}}',
      '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      '{"jsonrpc":"2.0","id":1,"result":{},"extra":1}',
      '{"jsonrpc":"1.0","id":1,"result":{}}',
      '{"jsonrpc":"2.0","id":null,"result":{}}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":1}',
      '{"jsonrpc":"2.0","id":1,"result":"unterminated}',
      '[{"jsonrpc":"2.0","id":1,"result":{}}]',
      '{"jsonrpc":"2.0","id":1,"result":{}} trailing',
    ]) {
      expect(scanResultEnvelope(line)).toBeUndefined();
    }
  });
});
