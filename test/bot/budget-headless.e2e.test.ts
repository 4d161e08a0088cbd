/**
 * Spending limits through `gatehouse run` as a real process against the fake Anthropic server:
 * a call whose worst case would pass the budget is never sent, and the run ends saying which limit,
 * the spend and when it resets; the spend settled from the fake's usage carries over between runs
 * of one conversation (the store holds the totals).
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.js';
import { runGatehouse, startGatehouse, unattendedEnv } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

let fake: FakeAnthropic;
let dir: string;

/** One agent on Sonnet whose conversation budget is `limit`. */
const writeConfig = (limit: string) =>
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `
agents:
  default:
    model: claude-sonnet-4-6
    maxTokens: 1000
    tier: read-only
    workspace: "${join(dir, 'workspace')}"
    budget:
      conversation: ${limit}
`,
  );

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  // 1000 in at $3/M + 1000 out at $15/M = $0.018 a call.
  fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 1000, output_tokens: 1000 } }));
  dir = mkdtempSync(join(tmpdir(), 'gh-budget-run-'));
  chmodSync(dir, 0o711);
  writeConfig('{ usd: 0.05 }');
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = (args: string[]) => runGatehouse(args, dir, fake.url);

test('runs of one conversation stop at its budget: the third call is never sent, and --json says which limit', async () => {
  expect((await run(['run', '--json', '--conversation', 'c1', 'one'])).code).toBe(0);
  expect((await run(['run', '--json', '--conversation', 'c1', 'two'])).code).toBe(0);
  expect(fake.requests).toHaveLength(2);
  const r = await run(['run', '--json', '--conversation', 'c1', 'three']);
  expect(r.code).toBe(1);
  const out = JSON.parse(r.stdout) as { ok: boolean; error: string; limit?: unknown };
  expect(out.ok).toBe(false);
  // The limit as data too, so a script need not parse the sentence.
  expect(out.limit).toEqual({ kind: 'budget', scope: 'conversation', unit: 'usd', spentUsd: 0.036, limit: 0.05, resetsAt: null });
  expect(out.error).toMatch(/spending limit is reached: this conversation has spent \$0\.04 of \$0\.05 \(conversation, usd\); it does not reset/);
  expect(fake.requests).toHaveLength(2);
  // Another conversation has its own total.
  expect((await run(['run', '--json', '--conversation', 'c2', 'hi'])).code).toBe(0);
  expect(fake.requests).toHaveLength(3);
}, 240_000);

const SOFT = '{ usd: { soft: 0.05, hard: 1 } }';

test('a soft limit with nobody to approve (a headless run) stops like a hard one, and --json says soft and why', async () => {
  writeConfig(SOFT);
  expect((await run(['run', '--json', '--conversation', 'c1', 'one'])).code).toBe(0);
  expect((await run(['run', '--json', '--conversation', 'c1', 'two'])).code).toBe(0);
  const r = await run(['run', '--json', '--conversation', 'c1', 'three']);
  expect(r.code).toBe(1);
  const out = JSON.parse(r.stdout) as { ok: boolean; error: string; limit?: unknown };
  expect(out.ok).toBe(false);
  expect(out.limit).toEqual({
    kind: 'budget',
    scope: 'conversation',
    unit: 'usd',
    spentUsd: 0.036,
    limit: 0.05,
    resetsAt: null,
    soft: true,
    approval: 'no_approver',
  });
  expect(out.error).toBe(
    'Stopped: the spending limit is reached: this conversation has spent $0.04 of $0.05 (conversation, usd); ' +
      'it is a soft limit, but no approver is bound here to allow $0.05 more; it does not reset (start a new conversation or ask an operator).',
  );
  expect(fake.requests).toHaveLength(2);
}, 240_000);

test('a soft limit in a run with --interactive-stdin: the approval comes on stderr, approved on stdin, the run goes on', async () => {
  writeConfig(SOFT);
  expect((await run(['run', '--json', '--conversation', 'c1', 'one'])).code).toBe(0);
  expect((await run(['run', '--json', '--conversation', 'c1', 'two'])).code).toBe(0);
  const p = startGatehouse(['run', '--json', '--interactive-stdin', '--conversation', 'c1', 'three'], {
    cwd: dir,
    env: unattendedEnv(dir, fake.url),
    onlyEnv: true,
  });
  const asked = await waitFor('approval_required', () =>
    p
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { type: string; requestId: string; title: string; body: string })
      .find((e) => e.type === 'approval_required'),
  );
  expect(asked.title).toBe('Allow more spending?');
  expect(asked.body).toContain('This conversation has spent $0.04 of $0.05; allow $0.05 more? (the hard limit is $1.00)');
  expect(fake.requests).toHaveLength(2);
  // Not ended: an ended stdin answers what is still open with "no answer" at once.
  p.child.stdin.write(`${JSON.stringify({ type: 'approval_response', requestId: asked.requestId, value: 'approve' })}\n`);
  const { code } = await p.exited;
  expect(code).toBe(0);
  expect((JSON.parse(p.stdout()) as { ok: boolean; answer: string }).answer).toBe('ok');
  expect(fake.requests).toHaveLength(3);
}, 240_000);
