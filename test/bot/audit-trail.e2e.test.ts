/**
 * The audit trail and host decisions on real processes: `gatehouse serve` (bot/main.ts) with the real
 * grammy against the fake Bot API and the real Anthropic SDK against the fake model; the operator's
 * commands (`gatehouse approvals decide`, `gatehouse audit verify`, `gatehouse audit tail --follow`)
 * are processes of their own, as from a shell.
 * - A run with an approval: a non-approver's click, the approver's click, a replayed click, a forged
 *   and a stale button, a host decision, a reload that takes the host's right away and the refused
 *   host decision after it: each is an audit event in the chain file, which verifies across rotations.
 * - The sandbox cannot read the audit key: a command in the real box tries, and fails.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../fakes/telegram.js';
import { type Finished, finishGatehouse } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');
const TOKEN = '123456:AUDITTRAIL-test_token_abcdefghijk';

const ada: FakeUser = { id: 501, first_name: 'Ada' };
const eve: FakeUser = { id: 4242, first_name: 'Eve' };
const adaDm: FakeChat = { id: 501, type: 'private', first_name: 'Ada' };

const yaml = (approvers: string, tools = 'tools: [write_file]\n    tier: read-only', extra = '') => `
agents:
  default:
    model: claude-sonnet-5-5
    ${tools}
    workspace: ./ws
    approvers: ${approvers}
${extra}access:
  telegram: { users: ["501", "4242"] }
`;

let tg: FakeTelegram;
let model: FakeAnthropic;
let dir: string;
const queue: FakeReply[] = [];
let child: ReturnType<typeof spawn> | undefined;
/** Other processes a test started (killed at its end whatever happened). */
const others: Array<ReturnType<typeof spawn>> = [];
let output = '';

function env(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: model.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: tg.apiRoot,
    GATEHOUSE_HTTP_PORT: '0',
    // Small files: the run's events span a rotation.
    GATEHOUSE_AUDIT_MAX_BYTES: '2k',
  };
}

const until = (what: string, check: () => boolean, ms = 60_000): Promise<unknown> =>
  waitFor(what, check, { timeoutMs: ms, intervalMs: 20, detail: () => `output:\n${output}` });

async function startService(): Promise<void> {
  output = '';
  child = spawn(process.execPath, ['--import', register, main, 'serve'], { cwd: dir, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await until('the bot to start', () => /Gatehouse started/.test(output));
}

/** A `gatehouse ...` command as its own process, in the service's folder and environment. */
function gatehouse(args: string[]): Promise<Finished> {
  return finishGatehouse(args, { cwd: dir, env: env(), onlyEnv: true });
}

type Rec = { seq: number; event: Record<string, unknown> & { event: string } };
const auditDir = () => join(dir, 'data', 'audit');
function records(): Rec[] {
  const out: Rec[] = [];
  for (const f of readdirSync(auditDir())
    .filter((n) => n.endsWith('.jsonl'))
    .sort()) {
    for (const l of readFileSync(join(auditDir(), f), 'utf8').split('\n')) if (l) out.push(JSON.parse(l) as Rec);
  }
  return out;
}
const has = (match: Record<string, unknown>) => () =>
  records().some((r) => Object.entries(match).every(([k, v]) => JSON.stringify(r.event[k]) === JSON.stringify(v)));
const texts = (chatId: number) => tg.visible(chatId).map((m) => m.plain);
const cards = () => tg.visible(501).filter((m) => m.replyMarkup !== undefined);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-audittrail-'));
  tg = await startFakeTelegram({ token: TOKEN });
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
});

