/**
 * The terminal chat end to end: the real start path (runCli with no platform token) reading typed
 * lines and writing what a person at the terminal would see, against the fake model server.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { waitFor } from '../helpers/harness.js';
import { askReply } from '../helpers/questions.js';

let model: FakeAnthropic;
let dir: string;
let stdin: PassThrough;
let screen: string;
let exit: Promise<number>;
const queue: FakeReply[] = [];

function start(yaml?: string, env: Record<string, string> = {}, opts: { tty?: boolean } = {}): void {
  if (yaml) writeFileSync(join(dir, 'gatehouse.yaml'), yaml);
  stdin = new PassThrough();
  const stdout = new PassThrough();
  // What the adapter reads to know it writes to a terminal (process.stdout sets it the same way).
  if (opts.tty) Object.assign(stdout, { isTTY: true });
  screen = '';
  stdout.on('data', (d: Buffer) => (screen += d.toString()));
  exit = runCli([], {
    env: { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: model.url, GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}`, ...env },
    cwd: dir,
    stdin,
    stdout,
    stderr: stdout,
  });
}

const type = (line: string) => stdin.write(line + '\n');

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-'));
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
});

afterEach(async () => {
  stdin.end(); // Ctrl-D: the CLI stops
  await exit;
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test('with no config and no platform token, npm start is a terminal chat that streams answers', async () => {
  start();
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push({ text: 'Hello from the agent.' });
  type('hi there');
  await waitFor('answer', () => screen.includes('agent> Hello from the agent.'));
  await waitFor('usage line', () => /\(\d+ tokens in, \d+ out, \$\d+\.\d{4}\)/.test(screen));
  // The default agent reads, asks the terminal user, and writes only with a card (see console-first-run).
  const tools = (model.requests[0]!.body as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
  expect(tools).toContain('read_file');
  expect(tools).toContain('ask_user_question');
  expect(tools).toContain('write_file');
  expect(tools).not.toContain('execute_command');
  expect(tools).not.toContain('rm');
});

test('an approval is a numbered choice; typing its number approves and the tool runs', async () => {
  start(`
agents:
  default:
    model: claude-sonnet-5-5
    tools: [write_file]
    workspace: ./ws
    approvers: { console: [local] }
`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'todo.txt', content: 'buy milk\n' } }] }, { text: 'Saved your list.' });
  type('save my todo');
  await waitFor('card', () => screen.includes('[1] Approve once'));
  expect(screen).toContain('Approve write_file?');
  expect(screen).toContain('+buy milk');
  expect(existsSync(join(dir, 'ws', 'todo.txt'))).toBe(false);
  type('1');
  await waitFor('answer', () => screen.includes('Saved your list.'));
  expect(readFileSync(join(dir, 'ws', 'todo.txt'), 'utf8')).toBe('buy milk\n');
  expect(screen).toMatch(/Approved once by local/);
});

test('a question shows its suggestions as numbers, and typing a number answers it', async () => {
  start();
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push(
    askReply('Tea or coffee?', [
      { value: 'tea', label: 'Tea' },
      { value: 'coffee', label: 'Coffee' },
    ]),
    { text: 'Coffee it is.' },
  );
  type('make me a drink');
  await waitFor('question', () => screen.includes('[2] Coffee'));
  type('2');
  await waitFor('answer', () => screen.includes('Coffee it is.'));
  expect(JSON.stringify(model.requests[1]!.body)).toContain('Answer from local: coffee');
});

test('a bad config exits 1 before anything connects, naming the key path', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), 'agents:\n  default:\n    model: claude-sonnet-5-5\n    tier: admin\n    tols: [read_file]\n');
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const code = await runCli([], { env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: model.url }, cwd: dir, stdout: out, stderr: out });
  expect(code).toBe(1);
  expect(text).toContain('agents.default.tier');
  expect(text).toContain('agents.default.tols');
  expect(model.requests).toHaveLength(0);
  // Nothing was created: no store file, no workspace.
  expect(existsSync(join(dir, 'data'))).toBe(false);
  stdin = new PassThrough();
  exit = Promise.resolve(code);
});

test('a missing ANTHROPIC_API_KEY (with no base URL) is a config error naming the variable', async () => {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const code = await runCli([], { env: {}, cwd: dir, stdout: out, stderr: out });
  expect(code).toBe(1);
  expect(text).toContain('ANTHROPIC_API_KEY');
  stdin = new PassThrough();
  exit = Promise.resolve(code);
});

test('after a restart the terminal chat continues the same conversation', async () => {
  start();
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push({ text: 'Noted: blue.' });
  type('my colour is blue');
  await waitFor('answer', () => screen.includes('Noted: blue.'));
  stdin.end();
  expect(await exit).toBe(0);
  // Same working directory, same store: a new process.
  start();
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push({ text: 'Your colour is blue.' });
  type('what is my colour?');
  await waitFor('answer after restart', () => screen.includes('Your colour is blue.'));
  expect(JSON.stringify(model.requests.at(-1)!.body)).toContain('my colour is blue');
});

const WRITE_AGENT = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [write_file, ask_user_question]
    workspace: ./ws
    approvers: { console: [local] }
`;

test('choice numbers keep counting across cards; a stale number gets a notice and never reaches the model', async () => {
  start(WRITE_AGENT);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push(
    askReply('Which file?', [
      { value: 'a.txt', label: 'a.txt' },
      { value: 'b.txt', label: 'b.txt' },
    ]),
    { toolUses: [{ name: 'write_file', input: { path: 'b.txt', content: 'hello\n' } }] },
    { text: 'Done.' },
  );
  type('write hello somewhere');
  await waitFor('question', () => screen.includes('[2] b.txt'));
  type('2');
  // The second card does not start again at [1]: 1 and 2 meant the question's answers.
  await waitFor('approval card', () => screen.includes('[3] Approve once'));
  expect(screen).toContain('[5] Deny');
  const requestsBefore = model.requests.length;
  type('1');
  await waitFor('stale notice', () => screen.includes('(1 is not an open choice; open: [3] Approve once'));
  // Not a message: nothing went to the model, and the card is still open.
  expect(model.requests).toHaveLength(requestsBefore);
  expect(existsSync(join(dir, 'ws', 'b.txt'))).toBe(false);
  type('3');
  await waitFor('answer', () => screen.includes('Done.'));
  expect(readFileSync(join(dir, 'ws', 'b.txt'), 'utf8')).toBe('hello\n');
  // After the approval, its number is stale too.
  const after = model.requests.length;
  type('3');
  await waitFor('stale notice after', () => screen.includes('(3 is not an open choice; nothing was sent)'));
  expect(model.requests).toHaveLength(after);
  // A number that was never a choice is an ordinary message.
  queue.push({ text: 'Forty-two indeed.' });
  type('42');
  await waitFor('number as message', () => screen.includes('Forty-two indeed.'));
  expect(JSON.stringify(model.requests.at(-1)!.body)).toContain('"42"');
});

test('a prompt shows where to type, after the banner and after each answer', async () => {
  start();
  await waitFor('prompt', () => screen.endsWith('you> '));
  queue.push({ text: 'Hello.' });
  type('hi');
  await waitFor('answer and a new prompt', () => /agent> Hello\.\n(.*\n)*you> $/.test(screen));
});

test('on a terminal a working indicator shows while the model thinks, and is erased before the answer', async () => {
  start(undefined, {}, { tty: true });
  await waitFor('prompt', () => screen.endsWith('you> '));
  queue.push({ text: 'Thought about it.', delayMs: 1500 });
  type('think hard');
  await waitFor('indicator', () => screen.includes('thinking…'));
  await waitFor('answer', () => screen.includes('Thought about it.'));
  // The indicator's line is cleared (carriage return + erase line) before the answer is written.
  const answerAt = screen.indexOf('agent> Thought about it.');
  expect(screen.lastIndexOf('\r\x1b[K', answerAt)).toBeGreaterThan(screen.lastIndexOf('thinking…', answerAt));
});

test('not on a terminal (a pipe) there is no working indicator', async () => {
  start();
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push({ text: 'Plain.', delayMs: 300 });
  type('hi');
  await waitFor('answer', () => screen.includes('Plain.'));
  expect(screen).not.toContain('thinking');
  expect(screen).not.toContain('\x1b[');
});

test('when the model service cannot be reached, the terminal says where and why', async () => {
  // A port nobody listens on.
  const dead = await startFakeAnthropic({ apiKey: 'test-key' });
  const url = dead.url;
  await dead.close();
  start(undefined, { ANTHROPIC_BASE_URL: url });
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  type('hello?');
  await waitFor('error', () => screen.includes('agent! Could not reach the model service'), 30_000);
  expect(screen).toContain(`Could not reach the model service at ${url.replace(/\/$/, '')} (connection refused`);
}, 40_000);

test('while a question is open, a number that is not one of its choices is a typed answer', async () => {
  start(WRITE_AGENT);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push(
    { toolUses: [{ name: 'ask_user_question', input: { question: 'How many replicas?', suggestions: [{ value: '1', label: 'One' }], allowCustom: true } }] },
    { text: 'Scaling to 3.' },
  );
  type('scale it');
  await waitFor('question', () => screen.includes('[1] One'));
  type('3');
  await waitFor('answer', () => screen.includes('Scaling to 3.'));
  expect(JSON.stringify(model.requests[1]!.body)).toContain('Answer from local: 3');
});
