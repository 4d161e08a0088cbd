/**
 * web_search: a search provider behind a small interface, configured per agent (config `webSearch`).
 *
 * Contract:
 * - Read-only. Offered only to an agent with a provider configured (bot/config/index.ts adds it to the
 *   toolset); the catalog builds it only then.
 * - Providers: SearXNG (`GET <url>/search?q=..&format=json`) and Brave (`GET <url>/res/v1/web/search`,
 *   key in `X-Subscription-Token`). The URL and key come from config (trusted), never from the model.
 * - Results are capped: at most `maxResults` (the model may ask for fewer), each snippet trimmed, and
 *   the whole answer at most `maxBytes`; every result is cited with its title and URL.
 * - A provider error (status, timeout, a body that is not the expected JSON) is a ToolError naming the
 *   provider and the status, never the key.
 * - `anthropic`: the Messages API's server-side search (`web_search_20250305`, `max_uses` from config):
 *   the same tool name, tier and policy, but sent as a server tool; the API searches inside its reply
 *   and cites its sources there (agent/run/loop.ts reports each search as progress and to the audit).
 */
import { z } from 'zod';
import { ToolError, type AnyTool, type Tool } from '../../types.js';
import { messageOf } from '../../../log.js';

interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchProvider {
  readonly name: string;
  search(query: string, count: number, signal: AbortSignal): Promise<SearchResult[]>;
}

export interface WebSearchConfig {
  /** anthropic: the Messages API's server-side search (web_search_20250305); `url` is unused. */
  provider: 'searxng' | 'brave' | 'anthropic';
  url: string;
  apiKey?: string;
  maxResults: number;
  maxBytes: number;
  timeoutMs: number;
  /** anthropic: searches per request. */
  maxUses?: number;
}

const SNIPPET_CHARS = 400;
const searxBody = z.object({ results: z.array(z.object({ title: z.string().default(''), url: z.string(), content: z.string().optional() })) });
const braveBody = z.object({
  web: z.object({ results: z.array(z.object({ title: z.string().default(''), url: z.string(), description: z.string().optional() })) }).optional(),
});

async function getJson(provider: string, url: URL, headers: Record<string, string>, signal: AbortSignal): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, { headers: { accept: 'application/json', ...headers }, signal, redirect: 'error' });
  } catch (err) {
    throw new ToolError(`web_search: ${provider} could not be reached (${(err as Error).name === 'TimeoutError' ? 'timed out' : messageOf(err)}).`);
  }
  if (!res.ok) throw new ToolError(`web_search: ${provider} answered HTTP ${res.status}.`);
  try {
    return await res.json();
  } catch {
    throw new ToolError(`web_search: ${provider} did not answer JSON.`);
  }
}

function searchProvider(c: WebSearchConfig): SearchProvider {
  const base = c.url.replace(/\/+$/, '');
  if (c.provider === 'searxng') {
    return {
      name: 'SearXNG',
      async search(query, count, signal) {
        const u = new URL(`${base}/search`);
        u.searchParams.set('q', query);
        u.searchParams.set('format', 'json');
        const body = searxBody.safeParse(await getJson('SearXNG', u, c.apiKey ? { authorization: `Bearer ${c.apiKey}` } : {}, signal));
        if (!body.success) throw new ToolError('web_search: SearXNG answered JSON without a results list.');
        return body.data.results.slice(0, count).map((r) => ({ title: r.title, url: r.url, snippet: r.content ?? '' }));
      },
    };
  }
  return {
    name: 'Brave',
    async search(query, count, signal) {
      const u = new URL(`${base}/res/v1/web/search`);
      u.searchParams.set('q', query);
      u.searchParams.set('count', String(count));
      const body = braveBody.safeParse(await getJson('Brave', u, c.apiKey ? { 'x-subscription-token': c.apiKey } : {}, signal));
      if (!body.success) throw new ToolError('web_search: Brave answered JSON in an unexpected shape.');
      return (body.data.web?.results ?? []).slice(0, count).map((r) => ({ title: r.title, url: r.url, snippet: r.description ?? '' }));
    },
  };
}

/** Numbered, cited results, cut to `maxBytes` (whole results dropped from the end, then a note). */
function formatResults(query: string, results: readonly SearchResult[], maxBytes: number): string {
  if (results.length === 0) return `No results for ${JSON.stringify(query)}.`;
  const head = `Results for ${JSON.stringify(query)} (cite the URL of what you use):`;
  const parts: string[] = [head];
  let used = Buffer.byteLength(head);
  let shown = 0;
  for (const [i, r] of results.entries()) {
    const snippet = r.snippet
      .replace(/<[^>]*>/g, '')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, SNIPPET_CHARS);
    const entry = `\n[${i + 1}] ${r.title.trim() || '(untitled)'}\n    ${r.url}${snippet ? `\n    ${snippet}` : ''}`;
    if (used + Buffer.byteLength(entry) > maxBytes - 80) break;
    parts.push(entry);
    used += Buffer.byteLength(entry);
    shown++;
  }
  if (shown < results.length) parts.push(`\n[${results.length - shown} more result(s) left out: over the ${maxBytes}-byte limit]`);
  return parts.join('');
}

const Input = z.strictObject({
  query: z.string().min(1).max(400).describe('What to search the web for.'),
  count: z.number().int().min(1).max(50).optional().describe('How many results (capped by config).'),
});

/** The API's own web search: offered, tiered and policed like any tool, run by the API inside its reply. */
const SERVER_WEB_SEARCH = 'web_search_20250305';

function serverWebSearchTool(c: WebSearchConfig): AnyTool {
  const tool: Tool<z.infer<typeof Input>> = {
    name: 'web_search',
    description: 'Search the web (run by the model service); cite the sources you use.',
    input: Input,
    tier: 'read-only',
    serverTool: { type: SERVER_WEB_SEARCH, name: 'web_search', max_uses: c.maxUses ?? 5 },
    async execute() {
      throw new ToolError('web_search runs on the model service here, not as a tool call: ask for what you need and the service searches.');
    },
  };
  return tool as unknown as AnyTool;
}

export function webSearchTool(c: WebSearchConfig, provider?: SearchProvider): AnyTool {
  if (c.provider === 'anthropic') return serverWebSearchTool(c);
  return localWebSearchTool(c, provider ?? searchProvider(c));
}

function localWebSearchTool(c: WebSearchConfig, provider: SearchProvider): AnyTool {
  const tool: Tool<z.infer<typeof Input>> = {
    name: 'web_search',
    description: `Search the web (${provider.name}). Returns up to ${c.maxResults} results with title, URL and a snippet; cite the URLs you rely on. Use web_fetch to read a page.`,
    input: Input,
    tier: 'read-only',
    timeoutMs: c.timeoutMs + 5_000,
    async execute(input, ctx) {
      const count = Math.min(input.count ?? c.maxResults, c.maxResults);
      const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(c.timeoutMs)]);
      return { content: formatResults(input.query, await provider.search(input.query, count, signal), c.maxBytes) };
    },
  };
  return tool as unknown as AnyTool;
}
