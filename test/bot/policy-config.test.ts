/**
 * Config for toolPolicy, commandRules and mcpServers: what loads, and every bad entry as an error
 * naming its key path (loadConfig lists them all, and the CLI exits non-zero on them).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, type ConfigProblem } from '../../bot/config/index.js';
import { runCli } from '../../bot/cli/index.js';
import { PassThrough } from 'node:stream';

const KNOWN = ['read_file', 'ls', 'write_file', 'execute_command', 'ask_user_question'];
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function setup(agentLines: string): string {
  const cwd = mkdtempSync(join(tmpdir(), 'gatehouse-policy-config-'));
  dirs.push(cwd);
  writeFileSync(
    join(cwd, 'gatehouse.yaml'),
    [
      'agents:',
      '  ops:',
      '    model: claude-sonnet-5-5',
      '    tools: [read_file, write_file, execute_command]',
      ...agentLines
        .trim()
        .split('\n')
        .map((l) => `    ${l}`),
    ].join('\n') + '\n',
  );
  return cwd;
}
const env = { ANTHROPIC_API_KEY: 'sk-test', GH_TOKEN: 'ghp_fromenv' };

function problems(cwd: string, e: Record<string, string> = env): ConfigProblem[] {
  try {
    loadConfig({ env: { ...e }, cwd, knownTools: KNOWN });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}
const at = (ps: ConfigProblem[], path: string) => {
  const found = ps.filter((p) => p.path === path);
  if (found.length !== 1) throw new Error(`expected one problem at ${path}, got:\n${ps.map((p) => `${p.path}: ${p.message}`).join('\n')}`);
  return found[0]!.message;
};

test('a valid policy and MCP servers load, with ${NAME} filled from the environment', () => {
  const cwd = setup(`
toolPolicy: { write_file: ask, "mcp_github_*": allow, mcp_github_delete_repo: deny, "read_*": allow, "mcp_*": ask }
commandRules:
  - { match: "git push", policy: deny, reason: "pushes go through CI" }
  - { match: "kubectl get *", policy: allow }
mcpServers:
  github:
    command: npx
    args: [-y, "@modelcontextprotocol/server-github"]
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: "\${GH_TOKEN}", LITERAL: "$\${NOT_A_REF}" }
    cwd: ./mcp
  linear:
    url: https://mcp.linear.app/mcp
    headers: { Authorization: "Bearer \${GH_TOKEN}" }
    timeoutMs: 30000
    tools: [list_issues, { name: create_issue, description: Files an issue, inputSchema: { type: object, properties: { title: { type: string } } } }]
`);
  const ops = loadConfig({ env: { ...env }, cwd, knownTools: KNOWN }).agents.ops!;
  expect(ops.toolPolicy['mcp_github_*']).toBe('allow');
  expect(ops.commandRules).toEqual([
    { match: 'git push', policy: 'deny', reason: 'pushes go through CI' },
    { match: 'kubectl get *', policy: 'allow' },
  ]);
  const gh = ops.mcpServers.github!;
  expect(gh).toMatchObject({ kind: 'stdio', command: 'npx', cwd: join(cwd, 'mcp'), timeoutMs: 60000 });
  expect(gh.kind === 'stdio' && gh.env).toEqual({ GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_fromenv', LITERAL: '${NOT_A_REF}' });
  const linear = ops.mcpServers.linear!;
  expect(linear.kind === 'http' && linear.headers).toEqual({ Authorization: 'Bearer ghp_fromenv' });
  expect(linear.tools).toEqual([
    { name: 'list_issues', inputSchema: { type: 'object' } },
    { name: 'create_issue', description: 'Files an issue', inputSchema: { type: 'object', properties: { title: { type: 'string' } } } },
  ]);
});

test('toolPolicy: unknown names and globs that match nothing are errors listing the known tools', () => {
  const ps = problems(
    setup(`
toolPolicy: { wrte_file: deny, "web_*": ask, mcp_jira_create: allow, "mcp_*": ask }
mcpServers: { github: { command: x } }
`),
  );
  expect(at(ps, 'agents.ops.toolPolicy.wrte_file')).toMatch(
    /unknown tool "wrte_file"; known tools: ask_user_question, execute_command, ls, read_file, write_file, and mcp_<server>_<tool> for mcp_github_\*/,
  );
  expect(at(ps, 'agents.ops.toolPolicy["web_*"]')).toMatch(/the glob "web_\*" matches no known tool; known tools: ask_user_question/);
  expect(at(ps, 'agents.ops.toolPolicy.mcp_jira_create')).toMatch(/names no MCP server of this agent.*one of github/);
  expect(ps.some((p) => p.path.includes('mcp_*'))).toBe(false);
  expect(ps).toHaveLength(3);
  const bad = problems(setup('toolPolicy: { read_file: maybe }'));
  expect(at(bad, 'agents.ops.toolPolicy.read_file')).toMatch(/expected one of allow \| ask \| deny, got "maybe"/);
});

test('commandRules: bad policy, a chain in match, unknown keys', () => {
  const ps = problems(
    setup(`
commandRules:
  - { match: "git push", policy: never }
  - { match: "git push && rm -rf x", policy: deny }
  - { match: "ls", policy: allow, why: "typo" }
  - { match: "", policy: ask }
`),
  );
  expect(at(ps, 'agents.ops.commandRules[0].policy')).toMatch(/expected one of allow \| ask \| deny, got "never"/);
  expect(at(ps, 'agents.ops.commandRules[1].match')).toMatch(/would never match: a rule matches one simple command/);
  expect(at(ps, 'agents.ops.commandRules[2].why')).toMatch(/unknown key/);
  expect(at(ps, 'agents.ops.commandRules[3].match')).toMatch(/must not be empty/);
});

