/**
 * context_info and summarize_context end to end through the runner against the fake model server:
 * context_info's numbers are the model's usage and the transcript's, summarize_context shrinks what
 * the next request carries (the fake's summary in it, the old turns gone) and survives a restart; the
 * gate: at tier read-only with no approver bound it is declined with the reason, with one the card shows
 * the proposal and the summary call waits for the click, and a toolPolicy deny blocks it outright.
 */
import { SUMMARY_MARKER, SUMMARY_SYSTEM } from '../../../agent/context/keeper.js';
import { estimateTokens } from '../../../agent/context/fit.js';
import type { Message } from '../../../agent/context/messages.js';
import type { RecordedRequest } from '../../fakes/anthropic.js';
import { agentYaml, Harness, waitFor } from '../../helpers/harness.js';

type Block = { type: string; text?: string; tool_use_id?: string; content?: unknown; is_error?: boolean };
type Body = { system?: string; messages: Array<{ role: string; content: Block[] }> };
const body = (r: RecordedRequest) => r.body as Body;
const isSummary = (r: RecordedRequest) => (body(r).system ?? '').startsWith(SUMMARY_SYSTEM);

let h: Harness;
afterEach(async () => {
  await h?.close();
});

async function start(...lines: string[]): Promise<void> {
  h = await Harness.start({ yaml: agentYaml(...lines) });
  h.fake.setHandler((req) => {
    if (isSummary(req)) return { text: 'SUMMARY-TEXT: three long turns about ZEBRA-42; nothing else open.' };
    const next = h.mainQueue.shift();
    if (next === undefined) return { text: '(no scripted reply)' };
    return typeof next === 'function' ? next(req) : next;
  });
}

const mainRequests = () => h.fake.requests.filter((r) => !isSummary(r));
const summaryRequests = () => h.fake.requests.filter(isSummary);

async function turn(text: string, expectAnswer: string): Promise<void> {
  const n = h.adapter.answers('console:main').length;
  await h.adapter.send(text, { conversation: 'main' });
  await waitFor(`answer ${expectAnswer}`, () => h.adapter.answers('console:main').length > n && h.adapter.answers('console:main').at(-1));
  expect(h.adapter.answers('console:main').at(-1)).toBe(expectAnswer);
}

/** The text of the tool_result in the newest message of a request. */
function lastResult(r: RecordedRequest): { text: string; isError: boolean } {
  const b = body(r)
    .messages.at(-1)!
    .content.find((x) => x.type === 'tool_result')!;
  const text = typeof b.content === 'string' ? b.content : JSON.stringify(b.content);
  return { text, isError: b.is_error === true };
}

const filler = (label: string) => `${label} ${'lorem ipsum dolor sit amet '.repeat(450)}`; // ~3,000 tokens

test("context_info reports the window, the model's count for the transcript, the messages and the summaries", async () => {
  await start('tools: [context_info]', 'contextWindowTokens: 50000');
  let info = '';
  h.script({ text: 'ok 1', usage: { input_tokens: 1234 } }, { toolUses: [{ name: 'context_info', input: {} }], usage: { input_tokens: 2345 } }, (req) => {
    info = lastResult(req).text;
    return { text: 'ok 2' };
  });
  await turn('first question', 'ok 1');
  await turn('how full is your context?', 'ok 2');
  // When it ran: user, assistant, user (the 3 messages the API counted 2,345 tokens for), then the tool_use.
  const withResult = body(mainRequests().at(-1)!).messages;
  const toolUse = withResult.at(-2) as unknown as Message;
  expect(info).toContain('Context window: 50000 tokens.');
  expect(info).toContain(`Used: ${2345 + estimateTokens([toolUse])} tokens (`);
  expect(info).toContain("from the model's count for the last request (2345 tokens for the first 3 messages) plus an estimate of the 1 after it");
  expect(info).toContain('Messages in the transcript: 4.');
  expect(info).toContain('Summarized so far: nothing');
});

