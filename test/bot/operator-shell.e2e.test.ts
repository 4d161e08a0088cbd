/**
 * `! cmd` in the terminal chat, through the real start path (startBot: the console adapter on piped
 * stdin/stdout, the router, the agent's execute_command in bubblewrap, the fake model): the command
 * runs, its bounded output reaches the next turn, the denylist still refuses. On Telegram (real grammy
 * against the fake Bot API) a message starting with "! " is only a message.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot, type RunningBot } from '../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { waitFor } from '../helpers/harness.js';

const TOKEN = '123456:SHELL-test_token_abcdefghijklmnopq';
let model: FakeAnthropic;
let dir: string;
let workspace: string;
let bot: RunningBot | undefined;
const queue: FakeReply[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-shell-'));
  chmodSync(dir, 0o711);
  workspace = join(dir, 'ws');
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
});
afterEach(async () => {
  await bot?.stop();
  bot = undefined;
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: model.url,
    GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'),
    GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}`,
    GATEHOUSE_HTTP_PORT: '0',
    ...extra,
  };
}

const userText = (req: RecordedRequest): string => JSON.stringify((req.body as { messages: unknown[] }).messages.at(-1));

describe('in the terminal chat', () => {
  let stdin: PassThrough;
  let screen: string;

  async function terminal(): Promise<void> {
    writeFileSync(
      join(dir, 'gatehouse.yaml'),
      `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file, execute_command]\n    tier: read-only\n    workspace: "${workspace}"\n    approvers: { console: [local] }\n`,
    );
    stdin = new PassThrough();
    const stdout = new PassThrough();
    screen = '';
    stdout.on('data', (c: Buffer) => (screen += c.toString()));
    bot = await startBot({ env: env(), cwd: dir, stdin, stdout, stderr: new PassThrough() }, () => undefined);
  }

  test('"! cmd" runs without asking, shows its output, and the output goes along with the next turn', async () => {
    await terminal();
    stdin.write('! echo hello-from-the-operator; echo SECRET_TOKEN=${ANTHROPIC_API_KEY:-scrubbed}\n');
    await waitFor('the command output', () => screen.includes('hello-from-the-operator'), 60_000);
    // The environment is scrubbed as for the agent's commands, and the model was not asked.
    expect(screen).toContain('SECRET_TOKEN=scrubbed');
    expect(screen).not.toContain('test-key');
    expect(model.requests).toHaveLength(0);
    queue.push({ text: 'summarized' });
    stdin.write('what did that print?\n');
    await waitFor('the answer', () => screen.includes('summarized'), 30_000);
    expect(model.requests).toHaveLength(1);
    expect(userText(model.requests[0]!)).toContain('hello-from-the-operator');
    expect(userText(model.requests[0]!)).toContain('what did that print?');
    // Used once: the turn after does not carry it again.
    queue.push({ text: 'second' });
    stdin.write('and now?\n');
    await waitFor('the second answer', () => screen.includes('second'), 30_000);
    expect(userText(model.requests[1]!)).not.toContain('hello-from-the-operator');
  }, 120_000);

  test('long output is cut, on the screen and in what the model gets', async () => {
    await terminal();
    stdin.write('! seq 1 20000\n');
    await waitFor('the cut output', () => screen.includes('characters cut'), 60_000);
    expect(screen).toContain('\n1\n2\n3\n');
    expect(screen).toContain('20000');
    expect(screen).not.toContain('\n10000\n');
    queue.push({ text: 'ok' });
    stdin.write('go on\n');
    await waitFor('the answer', () => model.requests.length === 1, 30_000);
    const sent = userText(model.requests[0]!);
    expect(sent).toContain('characters cut');
    expect(sent.length).toBeLessThan(6000);
  }, 120_000);

  test('a denylisted command is refused and does not run', async () => {
    await terminal();
    stdin.write(`! touch ran-marker && rm -rf ${workspace}\n`);
    await waitFor('the refusal', () => screen.includes('Refused by the denylist'), 60_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(existsSync(join(workspace, 'ran-marker'))).toBe(false);
    expect(existsSync(workspace)).toBe(true);
    // Nothing of it is kept for the next turn.
    queue.push({ text: 'ok' });
    stdin.write('next\n');
    await waitFor('the answer', () => model.requests.length === 1, 30_000);
    expect(userText(model.requests[0]!)).not.toContain('operator_shell');
  }, 120_000);
});

describe('on a chat platform', () => {
  let tg: FakeTelegram;
  beforeEach(async () => {
    tg = await startFakeTelegram({ token: TOKEN });
  });
  afterEach(async () => {
    await bot?.stop();
    bot = undefined;
    await tg.close();
  });

  test('a Telegram message starting with "! " is an ordinary message to the agent: nothing runs', async () => {
    writeFileSync(
      join(dir, 'gatehouse.yaml'),
      `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file, execute_command]\n    tier: read-only\n    workspace: "${workspace}"\n    approvers: { telegram: ["501"] }\naccess:\n  telegram: { users: ["501"] }\n`,
    );
    bot = await startBot(
      { env: env({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: tg.apiRoot }), cwd: dir, stdout: new PassThrough(), stderr: new PassThrough() },
      () => undefined,
    );
    queue.push({ text: 'just text to me' });
    await tg.sendText({ chat: { id: 501, type: 'private', first_name: 'Ada' }, from: { id: 501, first_name: 'Ada' }, text: `! touch ${workspace}/tg-marker` });
    await tg.waitFor(() => tg.visible(501).some((m) => m.plain === 'just text to me'), 30_000, 'the answer');
    expect(model.requests).toHaveLength(1);
    expect(userText(model.requests[0]!)).toContain(`! touch ${workspace}/tg-marker`);
    expect(existsSync(join(workspace, 'tg-marker'))).toBe(false);
  }, 120_000);
});
