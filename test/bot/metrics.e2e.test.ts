/**
 * /metrics end to end: a real bot (startBot, fake Telegram and Anthropic behind the real clients),
 * scraped through its real HTTP server after a message, a refused stranger and an approved tool call.
 * The counters moved; no conversation key, user id or chat id is a label value; with a token, a scrape
 * without it or with another gets 401; exposed on a non-loopback address without a token, the bot
 * does not start and the error names GATEHOUSE_METRICS_TOKEN.
 */
import { PassThrough } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../bot/cli/index.js';
import { owner, scriptedConversation, startTelemetryBot, stranger, type TelemetryBot } from './telemetry-bot.js';

let t: TelemetryBot | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** Every sample of the exposition: name, labels, value. */
function samples(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  const out: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

function value(text: string, name: string, labels: Record<string, string> = {}): number {
  return samples(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

async function scrape(url: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(`${url}/metrics`, { headers });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

async function scrapeUntil(url: string, done: (text: string) => boolean, what: string): Promise<string> {
  const end = Date.now() + 10_000;
  for (;;) {
    const { text } = await scrape(url);
    if (done(text)) return text;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${text}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('after a message, a refused stranger and an approved tool call, the counters moved; no key or id is a label', async () => {
  t = await startTelemetryBot();
  const before = await scrape(t.url);
  expect(before.status).toBe(200);
  expect(before.type).toContain('text/plain');
  expect(value(before.text, 'gatehouse_runs_finished_total')).toBe(0);

  await scriptedConversation(t);
  const text = await scrapeUntil(t.url, (x) => value(x, 'gatehouse_runs_finished_total') === 2, 'two finished runs');

  expect(value(text, 'gatehouse_messages_received_total', { platform: 'telegram' })).toBe(3);
  expect(value(text, 'gatehouse_messages_refused_total', { platform: 'telegram', reason: 'stranger' })).toBe(1);
  expect(value(text, 'gatehouse_runs_started_total', { agent: 'default', resumed: 'false' })).toBe(2);
  expect(value(text, 'gatehouse_runs_finished_total', { agent: 'default', outcome: 'completed' })).toBe(2);
  expect(value(text, 'gatehouse_run_duration_seconds_count', { agent: 'default', outcome: 'completed' })).toBe(2);
  expect(value(text, 'gatehouse_tool_calls_total', { tool: 'write_file', decision: 'ask' })).toBe(1);
  expect(value(text, 'gatehouse_approvals_decided_total', { kind: 'approval', outcome: 'approved' })).toBe(1);
  expect(value(text, 'gatehouse_approval_wait_seconds_count', { kind: 'approval', outcome: 'approved' })).toBe(1);
  expect(value(text, 'gatehouse_approvals_pending')).toBe(0);
  expect(value(text, 'gatehouse_model_request_duration_seconds_count', { model: 'claude-sonnet-5-5', outcome: 'ok' })).toBe(3);
  expect(value(text, 'gatehouse_model_tokens_total', { model: 'claude-sonnet-5-5', type: 'input' })).toBeGreaterThan(0);
  expect(value(text, 'gatehouse_model_cost_usd_total', { model: 'claude-sonnet-5-5' })).toBeGreaterThan(0);
  expect(value(text, 'gatehouse_store_operation_duration_seconds_count', { operation: 'checkpoint', outcome: 'ok' })).toBeGreaterThan(0);
  expect(value(text, 'gatehouse_store_operation_duration_seconds_count', { operation: 'events.claim' })).toBeGreaterThan(0);
  expect(samples(text).some((s) => s.name === 'gatehouse_turn_queue_depth')).toBe(true);
  expect(value(text, 'gatehouse_turn_queue_depth')).toBe(0);
  expect(samples(text).some((s) => s.name === 'gatehouse_turn_queue_oldest_wait_seconds')).toBe(true);

  // Label values are bounded: no conversation key, user id or chat id anywhere among them.
  const labelValues = samples(text).flatMap((s) => Object.values(s.labels));
  for (const id of [String(owner.id), String(stranger.id)]) {
    expect(labelValues.filter((v) => v.includes(id))).toEqual([]);
  }
  expect(text).not.toContain('telegram:');
}, 60_000);

test('with GATEHOUSE_METRICS_TOKEN, a scrape needs the bearer token: 401 without it or with another', async () => {
  const token = 'metrics-token-0123456789abcdef';
  t = await startTelemetryBot({ GATEHOUSE_METRICS_TOKEN: token });
  const none = await scrape(t.url);
  expect(none.status).toBe(401);
  expect(none.text).not.toContain('gatehouse_');
  const wrong = await scrape(t.url, { authorization: 'Bearer metrics-token-0123456789abcdeX' });
  expect(wrong.status).toBe(401);
  const basic = await scrape(t.url, { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` });
  expect(basic.status).toBe(401);
  const right = await scrape(t.url, { authorization: `Bearer ${token}` });
  expect(right.status).toBe(200);
  expect(right.text).toContain('gatehouse_messages_received_total');
  // /readyz and /healthz are unchanged: no token asked.
  expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
}, 60_000);

test('exposed on a non-loopback address without a token, the bot refuses to start, naming GATEHOUSE_METRICS_TOKEN', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-metrics-exposed-'));
  try {
    const stderr = new PassThrough();
    let err = '';
    stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await runCli(['serve'], {
      env: { ANTHROPIC_API_KEY: 'test-key', GATEHOUSE_HTTP_HOST: '0.0.0.0', GATEHOUSE_HTTP_PORT: '0', GATEHOUSE_STORE: `sqlite://${join(dir, 's.sqlite')}` },
      cwd: dir,
      stdout: new PassThrough(),
      stderr,
    });
    expect(code).toBe(1);
    expect(err).toContain('GATEHOUSE_METRICS_TOKEN');
    expect(err).toContain('0.0.0.0');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
