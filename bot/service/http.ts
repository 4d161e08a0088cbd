/**
 * The bot's HTTP server: /healthz (the process is alive), /readyz (it should get traffic: 200, or 503
 * with a JSON body whose `notReady` names each thing that is not), /metrics (Prometheus text format,
 * bot/telemetry/metrics.ts) and the routes adapters contribute through `Adapter.httpRoutes()`
 * (Telegram webhook mode, Slack's Events API in HTTP mode). Unknown paths get 404, wrong methods 405. Bound to GATEHOUSE_HTTP_HOST
 * (127.0.0.1 by default: put a TLS-terminating proxy in front for webhooks).
 * /metrics with a token (GATEHOUSE_METRICS_TOKEN; required when the host is not loopback, see
 * bot/telemetry/env.ts) answers 401 to a request without `Authorization: Bearer <token>` or with
 * another token (compared in constant time).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpRoute } from '../../adapters/types.js';
import { messageOf } from '../../agent/log.js';

export type { HttpRoute };

export interface HttpServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** What /readyz answers: `notReady` empty means ready. */
export interface Readiness {
  notReady: string[];
  [detail: string]: unknown;
}

/** What /metrics serves, and the bearer token it wants (none: open, on a loopback address only). */
export interface MetricsEndpoint {
  render(): Promise<{ contentType: string; body: string }>;
  token?: string;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

function authorized(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m !== null && timingSafeEqual(digest(m[1]!), digest(token));
}

function serveMetrics(metrics: MetricsEndpoint, req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' });
    res.end('method not allowed');
    return;
  }
  if (metrics.token !== undefined && !authorized(req.headers.authorization, metrics.token)) {
    res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="gatehouse metrics"' });
    res.end('unauthorized: send Authorization: Bearer <GATEHOUSE_METRICS_TOKEN>');
    return;
  }
  metrics.render().then(
    (m) => {
      if (res.writableEnded || res.destroyed) return;
      res.writeHead(200, { 'content-type': m.contentType, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : m.body);
    },
    (err: unknown) => {
      if (res.writableEnded || res.destroyed) return;
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`metrics could not be collected: ${messageOf(err)}`);
    },
  );
}

export async function startHttpServer(opts: {
  host: string;
  port: number;
  routes: HttpRoute[];
  health: () => Record<string, unknown>;
  ready?: () => Promise<Readiness>;
  metrics?: MetricsEndpoint;
}): Promise<HttpServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === '/metrics' && opts.metrics) return serveMetrics(opts.metrics, req, res);
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, ...opts.health() }));
      return;
    }
    if (path === '/readyz') {
      const answer = (status: number, body: Record<string, unknown>) => {
        if (res.writableEnded || res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify(body));
      };
      (opts.ready ?? (async () => ({ notReady: [] })))().then(
        (r) => answer(r.notReady.length === 0 ? 200 : 503, { ready: r.notReady.length === 0, ...r }),
        (err: unknown) => answer(503, { ready: false, notReady: [`readiness check failed: ${messageOf(err)}`] }),
      );
      return;
    }
    const matches = opts.routes.filter((r) => r.path === path);
    const route = matches.find((r) => r.method === req.method);
    if (route) return route.handler(req, res);
    res.writeHead(matches.length ? 405 : 404, { 'content-type': 'text/plain' });
    res.end(matches.length ? 'method not allowed' : 'not found');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(err.code === 'EADDRINUSE' ? `port ${opts.port} on ${opts.host} is in use: set GATEHOUSE_HTTP_PORT to a free port` : err.message)),
    );
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
