import { mkdtempSync, rmSync, writeFileSync, copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { descriptorOf } from '../../adapters/descriptors.js';
import { PLATFORMS } from '../../adapters/types.js';
import { isOwnName } from '../../policies/env.js';
import { agentForConversation, ConfigError, formatConfigError, loadConfig, type Config, type ConfigProblem } from '../../bot/config/index.js';

const KNOWN = ['read_file', 'ls', 'find', 'grep', 'write_file', 'edit_file', 'execute_command', 'get_time', 'manage_todos', 'list_todos', 'ask_user_question'];
const KEY = { ANTHROPIC_API_KEY: 'sk-test-not-real' };

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gatehouse-config-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A temp cwd holding gatehouse.yaml (when given) and .env (when given). */
function setup(yaml?: string, dotenv?: string): string {
  const cwd = tempDir();
  if (yaml !== undefined) writeFileSync(join(cwd, 'gatehouse.yaml'), yaml);
  if (dotenv !== undefined) writeFileSync(join(cwd, '.env'), dotenv);
  return cwd;
}

function load(cwd: string, env: Record<string, string | undefined> = { ...KEY }, knownTools = KNOWN): Config {
  return loadConfig({ env, cwd, knownTools });
}

function problemsOf(fn: () => unknown): ConfigProblem[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError, but the configuration loaded');
}

function problemAt(problems: ConfigProblem[], path: string): string {
  const found = problems.filter((p) => p.path === path);
  if (found.length !== 1) {
    throw new Error(`expected exactly one problem at ${path}, got:\n${problems.map((p) => `${p.path}: ${p.message}`).join('\n')}`);
  }
  return found[0]!.message;
}

describe('no config file', () => {
  test('one agent "default" for the terminal, tier read-only (its writes ask), workspace = <cwd>/workspace, sandboxed', () => {
    const cwd = setup();
    const c = load(cwd);
    expect(c.configFile).toBeUndefined();
    expect(Object.keys(c.agents)).toEqual(['default']);
    expect(c.defaultAgent).toBe('default');
    const a = c.agents['default']!;
    expect(a).toMatchObject({
      name: 'default',
      model: 'claude-sonnet-5-5',
      classifierModel: 'claude-haiku-5-5',
      tier: 'read-only',
      tools: ['read_file', 'ls', 'find', 'grep', 'write_file', 'edit_file', 'get_time', 'list_todos', 'ask_user_question'],
      autoApprovedTools: [],
      autoApprovedCommands: [],
      envAllowlist: [],
      workspace: join(cwd, 'workspace'),
      maxIterations: 100,
      runTimeoutMs: 600_000,
      retention: { maxConversations: 10_000, maxIdleDays: 365 },
      approvalTimeoutMs: 1_800_000,
      questionTimeoutMs: 900_000,
      commandTimeoutMs: 300_000,
      maxTokens: 8192,
      sandbox: 'bubblewrap',
      sandboxNetwork: false,
    });
    expect(a.system.length).toBeGreaterThan(20);
    expect(a.approvers).toEqual({ console: ['local'], telegram: [], slack: [], discord: [] });
    expect(c.routes).toEqual([]);
    expect(c.access).toEqual({
      telegram: { users: [], chats: [] },
      slack: { users: [], channels: [] },
      discord: { users: [], channels: [], guilds: [] },
      rateLimit: { messages: 20, perSeconds: 60 },
      refusals: { repliesPerMinute: 10, strangerIntervalSeconds: 86_400 },
    });
    expect(c.runner).toEqual({ maxConcurrentRuns: 8, maxRunsPerUser: 2, maxRunsPerPlace: 3, reservedRuns: 1 });
    expect(c.store).toEqual({
      kind: 'sqlite',
      path: join(cwd, 'data', 'gatehouse.sqlite'),
      url: `sqlite://${join(cwd, 'data', 'gatehouse.sqlite')}`,
    });
    expect(c.http).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(c.platforms).toEqual({});
    expect(c.anthropic).toEqual({ apiKey: 'sk-test-not-real', baseURL: undefined });
  });

  test('the default toolset keeps only tools that exist', () => {
    const c = load(setup(), { ...KEY }, ['read_file', 'ls', 'mkdir']);
    expect(c.agents['default']!.tools).toEqual(['read_file', 'ls']);
  });

  test('an empty gatehouse.yaml also gives the default agent', () => {
    const cwd = setup('# nothing yet\n');
    const c = load(cwd);
    expect(c.configFile).toBe(join(cwd, 'gatehouse.yaml'));
    expect(Object.keys(c.agents)).toEqual(['default']);
  });
});

describe('sandbox and workspace', () => {
  test('sandbox and sandboxNetwork: per agent, layered over defaults', () => {
    const c = load(
      setup(
        'defaults: { model: m, sandboxNetwork: true }\nagents:\n  a: { tools: [execute_command] }\n  b: { sandbox: none, sandboxNetwork: false }\n  c: { sandbox: bubblewrap }\ndefaultAgent: a\n',
      ),
    );
    expect(c.agents['a']).toMatchObject({ sandbox: 'bubblewrap', sandboxNetwork: true });
    expect(c.agents['b']).toMatchObject({ sandbox: 'none', sandboxNetwork: false });
    expect(c.agents['c']).toMatchObject({ sandbox: 'bubblewrap', sandboxNetwork: true });
  });

  test('a wrong sandbox value or a non-boolean sandboxNetwork names the key', () => {
    const problems = problemsOf(() => load(setup('agents:\n  a: { model: m, sandbox: docker, sandboxNetwork: "yes" }\n')));
    expect(problemAt(problems, 'agents.a.sandbox')).toMatch(/expected one of bubblewrap \| none, got "docker"/);
    expect(problemAt(problems, 'agents.a.sandboxNetwork')).toMatch(/expected true or false/);
  });

  test.each([
    ['the directory holding the config file', '.', /contains the config file/],
    ['an ancestor of the config file', '..', /contains the config file/],
  ])('a workspace that is %s is an error at agents.<name>.workspace', (_what, ws, message) => {
    const cwd = setup(`agents:\n  ops: { model: m, workspace: "${ws}" }\n`);
    expect(
      problemAt(
        problemsOf(() => load(cwd)),
        'agents.ops.workspace',
      ),
    ).toMatch(message);
  });

  test('a workspace containing the .env loaded is an error, also when the workspace comes from defaults', () => {
    const cwd = setup(undefined, 'X=1\n');
    const elsewhere = tempDir();
    writeFileSync(join(elsewhere, 'bot.yaml'), `defaults: { workspace: "${cwd}" }\nagents:\n  ops: { model: m }\n`);
    const problems = problemsOf(() => load(cwd, { ...KEY, GATEHOUSE_CONFIG: join(elsewhere, 'bot.yaml') }));
    expect(problemAt(problems, 'agents.ops.workspace')).toMatch(/contains the \.env file \(.*\.env\)/);
  });

  test('a workspace containing the store (GATEHOUSE_STORE) is an error; the store elsewhere is fine', () => {
    const cwd = setup('agents:\n  ops: { model: m, workspace: ./ws }\n');
    const bad = problemsOf(() => load(cwd, { ...KEY, GATEHOUSE_STORE: 'sqlite://./ws/db/store.sqlite' }));
    expect(problemAt(bad, 'agents.ops.workspace')).toMatch(/contains the store \(.*store\.sqlite\)/);
    expect(load(cwd, { ...KEY, GATEHOUSE_STORE: 'sqlite://./data/store.sqlite' }).agents['ops']!.workspace).toBe(join(cwd, 'ws'));
  });

  test('without a config file, a .env in cwd does not end up in the default workspace', () => {
    const cwd = setup(undefined, 'X=1\n');
    const c = load(cwd);
    expect(c.envFile).toBe(join(cwd, '.env'));
    expect(c.agents['default']!.workspace).toBe(join(cwd, 'workspace'));
  });
});
/** The example with each <placeholder> replaced by a real-looking value, as an operator would. */
function filledExample(): string {
  return readFileSync(resolve('gatehouse.example.yaml'), 'utf8')
    .replaceAll('<your-telegram-user-id>', '123456789')
    .replaceAll('<your-telegram-group-chat-id>', '-1001234567890')
    .replaceAll('<your-slack-user-id>', 'U0123ABCD')
    .replaceAll('<your-slack-channel-id>', 'C0123ABCD')
    .replaceAll('<your-discord-user-id>', '123456789012345678')
    .replaceAll('<your-discord-role-id>', '876543210987654321');
}

describe('gatehouse.example.yaml', () => {
  test('copied unchanged, it admits and approves nobody: every placeholder is refused, saying to replace it', () => {
    const cwd = tempDir();
    copyFileSync(resolve('gatehouse.example.yaml'), join(cwd, 'gatehouse.yaml'));
    const p = problemsOf(() => load(cwd));
    // Only placeholders are wrong with it, and each one is reported where it is.
    expect(p.length).toBeGreaterThanOrEqual(10);
    for (const x of p) expect(x.message).toMatch(/is a placeholder from gatehouse\.example\.yaml; replace it with the real value/);
    const paths = p.map((x) => x.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'agents.ops.approvers.telegram[0]',
        'agents.ops.approvers.slack[0]',
        'agents.ops.approvers.discord[0]',
        'agents.ops.approvers.discord[1]',
        'routes[0].match',
        'access.telegram.users[0]',
        'access.telegram.chats[0]',
      ]),
    );
    // No id in the example could be a real person's: nothing in it looks like one.
    expect(readFileSync(resolve('gatehouse.example.yaml'), 'utf8')).not.toMatch(/["[ ]-?\d{5,}["\],]/);
  });

  test('a placeholder in any id list or route is refused, whatever the platform', () => {
    const p = problemsOf(() =>
      load(
        setup(
          'agents:\n  a: { model: m, approvers: { telegram: ["<id>"] } }\nroutes: [{ match: "telegram:<chat>", agent: a }]\naccess:\n  discord: { guilds: ["<guild id>"] }\n',
        ),
      ),
    );
    expect(problemAt(p, 'agents.a.approvers.telegram[0]')).toMatch(/placeholder/);
    expect(problemAt(p, 'routes[0].match')).toMatch(/placeholder/);
    expect(problemAt(p, 'access.discord.guilds[0]')).toMatch(/placeholder/);
  });

  test('with its placeholders filled in, it loads as documented (every key valid)', () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, 'gatehouse.yaml'), filledExample());
    const c = load(cwd);
    expect(Object.keys(c.agents).sort()).toEqual(['helper', 'ops']);
    const ops = c.agents['ops']!;
    expect(ops.tier).toBe('low-risk');
    expect(ops.workspace).toBe(join(cwd, 'workspace'));
    expect(ops.approvers.discord).toEqual(['123456789012345678', 'role:876543210987654321']);
    expect(ops.autoApprovedTools).toEqual(['write_file']);
    expect(ops.system).toMatch(/^You are the ops assistant/);
    const helper = c.agents['helper']!;
    expect(helper.model).toBe('claude-sonnet-5-5'); // from defaults
    expect(helper.tier).toBe('read-only');
    expect(helper.approvers).toEqual({ console: [], telegram: [], slack: [], discord: [] });
    expect(c.defaultAgent).toBe('helper');
    expect(c.access.telegram.chats).toEqual(['-1001234567890']);
    expect(agentForConversation(c, 'telegram:-1001234567890:5').name).toBe('ops');
    expect(agentForConversation(c, 'telegram:42').name).toBe('helper');
  });

  test('.env.example names every variable the loader reads', async () => {
    const { readFileSync } = await import('node:fs');
    const example = readFileSync(resolve('.env.example'), 'utf8');
    const source = readFileSync(resolve('bot/config/env.ts'), 'utf8');
    const read = new Set([...source.matchAll(/'((?:ANTHROPIC|GATEHOUSE)_[A-Z_]+)'/g)].map((m) => m[1]!));
    // each platform's variables are read by its adapter's descriptor
    const { DESCRIPTORS } = await import('../../adapters/descriptors.js');
    for (const d of Object.values(DESCRIPTORS)) if (d.parseEnv) for (const name of d.env) read.add(name);
    expect(read.size).toBeGreaterThanOrEqual(10);
    for (const name of read) expect(example).toMatch(new RegExp(`^#? ?${name}=`, 'm'));
  });
});

