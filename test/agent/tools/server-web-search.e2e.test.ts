/**
 * `webSearch: { provider: anthropic }`: the Messages API's own web search (web_search_20250305) through a
 * whole Gatehouse and the real SDK client against the fake Messages API. The tool is offered as a
 * server tool with the configured max_uses; each search the API ran shows as progress and in the
 * audit; its blocks and citations are handed back unchanged (the fake refuses malformed ones); a
 * paused reply (pause_turn) is continued and kept as one message; toolPolicy deny or ask means it is
 * not offered at all (a server tool cannot be asked about call by call).
 */
import { agentYaml, type Harness, harnessOn, waitFor } from '../../helpers/harness.js';

type Body = { tools?: Array<Record<string, unknown>>; messages: Array<{ role: string; content: Array<Record<string, unknown>> }> };
const search = { query: 'gatehouse release notes', results: [{ url: 'https://example.org/notes', title: 'Release notes' }] };

let h: Harness;
let audit: Array<Record<string, unknown>>;
afterEach(async () => {
  await h?.close();
});

async function start(...extra: string[]): Promise<Harness> {
  audit = [];
  h = await harnessOn('sqlite').start({
    yaml: agentYaml('tools: [get_time]', 'tier: read-only', 'webSearch: { provider: anthropic, maxUses: 3 }', ...extra),
    log: (_level, _msg, fields) => {
      if (fields && typeof fields === 'object' && 'event' in fields) audit.push(fields as Record<string, unknown>);
    },
  });
  return h;
}

test('offered as the API tool; the search shows as progress and in the audit; its blocks and citations go back unchanged', async () => {
  await start();
  h.script({ serverSearch: search, text: 'The notes say it shipped.' }, { text: 'You are welcome.' });
  await h.adapter.send('what do the release notes say?');
  await waitFor('the answer', () => h.adapter.answers()[0]);
  expect(h.adapter.answers()).toEqual(['The notes say it shipped.']);

  const first = h.modelRequests()[0]!.body as Body;
  expect(first.tools).toContainEqual({ type: 'web_search_20250305', name: 'web_search', max_uses: 3 });
  expect(first.tools!.filter((t) => t.name === 'web_search')).toHaveLength(1);
  expect(first.tools!.find((t) => t.name === 'web_search')).not.toHaveProperty('input_schema');

  const started = h.adapter.eventsOf('console:main', 'tool_started');
  expect(started).toEqual([expect.objectContaining({ tool: 'web_search', summary: 'gatehouse release notes' })]);
  expect(h.adapter.eventsOf('console:main', 'tool_finished')).toEqual([expect.objectContaining({ tool: 'web_search', ok: true })]);
  expect(audit).toContainEqual(expect.objectContaining({ event: 'gate_decision', tool: 'web_search', decision: 'allow', rule: 'run by the API' }));

  await h.adapter.send('thanks');
  await waitFor('the second answer', () => h.adapter.answers()[1]);
  const second = h.modelRequests()[1]!.body as Body;
  const assistant = second.messages[1]!;
  expect(assistant.content.map((b) => b.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
  expect(assistant.content[2]).toMatchObject({
    citations: [expect.objectContaining({ type: 'web_search_result_location', url: 'https://example.org/notes' })],
  });
});

test('a paused reply (pause_turn) is sent back and continued; the transcript keeps one assistant message', async () => {
  await start();
  h.script({ serverSearch: search, text: 'Searching more.', stopReason: 'pause_turn' }, { text: 'Done: it shipped.' }, { text: 'ok' });
  await h.adapter.send('dig into the notes');
  await waitFor('the answer', () => h.adapter.answers()[0]);
  expect(h.adapter.answers()).toEqual(['Done: it shipped.']);
  const continued = h.modelRequests()[1]!.body as Body;
  // The continuation ends with the unfinished assistant message, as the API asks.
  expect(continued.messages.at(-1)!.role).toBe('assistant');
  expect(continued.messages.at(-1)!.content[0]!.type).toBe('server_tool_use');

  await h.adapter.send('next');
  await waitFor('the next answer', () => h.adapter.answers()[1]);
  const next = h.modelRequests()[2]!.body as Body;
  expect(next.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  expect(next.messages[1]!.content.map((b) => b.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text', 'text']);
});

test.each(['deny', 'ask'])('toolPolicy %s: the API search is not offered (it could not be declined or asked about per call)', async (rule) => {
  await start(`toolPolicy: { web_search: ${rule} }`);
  h.script({ serverSearch: search, text: 'No search.' });
  await h.adapter.send('search please');
  await waitFor('the answer', () => h.adapter.answers()[0]);
  const body = h.modelRequests()[0]!.body as Body;
  expect(body.tools!.some((t) => t.name === 'web_search')).toBe(false);
  expect(h.adapter.answers()).toEqual(['No search.']);
  expect(h.adapter.eventsOf('console:main', 'tool_started')).toEqual([]);
});
