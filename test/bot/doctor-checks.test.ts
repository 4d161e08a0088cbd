/**
 * bot/cli/doctor-checks.ts: the DNS check (a look-up that never answers is cut off and said so, no
 * hang), and the PostgreSQL store check over a Unix socket (the socket file is probed, not skipped).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolves, storeCheck } from '../../bot/cli/doctor-checks.js';

test('a DNS look-up that never answers ends at the timeout with a plain reason', async () => {
  const never = () => new Promise<never>(() => undefined);
  await expect(resolves('api.telegram.org', 20, never)).resolves.toBe('did not resolve within 0.02 s (DNS timed out)');
});

test('an answer, an error and an IP address', async () => {
  await expect(resolves('slack.com', 1000, async () => ({ address: '1.2.3.4' }))).resolves.toBeUndefined();
  const enotfound = async () => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
  };
  await expect(resolves('discord.com', 1000, enotfound)).resolves.toMatch(
    /^does not resolve \(ENOTFOUND: no address for this name; without internet or DNS access this is expected\)$/,
  );
  // Never looked up.
  await expect(resolves('127.0.0.1', 1000, enotfound)).resolves.toBeUndefined();
  await expect(resolves('[::1]', 1000, enotfound)).resolves.toBeUndefined();
});

describe('the store check on a PostgreSQL Unix socket', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gh-doctor-sock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const settings = (url: string) => ({ kind: 'postgres' as const, url, description: 'the store' });

  test('a socket file that accepts connections is ok; a missing one fails, naming the file and the fix', async () => {
    const url = `postgres://u:pw@/db?host=${dir}&port=5499`;
    const missing = await storeCheck(settings(url), 1000);
    expect(missing).toMatchObject({ status: 'fail', detail: expect.stringContaining(`socket ${dir}/.s.PGSQL.5499 has no socket file`) });
    expect(missing.fix).toContain('host= (the socket folder) and the port');
    const server = createServer((c) => c.end());
    await new Promise<void>((r) => server.listen(join(dir, '.s.PGSQL.5499'), r));
    try {
      expect(await storeCheck(settings(url), 1000)).toMatchObject({
        status: 'ok',
        detail: expect.stringContaining(`socket ${dir}/.s.PGSQL.5499 accepts connections`),
      });
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
