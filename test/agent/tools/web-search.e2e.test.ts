/**
 * Issue 23, web_search end to end: a real Gatehouse against the fake model on the recording chat
 * surface, searching a fake SearXNG/Brave API on 127.0.0.1. Checks: results cited and capped, the key
 * read from the env var named in config (and NAME_FILE) and sent only to the provider, no provider =>
 * no tool, toolPolicy deny.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builtinToolNames } from '../../../agent/tools/catalog.js';
import { ConfigError, loadConfig } from '../../../bot/config/index.js';
import { Harness, waitFor } from '../../helpers/harness.js';
import type { RecordedRequest } from '../../fakes/anthropic.js';
import { startFakeSearch, type FakeSearch } from '../../fakes/search.js';

let h: Harness | undefined;
let search: FakeSearch;
beforeEach(async () => {
  search = await startFakeSearch({ braveKey: 'brave-secret-key' });
  search.results = Array.from({ length: 30 }, (_, i) => ({
    title: `Result ${i + 1}`,
    url: `https://example.org/${i + 1}`,
    snippet: `<b>snippet</b> ${'x'.repeat(50)} ${i + 1}`,
  }));
});
afterEach(async () => {
  await h?.close();
  h = undefined;
  await search.close();
});

const yaml = (webSearch: string, extra = '') => `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file]
    tier: read-only
    workspace: "{{workspace}}"
    approvers: { console: [local] }
${webSearch}${extra}`;

function results(h: Harness): Array<{ content: unknown; is_error?: boolean }> {
  return h
    .modelRequests()
    .slice(1)
    .flatMap((req: RecordedRequest) => {
      const last = (req.body as { messages: Array<{ content: Array<{ type: string }> | string }> }).messages.at(-1)!.content;
      return typeof last === 'string' ? [] : (last.filter((b) => b.type === 'tool_result') as unknown as Array<{ content: unknown; is_error?: boolean }>);
    });
}
const text = (c: unknown): string => (typeof c === 'string' ? c : JSON.stringify(c));
const offered = (h: Harness) => (h.modelRequests()[0]!.body as { tools?: Array<{ name: string }> }).tools?.map((t) => t.name) ?? [];

test('SearXNG: results are cited (title, url), capped in count and bytes, HTML stripped', async () => {
  h = await Harness.start({ yaml: yaml(`    webSearch: { provider: searxng, url: "${search.url}", maxResults: 4 }\n`) });
  h.script(
    { toolUses: [{ name: 'web_search', input: { query: 'gatehouse gateway', count: 10 } }] },
    { toolUses: [{ name: 'web_search', input: { query: 'q2' } }] },
    { text: 'found' },
  );
  await h.adapter.send('search');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(offered(h)).toContain('web_search');
  expect(search.requests[0]?.path).toBe('/search');
  expect(search.requests[0]?.query.get('q')).toBe('gatehouse gateway');
  const out = text(results(h)[0]?.content);
  expect(out).toContain('[1] Result 1\n    https://example.org/1');
  expect(out).toContain('[4] Result 4');
  expect(out).not.toContain('Result 5');
  expect(out).not.toContain('<b>');
  expect(h.adapter.cards).toHaveLength(0);
});

test('the byte cap drops whole results and says so', async () => {
  h = await Harness.start({ yaml: yaml(`    webSearch: { provider: searxng, url: "${search.url}", maxResults: 20, maxBytes: 1024 }\n`) });
  h.script({ toolUses: [{ name: 'web_search', input: { query: 'many' } }] }, { text: 'found' });
  await h.adapter.send('search');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  const out = text(results(h)[0]?.content);
  expect(Buffer.byteLength(out)).toBeLessThanOrEqual(1024);
  expect(out).toMatch(/\d+ more result\(s\) left out: over the 1024-byte limit/);
});

test('Brave: the key comes from the env var named in config (via NAME_FILE) and goes only to the provider', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-search-'));
  writeFileSync(join(dir, 'key'), 'brave-secret-key\n');
  try {
    h = await Harness.start({
      yaml: yaml(`    webSearch: { provider: brave, url: "${search.url}", apiKeyEnv: MY_BRAVE_KEY, maxResults: 3 }\n`),
      env: { MY_BRAVE_KEY_FILE: join(dir, 'key') },
    });
    h.script({ toolUses: [{ name: 'web_search', input: { query: 'brave q' } }] }, { text: 'found' });
    await h.adapter.send('search');
    await waitFor('answer', () => h!.adapter.answers()[0]);
    expect(search.requests[0]?.headers['x-subscription-token']).toBe('brave-secret-key');
    expect(search.requests[0]?.query.get('count')).toBe('3');
    const out = text(results(h)[0]?.content);
    expect(out).toContain('[3] Result 3\n    https://example.org/3');
    expect(JSON.stringify(h.modelRequests().map((r) => r.body))).not.toContain('brave-secret-key');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a provider error is a tool error naming the provider and status', async () => {
  h = await Harness.start({ yaml: yaml(`    webSearch: { provider: searxng, url: "${search.url}" }\n`) });
  search.status = 503;
  h.script({ toolUses: [{ name: 'web_search', input: { query: 'x' } }] }, { text: 'failed' });
  await h.adapter.send('search');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  const [r] = results(h);
  expect(r?.is_error).toBe(true);
  expect(text(r?.content)).toMatch(/SearXNG answered HTTP 503/);
});

test('no provider configured: web_search is not offered', async () => {
  h = await Harness.start({ yaml: yaml('') });
  h.script({ text: 'hi' });
  await h.adapter.send('hello');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(offered(h)).not.toContain('web_search');
});

test('toolPolicy deny blocks it: the provider is never asked', async () => {
  h = await Harness.start({ yaml: yaml(`    webSearch: { provider: searxng, url: "${search.url}" }\n`, '    toolPolicy: { web_search: deny }\n') });
  h.script({ toolUses: [{ name: 'web_search', input: { query: 'x' } }] }, { text: 'ok' });
  await h.adapter.send('search');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(results(h)[0]?.is_error).toBe(true);
  expect(search.requests).toHaveLength(0);
});

test('config errors name the key path: Brave without a key, an unset key variable, SearXNG without a URL', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-search-cfg-'));
  try {
    const problems = (ws: string): string => {
      writeFileSync(join(dir, 'gatehouse.yaml'), `agents:\n  a:\n    model: m\n    workspace: ${join(dir, 'ws')}\n    webSearch: ${ws}\n`);
      try {
        loadConfig({ env: { ANTHROPIC_API_KEY: 'k', GATEHOUSE_STORE: 'sqlite://:memory:' }, cwd: dir, knownTools: builtinToolNames() });
        return '';
      } catch (err) {
        if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`).join('\n');
        throw err;
      }
    };
    expect(problems('{ provider: brave }')).toMatch(/agents\.a\.webSearch\.apiKeyEnv: Brave needs an API key/);
    expect(problems('{ provider: brave, apiKeyEnv: NOPE_KEY }')).toMatch(/agents\.a\.webSearch\.apiKeyEnv: NOPE_KEY \(or NOPE_KEY_FILE\) is not set/);
    expect(problems('{ provider: searxng }')).toMatch(/agents\.a\.webSearch\.url: SearXNG needs/);
    expect(problems('{ provider: bing, url: "http://x" }')).toMatch(/agents\.a\.webSearch\.provider/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
