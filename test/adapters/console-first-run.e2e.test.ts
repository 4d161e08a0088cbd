/**
 * The README's first command on a fresh folder: a model key, no gatehouse.yaml, no .env, no platform
 * token. The real CLI opens the terminal chat; the model asks to write a file; the card appears in
 * the terminal with the local user as approver; typing its number writes the file in ./workspace,
 * and a Deny leaves nothing written. What the README's "First five minutes" shows.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { killLeftovers, startChat } from './console-process.js';

let dir: string;
let model: FakeAnthropic;
const queue: FakeReply[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-first-run-'));
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
});
afterEach(async () => {
  await killLeftovers();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test('no config: a write asks with a card in the terminal; Approve once writes the file in ./workspace', async () => {
  expect(readdirSync(dir)).toEqual([]);
  const chat = startChat({ cwd: dir, modelUrl: model.url });
  await chat.until('the prompt', (s) => s.endsWith('you> '));
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'hello.txt', content: 'Hello from Gatehouse\n' } }] }, { text: 'I wrote hello.txt.' });
  chat.type('write hello.txt saying Hello from Gatehouse');
  await chat.until('the card', (s) => s.includes('[1] Approve once'));
  const screen = chat.screen();
  expect(screen).toContain('┌ Approve write_file?');
  expect(screen).toContain('+Hello from Gatehouse');
  expect(screen).toContain('└ [1] Approve once  [2] Always allow write_file  [3] Deny');
  // Nothing is written before the answer.
  expect(existsSync(join(dir, 'workspace', 'hello.txt'))).toBe(false);
  chat.type('1');
  await chat.until('the answer', (s) => s.includes('I wrote hello.txt.'));
  expect(chat.screen()).toContain('Approved once by local');
  expect(readFileSync(join(dir, 'workspace', 'hello.txt'), 'utf8')).toBe('Hello from Gatehouse\n');
  chat.child.stdin.end(); // Ctrl-D
  expect(await chat.exit).toBe(0);
}, 90_000);

test('no config: Deny writes nothing, and the model is told who denied it', async () => {
  const chat = startChat({ cwd: dir, modelUrl: model.url });
  await chat.until('the prompt', (s) => s.endsWith('you> '));
  queue.push({ toolUses: [{ name: 'write_file', input: { path: 'nope.txt', content: 'x' } }] }, { text: 'Understood, not written.' });
  chat.type('write nope.txt');
  await chat.until('the card', (s) => s.includes('[3] Deny'));
  chat.type('3');
  await chat.until('the answer', (s) => s.includes('Understood, not written.'));
  expect(chat.screen()).toContain('Denied by local');
  expect(existsSync(join(dir, 'workspace', 'nope.txt'))).toBe(false);
  expect(JSON.stringify(model.requests.at(-1)!.body)).toContain('write_file did not run: denied by local');
  chat.child.stdin.end();
  expect(await chat.exit).toBe(0);
}, 90_000);

test('no config: a write outside the workspace is refused by the file tool, with no card and nothing written', async () => {
  const chat = startChat({ cwd: dir, modelUrl: model.url });
  await chat.until('the prompt', (s) => s.endsWith('you> '));
  queue.push({ toolUses: [{ name: 'write_file', input: { path: '../escaped.txt', content: 'x' } }] }, { text: 'Could not.' });
  chat.type('write ../escaped.txt');
  await chat.until('the answer', (s) => s.includes('Could not.'));
  expect(chat.screen()).not.toContain('Approve once');
  expect(existsSync(join(dir, 'escaped.txt'))).toBe(false);
  chat.child.stdin.end();
  expect(await chat.exit).toBe(0);
}, 90_000);
