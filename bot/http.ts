/**
 * The bot's HTTP server: /healthz (the process is alive), /readyz (it should get traffic: 200, or 503
 * with a JSON body whose `notReady` names each thing that is not) and the routes adapters contribute through `Adapter.httpRoutes()`
 * (Telegram webhook mode, Slack's Events API in HTTP mode). Unknown paths get 404, wrong methods 405. Bound to GATEHOUSE_HTTP_HOST
 * (127.0.0.1 by default: put a TLS-terminating proxy in front for webhooks).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpRoute } from '../adapters/types.js';

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

export async function startHttpServer(opts: {
  host: string;
  port: number;
  routes: HttpRoute[];
  health: () => Record<string, unknown>;
  ready?: () => Promise<Readiness>;
}): Promise<HttpServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
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
        (err: unknown) => answer(503, { ready: false, notReady: [`readiness check failed: ${(err as Error).message}`] }),
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
