/**
 * The one HTTP client of the agent's web tools (web_fetch, http_request).
 *
 * Contract of `guardedRequest`:
 * - http: and https: URLs only, no user:password in them.
 * - Every hop (the first request and each redirect) resolves the host once (all addresses), refuses
 *   when ANY address is off limits (policies/network.ts refusalFor, with the agent's network.allow),
 *   then connects to exactly the checked address: the socket goes to that IP (TLS still verifies the
 *   certificate for the host name, sent as SNI), so a DNS answer that changes between check and
 *   connect (rebinding) cannot redirect it. Nothing is sent to a refused address.
 * - Redirects are followed by hand, at most MAX_REDIRECTS, only when `followRedirects`; 303 (and
 *   301/302 after a POST) continue as GET without a body; credentials the caller set (Authorization,
 *   Cookie, Proxy-Authorization) are dropped when the redirect leaves the origin. `onRedirect` sees
 *   each target first and may refuse it (the web tools' secret check).
 * - Nothing ambient: no proxy from the environment, no keep-alive pool, no cookie jar, no default
 *   credentials. The request carries the caller's headers plus Host, Content-Length and, when the
 *   caller set none, a User-Agent.
 * - The body is read up to `maxBytes` (after gzip/deflate/br decoding), then the connection is cut and
 *   `truncated` set. `timeoutMs` bounds the whole exchange, redirects included; ctx's signal aborts it.
 * - Failures are ToolErrors that say what happened (refused address and why, timeout, DNS, TLS).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import zlib from 'node:zlib';
import { parseIp, refusalFor } from '../../../../policies/network.js';
import { ToolError } from '../../types.js';
import { linkedController } from '../../../run/abort.js';

const MAX_REDIRECTS = 5;

export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

export interface GuardedRequest {
  url: string;
  method: string;
  headers?: Record<string, string>;
  body?: string;
  followRedirects: boolean;
  maxBytes: number;
  timeoutMs: number;
  allow: readonly string[];
  signal: AbortSignal;
  /** For tests: a resolver other than the system's. */
  resolve?: Resolver;
  /** Called with each redirect's target before it is followed; throwing stops there, nothing sent to it. */
  onRedirect?: (url: string) => void;
}

export interface GuardedResponse {
  finalUrl: string;
  status: number;
  statusText: string;
  headers: Array<[string, string]>;
  body: Buffer;
  truncated: boolean;
  /** Every URL that answered with a redirect, in order. */
  redirects: string[];
}

const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

export async function guardedRequest(req: GuardedRequest): Promise<GuardedResponse> {
  const { controller: ac, unlink } = linkedController(req.signal);
  const timer = setTimeout(() => ac.abort(new ToolError(`the request took longer than ${Math.round(req.timeoutMs / 1000)} s and was stopped`)), req.timeoutMs);
  try {
    let url = parseUrl(req.url);
    let method = req.method.toUpperCase();
    let body = req.body;
    let headers = { ...(req.headers ?? {}) };
    const redirects: string[] = [];
    for (;;) {
      const ip = await checkedAddress(url, req.allow, req.resolve ?? systemResolver, ac.signal);
      const res = await exchange(url, ip, method, headers, body, ac.signal);
      const location = res.headers.location;
      if (req.followRedirects && res.statusCode && [301, 302, 303, 307, 308].includes(res.statusCode) && location) {
        res.destroy();
        if (redirects.length >= MAX_REDIRECTS) throw new ToolError(`more than ${MAX_REDIRECTS} redirects (last to ${location}); not followed further.`);
        redirects.push(url.href);
        const next = parseUrl(new URL(location, url).href);
        req.onRedirect?.(next.href);
        if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
          method = method === 'HEAD' ? 'HEAD' : 'GET';
          body = undefined;
        }
        if (next.origin !== url.origin) headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !CREDENTIAL_HEADERS.has(k.toLowerCase())));
        url = next;
        continue;
      }
      const { buf, truncated } = await readCapped(res, req.maxBytes, ac.signal);
      const out: Array<[string, string]> = [];
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) out.push([res.rawHeaders[i]!, res.rawHeaders[i + 1]!]);
      return { finalUrl: url.href, status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers: out, body: buf, truncated, redirects };
    }
  } catch (err) {
    if (ac.signal.aborted && ac.signal.reason instanceof ToolError) throw ac.signal.reason;
    throw err;
  } finally {
    clearTimeout(timer);
    unlink();
  }
}

