/**
 * The audit trail, read back from a real process: bot/main.ts runs the terminal chat with stderr
 * sent to a pipe (as `npm start 2>gatehouse.log` would), so the log is one JSON line per event.
 * A canary secret in the environment and a canary word in a message must not appear at info.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { startGatehouse } from '../helpers/process.js';

const SECRET = 'sk-canary-Zq81VvX0pLmT';
const OTHER_SECRET = 'canary-token-77Hh5RrWq';
const WORD = 'periwinkleflamingo';

let dir: string;
let model: FakeAnthropic;
const queue: FakeReply[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-audit-'));
  model = await startFakeAnthropic({ apiKey: SECRET });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    ['agents:', '  default:', '    model: claude-sonnet-5-5', '    tools: [write_file]', '    workspace: ./ws', '    approvers: { console: [local] }', ''].join(
      '\n',
    ),
  );
});
afterEach(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs one approved write in the terminal chat; returns stdout (the chat) and stderr (the log). */
async function approvedWrite(env: Record<string, string>, auditExpected = true): Promise<{ code: number | null; chat: string; log: string }> {
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'note.txt', content: `${WORD}\n` } }] }, { text: 'Saved.' });
  const p = startGatehouse([], { cwd: dir, env: { ANTHROPIC_API_KEY: SECRET, ANTHROPIC_BASE_URL: model.url, MY_SERVICE_TOKEN: OTHER_SECRET, ...env } });
  const inChat = (pattern: RegExp | string) => () => (typeof pattern === 'string' ? p.stdout().includes(pattern) : pattern.test(p.stdout()));
  await p.waitForOutput(inChat('Gatehouse terminal chat'), 'banner', 60_000);
  p.write(`please remember ${WORD} in a note\n`);
  await p.waitForOutput(inChat(/\[(\d+)\] Approve once/), 'card', 60_000);
  const n = /\[(\d+)\] Approve once/.exec(p.stdout())![1]!;
  p.write(`${n}\n`);
  await p.waitForOutput(inChat('Saved.'), 'answer', 60_000);
  if (auditExpected) await p.waitForOutput(() => p.stderr().includes('"run_finished"'), 'run finished in the log', 60_000);
  p.child.stdin.end();
  const { code } = await p.exited;
  return { code, chat: p.stdout(), log: p.stderr() };
}

