/**
 * spawn_subagent's config and toolset rules: `subagents` offers the tool and loads with its
 * defaults; a bad value or a tool the agent lacks is an error at its key path; the toolset a
 * sub-agent gets is a subset of the parent's, never a tool that asks the user, and refusals say why.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, type ConfigProblem } from '../../../bot/config/index.js';
import { builtinRegistry, builtinToolNames } from '../../../agent/tools/catalog.js';
import { subagentLimits } from '../../../agent/tools/builtin/subagent/config.js';
import { subagentToolset } from '../../../agent/tools/builtin/subagent/toolset.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function load(lines: string[]): { config?: ReturnType<typeof loadConfig>; problems: ConfigProblem[] } {
  const cwd = mkdtempSync(join(tmpdir(), 'gatehouse-subagent-config-'));
  dirs.push(cwd);
  writeFileSync(join(cwd, 'gatehouse.yaml'), ['agents:', '  ops:', '    model: claude-sonnet-5-5', ...lines.map((l) => `    ${l}`)].join('\n') + '\n');
  try {
    return { config: loadConfig({ env: { ANTHROPIC_API_KEY: 'sk-test' }, cwd, knownTools: builtinToolNames() }), problems: [] };
  } catch (err) {
    if (err instanceof ConfigError) return { problems: err.problems };
    throw err;
  }
}

test('subagents offers spawn_subagent; without it and without the name in tools, the tool is not offered', () => {
  const on = load(['tools: [read_file]', 'subagents: { maxPerRun: 2, tools: [read_file] }']).config!.agents['ops']!;
  expect(on.tools).toEqual(['read_file', 'spawn_subagent']);
  expect(subagentLimits(on.subagents, on)).toEqual({ tools: ['read_file'], maxDepth: 1, maxPerRun: 2, maxTurns: on.maxIterations });
  const off = load(['tools: [read_file]']).config!.agents['ops']!;
  expect(off.tools).toEqual(['read_file']);
  const listed = load(['tools: [read_file, spawn_subagent]']).config!.agents['ops']!;
  expect(subagentLimits(listed.subagents, listed)).toEqual({ maxDepth: 1, maxPerRun: 4, maxTurns: listed.maxIterations });
});

test('bad values and tools the agent lacks are errors at their key path', () => {
  const { problems } = load(['tools: [read_file]', 'subagents: { maxDepth: 9, maxPerRun: 0, tools: [read_file, execute_command], extra: 1 }']);
  const paths = problems.map((p) => p.path).sort();
  expect(paths).toEqual(expect.arrayContaining(['agents.ops.subagents.maxDepth', 'agents.ops.subagents.maxPerRun']));
  expect(problems.find((p) => p.path === 'agents.ops.subagents.maxDepth')!.message).toMatch(/from 1 to 5/);
  expect(problems.find((p) => p.path === 'agents.ops.subagents.extra')!.message).toMatch(/unknown key; allowed here: tools, maxDepth, maxPerRun, maxTurns/);
  const lacking = load(['tools: [read_file]', 'subagents: { tools: [read_file, execute_command] }']).problems;
  expect(lacking).toEqual([{ path: 'agents.ops.subagents.tools[1]', message: expect.stringContaining('"execute_command" is not in this agent\'s tools') }]);
});

describe('the toolset a sub-agent gets', () => {
  const parent = builtinRegistry().toolset(['read_file', 'ls', 'ask_user_question', 'summarize_context', 'spawn_subagent', 'mkdir'], { humanAvailable: true });
  const limits = { maxDepth: 1, maxPerRun: 4, maxTurns: 10 };

  test("unset: the parent's, without the tools that ask the user or use the parent's transcript, and no spawn at the depth cap", () => {
    const c = subagentToolset({ parent, limits, depth: 1, agentName: 'ops' });
    expect(c.ok && [...c.tools.keys()]).toEqual(['read_file', 'ls', 'mkdir']);
    const deeper = subagentToolset({ parent, limits: { ...limits, maxDepth: 2 }, depth: 1, agentName: 'ops' });
    expect(deeper.ok && [...deeper.tools.keys()]).toContain('spawn_subagent');
  });

  test('config caps it; a requested tool outside what is left refuses the spawn with the reason per name', () => {
    const capped = subagentToolset({ parent, limits: { ...limits, tools: ['ls'] }, depth: 1, agentName: 'ops' });
    expect(capped.ok && [...capped.tools.keys()]).toEqual(['ls']);
    const c = subagentToolset({
      parent,
      requested: ['ls', 'execute_command', 'ask_user_question', 'summarize_context', 'spawn_subagent', 'read_file'],
      limits: { ...limits, tools: ['ls'] },
      depth: 1,
      agentName: 'ops',
    });
    expect(c.ok).toBe(false);
    const reason = c.ok ? '' : c.reason;
    expect(reason).toContain("execute_command is not in this agent's toolset");
    expect(reason).toContain('ask_user_question asks the user');
    expect(reason).toContain("summarize_context works on the parent's own transcript");
    expect(reason).toContain('agents.ops.subagents.maxDepth is 1');
    expect(reason).toContain('read_file is not in agents.ops.subagents.tools');
  });
});