describe('resolution', () => {
  test('defaults are merged under each agent; an agent key replaces the default as a whole', () => {
    const cwd = setup(`
defaults:
  model: claude-opus-4
  tier: low-risk
  approvers: { telegram: [111], slack: [U1] }
  maxTokens: 1000
agents:
  a: {}
  b:
    tier: high-risk
    approvers: { telegram: ["222"] }
    workspace: /srv/b
  c:
defaultAgent: a
`);
    const c = load(cwd);
    expect(c.agents['a']).toMatchObject({ model: 'claude-opus-4', tier: 'low-risk', maxTokens: 1000, workspace: join(cwd, 'workspace') });
    expect(c.agents['a']!.approvers).toEqual({ console: [], telegram: ['111'], slack: ['U1'], discord: [] });
    expect(c.agents['b']!.tier).toBe('high-risk');
    expect(c.agents['b']!.approvers).toEqual({ console: [], telegram: ['222'], slack: [], discord: [] });
    expect(c.agents['b']!.workspace).toBe('/srv/b');
    expect(c.agents['c']!.model).toBe('claude-opus-4'); // an agent with no keys gets every default
    // A fresh agent gets the conservative built-ins, not the no-config toolset.
    expect(c.agents['a']!.tools).toEqual([]);
  });

  test('workspace is resolved against the config file, not the cwd', () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, 'etc'));
    writeFileSync(join(cwd, 'etc', 'bot.yaml'), 'agents:\n  x: { model: m, workspace: ../ws }\n');
    const c = load(cwd, { ...KEY, GATEHOUSE_CONFIG: 'etc/bot.yaml' });
    expect(c.configFile).toBe(join(cwd, 'etc', 'bot.yaml'));
    expect(c.agents['x']!.workspace).toBe(join(cwd, 'ws'));
    expect(c.defaultAgent).toBe('x'); // the only agent
  });

  test('numeric ids become exact strings, even 19-digit Discord snowflakes', () => {
    const c = load(
      setup(`
agents:
  default: { model: m, approvers: { discord: [1234567890123456789], telegram: [-1001234567890] } }
access:
  discord: { guilds: [9223372036854775807] }
  telegram: { users: [123], chats: [-1001234567890] }
`),
    );
    expect(c.agents['default']!.approvers.discord).toEqual(['1234567890123456789']);
    expect(c.agents['default']!.approvers.telegram).toEqual(['-1001234567890']);
    expect(c.access.discord.guilds).toEqual(['9223372036854775807']);
    expect(c.access.telegram).toEqual({ users: ['123'], chats: ['-1001234567890'] });
  });

  test('the result is a live, mutable object (Always approve appends to it)', () => {
    const c = load(setup('agents:\n  ops: { model: m, tools: [execute_command] }\nroutes: [{ match: slack, agent: ops }]\n'));
    agentForConversation(c, 'slack:T1:C1').autoApprovedCommands.push('git log');
    expect(c.agents['ops']!.autoApprovedCommands).toEqual(['git log']);
  });

  test('rate limit and runner settings', () => {
    const c = load(setup('access:\n  rateLimit: { messages: 5, perSeconds: 10 }\nrunner: { maxConcurrentRuns: 2 }\n'));
    expect(c.access.rateLimit).toEqual({ messages: 5, perSeconds: 10 });
    expect(c.runner.maxConcurrentRuns).toBe(2);
    // The reserve shrinks to leave one slot open to anyone.
    expect(c.runner.reservedRuns).toBe(1);
    const unlimited = load(setup('runner: { maxConcurrentRuns: 1, maxRunsPerUser: unlimited, maxRunsPerPlace: 5 }\n'));
    expect(unlimited.runner).toEqual({ maxConcurrentRuns: 1, maxRunsPerUser: Infinity, maxRunsPerPlace: 5, reservedRuns: 0 });
  });

  test('bad runner caps name their key path', () => {
    let err: unknown;
    try {
      load(setup('runner: { maxConcurrentRuns: 4, maxRunsPerUser: 0, maxRunsPerPlace: lots, reservedRuns: 4 }\n'));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const byPath = Object.fromEntries((err as ConfigError).problems.map((p) => [p.path, p.message]));
    expect(byPath['runner.maxRunsPerUser']).toMatch(/from 1 to 1000 or "unlimited", got 0/);
    expect(byPath['runner.maxRunsPerPlace']).toMatch(/or "unlimited", got "lots"/);
    expect(byPath['runner.reservedRuns']).toMatch(/must be less than runner\.maxConcurrentRuns \(4\)/);
  });

  test('a reload names every changed runner key as restart-required and leaves the live values alone', async () => {
    const { reloadConfig } = await import('../../bot/service/reload.js');
    const live = load(setup('runner: { maxConcurrentRuns: 8 }\n'));
    const next = load(setup('runner: { maxConcurrentRuns: 8, maxRunsPerUser: 4, maxRunsPerPlace: unlimited, reservedRuns: 2 }\n'));
    const r = reloadConfig(live, () => next);
    expect(r.ok).toBe(true);
    // (The store path differs too: each temp dir has its own.)
    expect(r.needsRestart.filter((k) => k.startsWith('runner.'))).toEqual(['runner.maxRunsPerUser', 'runner.maxRunsPerPlace', 'runner.reservedRuns']);
    expect(r.message).toMatch(/applied only by a restart: .*runner\.maxRunsPerUser, runner\.maxRunsPerPlace, runner\.reservedRuns/);
    expect(live.runner).toEqual({ maxConcurrentRuns: 8, maxRunsPerUser: 2, maxRunsPerPlace: 3, reservedRuns: 1 });
  });
});

