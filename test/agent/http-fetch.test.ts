/**
 * agent/model/http-fetch.ts against real node:http servers on 127.0.0.1, and through the real Anthropic SDK
 * (via createAnthropicModel) where the SDK's reading of failures matters.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createNodeFetch, type NodeFetch } from '../../agent/model/http-fetch.js';
import { createAnthropicModel } from '../../agent/model/anthropic.js';
import { ModelError } from '../../agent/model/types.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void;

interface TestServer {
  url: string;
  connections: number;
  close(): Promise<void>;
}

async function serve(handler: Handler): Promise<TestServer> {
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, res, Buffer.concat(chunks)));
  });
  const state = { connections: 0 };
  server.on('connection', (s: Socket) => {
    state.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get connections() {
      return state.connections;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

let server: TestServer | undefined;
let f: NodeFetch;
beforeEach(() => {
  f = createNodeFetch();
});
afterEach(async () => {
  f.close();
  await server?.close();
  server = undefined;
});

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

test('a JSON POST arrives as sent (method, headers, body, content-length) and the reply reads back', async () => {
  let seen: { method?: string; headers?: http.IncomingHttpHeaders; body?: string } = {};
  server = await serve((req, res, body) => {
    seen = { method: req.method!, headers: req.headers, body: body.toString() };
    res.writeHead(201, 'Made', { 'content-type': 'application/json', 'x-multi': ['a', 'b'] });
    res.end(JSON.stringify({ ok: true, echo: JSON.parse(body.toString()) }));
  });
  const payload = JSON.stringify({ text: 'héllo ✓' });
  const res = await f(`${server.url}/v1/messages?beta=true`, {
    method: 'post',
    headers: { 'Content-Type': 'application/json', 'X-Api-Key': 'k' },
    body: payload,
  });
  expect(seen.method).toBe('POST');
  expect(seen.headers!['content-type']).toBe('application/json');
  expect(seen.headers!['x-api-key']).toBe('k');
  expect(seen.headers!['content-length']).toBe(String(Buffer.byteLength(payload)));
  expect(seen.body).toBe(payload);
  expect(res.status).toBe(201);
  expect(res.statusText).toBe('Made');
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.headers.get('x-multi')).toBe('a, b');
  expect(await res.json()).toEqual({ ok: true, echo: { text: 'héllo ✓' } });
});

test('sequential requests reuse one keep-alive connection', async () => {
  server = await serve((_req, res) => res.end('ok'));
  for (let i = 0; i < 5; i++) expect(await (await f(server.url)).text()).toBe('ok');
  expect(server.connections).toBe(1);
});

test('a large streamed body arrives whole, read slowly (backpressure, nothing dropped)', async () => {
  const chunk = Buffer.alloc(64 * 1024);
  const total = 160; // 10 MB
  const expected = createHash('sha256');
  const chunks: Buffer[] = [];
  for (let i = 0; i < total; i++) {
    const c = Buffer.from(chunk.map((_, j) => (i * 31 + j) & 0xff));
    chunks.push(c);
    expected.update(c);
  }
  server = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    let i = 0;
    const write = () => {
      while (i < total) if (!res.write(chunks[i++]!)) return void res.once('drain', write);
      res.end();
    };
    write();
  });
  const res = await f(server.url);
  const reader = res.body!.getReader();
  const got = createHash('sha256');
  let bytes = 0;
  for (let n = 0; ; n++) {
    const { value, done } = await reader.read();
    if (done) break;
    got.update(value);
    bytes += value.byteLength;
    if (n % 20 === 0) await new Promise((r) => setTimeout(r, 2)); // a slow reader
  }
  expect(bytes).toBe(chunk.length * total);
  expect(got.digest('hex')).toBe(expected.digest('hex'));
});

test('a connection cut before the end of the body errors the stream instead of ending it short', async () => {
  server = await serve((_req, res) => {
    res.writeHead(200, { 'content-length': '1000' });
    res.write('x'.repeat(100));
    setTimeout(() => res.socket?.destroy(), 20);
  });
  const res = await f(server.url);
  const err = await rejection(res.text());
  expect(err.message).toMatch(/aborted|terminated|closed/);
});

test('an abort before the response rejects with AbortError and closes the request', async () => {
  let closed = false;
  server = await serve((req) => req.socket.on('close', () => (closed = true))); // never answers
  const ac = new AbortController();
  const p = f(server.url, { signal: ac.signal });
  await new Promise((r) => setTimeout(r, 30));
  ac.abort();
  const err = await rejection(p);
  expect(err.name).toBe('AbortError');
  await new Promise((r) => setTimeout(r, 30));
  expect(closed).toBe(true);
});

test('an already-aborted signal sends nothing', async () => {
  let requests = 0;
  server = await serve((_req, res) => {
    requests++;
    res.end();
  });
  const ac = new AbortController();
  ac.abort();
  expect((await rejection(f(server.url, { signal: ac.signal }))).name).toBe('AbortError');
  expect(requests).toBe(0);
});

test('an abort while the body streams errors the reader with AbortError', async () => {
  server = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n'); // then nothing more
  });
  const ac = new AbortController();
  const res = await f(server.url, { signal: ac.signal });
  const reader = res.body!.getReader();
  expect((await reader.read()).done).toBe(false);
  const next = reader.read();
  ac.abort();
  expect((await rejection(next)).name).toBe('AbortError');
});

test('connection refused rejects with a TypeError whose cause names the socket error', async () => {
  const s = await serve(() => undefined);
  const url = s.url;
  await s.close();
  const err = await rejection(f(url));
  expect(err).toBeInstanceOf(TypeError);
  expect((err.cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
});

test('204 has a null body; HEAD reads no body', async () => {
  server = await serve((req, res) => {
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'content-length': '5' });
      res.end();
    } else {
      res.writeHead(204);
      res.end();
    }
  });
  const none = await f(`${server.url}/x`, { method: 'DELETE' });
  expect(none.status).toBe(204);
  expect(none.body).toBeNull();
  const head = await f(server.url, { method: 'HEAD' });
  expect(head.status).toBe(200);
  expect(head.headers.get('content-length')).toBe('5');
});

test('a body it does not handle itself (a stream) goes to the built-in fetch, unchanged', async () => {
  let got = '';
  server = await serve((_req, res, body) => {
    got = body.toString();
    res.end('ok');
  });
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode('streamed '));
      c.enqueue(new TextEncoder().encode('body'));
      c.close();
    },
  });
  const res = await f(server.url, { method: 'POST', body, duplex: 'half' } as RequestInit);
  expect(await res.text()).toBe('ok');
  expect(got).toBe('streamed body');
});

describe('through the Anthropic SDK', () => {
  const KEY = 'sk-ant-test';
  const ask = {
    model: 'claude-sonnet-5-5',
    system: 's',
    messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }],
    tools: [],
    maxTokens: 64,
  };

  test('an SSE stream cut mid-answer (no message_stop) is a network error, retried, then reported', async () => {
    let calls = 0;
    server = await serve((_req, res) => {
      calls++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}}\n\n',
      );
      setTimeout(() => res.socket?.destroy(), 10);
    });
    const m = createAnthropicModel({ apiKey: KEY, baseURL: server.url, retryBaseMs: 1, maxRetries: 2 });
    const err = await rejection(m.complete({ ...ask, onText: () => undefined })); // a listener: streamed
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe('network');
    expect(calls).toBe(3);
  });

  test('a server that closes the connection without answering is a network error', async () => {
    server = await serve((req) => req.socket.destroy());
    const m = createAnthropicModel({ apiKey: KEY, baseURL: server.url, retryBaseMs: 1, maxRetries: 0 });
    const err = await rejection(m.complete(ask));
    expect((err as ModelError).code).toBe('network');
    expect(err.message).not.toContain(KEY);
  });
});
