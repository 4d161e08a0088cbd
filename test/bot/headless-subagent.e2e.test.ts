/**
 * spawn_subagent headless: `gatehouse run --json` as a real process against the fake Anthropic
 * server. Unattended (no approvals), the sub-agent's above-tier call is declined with the gate's
 * reason (nothing done), the sub-agent's answer reaches the parent, and the JSON report shows the
 * sub-agents' part of the usage apart. With --interactive-stdin the caller gets its card (naming the
 * sub-agent and task) and a denial is listed as the sub-agent's.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SUBAGENT_NOTE } from '../../agent/tools/builtin/subagent/host.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { runGatehouse, startGatehouse, unattendedEnv } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

type Body = { system?: unknown; messages: Array<{ role: string; content: unknown }> };
const isSub = (r: RecordedRequest) => JSON.stringify((r.body as Body).system ?? '').includes(SUBAGENT_NOTE.slice(0, 40));

let fake: FakeAnthropic;
let dir: string;
const main: FakeReply[] = [];

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  main.length = 0;
  fake.setHandler(() => main.shift() ?? { text: '(no scripted reply)' });
  dir = mkdtempSync(join(tmpdir(), 'gh-run-sub-'));
  chmodSync(dir, 0o711);
  mkdirSync(join(dir, 'ws'));
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file, mkdir]\n    subagents: { maxPerRun: 2 }\n    tier: low-risk\n    workspace: "${join(dir, 'ws')}"\n`,
  );
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = (args: string[]) => runGatehouse(args, dir, fake.url);

test("unattended: the sub-agent's above-tier call is declined with the reason; its answer and usage reach the report", async () => {
  main.push(
    { toolUses: [{ name: 'spawn_subagent', input: { task: 'Create the folder out.', tools: ['mkdir'] } }] },
    { toolUses: [{ name: 'mkdir', input: { path: 'out' } }], usage: { input_tokens: 50, output_tokens: 5 } },
    { text: 'I could not create out: it needs an approval.', usage: { input_tokens: 70, output_tokens: 7 } },
    { text: 'The sub-agent could not do it.' },
  );
  const r = await run(['run', '--json', '--', 'make the folder']);
  expect(r.code).toBe(0);
  const out = JSON.parse(r.stdout) as {
    answer: string;
    declined: Array<{ tool: string; reason: string }>;
    usage: { inputTokens: number };
    subagents?: { count: number; usage: { inputTokens: number; outputTokens: number } };
  };
  expect(out.answer).toBe('The sub-agent could not do it.');
  expect(out.declined).toEqual([{ tool: 'mkdir', reason: expect.stringMatching(/^sub-agent: Declined: mkdir needs approval/) }]);
  expect(existsSync(join(dir, 'ws', 'out'))).toBe(false);
  expect(fake.requests.map(isSub)).toEqual([false, true, true, false]);
  // The decline is what the sub-agent's model read; its answer is what the parent's read.
  expect(JSON.stringify((fake.requests[2]!.body as Body).messages)).toContain('Declined: mkdir needs approval');
  expect(JSON.stringify((fake.requests[3]!.body as Body).messages)).toContain('I could not create out: it needs an approval.');
  expect(out.subagents).toMatchObject({ count: 1, usage: { inputTokens: 120, outputTokens: 12 } });
  expect(out.usage.inputTokens).toBeGreaterThan(120);
}, 180_000);

const events = (s: string): Array<Record<string, unknown>> =>
  s
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test("--interactive-stdin: the sub-agent's card reaches the caller naming the sub-agent; denied, it is declined as a sub-agent's", async () => {
  main.push(
    { toolUses: [{ name: 'spawn_subagent', input: { task: 'Create the folder out.', tools: ['mkdir'] } }] },
    { toolUses: [{ name: 'mkdir', input: { path: 'out' } }] },
    { text: 'the user said no' },
    { text: 'Not created.' },
  );
  const p = startGatehouse(['run', '--json', '--interactive-stdin', 'make the folder'], { cwd: dir, env: unattendedEnv(dir, fake.url), onlyEnv: true });
  const asked = await waitFor('approval_required', () => events(p.stderr()).find((e) => e['type'] === 'approval_required'), {
    timeoutMs: 60_000,
    intervalMs: 20,
  });
  expect(asked['title']).toBe('Sub-agent: approve mkdir?');
  expect(asked['body']).toContain('From a sub-agent. Its task: Create the folder out.');
  p.child.stdin.write(JSON.stringify({ type: 'approval_response', requestId: asked['requestId'], value: 'deny' }) + '\n');
  p.child.stdin.end();
  const { code } = await p.exited;
  expect(code).toBe(0);
  const out = JSON.parse(p.stdout()) as { answer: string; declined: Array<{ tool: string; reason: string }> };
  expect(out.answer).toBe('Not created.');
  expect(out.declined).toEqual([{ tool: 'mkdir', reason: expect.stringMatching(/^sub-agent: denied/) }]);
  expect(existsSync(join(dir, 'ws', 'out'))).toBe(false);
}, 180_000);
