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
import { startGatehouse } from '../helpers/process.js';

let fake: FakeAnthropic;
let dir: string;

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  // 1000 in at $3/M + 1000 out at $15/M = $0.018 a call.
  fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 1000, output_tokens: 1000 } }));
  dir = mkdtempSync(join(tmpdir(), 'gh-budget-run-'));
  chmodSync(dir, 0o711);
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
      conversation: { usd: 0.05 }
`,
  );
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

async function run(args: string[]): Promise<{ code: number | null; stdout: string }> {
  const p = startGatehouse(args, {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: dir, ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: fake.url, GATEHOUSE_HTTP_PORT: '0' },
    onlyEnv: true,
  });
  p.child.stdin.end('');
  const { code } = await p.exited;
  return { code, stdout: p.stdout() };
}

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