test('summarize_context replaces the older turns with the fake model summary; the next request is smaller, and a restart keeps it', async () => {
  await start('tools: [summarize_context, context_info]', 'tier: low-risk', 'contextWindowTokens: 100000', 'maxTokens: 1000');
  // In the first turn there is nothing older to summarize: refused, no model call.
  h.script({ toolUses: [{ name: 'summarize_context', input: {} }] }, { text: 'ok 1' });
  await turn(filler('turn-1'), 'ok 1');
  expect(lastResult(mainRequests().at(-1)!)).toEqual({ text: expect.stringContaining('nothing older than the current turn to summarize'), isError: true });
  expect(summaryRequests()).toHaveLength(0);

  h.script({ text: 'ok 2' }, { text: 'ok 3' });
  await turn(filler('turn-2'), 'ok 2');
  await turn(filler('turn-3'), 'ok 3');
  h.script({ toolUses: [{ name: 'summarize_context', input: { focus: 'the ZEBRA-42 code' } }] }, { text: 'compacted' });
  await turn('please compact your context', 'compacted');

  // One summary call, with the focus in its instructions and the old turns in its input.
  expect(summaryRequests()).toHaveLength(1);
  expect(body(summaryRequests()[0]!).system).toContain('the ZEBRA-42 code');
  expect(JSON.stringify(body(summaryRequests()[0]!).messages)).toContain('turn-1 lorem');

  const [before, after] = mainRequests().slice(-2).map(body) as [Body, Body];
  expect(JSON.stringify(after.messages).length).toBeLessThan(JSON.stringify(before.messages).length / 3);
  const head = after.messages[0]!.content[0]!.text!;
  expect(head).toContain(SUMMARY_MARKER);
  expect(head).toContain("at the assistant's request (summarize_context)");
  expect(head).toContain('SUMMARY-TEXT: three long turns about ZEBRA-42');
  expect(JSON.stringify(after.messages)).not.toContain('turn-1 lorem');
  expect(JSON.stringify(after.messages)).not.toContain('turn-3 lorem');
  // The current turn stays verbatim: the request, the call and its report.
  expect(JSON.stringify(after.messages)).toContain('please compact your context');
  const report = lastResult(mainRequests().at(-1)!);
  expect(report.isError).toBe(false);
  const m = /Summarized: (\d+) earlier messages were replaced by one summary at .*Context: about (\d+) tokens before, (\d+) after\./.exec(report.text);
  expect(m).not.toBeNull();
  expect(Number(m![1])).toBe(before.messages.length - 1); // all the request before held but the current turn's message
  expect(Number(m![3])).toBeLessThan(Number(m![2]) / 3);

  // After a restart the next request starts from the compacted transcript, and context_info knows the summary.
  await h.restart();
  let info = '';
  h.script({ toolUses: [{ name: 'context_info', input: {} }] }, (req) => {
    info = lastResult(req).text;
    return { text: 'ok 4' };
  });
  await turn('and now?', 'ok 4');
  const afterRestart = body(mainRequests().at(-1)!).messages;
  expect(afterRestart[0]!.content[0]!.text).toContain('SUMMARY-TEXT: three long turns about ZEBRA-42');
  expect(JSON.stringify(afterRestart)).not.toContain('turn-1 lorem');
  expect(info).toContain(`Summarized so far (1;`);
  expect(info).toContain(`${m![1]} earlier messages replaced by a summary on request (summarize_context)`);
  expect(summaryRequests()).toHaveLength(1);
});

test('at tier read-only with no approver bound, summarize_context is declined with the reason and nothing is summarized', async () => {
  await start('tools: [summarize_context]', 'tier: read-only');
  h.script({ text: 'ok 1' }, { toolUses: [{ name: 'summarize_context', input: {} }] }, { text: 'could not' });
  await turn(filler('turn-1'), 'ok 1');
  await turn('compact please', 'could not');
  const r = lastResult(mainRequests().at(-1)!);
  expect(r.isError).toBe(true);
  expect(r.text).toContain('Declined: summarize_context needs approval');
  expect(r.text).toContain('no approver is bound');
  expect(summaryRequests()).toHaveLength(0);
  const t = (await h.store.transcripts.load('console:main'))!;
  const stored = JSON.stringify([...t.base, ...t.rows.map((x) => x.message)]);
  expect(stored).toContain('turn-1 lorem');
  expect(stored).not.toContain(SUMMARY_MARKER);
});

test('at tier read-only with an approver, the card shows what will be summarized, and the summary call waits for the approval', async () => {
  await start('tools: [summarize_context]', 'tier: read-only', 'approvers: { console: [local] }', 'approvalTimeoutMs: 60000');
  h.script({ text: 'ok 1' }, { toolUses: [{ name: 'summarize_context', input: { focus: 'the ZEBRA-42 code' } }] }, { text: 'compacted' });
  await turn(filler('turn-1'), 'ok 1');
  await h.adapter.send('compact please', { conversation: 'main' });
  const card = await waitFor('card', () => h.adapter.cards[0]);
  expect(JSON.stringify(card.card)).toContain('summarize_context: replace the older part of 4 messages');
  expect(JSON.stringify(card.card)).toContain('Keep: the ZEBRA-42 code');
  expect(summaryRequests()).toHaveLength(0); // proposing changed nothing and asked no model
  expect((await h.adapter.click(card, 'Approve once', { user: 'local' })).accepted).toBe(true);
  await waitFor('answer', () => h.adapter.answers('console:main').at(-1) === 'compacted');
  expect(summaryRequests()).toHaveLength(1);
  expect(body(mainRequests().at(-1)!).messages[0]!.content[0]!.text).toContain('SUMMARY-TEXT');
});

test('toolPolicy deny blocks summarize_context even within the tier (and with an approver): no summary call, transcript whole', async () => {
  await start('tools: [summarize_context]', 'tier: low-risk', 'approvers: { console: [local] }', 'toolPolicy: { summarize_context: deny }');
  h.script({ text: 'ok 1' }, { toolUses: [{ name: 'summarize_context', input: {} }] }, { text: 'denied' });
  await turn(filler('turn-1'), 'ok 1');
  await turn('compact please', 'denied');
  expect(lastResult(mainRequests().at(-1)!).isError).toBe(true);
  expect(h.adapter.cards).toHaveLength(0);
  expect(summaryRequests()).toHaveLength(0);
  expect(JSON.stringify(body(mainRequests().at(-1)!).messages)).toContain('turn-1 lorem');
});
