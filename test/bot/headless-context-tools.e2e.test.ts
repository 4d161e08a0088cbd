/**
 * The context tools headless: `gatehouse run --conversation` as real processes against the fake
 * Anthropic server. summarize_context compacts the kept conversation (the next process's request
 * starts from the fake's summary, the old turn gone), and an unattended run at tier read-only
 * declines it with the reason in the JSON report, before any summary call.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SUMMARY_MARKER, SUMMARY_SYSTEM } from '../../agent/context/keeper.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { runGatehouse } from '../helpers/process.js';

type Body = { system?: string; messages: Array<{ role: string; content: unknown }> };
const body = (r: RecordedRequest) => r.body as Body;
const isSummary = (r: RecordedRequest) => (body(r).system ?? '').startsWith(SUMMARY_SYSTEM);
const mainRequests = () => fake.requests.filter((r) => !isSummary(r));

let fake: FakeAnthropic;
let dir: string;
const main: FakeReply[] = [];

async function setup(tier: string): Promise<void> {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  main.length = 0;
  fake.setHandler((req) => (isSummary(req) ? { text: 'SUMMARY-TEXT: the user talked about ZEBRA-42.' } : (main.shift() ?? { text: '(no scripted reply)' })));
  dir = mkdtempSync(join(tmpdir(), 'gh-run-ctx-'));
  chmodSync(dir, 0o711);
  mkdirSync(join(dir, 'ws'));
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [summarize_context, context_info]\n    tier: ${tier}\n    workspace: "${join(dir, 'ws')}"\n`,
  );
}
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = (args: string[]) => runGatehouse(args, dir, fake.url);

const filler = `run-1 ZEBRA-42 ${'lorem ipsum dolor sit amet '.repeat(300)}`;

test('summarize_context compacts the kept conversation; the next process starts from the summary', async () => {
  await setup('low-risk');
  main.push({ text: 'ok 1' }, { toolUses: [{ name: 'summarize_context', input: {} }] }, { text: 'compacted' }, { text: 'ok 3' });
  expect((await run(['run', '--conversation', 'ctx-1', filler])).code).toBe(0);
  const r = await run(['run', '--json', '--conversation', 'ctx-1', 'compact your context']);
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, answer: 'compacted', declined: [] });
  expect(fake.requests.filter(isSummary)).toHaveLength(1);
  expect(JSON.stringify(mainRequests().at(-1)!.body)).toContain('Summarized: 2 earlier messages were replaced by one summary');

  expect((await run(['run', '--conversation', 'ctx-1', 'and now?'])).code).toBe(0);
  const next = JSON.stringify(body(mainRequests().at(-1)!).messages);
  expect(next).toContain(SUMMARY_MARKER);
  expect(next).toContain('SUMMARY-TEXT: the user talked about ZEBRA-42.');
  expect(next).not.toContain('lorem ipsum');
}, 180_000);

test('unattended at tier read-only: summarize_context is declined with the reason, nothing summarized', async () => {
  await setup('read-only');
  main.push({ toolUses: [{ name: 'summarize_context', input: {} }] }, { text: 'could not' });
  const r = await run(['run', '--json', '--', 'compact your context']);
  expect(r.code).toBe(0);
  const out = JSON.parse(r.stdout) as { answer: string; declined: Array<{ tool: string; reason: string }> };
  expect(out.answer).toBe('could not');
  expect(out.declined).toEqual([{ tool: 'summarize_context', reason: expect.stringMatching(/^Declined: summarize_context needs approval/) }]);
  expect(fake.requests.filter(isSummary)).toHaveLength(0);
}, 180_000);
