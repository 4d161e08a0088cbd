/**
 * Context that lasts, end to end through the runner against the fake model server: a transcript near
 * the window is summarized by a model call (tool_use/tool_result pairs intact, the summary stored), a
 * failed summary call loses nothing, big tool results move to the store and come back with
 * retrieve_tool_result, and one conversation cannot read another's stored results.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SUMMARY_MARKER, SUMMARY_SYSTEM } from '../../agent/context/keeper.js';
import type { FakeReply, RecordedRequest } from '../fakes/anthropic.js';
import { Harness, waitFor } from '../helpers/harness.js';

type Block = { type: string; text?: string; id?: string; tool_use_id?: string; content?: unknown; name?: string };
type Body = { model: string; system?: string; messages: Array<{ role: string; content: Block[] }> };
const body = (r: RecordedRequest) => r.body as Body;
const isSummary = (r: RecordedRequest) => body(r).system === SUMMARY_SYSTEM;

let h: Harness;
let summaryReply: FakeReply;
afterEach(async () => {
  await h?.close();
});

async function start(agentLines: string): Promise<void> {
  h = await Harness.start({
    yaml: `agents:\n  default:\n    model: claude-sonnet-5-5\n    workspace: "{{workspace}}"\n${agentLines}`,
  });
  summaryReply = { text: 'SUMMARY-TEXT: the user sent numbered turns; notes.txt was read and holds "alpha".' };
  h.fake.setHandler((req) => {
    if (isSummary(req)) return summaryReply;
    const next = h.mainQueue.shift();
    if (next === undefined) return { text: '(no scripted reply)' };
    return typeof next === 'function' ? next(req) : next;
  });
}

const mainRequests = () => h.fake.requests.filter((r) => !isSummary(r));
const summaryRequests = () => h.fake.requests.filter(isSummary);

async function turn(text: string, expectAnswer: string, conversation = 'main'): Promise<void> {
  const n = h.adapter.answers(`console:${conversation}`).length;
  await h.adapter.send(text, { conversation });
  await waitFor(`answer ${expectAnswer}`, () => h.adapter.answers(`console:${conversation}`).length > n && h.adapter.answers(`console:${conversation}`).at(-1));
  expect(h.adapter.answers(`console:${conversation}`).at(-1)).toBe(expectAnswer);
}

/** Every tool_use is answered in the next message and every tool_result has its tool_use just before. */
function pairsIntact(messages: Body['messages']): boolean {
  for (let i = 0; i < messages.length; i++) {
    const uses = messages[i]!.content.filter((b) => b.type === 'tool_use').map((b) => b.id);
    const results = messages[i]!.content.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
    const prevUses = i > 0 ? messages[i - 1]!.content.filter((b) => b.type === 'tool_use').map((b) => b.id) : [];
    if (results.some((id) => !prevUses.includes(id))) return false;
    const next = messages[i + 1]?.content.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id) ?? [];
    if (uses.some((id) => !next.includes(id))) return false;
  }
  return true;
}

async function storedTranscript(key = 'console:main'): Promise<Body['messages']> {
  // Through the repository: the latest summary (base) and the messages after it.
  const t = (await h.store.transcripts.load(key))!;
  return [...t.base, ...t.rows.map((r) => r.message)] as Body['messages'];
}

const filler = (label: string) => `${label} ${'lorem ipsum dolor sit amet '.repeat(450)}`; // ~12,000 chars, ~3,000 tokens

test('near the window, older turns are summarized by a model call; pairs stay intact and the summary is stored', async () => {
  await start('    tools: [read_file]\n    contextWindowTokens: 20000\n    maxTokens: 1000\n');
  writeFileSync(join(h.workspace, 'notes.txt'), 'alpha\n');
  h.script(
    { text: 'ok 1' },
    { toolUses: [{ name: 'read_file', input: { path: 'notes.txt' } }] },
    { text: 'ok 2' },
    { text: 'ok 3' },
    { text: 'ok 4' },
    { text: 'ok 5' },
    { text: 'ok 6' },
  );
  await turn(filler('turn-1'), 'ok 1');
  await turn(filler('turn-2 read notes.txt'), 'ok 2');
  for (const n of [3, 4, 5, 6]) await turn(filler(`turn-${n}`), `ok ${n}`);

  expect(summaryRequests().length).toBeGreaterThanOrEqual(1);
  const first = summaryRequests()[0]!;
  // The summarizer saw the older turns, the tool call and its result among them.
  const asked = JSON.stringify(body(first).messages);
  expect(asked).toContain('turn-1');
  expect(asked).toContain('read_file');
  expect(asked).toContain('alpha');
  expect(body(first).model).toBe('claude-sonnet-5-5');

  // The main request right after the summary is smaller than the one before it, starts with the summary
  // and keeps every tool_use with its tool_result.
  const idx = h.fake.requests.indexOf(first);
  const before = h.fake.requests
    .slice(0, idx)
    .filter((r) => !isSummary(r))
    .at(-1)!;
  const after = h.fake.requests.slice(idx + 1).find((r) => !isSummary(r))!;
  expect(JSON.stringify(body(after).messages).length).toBeLessThan(JSON.stringify(body(before).messages).length);
  const head = body(after).messages[0]!.content[0]!;
  expect(head.text).toContain(SUMMARY_MARKER);
  expect(head.text).toContain('SUMMARY-TEXT');
  expect(JSON.stringify(body(after).messages)).not.toContain('turn-1 lorem');
  for (const r of mainRequests()) expect(pairsIntact(body(r).messages)).toBe(true);
  // The newest turn is there verbatim.
  expect(JSON.stringify(body(mainRequests().at(-1)!).messages)).toContain(filler('turn-6'));

  // The stored transcript holds the summary instead of the old turns (it is what the next run loads).
  const stored = await storedTranscript();
  expect(JSON.stringify(stored[0])).toContain('SUMMARY-TEXT');
  expect(JSON.stringify(stored)).not.toContain('turn-1 lorem');
  expect(pairsIntact(stored)).toBe(true);
});