function events(log: string): Array<Record<string, unknown>> {
  return log
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('the audit trail at info: config, run, gate decision, approval asked and decided; no secret, no message text', async () => {
  const run = await approvedWrite({});
  expect(run.code).toBe(0);
  const lines = events(run.log); // every line is JSON (JSON.parse throws otherwise)
  const byEvent = (e: string) => lines.filter((l) => l['event'] === e);

  expect(byEvent('config_loaded')[0]).toMatchObject({ level: 'info', file: join(dir, 'gatehouse.yaml'), agents: ['default'] });
  expect(byEvent('run_started')[0]).toMatchObject({ conversation: 'console:local', agent: 'default', resumed: false });
  expect(byEvent('gate_decision')[0]).toMatchObject({
    tool: 'write_file',
    decision: 'ask',
    tier: 'low-risk',
    approvalKey: 'write_file',
    conversation: 'console:local',
  });
  expect(typeof byEvent('gate_decision')[0]!['rule']).toBe('string');
  const asked = byEvent('approval_asked')[0]!;
  expect(asked).toMatchObject({ kind: 'approval', conversation: 'console:local', agent: 'default' });
  const decided = byEvent('approval_decided')[0]!;
  expect(decided).toMatchObject({ requestId: asked['requestId'], outcome: 'approved', by: 'local' });
  expect(Number.isNaN(Date.parse(String(decided['at'])))).toBe(false);
  const finished = byEvent('run_finished')[0]!;
  expect(finished).toMatchObject({ conversation: 'console:local', agent: 'default', outcome: 'completed', costKnown: true });
  expect(finished['inputTokens']).toBeGreaterThan(0);
  expect(finished['outputTokens']).toBeGreaterThan(0);
  // Order: asked before decided before finished.
  expect(lines.indexOf(asked)).toBeLessThan(lines.indexOf(decided));
  expect(lines.indexOf(decided)).toBeLessThan(lines.indexOf(finished));

  expect(run.log).not.toContain(SECRET);
  expect(run.log).not.toContain(OTHER_SECRET);
  expect(run.log).not.toContain(WORD);
  // The chat screen carries no log lines.
  expect(run.chat).not.toContain('"event"');
  if (process.env.SHOW_AUDIT) process.stdout.write(run.log);
}, 60_000);

test('at debug the message text is logged (and the secrets still are not)', async () => {
  const run = await approvedWrite({ GATEHOUSE_LOG_LEVEL: 'debug' });
  expect(run.code).toBe(0);
  const received = events(run.log).find((l) => l['msg'] === 'message received');
  expect(received).toMatchObject({ level: 'debug', text: `please remember ${WORD} in a note` });
  expect(run.log).not.toContain(SECRET);
  expect(run.log).not.toContain(OTHER_SECRET);
}, 60_000);

test('GATEHOUSE_LOG_LEVEL=warn leaves the audit trail out; a bad value is a config error naming the variable', async () => {
  const quiet = await approvedWrite({ GATEHOUSE_LOG_LEVEL: 'warn' }, false);
  expect(quiet.code).toBe(0);
  expect(quiet.chat).toContain('Saved.');
  expect(quiet.log).not.toContain('"event"');

  const bad = startGatehouse([], { cwd: dir, env: { ANTHROPIC_API_KEY: SECRET, ANTHROPIC_BASE_URL: model.url, GATEHOUSE_LOG_LEVEL: 'verbose' } });
  const { code } = await bad.exited;
  const err = bad.stderr();
  expect(code).toBe(1);
  expect(err).toContain('GATEHOUSE_LOG_LEVEL');
  expect(err).toContain('verbose');
}, 90_000);

test('with Telegram: start-up warns about an empty access list and a missing approver; a stranger is audited, the token never logged', async () => {
  const tg = await startFakeTelegram({ token: '123456:AUDIT-canary_token_abcdefghijklm' });
  try {
    // The default agent serves Telegram with no approver there, and access.telegram admits nobody.
    writeFileSync(join(dir, 'gatehouse.yaml'), ['agents:', '  default:', '    model: claude-sonnet-5-5', '    approvers: { console: [local] }', ''].join('\n'));
    const p = startGatehouse([], {
      cwd: dir,
      env: { ANTHROPIC_API_KEY: SECRET, ANTHROPIC_BASE_URL: model.url, TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_ROOT: tg.apiRoot, GATEHOUSE_HTTP_PORT: '0' },
    });
    await p.waitForOutput('connected as @', 'connected', 60_000);
    const stranger = { id: 4242, first_name: 'Eve' };
    await tg.sendText({ chat: { id: 4242, type: 'private', first_name: 'Eve' }, from: stranger, text: `hello ${WORD}` });
    await p.waitForOutput('"stranger_refused"', 'stranger audited', 60_000);
    await p.stop('SIGTERM');
    const out = p.output();

    const lines = events(
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .join('\n'),
    );
    const warnings = lines.filter((l) => l['level'] === 'warn').map((l) => String(l['msg']));
    expect(warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^telegram is enabled but access\.telegram admits nobody/),
        expect.stringMatching(/^agent default serves telegram but no approver is bound there \(agents\.default\.approvers\.telegram\)/),
      ]),
    );
    expect(lines.find((l) => l['event'] === 'stranger_refused')).toMatchObject({ level: 'info', platform: 'telegram', userId: '4242', channel: '4242' });
    expect(lines.find((l) => l['event'] === 'config_loaded')).toMatchObject({ platforms: ['telegram'] });
    expect(out).not.toContain(tg.token);
    expect(out).not.toContain('AUDIT-canary_token');
    expect(out).not.toContain(SECRET);
    expect(out).not.toContain(WORD);
  } finally {
    await tg.close();
  }
}, 60_000);
