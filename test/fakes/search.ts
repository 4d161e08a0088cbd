/**
 * A fake web search API on 127.0.0.1 speaking both SearXNG's JSON (`GET /search?q=..&format=json`)
 * and Brave's (`GET /res/v1/web/search?q=..&count=..`, key in X-Subscription-Token).
 *
 * Contract: every request is recorded (path, query, headers); `results` is what both answer with;
 * Brave without the configured `braveKey` gets 401; `status` forces an error answer; anything else 404.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeSearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface FakeSearch {
  url: string;
  requests: Array<{ path: string; query: URLSearchParams; headers: http.IncomingHttpHeaders }>;
  results: FakeSearchResult[];
  status?: number;
  close(): Promise<void>;
}

export async function startFakeSearch(opts: { braveKey?: string } = {}): Promise<FakeSearch> {
  const fake: Omit<FakeSearch, 'url' | 'close'> = { requests: [], results: [] };
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    fake.requests.push({ path: u.pathname, query: u.searchParams, headers: req.headers });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (fake.status !== undefined) return send(fake.status, { error: 'forced' });
    if (u.pathname === '/search' && u.searchParams.get('format') === 'json') {
      return send(200, {
        query: u.searchParams.get('q'),
        results: fake.results.map((r) => ({ title: r.title, url: r.url, content: r.snippet, engine: 'fake' })),
      });
    }
    if (u.pathname === '/res/v1/web/search') {
      if (req.headers['x-subscription-token'] !== opts.braveKey) return send(401, { type: 'ErrorResponse', error: { code: 'SUBSCRIPTION_TOKEN_INVALID' } });
      const count = Number(u.searchParams.get('count') ?? 20);
      return send(200, {
        type: 'search',
        web: { type: 'search', results: fake.results.slice(0, count).map((r) => ({ title: r.title, url: r.url, description: r.snippet })) },
      });
    }
    send(404, { error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
