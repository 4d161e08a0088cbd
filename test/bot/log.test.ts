/**
 * bot/log.ts through real pino and pino-pretty: JSON lines off a terminal, readable lines on one,
 * levels, and secret values scrubbed from whatever text carries them (an error with a URL, a field).
 */
import { PassThrough } from 'node:stream';
import { createLogger, secretValues } from '../../bot/log.js';

function capture(tty: boolean): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  if (tty) Object.assign(stream, { isTTY: true });
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString()));
  return { stream, text: () => text };
}

const TOKEN = '987654:SECRET-token_value_xyz';

test('off a terminal: one JSON line per event, level by name, fields at the top level', () => {
  const out = capture(false);
  const { log, audit } = createLogger({ level: 'info', destination: out.stream });
  log('info', 'hello', { conversation: 'console:local' });
  log('debug', 'not shown at info');
  audit({ event: 'stranger_refused', platform: 'telegram', userId: '42', channel: '42' });
  const lines = out.text().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines).toHaveLength(2);
  expect(lines[0]).toMatchObject({ level: 'info', msg: 'hello', conversation: 'console:local' });
  expect(typeof lines[0]!['time']).toBe('string');
  expect(lines[1]).toMatchObject({ level: 'info', event: 'stranger_refused', platform: 'telegram', userId: '42' });
});

test('on a terminal: readable lines, not JSON', () => {
  const out = capture(true);
  createLogger({ level: 'info', destination: out.stream }).log('warn', 'disk almost full', { freeMB: 12 });
  const text = out.text();
  expect(text).toContain('disk almost full');
  expect(text).toMatch(/WARN/);
  expect(text).toContain('freeMB');
  expect(() => JSON.parse(text)).toThrow();
});

test('secret values from the environment never reach the log, wherever they appear', () => {
  const out = capture(false);
  const secrets = secretValues({ TELEGRAM_BOT_TOKEN: TOKEN, GATEHOUSE_STORE: 'postgres://app:hunter2pass@db/gh', PATH: '/usr/bin' });
  const { log } = createLogger({ level: 'trace', destination: out.stream, secrets });
  log('error', `GET https://api.telegram.org/bot${TOKEN}/getMe failed`);
  log('warn', 'store', { url: 'postgres://app:hunter2pass@db/gh' });
  log('info', 'a token field', { token: 'whatever-it-is' });
  const text = out.text();
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain('hunter2pass');
  expect(text).not.toContain('whatever-it-is');
  expect(text).toContain('[redacted]');
  expect(secrets).not.toContain('/usr/bin');
});

test('silent writes nothing', () => {
  const out = capture(false);
  createLogger({ level: 'silent', destination: out.stream }).log('fatal', 'x');
  expect(out.text()).toBe('');
});
