/**
 * `gatehouse run --events reasoning` as a real process against the fake Messages API: an agent with
 * `thinking` streams its reasoning as `thinking_start` / `thinking_chunk` lines on stderr (whole blocks
 * with --no-stream), only when asked for; the answer on stdout never carries it; a budget that is not
 * below maxTokens is a config error naming the key.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.js';
import { runGatehouse } from '../helpers/process.js';

const REASONING = 'The user greets me; a greeting back is the whole answer.';
const yaml = (thinking: string) => `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [get_time]
    workspace: ./ws
    maxTokens: 4096
    thinking: ${thinking}
`;

let fake: FakeAnthropic;
let dir: string;
beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  fake.setHandler(() => ({ thinking: REASONING, text: 'Hello to you.' }));
  dir = mkdtempSync(join(tmpdir(), 'gh-thinking-'));
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ budgetTokens: 2048 }'));
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

async function run(args: string[]): Promise<{ code: number | null; stdout: string; events: Array<Record<string, unknown>>; stderr: string }> {
  const r = await runGatehouse(['run', ...args], dir, fake.url);
  const events = r.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { ...r, events };
}

const chunks = (events: Array<Record<string, unknown>>, type: string) => events.filter((e) => e.type === type).map((e) => e.delta as string);

test('--events reasoning streams the thinking (start once, then chunks), not the text; stdout is the answer alone', async () => {
  const r = await run(['--events', 'reasoning', 'hello']);
  expect(r.code).toBe(0);
  expect(r.stdout).toBe('Hello to you.\n');
  const types = r.events.map((e) => e.type);
  expect(types.filter((t) => t === 'thinking_start')).toHaveLength(1);
  expect(types.indexOf('thinking_start')).toBeLessThan(types.indexOf('thinking_chunk'));
  expect(chunks(r.events, 'thinking_chunk').length).toBeGreaterThan(1);
  expect(chunks(r.events, 'thinking_chunk').join('')).toBe(REASONING);
  expect(types).not.toContain('text_chunk');
  expect((fake.requests[0]!.body as { thinking?: unknown }).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
}, 120_000);

test('--events text: no thinking lines; --no-stream --events reasoning: the block whole, after the reply', async () => {
  const text = await run(['--events', 'text', 'hello']);
  expect(text.code).toBe(0);
  expect(text.events.map((e) => e.type)).not.toContain('thinking_chunk');
  expect(JSON.stringify(text.events)).not.toContain(REASONING);
  expect(chunks(text.events, 'text_chunk').join('')).toBe('Hello to you.');

  const whole = await run(['--no-stream', '--events', 'reasoning', 'hello']);
  expect(whole.code).toBe(0);
  expect(chunks(whole.events, 'thinking_chunk')).toEqual([REASONING]);
}, 120_000);

test('a thinking budget not below maxTokens is a config error naming the key; nothing reaches the model', async () => {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ budgetTokens: 4096 }'));
  const r = await run(['hello']);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('agents.default.thinking.budgetTokens');
  expect(r.stderr).toMatch(/below maxTokens \(4096\)/);
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ budgetTokens: 100 }'));
  const low = await run(['hello']);
  expect(low.code).toBe(2);
  expect(low.stderr).toContain('agents.default.thinking.budgetTokens');
  expect(fake.requests).toHaveLength(0);
}, 120_000);
