import { allowEntryProblem, allowedByList, blockedReason, refusalFor } from '../../policies/network.js';
import { networkSchema } from '../../agent/tools/builtin/web/config.js';

test.each([
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['0.0.0.0', 'unspecified ("this network")'],
  ['10.1.2.3', 'private (RFC 1918)'],
  ['172.16.0.1', 'private (RFC 1918)'],
  ['172.31.255.255', 'private (RFC 1918)'],
  ['192.168.1.1', 'private (RFC 1918)'],
  ['100.64.0.1', 'carrier-grade NAT (shared, RFC 6598)'],
  ['169.254.169.254', 'the cloud metadata service'],
  ['169.254.1.1', 'link-local'],
  ['224.0.0.1', 'multicast'],
  ['255.255.255.255', 'reserved or broadcast'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['fd00:ec2::254', 'the cloud metadata service'],
  ['fd12:3456::1', 'unique-local (private IPv6)'],
  ['fc00::1', 'unique-local (private IPv6)'],
  ['fe80::1', 'link-local'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:169.254.169.254', 'the cloud metadata service'],
  ['::ffff:10.0.0.1', 'private (RFC 1918)'],
  ['::127.0.0.1', 'loopback'],
  ['64:ff9b::a00:1', 'private (RFC 1918)'],
  ['2002:a9fe:a9fe::1', 'the cloud metadata service'],
  ['2001:0:4136:e378::1', 'Teredo tunnelling'],
  ['[::1]', 'loopback'],
])('%s is refused as %s', (ip, why) => {
  expect(blockedReason(ip)).toBe(why);
});

test.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('%s is public', (ip) => {
  expect(blockedReason(ip)).toBeUndefined();
});

test('network.allow admits listed hosts, addresses and ranges, and nothing else', () => {
  const allow = ['wiki.internal', '*.corp.example', '10.1.2.3', '192.168.0.0/16', 'fd00::/8'];
  expect(allowedByList('wiki.internal', '10.9.9.9', allow)).toBe(true);
  expect(allowedByList('WIKI.internal.', '10.9.9.9', allow)).toBe(true);
  expect(allowedByList('a.b.corp.example', '10.9.9.9', allow)).toBe(true);
  expect(allowedByList('corp.example', '10.9.9.9', allow)).toBe(false);
  expect(allowedByList('x', '10.1.2.3', allow)).toBe(true);
  expect(allowedByList('x', '::ffff:10.1.2.3', allow)).toBe(true);
  expect(allowedByList('x', '10.1.2.4', allow)).toBe(false);
  expect(allowedByList('x', '192.168.44.1', allow)).toBe(true);
  expect(allowedByList('x', 'fd00:ec2::254', allow)).toBe(true);
  expect(refusalFor('x', '169.254.169.254', allow)).toBe('the cloud metadata service');
  expect(refusalFor('example.com', '93.184.216.34', [])).toBeUndefined();
});

test('bad allow entries are config errors that say what is expected', () => {
  expect(allowEntryProblem('10.0.0.0/33')).toMatch(/not a valid CIDR range; the prefix length is 0-32/);
  expect(allowEntryProblem('http://wiki')).toMatch(/not a host name, IP address or CIDR range/);
  expect(allowEntryProblem('::1/128')).toBeUndefined();
  const r = networkSchema.safeParse({ allow: ['ok.example', 'bad host'] });
  expect(r.success).toBe(false);
  expect(r.error?.issues[0]?.path).toEqual(['allow', 1]);
  expect(networkSchema.safeParse({ allowed: [] }).success).toBe(false);
});
