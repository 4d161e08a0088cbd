// A PostgreSQL store reached over a Unix socket (`?host=/folder`), on the real test server behind a
// socket file (test/helpers/socket-forwarder.ts): it opens and works, names the socket (never the
// password) in what it prints, says what to fix when the socket file is missing, and rides out a
// server restart (connections cut, the socket file gone for a while) like a lost TCP connection.
import { afterEach, expect, test } from '@jest/globals';
import { openPostgresStore, type PostgresStore } from '../../../agent/store/postgres/index.js';
import { StoreError } from '../../../agent/store/types.js';
import { testPostgresUrl } from '../../helpers/postgres.js';
import { startSocketForwarder, type SocketForwarder } from '../../helpers/socket-forwarder.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function forwarder(tcpUrl: string): Promise<SocketForwarder> {
  const f = await startSocketForwarder(tcpUrl);
  cleanups.push(() => f.close());
  return f;
}

async function open(url: string, log: (m: string) => void = () => undefined): Promise<PostgresStore> {
  const s = await openPostgresStore({ url, log: (_l, m) => log(m), sweepEveryMs: 3_600_000 });
  cleanups.push(() => s.close());
  return s;
}

test('a store over a Unix socket opens, keeps what it is given, and names the socket, not the password', async () => {
  const tcp = await testPostgresUrl();
  const f = await forwarder(tcp);
  const lines: string[] = [];
  const s = await open(f.url(tcp), (m) => lines.push(m));
  await s.transcripts.write({ conversation: 'c1', agent: 'a', state: {}, changes: [{ op: 'append', rows: [{ seq: 1, message: 'over the socket' }] }], now: 1 });
  expect((await s.transcripts.load('c1'))?.rows).toEqual([{ seq: 1, message: 'over the socket' }]);
  expect(f.accepted).toBeGreaterThan(0); // it did go through the socket file
  expect(s.description).toContain(`host=${f.folder}`);
  const password = new URL(tcp).password;
  expect(password).not.toBe('');
  for (const text of [s.description, ...lines]) expect(text).not.toContain(password);
}, 60_000);

test('with no socket file, the start says which file is missing and what to fix, without the password', async () => {
  const tcp = await testPostgresUrl();
  const f = await forwarder(tcp);
  await f.down();
  const err = await open(f.url(tcp)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreError);
  const msg = (err as Error).message;
  expect(msg).toContain(`PostgreSQL at socket ${f.socketFile}`);
  expect(msg).toContain(`there is no socket file ${f.socketFile}`);
  expect(msg).toContain('unix_socket_directories');
  expect(msg).not.toContain(new URL(tcp).password);
}, 60_000);

test('a server restart on the socket (connections cut, the file gone a while) is waited out, and the write is stored once', async () => {
  const tcp = await testPostgresUrl();
  const f = await forwarder(tcp);
  let seen: () => void = () => undefined;
  const retrying = new Promise<void>((r) => (seen = r));
  const s = await open(f.url(tcp), (m) => {
    if (/cannot connect \(.*ENOENT.*\); retrying/.test(m)) seen();
  });
  await s.cache.set('before', { v: 1 });
  await f.down();
  const write = s.approvals.create({ id: 'r1', conversation: 'c1', request: {}, tokens: [{ token: 't1', choice: 'yes' }], createdAt: 1, keepUntil: 1_000 });
  const read = s.cache.get('before');
  // A missing socket that is not retried rejects here at once, before the log line.
  await Promise.race([retrying, write, read]);
  await f.up();
  await write;
  expect(await read).toEqual({ v: 1 });
  expect(await s.approvals.decideOnce('r1', { by: 'u' }, 2, 1_000)).toBe(true);
  expect(await s.approvals.decideOnce('r1', { by: 'v' }, 2, 1_000)).toBe(false);
}, 60_000);
