/**
 * Contract: the Messages API's server-side web search in the fake (test/fakes/anthropic.ts), as the API
 * sends it.
 * - `validateServerTool(t, i, bad)`: a `{type: 'web_search_20250305', name: 'web_search', max_uses?}`
 *   entry of `tools` (true when `t` is one; the API's wording when it is malformed).
 * - `validateServerBlock(blk, where, role, bad)`: server_tool_use / web_search_tool_result blocks
 *   handed back must be in an assistant message and well formed.
 * - `serverSearchBlocks(search, text, split)`: what a searching reply streams: a server_tool_use
 *   (input as input_json_delta), its web_search_tool_result whole in the start event, then the text
 *   with one web_search_result_location citation per result (citations_delta).
 * - A reply's `serverSearch` is sent only when the request offered the search tool (as the API).
 */
type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export const WEB_SEARCH_TYPE = 'web_search_20250305';

export interface FakeServerSearch {
  query: string;
  results: Array<{ url: string; title: string }>;
}

export function validateServerTool(t: Json, i: number, bad: (m: string) => never): boolean {
  if (t.type === undefined || t.type === 'custom') return false;
  if (t.type !== WEB_SEARCH_TYPE) bad(`tools.${i}: Input tag '${String(t.type)}' found using 'type' does not match any of the expected tags`);
  if (t.name !== 'web_search') bad(`tools.${i}.${WEB_SEARCH_TYPE}.name: Input should be 'web_search'`);
  if (t.max_uses !== undefined && (!Number.isInteger(t.max_uses) || (t.max_uses as number) < 1)) {
    bad(`tools.${i}.${WEB_SEARCH_TYPE}.max_uses: Input should be greater than 0`);
  }
  return true;
}

export function offersServerSearch(body: Json): boolean {
  return Array.isArray(body.tools) && (body.tools as unknown[]).some((t) => isObj(t) && t.type === WEB_SEARCH_TYPE);
}

export function validateServerBlock(blk: Json, where: string, role: unknown, bad: (m: string) => never): void {
  if (role !== 'assistant') bad(`${where}: ${String(blk.type)} blocks are only allowed in assistant messages`);
  if (blk.type === 'server_tool_use') {
    if (typeof blk.id !== 'string' || !/^srvtoolu_[a-zA-Z0-9_]+$/.test(blk.id)) bad(`${where}.id: String should match pattern '^srvtoolu_[a-zA-Z0-9_]+$'`);
    if (!isObj(blk.input)) bad(`${where}.input: Input should be a valid dictionary`);
  } else if (typeof blk.tool_use_id !== 'string' || blk.content === undefined) {
    bad(`${where}: web_search_tool_result needs tool_use_id and content`);
  }
}

let seq = 0;

export function serverSearchBlocks(
  search: FakeServerSearch,
  text: string,
  split: (s: string, parts: number) => string[],
): Array<{ start: Json; deltas: Json[]; final: Json }> {
  const id = `srvtoolu_fake_${(++seq).toString(36).padStart(6, '0')}`;
  const input = { query: search.query };
  const content = search.results.map((r) => ({ type: 'web_search_result', url: r.url, title: r.title, encrypted_content: `enc-${r.url}`, page_age: null }));
  const citations = search.results.map((r) => ({
    type: 'web_search_result_location',
    url: r.url,
    title: r.title,
    encrypted_index: `idx-${r.url}`,
    cited_text: r.title,
  }));
  return [
    {
      start: { type: 'server_tool_use', id, name: 'web_search', input: {} },
      deltas: ['', ...split(JSON.stringify(input), 2)].map((partial_json) => ({ type: 'input_json_delta', partial_json })),
      final: { type: 'server_tool_use', id, name: 'web_search', input },
    },
    { start: { type: 'web_search_tool_result', tool_use_id: id, content }, deltas: [], final: { type: 'web_search_tool_result', tool_use_id: id, content } },
    {
      start: { type: 'text', text: '', citations: null },
      deltas: [...citations.map((citation) => ({ type: 'citations_delta', citation })), ...split(text, 3).map((t) => ({ type: 'text_delta', text: t }))],
      final: { type: 'text', text, citations },
    },
  ];
}
