/**
 * web_search headless: `gatehouse run --json` as a real process against the fake Anthropic server and
 * a fake Brave API on 127.0.0.1. Results reach the model cited and capped; the key is read from the
 * env var the config names and goes only to the provider (never to the model, never in the report);
 * no provider configured means the tool is not offered; toolPolicy deny blocks it, listed in --json.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { startFakeSearch, type FakeSearch } from '../fakes/search.js';
import { jsonReport, runGatehouse } from '../helpers/process.js';

type Body = { tools?: Array<{ name: string }>; messages: Array<{ role: string; content: unknown }> };
type Report = { answer: string; declined: Array<{ tool: string; reason: string }> };

const KEY = 'brave-secret-key-1234';
let fake: FakeAnthropic;
let search: FakeSearch;
let dir: string;
const replies: FakeReply[] = [];

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  search = await startFakeSearch({ braveKey: KEY });
  search.results = Array.from({ length: 12 }, (_, i) => ({ title: `Result ${i + 1}`, url: `https://example.org/${i + 1}`, snippet: `<i>about</i> ${i + 1}` }));
  replies.length = 0;
  fake.setHandler(() => replies.shift() ?? { text: '(no scripted reply)' });
  dir = mkdtempSync(join(tmpdir(), 'gh-run-search-'));
  chmodSync(dir, 0o711);
  mkdirSync(join(dir, 'ws'));
});
afterEach(async () => {
  await fake.close();
  await search.close();
  rmSync(dir, { recursive: true, force: true });
});

function config(extra: string): void {
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file]\n    tier: read-only\n    workspace: "${join(dir, 'ws')}"\n${extra}`,
  );
}

async function run(prompt: string): Promise<{ code: number | null; report: Report; stdout: string; stderr: string }> {
  const r = await runGatehouse(['run', '--json', '--', prompt], dir, fake.url, { SEARCH_KEY: KEY });
  return { ...r, report: jsonReport<Report>(r) };
}

const offered = (i: number) => ((fake.requests[i]!.body as Body).tools ?? []).map((t) => t.name);
const lastContent = (i: number) => JSON.stringify((fake.requests[i]!.body as Body).messages.at(-1)!.content);

test('results reach the model cited and capped; the key goes only to the provider', async () => {
  config(`    webSearch: { provider: brave, url: "${search.url}", apiKeyEnv: SEARCH_KEY, maxResults: 3 }\n`);
  replies.push({ toolUses: [{ name: 'web_search', input: { query: 'gatehouse acp' } }] }, { text: 'Found three.' });
  const r = await run('search the web');
  expect(r.code).toBe(0);
  expect(r.report.answer).toBe('Found three.');
  expect(offered(0)).toContain('web_search');
  expect(search.requests[0]?.query.get('q')).toBe('gatehouse acp');
  expect(search.requests[0]?.headers['x-subscription-token']).toBe(KEY);
  const seen = lastContent(1);
  expect(seen).toContain('[3] Result 3');
  expect(seen).toContain('https://example.org/3');
  expect(seen).not.toContain('Result 4');
  expect(seen).not.toContain('<i>');
  expect(JSON.stringify(fake.requests.map((q) => q.body))).not.toContain(KEY);
  expect(r.stdout + r.stderr).not.toContain(KEY);
}, 180_000);

test('no provider configured: web_search is not offered', async () => {
  config('');
  replies.push({ text: 'No search here.' });
  const r = await run('search the web');
  expect(r.code).toBe(0);
  expect(offered(0)).not.toContain('web_search');
  expect(search.requests).toHaveLength(0);
}, 180_000);

test('toolPolicy deny: the search is blocked, listed as declined, and the provider never asked', async () => {
  config(`    webSearch: { provider: brave, url: "${search.url}", apiKeyEnv: SEARCH_KEY }\n    toolPolicy: { web_search: deny }\n`);
  replies.push({ toolUses: [{ name: 'web_search', input: { query: 'forbidden' } }] }, { text: 'Blocked.' });
  const r = await run('search the web');
  expect(r.code).toBe(0);
  expect(r.report.declined.map((d) => d.tool)).toEqual(['web_search']);
  expect(search.requests).toHaveLength(0);
}, 180_000);
