/**
 * Cost per call (median of N) of the issue 23 tools, called directly as the executor calls them
 * (input parse, then execute): custom command tools (host and bubblewrap box), the skill tools, and
 * web_search against the fake provider on 127.0.0.1. Run: npx tsx bench/tools-issue23.ts
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { commandTool } from '../agent/tools/builtin/command-tools/tool.js';
import { skillTools } from '../agent/tools/builtin/skills/tools.js';
import { webSearchTool } from '../agent/tools/builtin/web/search.js';
import { DEFAULT_SANDBOX_POLICY, prepareWorkspace } from '../agent/tools/sandbox/index.js';
import type { AnyTool, ToolContext } from '../agent/tools/types.js';
import { startFakeSearch } from '../test/fakes/search.js';

const N = Number(process.env['N'] ?? 200);
const dir = mkdtempSync(join(tmpdir(), 'gh-bench23-'));
const ws = join(dir, 'ws');
mkdirSync(ws);
chmodSync(dir, 0o711);
mkdirSync(join(dir, 'skills', 'release'), { recursive: true });
writeFileSync(join(dir, 'skills', 'release', 'SKILL.md'), '---\nname: release\ndescription: Cut a release.\n---\n# Release\n\n## Steps\n\nDo it.\n');
const ctx = { workspace: ws, envAllowlist: [], signal: new AbortController().signal } as unknown as ToolContext;

async function median(label: string, tool: AnyTool, input: unknown, n = N): Promise<void> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const parsed = tool.input.parse(input);
    await tool.execute(parsed, ctx, {});
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(`${label.padEnd(40)} median ${times[Math.floor(n / 2)]!.toFixed(2)} ms  p90 ${times[Math.floor(n * 0.9)]!.toFixed(2)} ms  (n=${n})`);
}

const decl = {
  name: 'say',
  description: 'd',
  input: { type: 'object' as const, properties: { w: { type: 'string' as const } }, required: ['w'] },
  argv: ['/usr/bin/printf', '%s', '{w}'],
  tier: 'read-only' as const,
};
await median('command tool (sandbox: none)', commandTool(decl, { sandbox: { ...DEFAULT_SANDBOX_POLICY, mode: 'none' } }), { w: 'hi' });
await prepareWorkspace(ws);
await median('command tool (bubblewrap)', commandTool(decl, { sandbox: DEFAULT_SANDBOX_POLICY }), { w: 'hi' });
const [find, load, section] = skillTools({ folders: () => [join(dir, 'skills')] });
await median('find_skills', find!, {});
await median('load_skill', load!, { name: 'release' });
await median('load_skill_section', section!, { name: 'release', heading: 'Steps' });
const fake = await startFakeSearch();
fake.results = Array.from({ length: 10 }, (_, i) => ({ title: `R${i}`, url: `https://e.org/${i}`, snippet: 's'.repeat(200) }));
await median('web_search (fake SearXNG, 5 results)', webSearchTool({ provider: 'searxng', url: fake.url, maxResults: 5, maxBytes: 8192, timeoutMs: 5000 }), {
  query: 'q',
});
await fake.close();
rmSync(dir, { recursive: true, force: true });
