/**
 * The egress proxy for a box whose `sandboxNetwork` is an allowlist: the box has no network of its own
 * (bwrap --unshare-net); this proxy, on the host, listens on a unix socket bound into the box, and is
 * the box's only way out.
 *
 * Contract:
 * - Speaks HTTP CONNECT (any TCP, in practice TLS) and plain HTTP with an absolute URI (`GET http://h/p`).
 * - A request's host:port must match an entry of `allow` (egressAllows, policies/egress.ts); otherwise
 *   403 with a one-line reason body, and nothing is connected.
 * - With `ask` (a per-command proxy, hub.ts `session`): a host not on the list whose addresses the entry
 *   `host:port` would admit is held (no byte goes upstream) until `ask` resolves: allowed, it connects as
 *   a listed one would; refused, 403 with the reason. An address that entry would not admit either
 *   (a name resolving internally) is refused without asking: approving it could not help.
 * - The proxy resolves the name itself, checks EVERY address it got the way web_fetch does
 *   (policies/network.ts: internal addresses refused unless an allow entry names that address or
 *   range, not a wildcard or a plain name), and connects to the address it checked (no second lookup
 *   that DNS rebinding could change).
 * - Every request ends in exactly one `onConnection` record: host, port, decision, reason, bytes each
 *   way (bytesUp: box -> world, bytesDown: world -> box), counted at the proxy's sockets.
 * - `close()` stops listening and destroys every open tunnel.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { createServer, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { egressRefusal, parseTarget } from '../../policies/egress.js';
import type { AuditEvent } from '../audit.js';
import { messageOf } from '../log.js';

/** One connection's outcome: the `egress_connection` audit event without its agent (agent/audit.ts). */
export type EgressRecord = Omit<Extract<AuditEvent, { event: 'egress_connection' }>, 'event' | 'agent'>;

type Lookup = (host: string) => Promise<string[]>;

export interface EgressTarget {
  host: string;
  port: number;
  method: 'CONNECT' | 'HTTP';
}

/** What an ask decided; `requestId` names the card, for the audit record. */
export type EgressVerdict = { allowed: true; requestId?: string } | { refused: string; requestId?: string };

/** The allow entry that admits exactly `host:port` (brackets around an IPv6 address). */
export function entryFor(host: string, port: number): string {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return `${h.includes(':') ? `[${h}]` : h}:${port}`;
}

export interface EgressProxyOptions {
  /** The box's allowlist, as configured (a function: read at each connection, so a reload applies). */
  allow: readonly string[] | (() => readonly string[]);
  onConnection?: (r: EgressRecord) => void;
  /**
   * A host not on the list: ask someone (an approval card, ./approvals.ts). `refusal` is why it is not
   * listed. Absent: refused at once.
   */
  ask?: (target: EgressTarget, refusal: string) => Promise<EgressVerdict>;
  /** Name resolution (default: the system's, all addresses); injectable for a rebinding test. */
  lookup?: Lookup;
}

const systemLookup: Lookup = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

export interface EgressProxy {
  server: Server;
  listen(socketPath: string): Promise<void>;
  close(): Promise<void>;
}

/** Resolves, checks (and asks); the address to connect to, or the reason not to. */
async function decide(
  opts: EgressProxyOptions,
  { host, port, method }: EgressTarget,
): Promise<{ ip: string; requestId?: string } | { refused: string; requestId?: string }> {
  const listed = typeof opts.allow === 'function' ? opts.allow() : opts.allow;
  const byName = egressRefusal(host, port, undefined, listed);
  if (byName && !opts.ask) return { refused: byName };
  // Asked about, the host would be admitted as `host:port`: its addresses are checked against that first.
  const allow = byName ? [...listed, entryFor(host, port)] : listed;
  let ips: string[];
  try {
    ips = isIP(host.replace(/^\[|\]$/g, '')) ? [host.replace(/^\[|\]$/g, '')] : await (opts.lookup ?? systemLookup)(host);
  } catch (err) {
    return { refused: `could not resolve ${host}: ${(err as NodeJS.ErrnoException).code ?? messageOf(err)}` };
  }
  if (ips.length === 0) return { refused: `${host} has no address` };
  // Every address must pass: a name that also resolves internally is refused as a whole.
  for (const ip of ips) {
    const why = egressRefusal(host, port, ip, allow);
    if (why) return { refused: byName ? `${byName}; ${why}` : why };
  }
  if (byName) {
    const v = await opts.ask!({ host, port, method }, byName);
    if ('refused' in v) return v;
    return { ip: ips[0]!, ...(v.requestId ? { requestId: v.requestId } : {}) };
  }
  return { ip: ips[0]! };
}

