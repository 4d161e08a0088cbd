/**
 * Spend is visible: `gatehouse conversations` (a real process) shows each conversation's spend and
 * the agent's day and month totals, as settled from the fake model's usage numbers, for an agent with
 * a budget; an agent without one is not counted (no store writes per model call) and says so.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.js';
import { runGatehouse } from '../helpers/process.js';

let fake: FakeAnthropic;
let dir: string;

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  // 1000 in at $3/M + 1000 out at $15/M = $0.018 a call, 2,000 tokens.
  fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 1000, output_tokens: 1000 } }));
  dir = mkdtempSync(join(tmpdir(), 'gh-budget-spend-'));
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
      conversation: { usd: 5 }
  free:
    model: claude-sonnet-4-6
    maxTokens: 1000
    tier: read-only
    workspace: "${join(dir, 'workspace-free')}"
`,
  );
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const cli = (args: string[]) => runGatehouse(args, dir, fake.url);

test('gatehouse conversations shows the spend of each conversation and of its agent today and this month', async () => {
  expect((await cli(['run', '--json', '--conversation', 'c1', 'one'])).code).toBe(0);
  expect((await cli(['run', '--json', '--conversation', 'c1', 'two'])).code).toBe(0);
  expect((await cli(['run', '--json', '--conversation', 'c2', 'three'])).code).toBe(0);
  expect((await cli(['run', '--json', '--agent', 'free', '--conversation', 'f1', 'four'])).code).toBe(0);
  expect(fake.requests).toHaveLength(4);

  const text = await cli(['conversations']);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/^conversation\s+agent\s+last activity\s+messages\s+spent$/m);
  expect(text.stdout).toMatch(/^cli:c1\s+default\s+\S+\s+\d+\s+\$0\.04\s+4,000 tokens$/m);
  expect(text.stdout).toMatch(/^cli:c2\s+default\s+\S+\s+\d+\s+\$0\.02\s+2,000 tokens$/m);
  // No budget: not counted (no store writes per model call for it).
  expect(text.stdout).toMatch(/^cli:f1\s+free\s+\S+\s+\d+\s+not counted \(no budget\)$/m);
  expect(text.stdout).toContain('agent default: today $0.05  6,000 tokens; this month $0.05  6,000 tokens\n');
  expect(text.stdout).not.toContain('agent free:');

  const json = JSON.parse((await cli(['conversations', '--json'])).stdout) as Array<{ key: string; spent: { usd: number | null; tokens: number } }>;
  const c1 = json.find((r) => r.key === 'cli:c1');
  expect(c1?.spent.tokens).toBe(4000);
  expect(c1?.spent.usd).toBeCloseTo(0.036, 9);
}, 240_000);