afterEach(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  child = undefined;
  for (const p of others.splice(0)) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
  await tg.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a run with approvals: every click, the host decision and the reload are audit events in a chain that verifies', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ telegram: ["501"], cli: [local] }'));
  await startService();
  // Someone watching the trail from a shell.
  const tail = spawn(process.execPath, ['--import', register, main, 'audit', 'tail', '-n', '1', '--follow'], {
    cwd: dir,
    env: env(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  others.push(tail);
  let tailed = '';
  tail.stdout.on('data', (d: Buffer) => (tailed += d.toString()));
  await until('tail to print the last record', () => /service_started/.test(tailed));

  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'plan.md', content: '# plan\n' } }] }, { text: 'Wrote plan.md.' });
  await tg.sendText({ chat: adaDm, from: ada, text: 'write the plan' });
  await tg.waitFor(() => cards().length === 1, 10_000, 'approval card');
  const card = cards()[0]!;
  const approveOnce = card.replyMarkup!.inline_keyboard[0]![0]!.callback_data!;

  // Eve is admitted but no approver: refused, and who tried is recorded.
  await tg.press(501, card.messageId, 0, eve);
  await until('the refusal', has({ event: 'approval_refused', platform: 'telegram', userId: '4242', reason: 'not_approver' }));
  await tg.press(501, card.messageId, 0, ada);
  await tg.waitFor(() => texts(501).includes('Wrote plan.md.'), 10_000, 'answer after approval');
  // The same button again (a replay), a made-up token and a mangled one.
  await tg.pressData(501, card.messageId, approveOnce, ada);
  await until('the replay', has({ event: 'approval_refused', userId: '501', reason: 'already_decided' }));
  await tg.pressData(501, card.messageId, `g:${'A'.repeat(24)}`, ada);
  await tg.pressData(501, card.messageId, 'g:not*a*token', ada);
  await until('the forged clicks', () => has({ reason: 'stale_token' })() && has({ reason: 'bad_token' })());
  await until('tail to follow', () => /approval_refused/.test(tailed));

  // The host operator decides the next one: the run goes on and the card shows the outcome.
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'notes.md', content: 'n\n' } }] }, { text: 'Wrote notes.md.' });
  await tg.sendText({ chat: adaDm, from: ada, text: 'write the notes' });
  await tg.waitFor(() => cards().length === 1, 10_000, 'second card');
  const second = cards()[0]!;
  const pending = JSON.parse((await gatehouse(['approvals', '--json'])).stdout) as Array<{ id: string }>;
  expect(pending).toHaveLength(1);
  const decided = await gatehouse(['approvals', 'decide', pending[0]!.id, 'approve']);
  expect(decided).toMatchObject({ code: 0, stdout: `${pending[0]!.id}: Approved. (decided as the host operator)\n` });
  await tg.waitFor(() => texts(501).includes('Wrote notes.md.'), 10_000, 'answer after the host decision');
  expect(tg.visible(501).find((m) => m.messageId === second.messageId)?.replyMarkup).toBeUndefined();
  expect(readFileSync(join(dir, 'ws', 'notes.md'), 'utf8')).toBe('n\n');

  // The operator takes the host's right away and reloads; the next host decision is refused.
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ telegram: ["501"] }'));
  expect((await gatehouse(['reload'])).code).toBe(0);
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'x.md', content: 'x\n' } }] }, { text: 'not reached' });
  await tg.sendText({ chat: adaDm, from: ada, text: 'write x' });
  await tg.waitFor(() => cards().length === 1, 10_000, 'third card');
  const third = JSON.parse((await gatehouse(['approvals', '--json'])).stdout) as Array<{ id: string }>;
  const refused = await gatehouse(['approvals', 'decide', third[0]!.id, 'approve']);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/^Refused: agent default does not let the host operator decide: add `cli: \[local\]` to agents\.default\.approvers/);
  expect((await gatehouse(['approvals', 'decide', third[0]!.id, 'maybe'])).code).toBe(2);

  const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
  child!.kill('SIGTERM');
  expect(await exited).toBe(0);
  tail.kill('SIGTERM');

  const events = records().map((r) => r.event);
  const one = (match: Record<string, unknown>) => events.filter((e) => Object.entries(match).every(([k, v]) => JSON.stringify(e[k]) === JSON.stringify(v)));
  expect(records().map((r) => r.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events[0]).toMatchObject({
    event: 'config_loaded',
    approvers: ['default.telegram:501', 'default.cli:local'],
    access: ['telegram.users:501', 'telegram.users:4242'],
  });
  expect(one({ event: 'service_started', mode: 'serve' })).toHaveLength(1);
  expect(one({ event: 'gate_decision', tool: 'write_file', decision: 'ask' })).toHaveLength(3);
  expect(one({ event: 'approval_asked' })).toHaveLength(3);
  expect(one({ event: 'approval_decided', outcome: 'approved', by: '501', byPlatform: 'telegram' })).toHaveLength(1);
  expect(one({ event: 'approval_decided', outcome: 'approved', by: 'local', byName: 'host operator', byPlatform: 'cli' })).toHaveLength(1);
  expect(one({ event: 'approval_refused', platform: 'telegram', userId: '4242', userName: 'Eve', reason: 'not_approver', kind: 'approval' })).toHaveLength(1);
  expect(one({ event: 'approval_refused', platform: 'telegram', userId: '501', reason: 'stale_token', conversation: 'telegram:501' })).toHaveLength(1);
  expect(one({ event: 'approval_refused', platform: 'cli', userId: 'local', reason: 'not_approver', agent: 'default' })).toHaveLength(1);
  expect(one({ event: 'config_reloaded', ok: true })[0]).toMatchObject({
    changes: { approvers: { added: [], removed: ['default.cli:local'] }, agents: { added: [], removed: [] } },
  });
  expect(one({ event: 'run_finished', outcome: 'completed' })).toHaveLength(2);
  expect(events.at(-1)).toMatchObject({ event: 'service_stopped', reason: 'SIGTERM' });
  // Files and key are the service user's only; the chain spans files and verifies.
  expect(readdirSync(auditDir()).filter((f) => f.endsWith('.jsonl')).length).toBeGreaterThan(1);
  expect(statSync(auditDir()).mode & 0o777).toBe(0o700);
  expect(statSync(join(dir, 'data', 'audit.key')).mode & 0o777).toBe(0o600);
  const verify = await gatehouse(['audit', 'verify']);
  expect(verify.code).toBe(0);
  expect(verify.stdout).toMatch(new RegExp(`^OK: ${events.length} record\\(s\\) in \\d+ file\\(s\\)`));
}, 240_000);