test('mcpServers: a missing environment variable names the key and the variable', () => {
  const ps = problems(
    setup(`
mcpServers:
  github: { command: npx, env: { TOKEN: "\${MISSING_TOKEN}" } }
  web: { url: "https://x.example/mcp", headers: { Authorization: "Bearer \${ALSO_MISSING}" } }
`),
  );
  expect(at(ps, 'agents.ops.mcpServers.github.env.TOKEN')).toMatch(/environment variable MISSING_TOKEN, which is not set/);
  expect(at(ps, 'agents.ops.mcpServers.web.headers.Authorization')).toMatch(/ALSO_MISSING, which is not set/);
  expect(ps).toHaveLength(2);
});

test('mcpServers: the shape of each entry is checked', () => {
  const ps = problems(
    setup(`
mcpServers:
  both: { command: x, url: "https://x.example" }
  neither: { args: [a] }
  my_db: { command: x }
  badurl: { url: "ftp://x" }
  mixed: { url: "https://x.example/mcp", env: { A: b } }
`),
  );
  expect(at(ps, 'agents.ops.mcpServers.both')).toMatch(/either command .* or url/);
  expect(at(ps, 'agents.ops.mcpServers.neither')).toMatch(/either command .* or url/);
  expect(at(ps, 'agents.ops.mcpServers.my_db')).toMatch(/no "_"/);
  expect(at(ps, 'agents.ops.mcpServers.badurl.url')).toMatch(/http:\/\/ or https:\/\//);
  expect(at(ps, 'agents.ops.mcpServers.mixed.env')).toMatch(/only applies to a command server/);
});

test('the CLI exits non-zero on a bad policy entry and names it', async () => {
  const cwd = setup('toolPolicy: { nope: deny }');
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const code = await runCli(['policy', 'check', '--', 'ls'], { env: { ...env }, cwd, stdin: new PassThrough(), stdout: out, stderr: out });
  expect(code).toBe(1);
  expect(text).toContain('agents.ops.toolPolicy.nope: unknown tool "nope"');
});

describe('gatehouse policy check explains toolPolicy and commandRules', () => {
  async function check(cwd: string, args: string[]): Promise<{ code: number; text: string }> {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    const code = await runCli(['policy', 'check', ...args], { env: { ...env }, cwd, stdin: new PassThrough(), stdout: out, stderr: out });
    return { code, text };
  }
  const cwd = () =>
    setup(`
approvers: { console: [local] }
toolPolicy: { "mcp_github_*": allow, mcp_github_delete_repo: deny, write_file: ask }
commandRules:
  - { match: "git push", policy: deny, reason: "pushes go through CI" }
  - { match: "npm publish", policy: ask, reason: "releases need two people" }
  - { match: "kubectl get *", policy: allow }
mcpServers: { github: { command: x } }
`);

  test('a command denied by a commandRule: the rule and its reason, exit 1', async () => {
    const { code, text } = await check(cwd(), ['--', 'git push origin main']);
    expect(code).toBe(1);
    expect(text).toMatch(
      /^commandRules: deny by agents\.ops\.commandRules\[0\] \(match "git push" on `git push origin main`; reason: pushes go through CI\)$/m,
    );
    expect(text).toMatch(/^decision:\s+DENY$/m);
    expect(text).toMatch(/^rule:\s+agents\.ops\.commandRules\[0\]$/m);
  });

  test('an ask rule and an allow rule, in JSON', async () => {
    const ask = await check(cwd(), ['--json', '--', 'npm publish']);
    expect(ask.code).toBe(0);
    expect(JSON.parse(ask.text)).toMatchObject({
      decision: 'ask',
      rule: 'agents.ops.commandRules[1]',
      why: expect.stringContaining('releases need two people'),
    });
    const allow = await check(cwd(), ['--json', '--', 'kubectl get pods']);
    expect(JSON.parse(allow.text)).toMatchObject({ decision: 'allow', rule: 'autoApprovedCommands', allowlisted: true });
  });

  test('--tool: an MCP tool allowed by a glob, one denied by its exact name, a built-in asked', async () => {
    const allowed = await check(cwd(), ['--tool', 'mcp_github_create_issue']);
    expect(allowed.code).toBe(0);
    expect(allowed.text).toMatch(/^tool:\s+mcp_github_create_issue \(MCP server github\), tier high-risk$/m);
    expect(allowed.text).toMatch(/^toolPolicy:\s+allow \(agents\.ops\.toolPolicy\["mcp_github_\*"\]\)$/m);
    expect(allowed.text).toMatch(/^decision:\s+ALLOW$/m);
    const denied = await check(cwd(), ['--json', '--tool', 'mcp_github_delete_repo']);
    expect(denied.code).toBe(1);
    expect(JSON.parse(denied.text)).toMatchObject({ decision: 'deny', rule: 'agents.ops.toolPolicy["mcp_github_delete_repo"]' });
    const asked = await check(cwd(), ['--json', '--tool', 'write_file']);
    expect(JSON.parse(asked.text)).toMatchObject({ decision: 'ask', rule: 'agents.ops.toolPolicy["write_file"]' });
    const unknown = await check(cwd(), ['--tool', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.text).toContain('No tool "nope"');
  });
});

test('a missing variable in defaults.mcpServers is reported once, not once per agent', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'gatehouse-policy-config-'));
  dirs.push(cwd);
  writeFileSync(
    join(cwd, 'gatehouse.yaml'),
    'defaults:\n  model: m\n  mcpServers: { gh: { command: x, env: { T: "${NOPE}" } } }\nagents:\n  a: {}\n  b: {}\ndefaultAgent: a\n',
  );
  const ps = problems(cwd);
  expect(ps.filter((p) => p.path === 'defaults.mcpServers.gh.env.T')).toHaveLength(1);
});
