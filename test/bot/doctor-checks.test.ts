/** bot/cli/doctor-checks.ts's DNS check: a look-up that never answers is cut off and said so (no hang). */
import { resolves } from '../../bot/cli/doctor-checks.js';

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
