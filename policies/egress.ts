/**
 * Which host:port a boxed command may reach through the egress proxy (`sandboxNetwork: { allow }`).
 *
 * Contract:
 * - An entry is `host`, `*.domain` (its subdomains, not the domain itself), an IPv4 address or a
 *   bracketed IPv6 address, each with an optional `:port` (no port: any port). Names match
 *   case-insensitively, a trailing dot ignored.
 * - `egressRefusal(host, port, undefined, allow)`: is the name (as the command asked for it) on the
 *   list? `egressRefusal(host, port, ip, allow)`: may the proxy connect to `ip`, an address `host`
 *   resolved to? A public address: yes. An internal one (policies/network.ts blockedReason): only
 *   when an entry is that very address (with a matching port, if it has one). A name entry never
 *   admits an internal address, so a listed name that resolves to 127.0.0.1 (DNS rebinding) is refused.
 * - Returns the reason (one line, said to the command in the 403 body), or undefined when allowed.
 * - Pure: no I/O.
 */
import { blockedReason, parseIp } from './network.js';

export interface EgressEntry {
  /** Lowercase name, `*.domain`, or the IP literal without brackets. */
  host: string;
  port?: number;
  ip?: Uint8Array;
}

/** `host:port`, `[v6]:port` (the CONNECT target form); undefined when not one. */
export function parseTarget(s: string): { host: string; port: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(s);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

const NAME = /^(\*\.)?([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/i;

/** The parsed entry, or the problem with it (for the config error). */
export function parseEgressEntry(raw: string): EgressEntry | string {
  let host = raw.trim();
  let port: number | undefined;
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(host);
  if (m) {
    host = m[1]!;
    port = Number(m[2]);
    if (!(port >= 1 && port <= 65535)) return `${JSON.stringify(raw)}: the port must be 1-65535`;
  } else if (host.includes(':') && !(host.startsWith('[') && host.endsWith(']'))) {
    return `${JSON.stringify(raw)}: write an IPv6 address in brackets, e.g. "[2001:db8::1]:443"`;
  }
  host = host
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  const ip = parseIp(host);
  if (ip) return { host, ip, ...(port !== undefined ? { port } : {}) };
  if (!NAME.test(host))
    return `${JSON.stringify(raw)} is not a host name, "*.domain" or IP address (with an optional ":port"), e.g. "github.com:443" or "*.npmjs.org"`;
  return { host, ...(port !== undefined ? { port } : {}) };
}

function entries(allow: readonly string[]): EgressEntry[] {
  return allow.map(parseEgressEntry).filter((e): e is EgressEntry => typeof e !== 'string');
}

const sameIp = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

export function egressRefusal(host: string, port: number, ip: string | undefined, allow: readonly string[]): string | undefined {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  const list = entries(allow).filter((e) => e.port === undefined || e.port === port);
  if (ip === undefined) {
    const asIp = parseIp(h);
    const listed = list.some((e) => (e.ip && asIp ? sameIp(e.ip, asIp) : e.host.startsWith('*.') ? h.endsWith(e.host.slice(1)) : e.host === h));
    return listed ? undefined : `${h}:${port} is not on this agent's sandboxNetwork.allow list`;
  }
  const why = blockedReason(ip);
  if (why === undefined) return undefined;
  const addr = parseIp(ip);
  if (addr && list.some((e) => e.ip && sameIp(e.ip, addr))) return undefined;
  return `${h} resolves to ${ip}, a ${why} address; only an allow entry naming that address (e.g. "${ip.includes(':') ? `[${ip}]` : ip}:${port}") admits it`;
}
