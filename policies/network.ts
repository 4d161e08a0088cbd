/**
 * Which network addresses the agent's own web tools (web_fetch, http_request) may connect to.
 *
 * Contract:
 * - `blockedReason(ip)` names why an address is off limits, or returns undefined for a public one.
 *   Off limits: unspecified (0.0.0.0/8, ::), loopback (127/8, ::1), RFC 1918 private (10/8,
 *   172.16/12, 192.168/16), CGNAT (100.64/10), link-local (169.254/16 with the cloud metadata
 *   address 169.254.169.254, fe80::/10), unique-local (fc00::/7 with AWS's fd00:ec2::254),
 *   site-local (fec0::/10), IETF/benchmark/documentation ranges, multicast, broadcast and reserved
 *   (224/4, 240/4). IPv6 forms that carry an IPv4 address (IPv4-mapped ::ffff:a.b.c.d,
 *   IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by that IPv4 address;
 *   Teredo (2001::/32) is refused as a whole (it tunnels to an address we cannot see).
 * - `network.allow` (per agent) lists exceptions: host names (exact, case-insensitive, or `*.domain`
 *   for its subdomains), IP addresses and CIDR ranges. `isAllowed(host, ip, allow)` is true when the
 *   address is public or an entry admits the host name or the address.
 * - The caller checks the address it will actually connect to, after DNS resolution, on every hop of
 *   a redirect, and connects to exactly that address (no second lookup that DNS rebinding could
 *   change).
 * - Pure: no I/O.
 */
import { isIP } from 'node:net';

/** 16 bytes for IPv6, 4 for IPv4; undefined for anything that is not an IP literal. */
export function parseIp(text: string): Uint8Array | undefined {
  const s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const v = isIP(s);
  if (v === 4) return Uint8Array.from(s.split('.').map(Number));
  if (v !== 6) return undefined;
  let head = s;
  let v4: number[] = [];
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    v4 = s
      .slice(lastColon + 1)
      .split('.')
      .map(Number);
    head = s.slice(0, lastColon + 1) + '0:0';
  }
  const [l, r] = head.includes('::') ? head.split('::') : [head, undefined];
  const left = l ? l.split(':') : [];
  const right = r === undefined ? [] : r ? r.split(':') : [];
  const groups = r === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = parseInt(g, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  });
  if (v4.length === 4) out.set(v4, 12);
  return out;
}

/** The IPv4 address an IPv6 form carries (mapped, compatible, NAT64, 6to4), else the address itself. */
function embeddedIpv4(ip: Uint8Array): Uint8Array {
  if (ip.length === 4) return ip;
  const zeros = (from: number, to: number) => ip.subarray(from, to).every((b) => b === 0);
  if (zeros(0, 10) && ip[10] === 0xff && ip[11] === 0xff) return ip.slice(12); // ::ffff:a.b.c.d
  if (zeros(0, 12) && !zeros(12, 16) && !(zeros(12, 15) && ip[15] === 1)) return ip.slice(12); // ::a.b.c.d (not ::1)
  if (ip[0] === 0x00 && ip[1] === 0x64 && ip[2] === 0xff && ip[3] === 0x9b && zeros(4, 12)) return ip.slice(12); // 64:ff9b::/96
  if (ip[0] === 0x20 && ip[1] === 0x02) return ip.slice(2, 6); // 2002:AABB:CCDD::/16
  return ip;
}

function inRange(ip: Uint8Array, net: Uint8Array, bits: number): boolean {
  if (ip.length !== net.length) return false;
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3;
    const mask = 0x80 >> (i & 7);
    if ((ip[byte]! & mask) !== (net[byte]! & mask)) return false;
  }
  return true;
}

const RANGES: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private (RFC 1918)'],
  ['100.64.0.0', 10, 'carrier-grade NAT (shared, RFC 6598)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.169.254', 32, 'the cloud metadata service'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private (RFC 1918)'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private (RFC 1918)'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved or broadcast'],
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fd00:ec2::254', 128, 'the cloud metadata service'],
  ['fc00::', 7, 'unique-local (private IPv6)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
  ['2001::', 32, 'Teredo tunnelling'],
  ['2001:db8::', 32, 'documentation'],
  ['100::', 64, 'discard-only'],
];
const PARSED = RANGES.map(([net, bits, why]) => ({ net: parseIp(net)!, bits, why }));

/** Why `ip` (a literal) is off limits, or undefined when it is a public address. */
export function blockedReason(ip: string): string | undefined {
  const raw = parseIp(ip);
  if (!raw) return 'not an IP address';
  const v4 = embeddedIpv4(raw);
  for (const r of PARSED) {
    if (inRange(raw, r.net, r.bits) || (v4 !== raw && inRange(v4, r.net, r.bits))) return r.why;
  }
  return undefined;
}

/** True when an allow entry admits `host` (as the URL names it) or `ip` (what it resolved to). */
export function allowedByList(host: string, ip: string, allow: readonly string[]): boolean {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  const addr = parseIp(ip);
  for (const raw of allow) {
    const entry = raw.toLowerCase();
    const [netText, bitsText] = entry.split('/');
    const net = parseIp(netText!);
    if (net && addr) {
      const bits = bitsText === undefined ? net.length * 8 : Number(bitsText);
      if (inRange(addr, net, bits) || inRange(embeddedIpv4(addr), net, bits)) return true;
      continue;
    }
    if (entry.startsWith('*.') ? h.endsWith(entry.slice(1)) : h === entry) return true;
  }
  return false;
}

/** The reason a connection to `ip` for `host` is refused under `allow`, or undefined when it may go. */
export function refusalFor(host: string, ip: string, allow: readonly string[]): string | undefined {
  const why = blockedReason(ip);
  if (why === undefined || allowedByList(host, ip, allow)) return undefined;
  return why;
}

const HOST_NAME = /^(\*\.)?([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/i;

/** What is wrong with a `network.allow` entry, or undefined when it is a host name, IP or CIDR range. */
export function allowEntryProblem(s: string): string | undefined {
  const [netText, bitsText, extra] = s.split('/');
  const net = parseIp(netText!);
  if (net) {
    const max = net.length * 8;
    if (extra !== undefined || (bitsText !== undefined && !(/^\d{1,3}$/.test(bitsText) && Number(bitsText) <= max))) {
      return `${JSON.stringify(s)} is not a valid CIDR range; the prefix length is 0-${max}, e.g. 10.0.0.0/8`;
    }
    return undefined;
  }
  if (bitsText !== undefined || !HOST_NAME.test(s)) {
    return `${JSON.stringify(s)} is not a host name, IP address or CIDR range; use e.g. "wiki.internal", "*.corp.example", "10.1.2.3" or "10.0.0.0/8"`;
  }
  return undefined;
}