export function parseUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ToolError(`${JSON.stringify(text)} is not a valid URL; pass an absolute http:// or https:// URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ToolError(`${url.protocol} URLs are not fetched; only http:// and https://.`);
  }
  if (url.username || url.password) throw new ToolError('URLs with a user name or password in them are refused; pass credentials in a header.');
  return url;
}

/** Resolves the URL's host once and returns the one address the connection will use. */
async function checkedAddress(url: URL, allow: readonly string[], resolve: Resolver, signal: AbortSignal): Promise<string> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (parseIp(host)) addresses = [host];
  else {
    try {
      addresses = (await resolve(host)).map((a) => a.address);
    } catch (err) {
      throw new ToolError(`${host} could not be resolved (${(err as { code?: string }).code ?? String(err)}); check the host name.`);
    }
    signal.throwIfAborted();
    if (addresses.length === 0) throw new ToolError(`${host} has no address.`);
  }
  for (const ip of addresses) {
    const why = refusalFor(host, ip, allow);
    if (why !== undefined) {
      throw new ToolError(
        `${url.origin} is refused: ${host === ip ? '' : `${host} resolves to `}${ip}, a ${why} address, which the agent's web tools may not reach. ` +
          `An operator can allow it by adding the host or address to the agent's network.allow in gatehouse.yaml.`,
      );
    }
  }
  return addresses[0]!;
}

function exchange(
  url: URL,
  ip: string,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  signal.throwIfAborted();
  const payload = body === undefined ? undefined : Buffer.from(body);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k.toLowerCase()] = v;
  out.host = url.host;
  if (!('user-agent' in out)) out['user-agent'] = 'Gatehouse';
  if (payload) out['content-length'] = String(payload.length);
  else delete out['content-length'];
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise<IncomingMessage>((resolve, reject) => {
    let req: http.ClientRequest;
    try {
      req = lib.request({
        host: ip,
        port: url.port || (url.protocol === 'https:' ? 443 : 80),
        path: `${url.pathname}${url.search}`,
        method,
        headers: out,
        agent: false,
        signal,
        // TLS: the certificate is checked for the host name, while the socket goes to the checked IP.
        ...(url.protocol === 'https:' ? { servername: parseIp(url.hostname) ? undefined : url.hostname } : {}),
      });
    } catch (err) {
      // Node validates header names and values before sending anything.
      reject(new ToolError(`the request is invalid (${describeError(err)}); fix the headers.`));
      return;
    }
    req.once('error', (err) => reject(signal.aborted ? abortReason(signal) : new ToolError(`the request to ${url.origin} failed (${describeError(err)}).`)));
    req.once('response', resolve);
    req.end(payload);
  });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason instanceof ToolError ? signal.reason : new ToolError('the request was stopped.');
}

function describeError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ? `${e.code}${e.message && !e.message.includes(e.code) ? `: ${e.message}` : ''}` : (e.message ?? String(err));
}

async function readCapped(res: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<{ buf: Buffer; truncated: boolean }> {
  const enc = String(res.headers['content-encoding'] ?? '').toLowerCase();
  const decoder =
    enc === 'gzip' || enc === 'x-gzip'
      ? zlib.createGunzip()
      : enc === 'deflate'
        ? zlib.createInflate()
        : enc === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  const stream = decoder ? res.pipe(decoder) : res;
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      signal.throwIfAborted();
      const room = maxBytes - size;
      if (chunk.length >= room) {
        chunks.push(chunk.subarray(0, room));
        size += room;
        truncated = chunk.length > room || !res.complete;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } catch (err) {
    if (signal.aborted) throw abortReason(signal);
    throw new ToolError(`the response could not be read (${describeError(err)}).`);
  } finally {
    res.destroy();
    decoder?.destroy();
  }
  return { buf: Buffer.concat(chunks), truncated };
}
