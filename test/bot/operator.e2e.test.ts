/**
 * What an operator does to a running Gatehouse, on a real process (bot/main.ts through
 * test/helpers/register-ts.mjs) with the real grammy against the fake Bot API and the real Anthropic
 * SDK against the fake model:
 * - edit gatehouse.yaml, SIGHUP (or `gatehouse reload`): the running bot admits the newly listed user;
 *   a bad file is rejected with the same errors as at start and the old config stays in force;
 * - `gatehouse approvals` and `gatehouse conversations` read the store while the service runs.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../fakes/telegram.js';
import { startGatehouse, type TestProcess } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
const TOKEN = '123456:OPERATOR-test_token_abcdefghijklmnop';

const ada: FakeUser = { id: 501, first_name: 'Ada' };
const eve: FakeUser = { id: 4242, first_name: 'Eve' };
const adaDm: FakeChat = { id: 501, type: 'private', first_name: 'Ada' };
const eveDm: FakeChat = { id: 4242, type: 'private', first_name: 'Eve' };

const yaml = (users: string[], extra = '') => `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file, write_file]
    tier: read-only
    workspace: ./ws
    approvers: { telegram: ["501"] }
${extra}access:
  telegram: { users: [${users.map((u) => `"${u}"`).join(', ')}] }
`;

let tg: FakeTelegram;
let model: FakeAnthropic;
let dir: string;
const queue: FakeReply[] = [];
let service: TestProcess | undefined;
const output = () => service?.output() ?? '';

function env(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: model.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: tg.apiRoot,
    GATEHOUSE_HTTP_PORT: '0',
  };
}

const until = (what: string, check: () => boolean, ms = 60_000) =>
  waitFor(what, check, { timeoutMs: ms, intervalMs: 20, detail: () => `output:\n${output()}` });

async function startService(): Promise<void> {
  service = startGatehouse(['serve'], { cwd: dir, env: env(), onlyEnv: true });
  service.child.stdin.end();
  await service.waitForOutput(/Gatehouse started/, 'the bot to start', 60_000);
}

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  // The operator's shell: same folder, same .env-less environment as the service.
  const code = await runCli(args, { env: env(), cwd: dir, stdout, stderr });
  return { code, stdout: out, stderr: err };
}

const texts = (chatId: number) => tg.visible(chatId).map((m) => m.plain);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-operator-'));
  tg = await startFakeTelegram({ token: TOKEN });
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
});

afterEach(async () => {
  await service?.stop('SIGTERM');
  service = undefined;
  await tg.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test('SIGHUP re-reads gatehouse.yaml: a newly listed user is served; a bad file is rejected and the old config stays', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml(['501']));
  await startService();

  // Eve is not listed: the stranger reply, and the model is never asked.
  await tg.sendText({ chat: eveDm, from: eve, text: 'hello' });
  await tg.waitFor(() => texts(4242).some((t) => /doesn't know you yet/.test(t)), 10_000, 'stranger reply');
  expect(model.requests).toHaveLength(0);

  // The operator lists Eve and sends SIGHUP; no restart.
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml(['501', '4242']));
  service!.child.kill('SIGHUP');
  await until('the reload', () => /configuration reloaded from .*gatehouse\.yaml/.test(output()));
  queue.push({ text: 'Welcome, Eve.' });
  await tg.sendText({ chat: eveDm, from: eve, text: 'hello again' });
  await tg.waitFor(() => texts(4242).includes('Welcome, Eve.'), 10_000, 'answer to Eve');

  // A broken file: the same error as at start (key path and all) in the log; the process keeps running.
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml([], '').replace('tier: read-only', 'tier: admin'));
  service!.child.kill('SIGHUP');
  await until('the rejection', () => /config reload rejected; the previous configuration stays in force/.test(output()));
  expect(output()).toMatch(/agents\.default\.tier: expected one of read-only \| low-risk \| high-risk, got \\?"admin\\?"/);
  expect(service!.running()).toBe(true);
  // The old config (Eve listed) is still in force, although the broken file no longer lists her.
  queue.push({ text: 'Still here, Eve.' });
  await tg.sendText({ chat: eveDm, from: eve, text: 'are you there?' });
  await tg.waitFor(() => texts(4242).includes('Still here, Eve.'), 10_000, 'answer under the old config');

  // `gatehouse reload` refuses to send a file the service would reject, and says the old config stays.
  const bad = await cli(['reload']);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/agents\.default\.tier/);
  expect(bad.stderr).toMatch(/running service keeps its current configuration/);

  // Fixed, without Eve: `gatehouse reload` signals the service and prints its answer.
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml(['501']));
  const ok = await cli(['reload']);
  expect(ok.stderr).toBe('');
  expect(ok.code).toBe(0);
  expect(ok.stdout).toMatch(/configuration reloaded from .*gatehouse\.yaml; agents: default/);
  const asked = model.requests.length;
  await tg.sendText({ chat: eveDm, from: eve, text: 'one more' });
  // Ada is still served; Eve no longer is (her message never reaches the model).
  queue.push({ text: 'Hi Ada.' });
  await tg.sendText({ chat: adaDm, from: ada, text: 'hi' });
  await tg.waitFor(() => texts(501).includes('Hi Ada.'), 10_000, 'answer to Ada');
  expect(model.requests).toHaveLength(asked + 1);
  expect(JSON.stringify(model.requests.at(-1)!.body)).not.toContain('one more');

  expect((await service!.stop('SIGTERM')).code).toBe(0);
}, 180_000);

test('gatehouse reload without a running service says so', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml(['501']));
  const r = await cli(['reload']);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/No running Gatehouse found \(.*gatehouse\.pid does not exist\)/);
});

test('gatehouse approvals and conversations read the store while the service runs', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml(['501', '4242']));
  // Before the service ever ran there is no store: the command says so and creates none.
  const none = await cli(['conversations']);
  expect(none.code).toBe(1);
  expect(none.stderr).toMatch(/no Gatehouse store at .*GATEHOUSE_STORE/);
  await startService();
  // Each listing says which store it read.
  const readFrom = `Store: sqlite://${join(dir, 'data', 'gatehouse.sqlite')}\n`;
  expect((await cli(['conversations'])).stdout).toBe(`${readFrom}No conversations yet.\n`);
  expect((await cli(['approvals'])).stdout).toBe(`${readFrom}No pending approvals or questions.\n`);

  // Eve's conversation ends with an answer; Ada's waits for an approval (write_file above read-only).
  queue.push({ text: 'Hello Eve.' });
  await tg.sendText({ chat: eveDm, from: eve, text: 'hello' });
  await tg.waitFor(() => texts(4242).includes('Hello Eve.'), 10_000, 'answer to Eve');
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'plan.md', content: '# plan\n' } }] }, { text: 'Wrote plan.md.' });
  await tg.sendText({ chat: adaDm, from: ada, text: 'write the plan' });
  await tg.waitFor(() => tg.visible(501).some((m) => m.replyMarkup !== undefined), 10_000, 'approval card');

  const approvals = await cli(['approvals']);
  expect(approvals.code).toBe(0);
  expect(approvals.stdout).toMatch(/^approval \S+: .*write_file/m);
  expect(approvals.stdout).toMatch(/^ {2}conversation: telegram:501 \(agent default\)$/m);
  expect(approvals.stdout).toMatch(/^ {2}can decide: {3}telegram 501$/m);
  expect(approvals.stdout.startsWith(readFrom)).toBe(true);
  const jsonRun = await cli(['approvals', '--json']);
  // stdout stays one JSON array; the store read is named on stderr.
  expect(jsonRun.stderr).toContain(`store: sqlite://${join(dir, 'data', 'gatehouse.sqlite')}\n`);
  const json = JSON.parse(jsonRun.stdout) as Array<{ conversation: string; canDecide: string[]; kind: string }>;
  expect(json).toHaveLength(1);
  expect(json[0]).toMatchObject({ kind: 'approval', conversation: 'telegram:501', canDecide: ['telegram 501'] });

  const conversations = await cli(['conversations']);
  expect(conversations.code).toBe(0);
  const lines = conversations.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^Store: sqlite:\/\/\//);
  expect(lines[1]).toMatch(/^conversation\s+agent\s+last activity\s+messages\s+spent$/);
  // Both conversations, each with its agent and a timestamp.
  expect(conversations.stdout).toMatch(/^telegram:4242\s+default\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+2\s+not counted \(no budget\)$/m);
  const rows = JSON.parse((await cli(['conversations', '--json'])).stdout) as Array<{ key: string; agent: string; lastActivity: string }>;
  expect(rows.map((r) => r.key).sort()).toEqual(['telegram:4242', 'telegram:501']);

  // Decided: no longer pending.
  const card = tg.visible(501).find((m) => m.replyMarkup !== undefined)!;
  await tg.press(501, card.messageId, 0, ada);
  await tg.waitFor(() => texts(501).includes('Wrote plan.md.'), 10_000, 'answer after approval');
  expect((await cli(['approvals'])).stdout).toBe(`${readFrom}No pending approvals or questions.\n`);
}, 180_000);
