/**
 * bot/service/log.ts through real pino and pino-pretty: JSON lines off a terminal, readable lines on one,
 * levels, and secret values scrubbed from whatever text carries them (an error with a URL, a field);
 * child loggers, and a run's lines carrying its conversation, agent and run id.
 */
import { PassThrough } from 'node:stream';
import { createLogger, secretValues, type Log } from '../../bot/service/log.js';
import { childLog, prefixedLog } from '../../agent/log.js';
import { Harness, waitFor } from '../helpers/harness.js';

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
  const lines = out
    .text()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
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

test('a child logger carries its bindings on every line, through pino, and is scrubbed like its parent', () => {
  const out = capture(false);
  const { log } = createLogger({ level: 'info', destination: out.stream, secrets: [TOKEN] });
  const run = log.child!({ conversation: 'telegram:42', agent: 'default', runId: 'r-1' });
  run('warn', `failed with ${TOKEN}`);
  run.child!({ tool: 'write_file' })('info', 'nested', { extra: 1 });
  log('info', 'parent');
  const lines = out
    .text()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines[0]).toMatchObject({ level: 'warn', conversation: 'telegram:42', agent: 'default', runId: 'r-1', msg: 'failed with [redacted]' });
  expect(lines[1]).toMatchObject({ conversation: 'telegram:42', runId: 'r-1', tool: 'write_file', extra: 1, msg: 'nested' });
  expect(lines[2]).not.toHaveProperty('conversation');
});

test('childLog and prefixedLog work on any Log, and keep their bindings and prefix through children', () => {
  const lines: Array<[string, string, Record<string, unknown> | undefined]> = [];
  const plain: Log = (level, msg, fields) => void lines.push([level, msg, fields]);
  const run = childLog(plain, { conversation: 'c', runId: 'r' });
  run('info', 'one');
  run('warn', 'two', { n: 2 });
  prefixedLog(run, '[store] ').child!({ op: 'x' })('error', 'three');
  expect(lines).toEqual([
    ['info', 'one', { conversation: 'c', runId: 'r' }],
    ['warn', 'two', { conversation: 'c', runId: 'r', n: 2 }],
    ['error', '[store] three', { conversation: 'c', runId: 'r', op: 'x' }],
  ]);
});

test("every line of a run carries the run's conversation, agent and run id", async () => {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> | undefined }> = [];
  const h = await Harness.start({ log: (level, msg, fields) => void lines.push({ level, msg, fields }) });
  try {
    h.script({ error: { status: 400, type: 'invalid_request_error', message: 'bad request for the test' } });
    await h.adapter.send('hi');
    await waitFor('the failure logged', () => lines.find((l) => l.msg.includes('model call failed')));
    const started = lines.find((l) => l.fields?.['event'] === 'run_started')!;
    const failed = lines.find((l) => l.msg.includes('model call failed'))!;
    expect(failed.level).toBe('warn');
    expect(failed.fields).toMatchObject({ conversation: 'console:main', agent: 'default', runId: started.fields!['runId'] });
  } finally {
    await h.close();
  }
});