test('a failed summary call loses nothing: the transcript stays whole, and the next turn tries again', async () => {
  await start('    tools: [read_file]\n    contextWindowTokens: 20000\n    maxTokens: 1000\n');
  h.script(...[1, 2, 3, 4, 5, 6, 7].map((n) => ({ text: `ok ${n}` })));
  summaryReply = { error: { status: 400, type: 'invalid_request_error', message: 'summary refused' } };
  for (const n of [1, 2, 3, 4, 5, 6]) await turn(filler(`turn-${n}`), `ok ${n}`);
  expect(summaryRequests().length).toBeGreaterThanOrEqual(1); // it tried, and failed
  const stored = await storedTranscript();
  for (const n of [1, 2, 3, 4, 5, 6]) expect(JSON.stringify(stored)).toContain(`turn-${n} lorem`);
  expect(JSON.stringify(stored)).not.toContain(SUMMARY_MARKER);

  const failedTries = summaryRequests().length;
  summaryReply = { text: 'SUMMARY-TEXT after a retry' };
  await turn(filler('turn-7'), 'ok 7');
  expect(summaryRequests().length).toBeGreaterThan(failedTries);
  expect(JSON.stringify(await storedTranscript())).toContain('SUMMARY-TEXT after a retry');
});

test('a big tool result is stored and replaced by a reference; retrieve_tool_result pages it back exactly', async () => {
  await start('    tools: [read_file, get_time, retrieve_tool_result]\n');
  const lines = Array.from({ length: 1600 }, (_, i) => `line ${String(i).padStart(5, '0')} of the big log`);
  const big = lines.join('\n') + '\n';
  expect(big.length).toBeGreaterThan(40_000);
  writeFileSync(join(h.workspace, 'big.log'), big);
  let id = '';
  h.script(
    { toolUses: [{ name: 'read_file', input: { path: 'big.log', limit: 2000 } }] },
    (req) => {
      // The model sees the whole result once: it is the newest message.
      expect(JSON.stringify(body(req).messages.at(-1))).toContain('line 01499 of the big log');
      return { toolUses: [{ name: 'get_time', input: {} }] };
    },
    (req) => {
      const text = JSON.stringify(body(req).messages);
      expect(text).not.toContain('line 01499 of the big log');
      id = /\[Stored result (tr_[A-Za-z0-9_-]+):/.exec(text)![1]!;
      expect(text).toContain('line 00000 of the big log'); // the head stays
      return { toolUses: [{ name: 'retrieve_tool_result', input: { id, offset: big.indexOf('line 01200'), length: 60 } }] };
    },
    { text: 'found it' },
  );
  await turn('read big.log', 'found it');
  const last = JSON.stringify(body(mainRequests().at(-1)!).messages.at(-1));
  expect(last).toContain(big.slice(big.indexOf('line 01200'), big.indexOf('line 01200') + 60).replace(/\n/g, '\\n'));
  expect(last).toContain(`of ${big.trimEnd().length};`);
  // The stored transcript keeps the reference, not the 40 KB.
  expect(JSON.stringify(await storedTranscript())).not.toContain('line 01499 of the big log');

  // Another conversation cannot read it, even with the right id.
  h.script({ toolUses: [{ name: 'retrieve_tool_result', input: { id } }] }, { text: 'not mine' });
  await turn('fetch it', 'not mine', 'other');
  const other = JSON.stringify(body(mainRequests().at(-1)!).messages.at(-1));
  expect(other).toContain(`no stored result ${id} in this conversation`);
  expect(other).not.toContain('of the big log');

  // /reset forgets the conversation's stored results with it.
  await h.adapter.send('/reset');
  h.script({ toolUses: [{ name: 'retrieve_tool_result', input: { id } }] }, { text: 'gone' });
  await turn('fetch it again', 'gone');
  expect(JSON.stringify(body(mainRequests().at(-1)!).messages.at(-1))).toContain(`no stored result ${id}`);
});

test('without retrieve_tool_result in the toolset a big result stays in the transcript (nothing could read it back)', async () => {
  await start('    tools: [read_file, get_time]\n');
  writeFileSync(join(h.workspace, 'big.log'), Array.from({ length: 1600 }, (_, i) => `line ${String(i).padStart(5, '0')} of the big log`).join('\n'));
  h.script({ toolUses: [{ name: 'read_file', input: { path: 'big.log', limit: 2000 } }] }, { toolUses: [{ name: 'get_time', input: {} }] }, { text: 'kept' });
  await turn('read big.log', 'kept');
  const text = JSON.stringify(body(mainRequests().at(-1)!).messages);
  expect(text).toContain('line 01599 of the big log');
  expect(text).not.toContain('[Stored result');
});

test('the size the API reports counts: a small-looking transcript the model counted as near the window is summarized', async () => {
  await start('    tools: [read_file]\n    contextWindowTokens: 20000\n    maxTokens: 1000\n');
  // Short texts (a few hundred tokens by estimate), but the API said the first request used 17,000.
  h.script({ text: 'ok 1', usage: { input_tokens: 17_000 } }, { text: 'ok 2' });
  await turn('short question one', 'ok 1');
  expect(summaryRequests()).toHaveLength(0);
  await turn('short question two', 'ok 2');
  expect(summaryRequests()).toHaveLength(1);
  expect(JSON.stringify(body(summaryRequests()[0]!).messages)).toContain('short question one');
});