describe('every problem names its key path', () => {
  test('a value outside an enum', () => {
    const p = problemsOf(() => load(setup('agents:\n  ops: { model: m, tier: admin }\n')));
    expect(problemAt(p, 'agents.ops.tier')).toBe('expected one of read-only | low-risk | high-risk, got "admin"');
  });

  test('an unknown key, with a suggestion', () => {
    const p = problemsOf(() => load(setup('agents:\n  ops: { model: m, tierr: low-risk }\nacces: {}\n')));
    expect(problemAt(p, 'agents.ops.tierr')).toMatch(/^unknown key \(did you mean "tier"\?\); allowed here: model, .*tier/);
    expect(problemAt(p, 'acces')).toMatch(/did you mean "access"/);
  });

  test('a wrong type', () => {
    const p = problemsOf(() => load(setup('agents:\n  ops: { model: m, tools: read_file, maxIterations: "50" }\n')));
    expect(problemAt(p, 'agents.ops.tools')).toBe('expected a list, got "read_file"');
    expect(problemAt(p, 'agents.ops.maxIterations')).toBe('expected a number, got "50"; write it without quotes');
  });

  test('an unknown tool lists the known ones', () => {
    const p = problemsOf(() => load(setup('agents:\n  ops: { model: m, tools: [read_file, rm_rf, gerp] }\n')));
    expect(problemAt(p, 'agents.ops.tools[1]')).toBe(`unknown tool "rm_rf"; known tools: ${[...KNOWN].sort().join(', ')}`);
    expect(problemAt(p, 'agents.ops.tools[2]')).toMatch(/^unknown tool "gerp" \(did you mean "grep"\?\)/);
  });

  test('an unknown route agent and an unknown defaultAgent', () => {
    const p = problemsOf(() =>
      load(
        setup(
          'agents:\n  ops: { model: m }\n  dev: { model: m }\nroutes:\n  - { match: slack, agent: ops }\n  - { match: telegram, agent: opz }\ndefaultAgent: nobody\n',
        ),
      ),
    );
    expect(problemAt(p, 'routes[1].agent')).toBe('unknown agent "opz" (did you mean "ops"?); defined agents: ops, dev');
    expect(problemAt(p, 'defaultAgent')).toMatch(/^unknown agent "nobody"/);
  });

  test('several agents and no default: defaultAgent is required', () => {
    const p = problemsOf(() => load(setup('agents:\n  ops: { model: m }\n  dev: { model: m }\n')));
    expect(problemAt(p, 'defaultAgent')).toBe('required when there are several agents and none is named "default"; set it to one of: ops, dev');
  });

  test('a route match that is no platform or key prefix', () => {
    const p = problemsOf(() =>
      load(setup('agents:\n  ops: { model: m }\nroutes:\n  - { match: "tg:123", agent: ops }\n  - { match: "telegram:", agent: ops }\n')),
    );
    expect(problemAt(p, 'routes[0].match')).toMatch(/^expected a platform \(console, telegram, slack, discord\) or a conversation key prefix/);
    expect(problemAt(p, 'routes[1].match')).toMatch(/got "telegram:"/);
  });

  test('missing ANTHROPIC_API_KEY without a base URL; none needed with one', () => {
    const p = problemsOf(() => load(setup(), {}));
    expect(problemAt(p, 'ANTHROPIC_API_KEY')).toMatch(/^is not set; .*ANTHROPIC_BASE_URL/);
    const c = load(setup(), { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999' });
    expect(c.anthropic).toEqual({ apiKey: undefined, baseURL: 'http://127.0.0.1:9999' });
    expect(
      problemAt(
        problemsOf(() => load(setup(), { ANTHROPIC_BASE_URL: 'localhost:9999' })),
        'ANTHROPIC_BASE_URL',
      ),
    ).toMatch(/http/);
  });

  test('SSH_* and Gatehouse credentials in envAllowlist are refused', () => {
    const p = problemsOf(() =>
      load(
        setup(
          'defaults:\n  envAllowlist: [GITHUB_TOKEN, ssh_auth_sock]\nagents:\n  ops: { model: m, envAllowlist: [SSH_AGENT_PID, TELEGRAM_BOT_TOKEN, "BAD NAME"] }\n',
        ),
      ),
    );
    expect(problemAt(p, 'defaults.envAllowlist[1]')).toMatch(/^ssh_auth_sock cannot be allowlisted: SSH_\* variables would let/);
    expect(problemAt(p, 'agents.ops.envAllowlist[0]')).toMatch(/^SSH_AGENT_PID cannot be allowlisted/);
    expect(problemAt(p, 'agents.ops.envAllowlist[1]')).toMatch(/Gatehouse's own credential/);
    expect(problemAt(p, 'agents.ops.envAllowlist[2]')).toMatch(/environment variable name/);
  });

  test("every name in Gatehouse's own families is refused in envAllowlist, not just a fixed list", () => {
    const own = [
      'GATEHOUSE_STORE',
      'gatehouse_config',
      'ANTHROPIC_BASE_URL',
      'TELEGRAM_WEBHOOK_SECRET',
      'SLACK_APP_TOKEN',
      'DISCORD_PUBLIC_KEY',
      'SLACK_ANYTHING_NEW',
    ];
    const p = problemsOf(() => load(setup(`agents:\n  ops: { model: m, envAllowlist: [${own.join(', ')}, GITHUB_PAT] }\n`)));
    own.forEach((name, i) => {
      expect(problemAt(p, `agents.ops.envAllowlist[${i}]`)).toMatch(new RegExp(`^${name} is Gatehouse's own credential`));
    });
    // A secret-looking name that is not Gatehouse's own is the operator's to pass on.
    expect(p.some((problem) => problem.path.startsWith(`agents.ops.envAllowlist[${own.length}]`))).toBe(false);
  });

  test('a bad store URL names the variable and never echoes its credentials', () => {
    const p = problemsOf(() => load(setup(), { ...KEY, GATEHOUSE_STORE: 'mysql://admin:hunter2@db/x' }));
    const msg = problemAt(p, 'GATEHOUSE_STORE');
    expect(msg).toMatch(/unsupported scheme "mysql:"; use sqlite:\/\/<path to a file>.*or postgres:\/\//);
    expect(msg).not.toContain('hunter2');
    const p2 = problemsOf(() => load(setup(), { ...KEY, GATEHOUSE_STORE: 'postgres://u:hunter2@' }));
    expect(problemAt(p2, 'GATEHOUSE_STORE')).not.toContain('hunter2');
  });

  test('store URLs: relative sqlite resolved against cwd; postgres with the password kept out of its description; redis a config error', () => {
    const cwd = setup();
    expect(load(cwd, { ...KEY, GATEHOUSE_STORE: 'sqlite://state/g.sqlite' }).store).toEqual({
      kind: 'sqlite',
      path: join(cwd, 'state', 'g.sqlite'),
      url: `sqlite://${join(cwd, 'state', 'g.sqlite')}`,
    });
    expect(load(cwd, { ...KEY, GATEHOUSE_STORE: 'postgres://u:hunter2@h:5433/db?sslmode=require' }).store).toEqual({
      kind: 'postgres',
      url: 'postgres://u:hunter2@h:5433/db?sslmode=require',
      description: 'postgres://u@h:5433/db?sslmode=require',
    });
    expect(load(cwd, { ...KEY, GATEHOUSE_STORE: 'postgresql://u@h/db?password=hunter2' }).store).toMatchObject({
      kind: 'postgres',
      description: 'postgresql://u@h/db',
    });
    // A Unix socket's folder, in the forms pg reads (one of them is not a WHATWG URL).
    expect(load(cwd, { ...KEY, GATEHOUSE_STORE: 'postgres://u:hunter2@/db?host=/var/run/postgresql' }).store).toEqual({
      kind: 'postgres',
      url: 'postgres://u:hunter2@/db?host=/var/run/postgresql',
      description: 'postgres://u@/db?host=/var/run/postgresql&port=5432',
    });
    expect(load(cwd, { ...KEY, GATEHOUSE_STORE: 'postgres:///db?host=/run/pg&password=hunter2' }).store).toMatchObject({
      kind: 'postgres',
      description: 'postgres:///db?host=%2Frun%2Fpg',
    });
    expect(
      problemAt(
        problemsOf(() => load(cwd, { ...KEY, GATEHOUSE_STORE: 'postgres://u:hunter2@h:99999/db' })),
        'GATEHOUSE_STORE',
      ),
    ).toMatch(/^is not a valid PostgreSQL URL/);
    for (const url of ['redis://127.0.0.1:6379', 'rediss://h:6380']) {
      const msg = problemAt(
        problemsOf(() => load(cwd, { ...KEY, GATEHOUSE_STORE: url })),
        'GATEHOUSE_STORE',
      );
      expect(msg).toMatch(/^(redis|rediss):\/\/ stores are not supported; use sqlite:\/\//);
    }
  });

  test('autoApprovedTools must be in the toolset', () => {
    const p = problemsOf(() => load(setup('agents:\n  ops: { model: m, tools: [read_file], autoApprovedTools: [read_file, write_file] }\n')));
    expect(problemAt(p, 'agents.ops.autoApprovedTools[1]')).toMatch(/^"write_file" is not in agents.ops.tools/);
  });

  test('an auto-approved command that could never match is refused', () => {
    const p = problemsOf(() => load(setup('agents:\n  ops: { model: m, autoApprovedCommands: ["git status", "npm test && npm publish"] }\n')));
    expect(problemAt(p, 'agents.ops.autoApprovedCommands[1]')).toMatch(/would never match/);
  });

  test('ids that are names, not ids, and role: outside discord', () => {
    const p = problemsOf(() =>
      load(
        setup(
          'agents:\n  ops: { model: m, approvers: { telegram: ["@alice"], slack: ["role:1"], discord: ["role:x"] } }\naccess:\n  slack: { users: [alice] }\n',
        ),
      ),
    );
    expect(problemAt(p, 'agents.ops.approvers.telegram[0]')).toMatch(/^Telegram ids are numbers .*got "@alice"/);
    expect(problemAt(p, 'agents.ops.approvers.slack[0]')).toMatch(/role:<id> entries only work for discord/);
    expect(problemAt(p, 'agents.ops.approvers.discord[0]')).toMatch(/expected role:<role id digits>/);
    expect(problemAt(p, 'access.slack.users[0]')).toMatch(/Slack ids look like U0123ABCD/);
  });

  test('approver forms (group:, role:) are accepted only where their platform allows them, each refusal worded exactly', () => {
    const p = problemsOf(() =>
      load(
        setup(
          'agents:\n  ops:\n    model: m\n    approvers:\n' +
            '      slack: ["group:S0123ABCD", "group:x"]\n      discord: ["role:123", "group:S1"]\n      telegram: ["role:5", "group:S1"]\n' +
            'access:\n  slack: { users: ["group:S0123ABCD"] }\n  discord: { users: ["role:123"] }\n',
        ),
      ),
    );
    expect(p.filter((x) => x.path.startsWith('agents.ops.approvers') || x.path.startsWith('access.'))).toEqual([
      { path: 'agents.ops.approvers.telegram[0]', message: 'role:<id> entries only work for discord approvers, got "role:5"' },
      { path: 'agents.ops.approvers.telegram[1]', message: 'group:<id> entries only work for slack approvers, got "group:S1"' },
      { path: 'agents.ops.approvers.slack[1]', message: 'expected group:<user group id>, like group:S0123ABCD, got "group:x"' },
      { path: 'agents.ops.approvers.discord[1]', message: 'group:<id> entries only work for slack approvers, got "group:S1"' },
      { path: 'access.slack.users[0]', message: 'group:<id> entries only work for slack approvers, got "group:S0123ABCD"' },
      { path: 'access.discord.users[0]', message: 'role:<id> entries only work for discord approvers, got "role:123"' },
    ]);
  });

  test("every platform's variable prefix is one of Gatehouse's own names: refused in envAllowlist and never passed on", () => {
    for (const p of PLATFORMS) {
      const prefix = descriptorOf(p).envPrefix;
      if (prefix === undefined) continue;
      expect(isOwnName(`${prefix}ANYTHING`)).toBe(true);
      const problems = problemsOf(() => load(setup(`agents:\n  ops: { model: m, envAllowlist: [${prefix}ANYTHING] }\n`)));
      expect(problemAt(problems, 'agents.ops.envAllowlist[0]')).toMatch(
        new RegExp(`^${prefix}ANYTHING is Gatehouse's own credential \\(GATEHOUSE_\\*, ANTHROPIC_\\*, .*${prefix}\\*`),
      );
    }
  });

  test('a model is required for a defined agent', () => {
    const p = problemsOf(() => load(setup('agents:\n  ops: { tier: low-risk }\n')));
    expect(problemAt(p, 'agents.ops.model')).toMatch(/^required \(set it here or in defaults.model\)/);
  });

  test('timers beyond what Node can wait, and non-integers', () => {
    const p = problemsOf(() => load(setup('agents:\n  ops: { model: m, approvalTimeoutMs: 3000000000, maxIterations: 1.5, maxTokens: 0 }\n')));
    expect(problemAt(p, 'agents.ops.approvalTimeoutMs')).toMatch(/^expected a whole number from 1 to 2147483647 .*got 3000000000/);
    expect(problemAt(p, 'agents.ops.maxIterations')).toMatch(/got 1.5/);
    expect(problemAt(p, 'agents.ops.maxTokens')).toMatch(/got 0/);
  });

  test('a bad agent name', () => {
    const p = problemsOf(() => load(setup('agents:\n  "my agent": { model: m }\n')));
    expect(problemAt(p, 'agents["my agent"]')).toMatch(/agent names are/);
  });

  test('YAML syntax errors name file, line and column', () => {
    const cwd = setup('agents:\n  ops: { model: m\n');
    const p = problemsOf(() => load(cwd));
    expect(p.length).toBeGreaterThan(0);
    expect(p[0]!.path).toMatch(new RegExp(`^${join(cwd, 'gatehouse.yaml').replace(/[.]/g, '\\.')}:\\d+:\\d+$`));
    expect(p[0]!.message).toMatch(/^YAML syntax: Flow map .* end with a }$/);
    const dup = problemsOf(() => load(setup('agents:\n  ops: { model: m }\n  ops: { model: n }\n')));
    expect(dup[0]!.path).toBe(`${join(dirs.at(-1)!, 'gatehouse.yaml')}:3:3`);
    expect(dup[0]!.message).toBe('YAML syntax: Map keys must be unique');
  });

  test('GATEHOUSE_CONFIG set to a missing file is an error, not a silent fallback', () => {
    const cwd = setup('agents:\n  ops: { model: m }\n');
    const p = problemsOf(() => load(cwd, { ...KEY, GATEHOUSE_CONFIG: 'nope.yaml' }));
    expect(problemAt(p, 'GATEHOUSE_CONFIG')).toBe(
      `file not found: ${join(cwd, 'nope.yaml')}; point it at your gatehouse.yaml or unset it to use ./gatehouse.yaml`,
    );
  });

  test('several problems are reported at once, and formatConfigError lists them all', () => {
    const cwd = setup('agents:\n  ops: { model: m, tier: admin, tools: [nope] }\nroutes: [{ match: slack, agent: ghost }]\nextra: 1\n');
    let err: unknown;
    try {
      load(cwd, { GATEHOUSE_HTTP_PORT: '99999' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const paths = (err as ConfigError).problems.map((p) => p.path).sort();
    expect(paths).toEqual(['ANTHROPIC_API_KEY', 'GATEHOUSE_HTTP_PORT', 'agents.ops.tier', 'agents.ops.tools[0]', 'extra', 'routes[0].agent']);
    const text = formatConfigError(err);
    expect(text).toMatch(/^Gatehouse configuration has 6 problems:/);
    expect(text).toContain('  agents.ops.tier: expected one of read-only | low-risk | high-risk, got "admin"');
    expect(text).toContain(join(cwd, 'gatehouse.yaml'));
    expect(formatConfigError(new Error('disk on fire'))).toBe('Could not load the configuration: disk on fire');
  });
});

describe('.env', () => {
  test('is loaded from cwd without overriding variables already set', () => {
    const cwd = setup(undefined, 'ANTHROPIC_API_KEY=from-dotenv\nGATEHOUSE_HTTP_PORT=9090\nGITHUB_TOKEN="quoted value"\nTELEGRAM_API_ROOT=\n');
    const env: Record<string, string | undefined> = { GATEHOUSE_HTTP_PORT: '7070' };
    const c = load(cwd, env);
    expect(c.envFile).toBe(join(cwd, '.env'));
    expect(c.anthropic.apiKey).toBe('from-dotenv');
    expect(c.http.port).toBe(7070); // the real environment wins
    expect(env['GATEHOUSE_HTTP_PORT']).toBe('7070');
    expect(env['GITHUB_TOKEN']).toBe('quoted value'); // added for child processes (allowlist permitting)
    expect(c.platforms).toEqual({}); // an empty value counts as unset
  });

  test('a variable set in the environment wins over .env even when it breaks the config', () => {
    const cwd = setup(undefined, 'ANTHROPIC_API_KEY=from-dotenv\n');
    const p = problemsOf(() => load(cwd, { ANTHROPIC_API_KEY: 'x', GATEHOUSE_STORE: 'ftp://x' }));
    expect(p.map((x) => x.path)).toEqual(['GATEHOUSE_STORE']);
  });
});

describe('Telegram environment', () => {
  test('the token enables the platform; the API root loses its trailing slash', () => {
    const c = load(setup(), { ...KEY, TELEGRAM_BOT_TOKEN: '123456:AAH-abc_DEF', TELEGRAM_API_ROOT: 'http://127.0.0.1:8081/' });
    expect(c.platforms.telegram).toEqual({
      token: '123456:AAH-abc_DEF',
      apiRoot: 'http://127.0.0.1:8081',
      webhookUrl: undefined,
      webhookSecret: undefined,
    });
  });

  test('webhook settings', () => {
    const c = load(setup(), {
      ...KEY,
      TELEGRAM_BOT_TOKEN: '1:x',
      TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/tg',
      TELEGRAM_WEBHOOK_SECRET: 's3cret_-0123456789',
    });
    expect(c.platforms.telegram).toMatchObject({ webhookUrl: 'https://bot.example.com/tg', webhookSecret: 's3cret_-0123456789' });
    const p = problemsOf(() =>
      load(setup(), { ...KEY, TELEGRAM_BOT_TOKEN: '1:x', TELEGRAM_WEBHOOK_URL: 'http://bot.example.com/tg', TELEGRAM_WEBHOOK_SECRET: 'has space' }),
    );
    expect(problemAt(p, 'TELEGRAM_WEBHOOK_URL')).toMatch(/https/);
    expect(problemAt(p, 'TELEGRAM_WEBHOOK_SECRET')).toMatch(/1-256 characters/);
  });

  test('a webhook secret shorter than 16 characters is a config error naming TELEGRAM_WEBHOOK_SECRET', () => {
    const env = { ...KEY, TELEGRAM_BOT_TOKEN: '1:x', TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/tg' };
    for (const secret of ['a', 'short_secret', '123456789012345']) {
      const p = problemsOf(() => load(setup(), { ...env, TELEGRAM_WEBHOOK_SECRET: secret }));
      expect(problemAt(p, 'TELEGRAM_WEBHOOK_SECRET')).toMatch(new RegExp(`^is ${secret.length} characters; use at least 16`));
    }
    expect(load(setup(), { ...env, TELEGRAM_WEBHOOK_SECRET: '1234567890123456' }).platforms.telegram?.webhookSecret).toBe('1234567890123456');
  });

  test('a malformed token is refused without echoing it; settings without a token are refused', () => {
    const p = problemsOf(() => load(setup(), { ...KEY, TELEGRAM_BOT_TOKEN: 'secret-value-123' }));
    expect(problemAt(p, 'TELEGRAM_BOT_TOKEN')).not.toContain('secret-value-123');
    const p2 = problemsOf(() => load(setup(), { ...KEY, TELEGRAM_WEBHOOK_URL: 'https://x.example/tg' }));
    expect(problemAt(p2, 'TELEGRAM_WEBHOOK_URL')).toMatch(/TELEGRAM_BOT_TOKEN is not/);
  });
});

describe('platform credentials are never silently ignored', () => {
  test('Discord: a valid token enables it; a malformed token, a bad URL or a URL without the token is refused, naming the variable', () => {
    const token = 'OTAwMDAwMDAwMDAwMDAwMDAx.GfakeX.fakeDiscordBotTokenValue0123';
    const c = load(setup(), { ...KEY, DISCORD_TOKEN: token, DISCORD_API_URL: 'http://127.0.0.1:9/api/' });
    expect(c.platforms.discord).toEqual({ token, apiUrl: 'http://127.0.0.1:9/api', requestsPerSecond: undefined });
    expect(load(setup(), { ...KEY, DISCORD_TOKEN: `Bot ${token}`, DISCORD_REQUESTS_PER_SECOND: '200' }).platforms.discord).toEqual({
      token,
      apiUrl: undefined,
      requestsPerSecond: 200,
    });
    expect(
      problemAt(
        problemsOf(() => load(setup(), { ...KEY, DISCORD_TOKEN: token, DISCORD_REQUESTS_PER_SECOND: 'fast' })),
        'DISCORD_REQUESTS_PER_SECOND',
      ),
    ).toMatch(/whole number from 1 to 10000/);
    const bad = problemsOf(() => load(setup(), { ...KEY, DISCORD_TOKEN: 'abc.def.secret' }));
    expect(problemAt(bad, 'DISCORD_TOKEN')).toMatch(/doesn't look like a Discord bot token/);
    for (const x of bad) expect(x.message).not.toMatch(/secret/);
    const url = problemsOf(() => load(setup(), { ...KEY, DISCORD_TOKEN: token, DISCORD_API_URL: 'ftp://x' }));
    expect(problemAt(url, 'DISCORD_API_URL')).toMatch(/http:\/\/ or https:\/\//);
    const noToken = problemsOf(() => load(setup(), { ...KEY, DISCORD_API_URL: 'http://127.0.0.1:9/api' }));
    expect(problemAt(noToken, 'DISCORD_API_URL')).toMatch(/DISCORD_TOKEN is not/);
    const typo = problemsOf(() => load(setup(), { ...KEY, DISCORD_BOT_TOKEN: token }));
    expect(problemAt(typo, 'DISCORD_BOT_TOKEN')).toMatch(/not a variable Gatehouse reads.*DISCORD_TOKEN/);
    expect(JSON.stringify(typo)).not.toContain(token);
  });

  test('discordReplyInThread: per agent, default true', () => {
    const c = load(setup('agents:\n  a: { model: m }\n  b: { model: m, discordReplyInThread: false }\ndefaultAgent: a\n'));
    expect(c.agents['a']!.discordReplyInThread).toBe(true);
    expect(c.agents['b']!.discordReplyInThread).toBe(false);
    const p = problemsOf(() => load(setup('agents:\n  a: { model: m, discordReplyInThread: "no" }\n')));
    expect(problemAt(p, 'agents.a.discordReplyInThread')).toBeDefined();
  });

  test('an incomplete set says what is missing', () => {
    const p = problemsOf(() => load(setup(), { ...KEY, SLACK_APP_TOKEN: 'xapp-1-secret' }));
    expect(problemAt(p, 'SLACK_APP_TOKEN')).toMatch(/SLACK_BOT_TOKEN is not; set the Bot User OAuth Token/);
    expect(JSON.stringify(p)).not.toContain('xapp-1-secret');
    const http = load(setup(), { ...KEY, SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's' });
    expect(http.platforms.slack).toBeDefined();
    const botOnly = problemsOf(() => load(setup(), { ...KEY, SLACK_BOT_TOKEN: 'xoxb-1' }));
    expect(problemAt(botOnly, 'SLACK_APP_TOKEN')).toMatch(
      /neither is SLACK_SIGNING_SECRET: set SLACK_APP_TOKEN for Socket Mode.*or SLACK_SIGNING_SECRET for HTTP mode/,
    );
    const p2 = problemsOf(() => load(setup(), { ...KEY, TELEGRAM_API_ROOT: 'http://127.0.0.1:1' }));
    expect(problemAt(p2, 'TELEGRAM_API_ROOT')).toMatch(/TELEGRAM_BOT_TOKEN is not/);
  });

  test('an unknown TELEGRAM_* variable is refused (a typo of the token would otherwise start the terminal chat)', () => {
    const p = problemsOf(() => load(setup(), { ...KEY, TELEGRAM_TOKEN: '123:abc' }));
    expect(problemAt(p, 'TELEGRAM_TOKEN')).toMatch(/not a variable Gatehouse reads.*TELEGRAM_BOT_TOKEN/);
  });

  test('empty values (KEY= in .env) count as unset', () => {
    const c = load(setup(undefined, 'SLACK_BOT_TOKEN=\nDISCORD_TOKEN=\n'), { ...KEY });
    expect(c.platforms).toEqual({});
  });
});

describe('approvers.console', () => {
  test('accepts only local', () => {
    const c = load(setup('agents:\n  a: { model: m, approvers: { console: [local] } }\n'));
    expect(c.agents['a']!.approvers.console).toEqual(['local']);
    const p = problemsOf(() => load(setup('agents:\n  a: { model: m, approvers: { console: [alice] } }\n')));
    expect(problemAt(p, 'agents.a.approvers.console[0]')).toMatch(/one user, "local".*got "alice"/);
  });
});

describe('agentForConversation', () => {
  const yaml = `
agents:
  ops: { model: m }
  dev: { model: m }
  fallback: { model: m }
routes:
  - { match: "telegram:-100", agent: ops }
  - { match: "telegram", agent: dev }
  - { match: "slack:T1:C1", agent: ops }
  - { match: "slack:T1", agent: dev }
defaultAgent: fallback
`;
  let c: Config;
  beforeAll(() => {
    c = load(setup(yaml));
  });

  test.each([
    ['telegram:-100', 'ops'],
    ['telegram:-100:7', 'ops'], // a topic inside the routed chat
    ['telegram:-1001', 'dev'], // a prefix of the digits is not a match
    ['telegram:42', 'dev'],
    ['slack:T1:C1:1700000000.1', 'ops'],
    ['slack:T1:C10', 'dev'],
    ['slack:T2:C1', 'fallback'],
    ['discord:dm:5', 'fallback'],
    ['console:local', 'fallback'],
  ])('%s -> %s', (key, agent) => {
    expect(agentForConversation(c, key).name).toBe(agent);
  });

  test('the first match wins', () => {
    const c2 = load(
      setup(
        'agents:\n  a: { model: m }\n  b: { model: m }\nroutes:\n  - { match: telegram, agent: a }\n  - { match: "telegram:5", agent: b }\ndefaultAgent: b\n',
      ),
    );
    expect(agentForConversation(c2, 'telegram:5').name).toBe('a');
  });

  test('a removed agent is an error that says where to look', () => {
    const c2 = load(setup('agents:\n  a: { model: m }\n'));
    delete c2.agents['a'];
    expect(() => agentForConversation(c2, 'console:local')).toThrow(/No agent named "a".*routes and defaultAgent/);
  });
});

describe('platform descriptors', () => {
  test('Slack approvers accept group:<usergroup id>; other platforms refuse it by key path', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { loadConfig } = await import('../../bot/config/index.js');
    const dir = mkdtempSync(join(tmpdir(), 'gh-cfg-'));
    const yaml = (approvers: string) => `agents:\n  a:\n    model: claude-sonnet-5-5\n    workspace: ${join(dir, 'ws')}\n    approvers: ${approvers}\n`;
    writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ slack: [U0ADA, "group:S0OPS"] }'));
    const env = { ANTHROPIC_API_KEY: 'k', GATEHOUSE_STORE: 'sqlite://:memory:' };
    expect(loadConfig({ env, cwd: dir, knownTools: [] }).agents['a']?.approvers.slack).toEqual(['U0ADA', 'group:S0OPS']);
    writeFileSync(join(dir, 'gatehouse.yaml'), yaml('{ telegram: ["group:S0OPS"] }'));
    expect(() => loadConfig({ env, cwd: dir, knownTools: [] })).toThrow(
      /agents\.a\.approvers\.telegram\[0\]: group:<id> entries only work for slack approvers/,
    );
  });

  test('Slack env: socket mode needs an xapp- token, HTTP mode a signing secret; secrets never echoed', async () => {
    const { readEnv } = await import('../../bot/config/env.js');
    const ok = readEnv({ ANTHROPIC_API_KEY: 'k', SLACK_BOT_TOKEN: 'xoxb-1-2-abc', SLACK_APP_TOKEN: 'xapp-1-A-3-def' }, '/tmp');
    expect(ok.problems).toEqual([]);
    expect(ok.settings.platforms.slack).toEqual({ botToken: 'xoxb-1-2-abc', appToken: 'xapp-1-A-3-def', signingSecret: undefined, apiUrl: undefined });
    const bad = readEnv({ ANTHROPIC_API_KEY: 'k', SLACK_BOT_TOKEN: 'xoxb-1-2-abc', SLACK_APP_TOKEN: 'xoxb-wrong-kind' }, '/tmp');
    expect(bad.problems.map((p) => p.path)).toEqual(['SLACK_APP_TOKEN']);
    expect(JSON.stringify(bad.problems)).not.toContain('xoxb-wrong-kind');
    const none = readEnv({ ANTHROPIC_API_KEY: 'k', SLACK_BOT_TOKEN: 'xoxb-1-2-abc' }, '/tmp');
    expect(none.problems[0]?.message).toMatch(/SLACK_SIGNING_SECRET for HTTP mode/);
    const orphan = readEnv({ ANTHROPIC_API_KEY: 'k', SLACK_SIGNING_SECRET: 's3cr3t' }, '/tmp');
    expect(orphan.problems).toEqual([{ path: 'SLACK_SIGNING_SECRET', message: expect.stringContaining('SLACK_BOT_TOKEN is not') }]);
  });
});

describe('README "Telegram setup"', () => {
  test('the file it ends with loads: the user is admitted and is the approver, the group is routed', async () => {
    const { readFileSync: read } = await import('node:fs');
    const readme = read(resolve('README.md'), 'utf8');
    const start = readme.indexOf('## Telegram setup');
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/^ {3}/gm, ''));
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    // Step 3's file loads as it is (before any id is known).
    expect(Object.keys(load(setup(blocks[0]!)).agents)).toEqual(['ops']);
    const c = load(setup(blocks.at(-1)!));
    expect(c.agents['ops']!.approvers.telegram).toEqual(['123456789']);
    expect(c.access.telegram).toEqual({ users: ['123456789'], chats: ['-1001234567890'] });
    expect(agentForConversation(c, 'telegram:-1001234567890').name).toBe('ops');
  });
});

describe('workspaceMaxBytes (issue 18)', () => {
  const load = (yaml: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-cfg-quota-'));
    writeFileSync(join(dir, 'gatehouse.yaml'), yaml);
    try {
      return loadConfig({ env: { ANTHROPIC_API_KEY: 'k' }, cwd: dir, knownTools: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  test('default 1 GiB; sizes, numbers and none; in defaults too', () => {
    expect(load('agents:\n  a: { model: m }\n').agents.a!.workspaceMaxBytes).toBe(1024 ** 3);
    expect(load('agents:\n  a: { model: m, workspaceMaxBytes: 500MB }\n').agents.a!.workspaceMaxBytes).toBe(500_000_000);
    expect(load('agents:\n  a: { model: m, workspaceMaxBytes: 2048 }\n').agents.a!.workspaceMaxBytes).toBe(2048);
    expect(load('agents:\n  a: { model: m, workspaceMaxBytes: none }\n').agents.a!.workspaceMaxBytes).toBe(0);
    expect(load('defaults: { workspaceMaxBytes: 2GiB }\nagents:\n  a: { model: m }\n').agents.a!.workspaceMaxBytes).toBe(2 * 1024 ** 3);
  });
  test('a bad size names the key path', () => {
    expect(() => load('agents:\n  a: { model: m, workspaceMaxBytes: lots }\n')).toThrow(/agents\.a\.workspaceMaxBytes: expected a size like "500MB"/);
  });
});

describe('mcpServers readPaths', () => {
  const agent = (server: string) => `agents:\n  ops:\n    model: m\n    workspace: ./ws\n    mcpServers:\n      ${server}\n`;

  test("resolved against the config file's folder; relative and absolute kept, duplicates dropped", () => {
    const cwd = setup(agent('fx: { command: node, args: [srv/index.mjs], readPaths: [./srv, /opt/tools, srv] }'));
    const fx = load(cwd).agents.ops!.mcpServers.fx!;
    expect(fx.kind === 'stdio' && fx.readPaths).toEqual([join(cwd, 'srv'), '/opt/tools']);
  });

  test("one holding the bot's .env, config file or store is an error at its key path; so is a boxed server's cwd there", () => {
    const cwd = setup(
      [
        'agents:',
        '  ops:',
        '    model: m',
        '    workspace: ./ws',
        '    mcpServers:',
        '      a: { command: node, readPaths: [./tools, .] }',
        '      b: { command: node, readPaths: [./.env] }',
        '      c: { command: node, cwd: . }',
        '      d: { command: node, cwd: ., sandbox: none }',
        '      e: { command: node, readPaths: [./data] }',
      ].join('\n'),
      'X=1\n',
    );
    const problems = problemsOf(() => load(cwd, { ...KEY, GATEHOUSE_STORE: `sqlite://${join(cwd, 'data', 'store.sqlite')}` }));
    expect(problemAt(problems, 'agents.ops.mcpServers.a.readPaths[1]')).toMatch(/contains the config file .*MCP server's box shows it/);
    expect(problems.some((p) => p.path === 'agents.ops.mcpServers.a.readPaths[0]')).toBe(false);
    expect(problemAt(problems, 'agents.ops.mcpServers.b.readPaths[0]')).toContain('the .env file');
    expect(problemAt(problems, 'agents.ops.mcpServers.c.cwd')).toContain('leave cwd unset');
    expect(problems.some((p) => p.path.startsWith('agents.ops.mcpServers.d'))).toBe(false); // on the host, cwd is not shown to a box
    expect(problemAt(problems, 'agents.ops.mcpServers.e.readPaths[0]')).toContain('the store');
  });

  test('readPaths on an url server is an error at that key', () => {
    const cwd = setup(agent('web: { url: "https://mcp.example.com/mcp", readPaths: [/opt] }'));
    expect(
      problemAt(
        problemsOf(() => load(cwd)),
        'agents.ops.mcpServers.web.readPaths',
      ),
    ).toContain('only applies to a command server');
  });
});

describe('retention', () => {
  test('retention.maxConversations and maxIdleDays, key by key over defaults; the old maxConversations is the count', () => {
    const c = load(
      setup(
        'defaultAgent: a\ndefaults:\n  retention: { maxIdleDays: 90 }\nagents:\n  a: { model: m, retention: { maxConversations: 50 } }\n  b: { model: m, maxConversations: 7 }\n  c: { model: m, retention: { maxIdleDays: 0 } }\n',
      ),
    );
    expect(c.agents['a']!.retention).toEqual({ maxConversations: 50, maxIdleDays: 90 });
    expect(c.agents['b']!.retention).toEqual({ maxConversations: 7, maxIdleDays: 90 });
    expect(c.agents['c']!.retention).toEqual({ maxConversations: 10_000, maxIdleDays: 0 });
  });

  test('a bad value or an unknown key names the key', () => {
    const problems = problemsOf(() =>
      load(setup('agents:\n  a: { model: m, retention: { maxConversations: 0, maxIdleDays: -1 } }\n  b: { model: m, retention: { maxDays: 3 } }\n')),
    );
    expect(problemAt(problems, 'agents.a.retention.maxConversations')).toMatch(/from 1 to/);
    expect(problemAt(problems, 'agents.a.retention.maxIdleDays')).toMatch(/0: no age limit/);
    expect(problems.some((p) => p.path.startsWith('agents.b.retention') && /maxDays/.test(`${p.path} ${p.message}`))).toBe(true);
  });

  test('the old and the new key disagreeing is an error naming both', () => {
    const problems = problemsOf(() => load(setup('agents:\n  a: { model: m, maxConversations: 5, retention: { maxConversations: 6 } }\n')));
    expect(problemAt(problems, 'agents.a.maxConversations')).toMatch(/agents\.a\.retention\.maxConversations/);
  });
});