function refuse(res: ServerResponse | Duplex, status: number, reason: string): void {
  const body = `gatehouse egress proxy: ${reason}\n`;
  if ('writeHead' in res) {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  } else {
    res.end(
      `HTTP/1.1 ${status} ${status === 403 ? 'Forbidden' : 'Bad Gateway'}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
}

export function createEgressProxy(opts: EgressProxyOptions): EgressProxy {
  const open = new Set<Socket | Duplex>();
  const report = (r: EgressRecord) => opts.onConnection?.(r);

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      let url: URL;
      try {
        url = new URL(req.url ?? '');
        if (url.protocol !== 'http:') throw new Error('not http');
      } catch {
        report({ host: '', port: 0, method: 'HTTP', decision: 'refused', reason: 'not a proxy request', bytesUp: 0, bytesDown: 0 });
        return refuse(res, 400, 'send an absolute http:// URL, or CONNECT host:port for https');
      }
      const host = url.hostname;
      const port = url.port ? Number(url.port) : 80;
      const d = await decide(opts, { host, port, method: 'HTTP' });
      const card = d.requestId ? { requestId: d.requestId } : {};
      if ('refused' in d) {
        report({ host, port, method: 'HTTP', decision: 'refused', reason: d.refused, ...card, bytesUp: 0, bytesDown: 0 });
        return refuse(res, 403, d.refused);
      }
      let up = 0;
      let down = 0;
      const headers = { ...req.headers };
      delete headers['proxy-connection'];
      delete headers['proxy-authorization'];
      // RFC 9112 3.2.2: with an absolute URI the Host header is the URI's authority.
      headers.host = url.host;
      // Pinned: the connection goes to d.ip; the Host header keeps the name.
      const out = httpRequest({ host: d.ip, port, method: req.method, path: url.pathname + url.search, headers, setHost: false });
      req.on('data', (c: Buffer) => (up += c.length));
      out.on('response', (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.on('data', (c: Buffer) => (down += c.length));
        r.pipe(res);
        r.on('end', () => report({ host, port, method: 'HTTP', decision: 'allowed', address: d.ip, ...card, bytesUp: up, bytesDown: down }));
      });
      out.on('error', (err) => {
        report({ host, port, method: 'HTTP', decision: 'failed', address: d.ip, reason: err.message, ...card, bytesUp: up, bytesDown: down });
        if (!res.headersSent) refuse(res, 502, `could not reach ${host}:${port}: ${(err as NodeJS.ErrnoException).code ?? err.message}`);
        else res.destroy();
      });
      req.pipe(out);
    })();
  });

  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    void (async () => {
      const target = parseTarget(req.url ?? '');
      if (!target) {
        report({ host: req.url ?? '', port: 0, method: 'CONNECT', decision: 'refused', reason: 'bad CONNECT target', bytesUp: 0, bytesDown: 0 });
        return refuse(client, 400, 'CONNECT needs host:port');
      }
      const { host, port } = target;
      const d = await decide(opts, { host, port, method: 'CONNECT' });
      const card = d.requestId ? { requestId: d.requestId } : {};
      if ('refused' in d) {
        report({ host, port, method: 'CONNECT', decision: 'refused', reason: d.refused, ...card, bytesUp: 0, bytesDown: 0 });
        return refuse(client, 403, d.refused);
      }
      // Held for a card, the command may have given up meanwhile: nothing to connect for.
      if (client.destroyed) {
        report({
          host,
          port,
          method: 'CONNECT',
          decision: 'failed',
          reason: 'the command closed the connection while it was held',
          ...card,
          bytesUp: 0,
          bytesDown: 0,
        });
        return;
      }
      let up = head.length;
      let down = 0;
      let done = false;
      const upstream = connect({ host: d.ip, port });
      open.add(upstream);
      const finish = (decision: 'allowed' | 'failed', reason?: string) => {
        if (done) return;
        done = true;
        report({ host, port, method: 'CONNECT', decision, address: d.ip, ...(reason ? { reason } : {}), ...card, bytesUp: up, bytesDown: down });
      };
      upstream.once('connect', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) upstream.write(head);
        client.on('data', (c: Buffer) => (up += c.length));
        upstream.on('data', (c: Buffer) => (down += c.length));
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on('error', (err) => {
        if (!client.writableEnded && down === 0 && up === head.length)
          refuse(client, 502, `could not reach ${host}:${port}: ${(err as NodeJS.ErrnoException).code ?? err.message}`);
        finish('failed', err.message);
        client.destroy();
      });
      upstream.on('close', () => {
        open.delete(upstream);
        finish('allowed');
        client.end();
      });
      client.on('close', () => upstream.destroy());
    })();
  });

  return {
    server,
    listen: (socketPath) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(socketPath, () => {
          server.off('error', reject);
          resolve();
        });
      }),
    close: () =>
      new Promise((resolve) => {
        for (const s of open) s.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