test('with the service stopped, approvals decide writes the decision to the store; the run continues at the next start', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ telegram: ["501"], cli: [local] }'));
  await startService();
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'later.md', content: 'l\n' } }] }, { text: 'Wrote later.md.' });
  await tg.sendText({ chat: adaDm, from: ada, text: 'write it later' });
  await tg.waitFor(() => cards().length === 1, 10_000, 'approval card');
  const [pending] = JSON.parse((await gatehouse(['approvals', '--json'])).stdout) as Array<{ id: string }>;
  const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
  child!.kill('SIGTERM');
  expect(await exited).toBe(0);

  const decided = await gatehouse(['approvals', 'decide', pending!.id, 'approve']);
  expect(decided.code).toBe(0);
  expect(decided.stdout).toContain('No service is running: the run continues when it starts');
  await startService();
  await tg.waitFor(() => texts(501).includes('Wrote later.md.'), 20_000, 'the resumed run');
  expect(has({ event: 'approval_decided', by: 'local', byPlatform: 'cli', requestId: pending!.id })()).toBe(true);
  const verify = await gatehouse(['audit', 'verify']);
  expect(verify).toMatchObject({ code: 0 });
}, 180_000);

test('an in-process gatehouse run (no service) writes its events to a chain of its own, which verifies', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ telegram: ["501"] }', 'tools: [write_file]\n    tier: high-risk'));
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'cli.md', content: 'c\n' } }] }, { text: 'Wrote cli.md.' }, { text: 'Second run.' });
  const first = await gatehouse(['run', 'write cli.md']);
  expect(first).toMatchObject({ code: 0 });
  expect(first.stdout).toContain('Wrote cli.md.');
  expect(await gatehouse(['run', 'again'])).toMatchObject({ code: 0 });
  const files = readdirSync(auditDir()).sort();
  expect(files.filter((f) => f.endsWith('.jsonl')).every((f) => f.startsWith('audit-cli-'))).toBe(true);
  expect(files.some((f) => f.endsWith('.lock'))).toBe(false); // released at the end of each run
  const runs = records().filter((r) => r.event.event === 'run_finished');
  expect(runs).toHaveLength(2); // the second run continued the same chain
  expect(has({ event: 'gate_decision', tool: 'write_file', decision: 'allow' })()).toBe(true);
  const verify = await gatehouse(['audit', 'verify']);
  expect(verify.code).toBe(0);
  expect(verify.stdout).toMatch(/^OK: /);
}, 180_000);

const toolResults = (req: RecordedRequest | undefined): string =>
  JSON.stringify((req?.body as { messages: Array<{ content: unknown }> } | undefined)?.messages.at(-1)?.content ?? '');

test('a command in the real sandbox cannot read the audit key (nor see the data folder); the same box reads its workspace', async () => {
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'ws'));
  writeFileSync(join(dir, 'ws', 'canary.txt'), 'canary-in-the-workspace\n');
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ telegram: ["501"] }', 'tools: [execute_command]\n    autoApprovedCommands: [cat, ls]'));
  await startService();
  const keyFile = join(dir, 'data', 'audit.key');
  const key = readFileSync(keyFile, 'utf8').trim();
  expect(key).toMatch(/^[0-9a-f]{64}$/);
  queue.push(
    { toolUses: [{ name: 'execute_command', input: { command: `cat ${join(dir, 'ws', 'canary.txt')}` } }] },
    { toolUses: [{ name: 'execute_command', input: { command: `cat ${keyFile}` } }] },
    { toolUses: [{ name: 'execute_command', input: { command: `ls -la ${join(dir, 'data')}` } }] },
    { text: 'done' },
  );
  await tg.sendText({ chat: adaDm, from: ada, text: 'look around' });
  await tg.waitFor(() => texts(501).includes('done'), 60_000, 'the run to finish');
  const [control, cat, ls] = model.requests.slice(1, 4).map(toolResults);
  // Control: the box runs the command and its output reaches the model.
  expect(control).toContain('canary-in-the-workspace');
  expect(cat).not.toContain(key);
  expect(cat).toMatch(/No such file or directory/);
  expect(ls).toMatch(/No such file or directory/);
  expect(ls).not.toContain('audit.key');
  expect(JSON.stringify(model.requests.map((r) => r.body))).not.toContain(key);
}, 180_000);
