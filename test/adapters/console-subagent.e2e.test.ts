/**
 * spawn_subagent in the terminal chat (runCli, the real console adapter, fake model server): the
 * sub-agent's steps show as "sub-agent: ..." progress lines, its above-tier call is a card on the
 * same screen saying it comes from a sub-agent with its task, answered with the number, and the
 * usage line shows the sub-agent's part apart.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { waitFor } from '../helpers/harness.js';

let model: FakeAnthropic;
let dir: string;
let stdin: PassThrough;
let screen = '';
let exit: Promise<number>;
const queue: FakeReply[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-sub-'));
  mkdirSync(join(dir, 'ws'));
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
});

afterEach(async () => {
  stdin?.end();
  await exit;
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test('progress lines, a card from the sub-agent decided by number, and the usage line with its part', async () => {
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    'agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [ls, mkdir, spawn_subagent]\n    tier: low-risk\n    workspace: ./ws\n    approvers: { console: [local] }\n',
  );
  stdin = new PassThrough();
  const stdout = new PassThrough();
  stdout.on('data', (d: Buffer) => (screen += d.toString()));
  exit = runCli([], {
    env: { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: model.url, GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}` },
    cwd: dir,
    stdin,
    stdout,
    stderr: stdout,
  });
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push(
    { toolUses: [{ name: 'spawn_subagent', input: { task: 'Set up the folder dist.' } }] },
    { toolUses: [{ name: 'ls', input: {} }], usage: { input_tokens: 40, output_tokens: 4 } },
    { toolUses: [{ name: 'mkdir', input: { path: 'dist' } }], usage: { input_tokens: 60, output_tokens: 6 } },
    { text: 'dist is there now', usage: { input_tokens: 80, output_tokens: 8 } },
    { text: 'All set.' },
  );
  stdin.write('prepare dist\n');
  await waitFor('card', () => screen.includes('[1] Approve once'));
  expect(screen).toContain('· sub-agent: Set up the folder dist.');
  expect(screen).toContain('· sub-agent: ls');
  expect(screen).toContain('Sub-agent: approve mkdir?');
  expect(screen).toContain('From a sub-agent. Its task: Set up the folder dist.');
  expect(existsSync(join(dir, 'ws', 'dist'))).toBe(false);
  stdin.write('1\n');
  await waitFor('answer', () => screen.includes('All set.'));
  await waitFor('usage line', () => /of which 1 sub-agent\(s\) 180 in, 18 out\)/.test(screen));
  expect(existsSync(join(dir, 'ws', 'dist'))).toBe(true);
});
