// web_fetch and http_request against real HTTP servers on 127.0.0.1 / 127.0.0.2: address refusal
// (before anything is sent), redirects checked hop by hop, network.allow, caps, timeouts, secrets.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { httpRequestTool, webFetchTool, WEB_FETCH_MAX_BYTES, type WebToolOptions } from '../../../agent/tools/builtin/web/tools.js';
import { ToolError } from '../../../agent/tools/types.js';
import { makeCtx, propose, run } from './builtin-helpers.js';

interface Served {
  url: string;
  hits: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }>;
  close(): Promise<void>;
}

async function serve(host: string, handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Served> {
  const hits: Served['hits'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      hits.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const servers: Served[] = [];
async function server(host: string, handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Served> {
  const s = await serve(host, handler);
  servers.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const ctx = makeCtx('/nonexistent-workspace');
const allowing = (...allow: string[]): WebToolOptions => ({ network: () => ({ allow }), secrets: () => ['sk-ant-SECRET-VALUE-1234'] });

const PAGE = `<!doctype html><html><head><title>Team &amp; Wiki</title><style>body{color:red}</style>
<script>window.leak = "SCRIPT TEXT"</script></head><body><nav><a href="/">Home</a> | MENU</nav>
<main><h1>Deploy guide</h1><p>Run <code>make deploy</code> after <a href="/review">review</a>.</p>
<ul><li>one</li><li>two</li></ul></main><footer>FOOTER TEXT</footer></body></html>`;

describe('web_fetch', () => {
  test('a loopback URL is refused before anything is sent, naming the fix', async () => {
    const s = await server('127.0.0.1', (_q, r) => r.end('hi'));
    await expect(run(webFetchTool({ network: () => ({ allow: [] }) }), { url: s.url }, ctx)).rejects.toThrow(
      /127\.0\.0\.1, a loopback address.*network\.allow/,
    );
    expect(s.hits).toHaveLength(0);
  });

  test('HTML becomes readable markdown without script, style, nav or footer; the final URL is reported', async () => {
    const s = await server('127.0.0.1', (req, res) => {
      if (req.url === '/old') return res.writeHead(301, { location: '/guide' }).end();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    const out = await run(webFetchTool(allowing('127.0.0.1')), { url: `${s.url}/old` }, ctx);
    expect(out).toBe(
      [
        `URL: ${s.url}/guide`,
        'Status: 200 OK',
        `Redirected from: ${s.url}/old`,
        'Content-Type: text/html',
        'Title: Team & Wiki',
        '',
        '# Deploy guide\n\nRun `make deploy` after [review](/review).\n\n-   one\n-   two',
      ].join('\n'),
    );
    expect(s.hits.map((h) => h.url)).toEqual(['/old', '/guide']);
  });

  test('a redirect to a private address is refused; the same redirect is followed when listed', async () => {
    const inner = await server('127.0.0.2', (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('internal data'));
    const s = await server('127.0.0.1', (_q, r) => r.writeHead(302, { location: `${inner.url}/x` }).end());
    await expect(run(webFetchTool(allowing('127.0.0.1')), { url: s.url }, ctx)).rejects.toThrow(/127\.0\.0\.2, a loopback address/);
    expect(inner.hits).toHaveLength(0);
    const out = await run(webFetchTool(allowing('127.0.0.1', '127.0.0.0/30')), { url: s.url }, ctx);
    expect(out).toContain(`URL: ${inner.url}/x`);
    expect(out).toContain('internal data');
    expect(inner.hits).toHaveLength(1);
  });

  test('redirects to the metadata address, IPv4-mapped and numeric loopback forms are refused', async () => {
    for (const target of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:127.0.0.2]:1/',
      'http://[fd00:ec2::254]/',
      'http://2130706434:1/',
      'http://0x7f.0.0.3:1/',
      'http://[::1]:1/',
    ]) {
      const s = await server('127.0.0.1', (_q, r) => r.writeHead(307, { location: target }).end());
      await expect(run(webFetchTool(allowing('127.0.0.1')), { url: s.url }, ctx)).rejects.toThrow(/is refused: .*address/);
    }
  });

  test('a host name is judged by what it resolves to, resolved once per hop and connected to as checked', async () => {
    const s = await server('127.0.0.1', (req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`host header: ${req.headers.host}`));
    const port = new URL(s.url).port;
    let lookups = 0;
    // A rebinding resolver: the checked answer first, then something else.
    const resolve = async () => (lookups++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.0.0.1', family: 4 }]);
    await expect(run(webFetchTool({ network: () => ({ allow: [] }), resolve }), { url: `http://wiki.test:${port}/` }, ctx)).rejects.toThrow(
      /wiki\.test resolves to 127\.0\.0\.1, a loopback address/,
    );
    lookups = 0;
    const out = await run(webFetchTool({ network: () => ({ allow: ['wiki.test'] }), resolve }), { url: `http://wiki.test:${port}/` }, ctx);
    expect(out).toContain(`host header: wiki.test:${port}`);
    expect(lookups).toBe(1);
  });

  test('network.allow is read at each call (a config change applies without a restart)', async () => {
    const s = await server('127.0.0.1', (_q, r) => r.end('ok'));
    let allow: string[] = [];
    const tool = webFetchTool({ network: () => ({ allow }) });
    await expect(run(tool, { url: s.url }, ctx)).rejects.toThrow(/loopback/);
    allow = ['127.0.0.1'];
    expect(await run(tool, { url: s.url }, ctx)).toContain('ok');
  });

  test('long text is cut with an offset to read on; a huge body stops at the download cap', async () => {
    const big = 'x'.repeat(WEB_FETCH_MAX_BYTES + 100_000);
    const s = await server('127.0.0.1', (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/big' ? big : 'abcdefghij'.repeat(30));
    });
    const tool = webFetchTool(allowing('127.0.0.1'));
    const first = await run(tool, { url: s.url, maxChars: 100 }, ctx);
    expect(first.split('\n').at(-1)).toBe('[truncated: true; showing characters 0-100 of 300; call web_fetch with offset=100 to read on]');
    const last = await run(tool, { url: s.url, maxChars: 250, offset: 100 }, ctx);
    expect(last.endsWith('abcdefghij'.repeat(20))).toBe(true);
    const huge = await run(tool, { url: `${s.url}/big`, maxChars: 100, offset: WEB_FETCH_MAX_BYTES - 50 }, ctx);
    expect(huge.split('\n').at(-1)).toBe(
      '[truncated: true; the page is larger than 5 MB and only its start was read; the rest cannot be fetched with web_fetch]',
    );
  });

  test('a gzip bomb is cut at the cap after decoding', async () => {
    const bomb = zlib.gzipSync(Buffer.alloc(50 * 1024 * 1024, 'a'));
    const s = await server('127.0.0.1', (_q, r) => r.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(bomb));
    const out = await run(webFetchTool(allowing('127.0.0.1')), { url: s.url, maxChars: 100 }, ctx);
    expect(out).toContain(`of ${WEB_FETCH_MAX_BYTES}; call web_fetch`);
  });

  test('a server that never answers is stopped at the timeout with a clear error', async () => {
    const s = await server('127.0.0.1', () => undefined);
    await expect(run(webFetchTool(allowing('127.0.0.1')), { url: s.url, timeoutSeconds: 1 }, ctx)).rejects.toThrow(
      'the request took longer than 1 s and was stopped',
    );
  });

  test('too many redirects and non-http schemes are refused', async () => {
    const s = await server('127.0.0.1', (req, res) => res.writeHead(302, { location: `/r${Number(req.url!.slice(2) || 0) + 1}` }).end());
    await expect(run(webFetchTool(allowing('127.0.0.1')), { url: `${s.url}/r0` }, ctx)).rejects.toThrow('more than 5 redirects');
    expect(s.hits).toHaveLength(6);
    await expect(run(webFetchTool(allowing('127.0.0.1')), { url: 'file:///etc/passwd' }, ctx)).rejects.toThrow('only http:// and https://');
  });
});

describe('http_request', () => {
  test('GET and HEAD are rated read-only; other methods high-risk with method, URL, headers and body on the card', async () => {
    const tool = httpRequestTool(allowing('127.0.0.1'));
    expect(tool.tier).toBe('high-risk');
    expect((await propose(tool, { method: 'GET', url: 'http://127.0.0.1:9/x' }, ctx)).tier).toBe('read-only');
    expect((await propose(tool, { method: 'HEAD', url: 'http://127.0.0.1:9/x' }, ctx)).tier).toBe('read-only');
    const card = await propose(
      tool,
      {
        method: 'POST',
        url: 'http://127.0.0.1:9/issues',
        headers: { 'content-type': 'application/json', authorization: 'Bearer abc123' },
        body: '{"title":"bug"}',
      },
      ctx,
    );
    expect(card.tier).toBe('high-risk');
    expect(card.summary).toBe('http_request POST http://127.0.0.1:9/issues (body 15 bytes)');
    expect(card.preview).toBe('POST http://127.0.0.1:9/issues\ncontent-type: application/json\nauthorization: (hidden, 13 characters)\n\n{"title":"bug"}');
  });

  test('POST sends exactly what the model gave and returns status, headers and body', async () => {
    const s = await server('127.0.0.1', (_q, r) => r.writeHead(201, { 'content-type': 'application/json', 'x-id': '7' }).end('{"id":7}'));
    const out = await run(
      httpRequestTool(allowing('127.0.0.1')),
      { method: 'POST', url: `${s.url}/issues`, headers: { 'content-type': 'application/json' }, body: '{"title":"bug"}' },
      ctx,
    );
    expect(out).toMatch(/^HTTP 201 Created\nURL: http:\/\/127\.0\.0\.1:\d+\/issues\n/);
    expect(out).toContain('x-id: 7');
    expect(out.endsWith('\n\n{"id":7}')).toBe(true);
    expect(s.hits[0]!.body).toBe('{"title":"bug"}');
    expect(Object.keys(s.hits[0]!.headers).sort()).toEqual(['connection', 'content-length', 'content-type', 'host', 'user-agent']);
  });

  test('a POST is not redirected (the body would go somewhere the card did not show)', async () => {
    const other = await server('127.0.0.1', (_q, r) => r.end('got it'));
    const s = await server('127.0.0.1', (_q, r) => r.writeHead(307, { location: other.url }).end());
    const out = await run(httpRequestTool(allowing('127.0.0.1')), { method: 'POST', url: s.url, body: 'data' }, ctx);
    expect(out).toMatch(/^HTTP 307 Temporary Redirect/);
    expect(other.hits).toHaveLength(0);
  });

  test("Gatehouse's own credentials are never sent, in a header, the URL or the body", async () => {
    const s = await server('127.0.0.1', (_q, r) => r.end('ok'));
    const tool = httpRequestTool(allowing('127.0.0.1'));
    for (const input of [
      { method: 'GET', url: s.url, headers: { authorization: 'Bearer sk-ant-SECRET-VALUE-1234' } },
      { method: 'GET', url: `${s.url}/?key=sk-ant-SECRET-VALUE-1234` },
      { method: 'POST', url: s.url, body: 'token=sk-ant-SECRET-VALUE-1234' },
    ]) {
      await expect(run(tool, input, ctx)).rejects.toThrow("contains one of Gatehouse's own credentials");
      await expect(propose(tool, input, ctx)).rejects.toBeInstanceOf(ToolError);
    }
    expect(s.hits).toHaveLength(0);
  });

  test('the default secret list is Gatehouse’s own secret variables in the environment', async () => {
    const s = await server('127.0.0.1', (_q, r) => r.end('ok'));
    const saved = process.env.TELEGRAM_BOT_TOKEN;
    process.env.TELEGRAM_BOT_TOKEN = '123456:telegram-token-for-test';
    try {
      const tool = httpRequestTool({ network: () => ({ allow: ['127.0.0.1'] }) });
      await expect(run(tool, { method: 'GET', url: s.url, headers: { 'x-t': '123456:telegram-token-for-test' } }, ctx)).rejects.toThrow('own credentials');
      expect(await run(tool, { method: 'GET', url: s.url }, ctx)).toContain('HTTP 200');
    } finally {
      if (saved === undefined) delete process.env.TELEGRAM_BOT_TOKEN;
      else process.env.TELEGRAM_BOT_TOKEN = saved;
    }
    expect(s.hits).toHaveLength(1);
  });

  test('a cross-origin redirect of a GET drops the Authorization header', async () => {
    const other = await server('127.0.0.2', (_q, r) => r.end('there'));
    const s = await server('127.0.0.1', (_q, r) => r.writeHead(302, { location: other.url }).end());
    await run(httpRequestTool(allowing('127.0.0.1', '127.0.0.2')), { method: 'GET', url: s.url, headers: { authorization: 'Bearer mine' } }, ctx);
    expect(s.hits[0]!.headers.authorization).toBe('Bearer mine');
    expect(other.hits[0]!.headers.authorization).toBeUndefined();
  });
});

test('status lines and cards read as words, never as JSON', async () => {
  const { summarizeCall } = await import('../../../agent/tools/summary.js');
  expect(summarizeCall('web_fetch', { url: 'https://example.com/docs', maxChars: 2000 })).toBe('web_fetch url: https://example.com/docs, maxChars: 2000');
  expect(summarizeCall('read_pdf', { path: 'specs/api.pdf', pages: '1-3' })).toBe('read_pdf path: specs/api.pdf, pages: 1-3');
  const card = await propose(httpRequestTool(), { method: 'DELETE', url: 'https://api.example.com/items/7' }, ctx);
  expect(card.summary).toBe('http_request DELETE https://api.example.com/items/7');
});

test('an invalid header is a clear error and nothing is sent', async () => {
  const s = await server('127.0.0.1', (_q, r) => r.end('ok'));
  await expect(run(httpRequestTool(allowing('127.0.0.1')), { method: 'GET', url: s.url, headers: { 'bad header': 'x' } }, ctx)).rejects.toThrow(
    'the request is invalid',
  );
  await expect(run(httpRequestTool(allowing('127.0.0.1')), { method: 'GET', url: s.url, headers: { 'x-a': 'line\r\nInjected: 1' } }, ctx)).rejects.toThrow(
    'the request is invalid',
  );
  expect(s.hits).toHaveLength(0);
});
