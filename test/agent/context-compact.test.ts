/**
 * ContextKeeper.compact (summarize_context's half) against the fake model server through the real
 * client: a failed summary call changes nothing and records nothing; a good one keeps the current turn,
 * records the summary, and `info` then counts by estimate (the model's count no longer matches).
 */
import { ContextKeeper, SUMMARY_MARKER, type SummaryRecord } from '../../agent/context/keeper.js';
import type { Message } from '../../agent/context/messages.js';
import { createAnthropicModel } from '../../agent/model/anthropic.js';
import { emptyUsage } from '../../agent/model/pricing.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.js';

let fake: FakeAnthropic;
beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'k' });
});
afterEach(async () => {
  await fake.close();
});

function keeperWith(history: SummaryRecord[][]): ContextKeeper {
  const model = createAnthropicModel({ apiKey: 'k', baseURL: fake.url, retryBaseMs: 1, maxRetryWaitMs: 10 });
  return new ContextKeeper({ model, modelName: 'claude-sonnet-5-5', now: () => 1_000, history: { get: () => history[0], set: (v) => (history[0] = v) } });
}

const transcript = (): Message[] => [
  { role: 'user', content: [{ type: 'text', text: 'old question' }] },
  { role: 'assistant', content: [{ type: 'text', text: 'old answer' }] },
  { role: 'user', content: [{ type: 'text', text: 'compact now' }] },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'sc', name: 'summarize_context', input: {} }] },
];
const call = { signal: new AbortController().signal, addUsage: () => undefined };

test('a failed summary call changes nothing and records nothing', async () => {
  fake.setHandler(() => ({ error: { status: 400, type: 'invalid_request_error', message: 'no summary today' } }));
  const history: SummaryRecord[][] = [];
  const keeper = keeperWith(history);
  const messages = transcript();
  const res = await keeper.compact(messages, call);
  expect(res).toEqual({ ok: false, reason: expect.stringContaining('no summary today') });
  expect(messages).toEqual(transcript());
  expect(keeper.info(messages).summaries).toEqual([]);
});

test('a good one keeps the current turn, records the summary, and info counts by estimate after it', async () => {
  fake.setHandler(() => ({ text: 'SUMMARY: an old question was answered.' }));
  const history: SummaryRecord[][] = [];
  const keeper = keeperWith(history);
  const messages = transcript();
  keeper.noteUsage({ ...emptyUsage(), inputTokens: 900 }, 3);
  expect(keeper.info(messages)).toMatchObject({ source: 'model', usedTokens: expect.any(Number), reported: { tokens: 900, messages: 3 } });
  const res = await keeper.compact(messages, { ...call, focus: 'the old answer' });
  expect(res).toEqual({ ok: true, record: { at: 1_000, replaced: 2, by: 'request', tokensBefore: expect.any(Number), tokensAfter: expect.any(Number) } });
  expect(messages).toHaveLength(2);
  expect(messages[0]!.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining(SUMMARY_MARKER) });
  expect(messages[0]!.content[1]).toEqual({ type: 'text', text: 'compact now' });
  expect(messages[1]!.content[0]).toMatchObject({ type: 'tool_use', id: 'sc' });
  const info = keeper.info(messages);
  expect(info).toMatchObject({ source: 'estimate', messages: 2, summaries: [{ replaced: 2, by: 'request' }] });
  expect(info.reported).toBeUndefined();
  expect((fake.requests[0]!.body as { system: string }).system).toContain('Above all keep, in full detail: the old answer');
});
