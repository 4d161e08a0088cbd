/**
 * The terminal chat's keys, on real processes (no config: the default agent, whose writes ask):
 * Ctrl-C on a real terminal (a pty: the line discipline turns ^C into SIGINT) cancels the running
 * turn and a second one quits; Ctrl-D after a Ctrl-C quits too (a SIGINT to a chat on pipes stops it
 * at once, as it stops a service: test/bot/shutdown-*.e2e.test.ts); an unknown /command lists the known ones and reaches no model; and after a
 * restart a pending card shows the `you>` prompt on a real terminal (a pty), not the working indicator.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { killLeftovers, startChat, type ChatProcess } from './console-process.js';

const CTRL_C = '\x03';

let dir: string;
let model: FakeAnthropic;
const queue: FakeReply[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-console-keys-'));
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
});
afterEach(async () => {
  await killLeftovers();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

async function started(pty = false): Promise<ChatProcess> {
  const chat = startChat({ cwd: dir, modelUrl: model.url, pty });
  await chat.until('the prompt', (s) => s.endsWith('you> '));
  return chat;
}

async function waitFor(what: string, check: () => boolean): Promise<void> {
  const end = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('Ctrl-C cancels the running turn and the chat goes on; with nothing running it says how to quit; a second Ctrl-C quits (exit 0)', async () => {
  const chat = await started(true);
  // The model takes its time: the turn is running when Ctrl-C comes.
  queue.push({ text: 'too late', delayMs: 120_000 });
  chat.type('think for a long time');
  await waitFor('the model call', () => model.requests.length === 1);
  chat.child.stdin.write(CTRL_C);
  await chat.until('the cancel', (s) => s.includes('(cancelling the turn; Ctrl-C again or Ctrl-D to quit)') && s.includes('Stopping the current run.'));
  await chat.until('the prompt again', (s) => s.endsWith('you> '));
  expect(chat.screen()).not.toContain('too late');
  // Still running: a new message gets an answer.
  queue.push({ text: 'Still here.' });
  chat.type('are you there?');
  await chat.until('the answer', (s) => s.includes('agent> Still here.'));
  await chat.until('the prompt after the answer', (s) => s.endsWith('you> '));
  // Typing a line disarmed the first Ctrl-C: this one only says how to quit.
  chat.child.stdin.write(CTRL_C);
  await chat.until('the hint', (s) => / {2}\(Ctrl-C again or Ctrl-D to quit\)\r?\n/.test(s));
  expect(chat.child.exitCode).toBeNull();
  chat.child.stdin.write(CTRL_C);
  expect(await chat.exit).toBe(0);
}, 90_000);

test('Ctrl-C while a card waits cancels it: nothing is written; Ctrl-D then quits', async () => {
  const chat = await started(true);
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'never.txt', content: 'x' } }] });
  chat.type('write never.txt');
  await chat.until('the card', (s) => s.includes('[1] Approve once'));
  chat.child.stdin.write(CTRL_C);
  await chat.until('the card closed', (s) => /⮑ Approve write_file\?: .+/.test(s));
  await chat.until('the prompt', (s) => s.endsWith('you> '));
  // Its number is stale now: it decides nothing.
  chat.type('1');
  await chat.until('stale notice', (s) => s.includes('(1 is not an open choice; nothing was sent)'));
  expect(existsSync(join(dir, 'workspace', 'never.txt'))).toBe(false);
  chat.child.stdin.write('\x04'); // Ctrl-D on the terminal
  expect(await chat.exit).toBe(0);
}, 90_000);

test('an unknown /command lists the known ones and is not sent to the model; known ones still work', async () => {
  const chat = await started();
  chat.type('/frobnicate now');
  await chat.until('the list', (s) =>
    s.includes('/frobnicate is not a command (nothing was sent). Commands: /stop cancels the current run; /reset starts a new conversation; /id'),
  );
  await chat.until('the prompt', (s) => s.endsWith('you> '));
  chat.type('/help');
  await chat.until('help', (s) => s.includes(`I am Gatehouse's "default" agent.`));
  // Paths are messages, not commands.
  queue.push({ text: 'That is a path.' });
  chat.type('/etc/hosts');
  await chat.until('the answer', (s) => s.includes('That is a path.'));
  expect(model.requests).toHaveLength(1);
  expect(JSON.stringify(model.requests[0]!.body)).not.toContain('frobnicate');
  chat.child.stdin.end();
  expect(await chat.exit).toBe(0);
}, 90_000);

test('after a restart a pending card shows the you> prompt on a terminal, not the working indicator', async () => {
  const first = await started();
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'todo.txt', content: 'buy milk\n' } }] });
  first.type('save my todo');
  await first.until('the card', (s) => s.includes('[1] Approve once'));
  first.child.stdin.end();
  expect(await first.exit).toBe(0);

  // The second start, on a real terminal: the card is shown again and its run continues behind it.
  const second = startChat({ cwd: dir, modelUrl: model.url, pty: true });
  await second.until('the card again', (s) => s.includes('Approve write_file?') && /\[\d+\] Approve once[^\n]*\n/.test(s));
  // A message typed now is queued behind the resumed run: by then that run has started.
  second.type('are you there?');
  await second.until('queued notice', (s) => s.includes('Queued: waiting for an approval on write_file first'));
  await second.until('the prompt', (s) => s.endsWith('you> '));
  const afterCard = second.screen().slice(second.screen().indexOf('Approve write_file?'));
  expect(afterCard).not.toContain('thinking');
  // Answered: the run goes on (the indicator may show now) and the file is written.
  queue.push({ text: 'Saved.' }, { text: 'Yes.' });
  const n = /\[(\d+)\] Approve once/.exec(second.screen())![1]!;
  second.type(n);
  await second.until('the answer', (s) => s.includes('Saved.'));
  expect(existsSync(join(dir, 'workspace', 'todo.txt'))).toBe(true);
  await second.until('the queued turn answered', (s) => s.includes('Yes.'));
  second.child.stdin.write('\x04'); // Ctrl-D on the terminal
  expect(await second.exit).toBe(0);
}, 120_000);
