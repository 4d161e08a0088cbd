/**
 * `gatehouse doctor`, `gatehouse init`, `gatehouse config schema`, and the environment checks of a
 * start (unknown GATEHOUSE_* names, NAME_FILE), each on a real process (bot/main.ts from source).
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtinToolNames } from '../../agent/tools/catalog.js';
import { loadConfig } from '../../bot/config/index.js';
import { finishGatehouse, startGatehouse, waitForProcess } from '../helpers/process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let dir: string;
const baseEnv = (): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: dir,
  ANTHROPIC_API_KEY: 'sk-test',
  ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
});

/** Runs `gatehouse ...args` to its end (async: servers in this process keep answering meanwhile). */
function gatehouse(args: string[], env: Record<string, string> = {}, cwd = dir): Promise<Run> {
  return finishGatehouse(args, { cwd, env: { ...baseEnv(), ...env }, onlyEnv: true });
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-ops-'));
  // A root bot's boxes run as uid 65534, which must enter the workspace's folders.
  chmodSync(dir, 0o755);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('gatehouse config schema', () => {
  test('prints the JSON Schema of the zod schema; the committed docs/gatehouse.schema.json is that output; the example points at it', async () => {
    const r = await gatehouse(['config', 'schema']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const schema = JSON.parse(r.stdout) as { $schema: string; properties: Record<string, unknown>; additionalProperties: boolean };
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(Object.keys(schema.properties).sort()).toEqual(['access', 'agents', 'defaultAgent', 'defaults', 'routes', 'runner']);
    // Unknown keys are errors for the loader, so for editors too.
    expect(schema.additionalProperties).toBe(false);
    // Out of date: regenerate with `npx gatehouse config schema > docs/gatehouse.schema.json`.
    expect(readFileSync(join(root, 'docs', 'gatehouse.schema.json'), 'utf8')).toBe(r.stdout);
    const first = readFileSync(join(root, 'gatehouse.example.yaml'), 'utf8').split('\n')[0]!;
    const ref = /^# yaml-language-server: \$schema=(\S+)$/.exec(first)?.[1];
    expect(ref).toBeDefined();
    expect(resolve(root, ref!)).toBe(join(root, 'docs', 'gatehouse.schema.json'));
  });

  test('anything but `schema` is bad usage', async () => {
    const r = await gatehouse(['config', 'print']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Usage: gatehouse config schema/);
  });
});

describe('gatehouse init', () => {
  test('writes a commented gatehouse.yaml and a 0600 .env for the platforms asked for; the real loader accepts them with the ids in place', async () => {
    const r = await gatehouse(['init', '--telegram', '--telegram-user-id', '123456789', '--discord', '--slack-user-id=U0ADA1234']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Wrote .*gatehouse\.yaml and .*\.env \(0600\)/);
    expect(r.stdout).toMatch(/No discord user id given: .*Developer Mode/);
    const yaml = readFileSync(join(dir, 'gatehouse.yaml'), 'utf8');
    const env = readFileSync(join(dir, '.env'), 'utf8');
    expect(yaml).toMatch(/^# /m);
    expect(statSync(join(dir, '.env')).mode & 0o777).toBe(0o600);
    for (const v of ['ANTHROPIC_API_KEY=', 'TELEGRAM_BOT_TOKEN=', 'SLACK_BOT_TOKEN=', 'DISCORD_TOKEN=']) expect(env).toContain(`\n${v}\n`);
    // Its schema line points at this installation's schema, relative to the file.
    const ref = /^# yaml-language-server: \$schema=(\S+)$/m.exec(yaml)?.[1];
    expect(resolve(dir, ref!)).toBe(join(root, 'docs', 'gatehouse.schema.json'));

    // The real loader, with the .env as written (empty tokens: no platform enabled yet).
    const config = loadConfig({ env: { ANTHROPIC_API_KEY: 'sk-test' }, cwd: dir, knownTools: builtinToolNames() });
    const agent = config.agents['main']!;
    expect(agent.approvers.telegram).toEqual(['123456789']);
    expect(agent.approvers.slack).toEqual(['U0ADA1234']);
    expect(agent.approvers.console).toEqual(['local']);
    expect(agent.approvers.discord).toEqual([]);
    expect(config.access.telegram.users).toEqual(['123456789']);
    expect(config.access.slack.users).toEqual(['U0ADA1234']);
    expect(config.access.discord.users).toEqual([]);
    expect(config.envFile).toBe(join(dir, '.env'));
  });

  test('with no platform: a terminal-only config that loads', async () => {
    const r = await gatehouse(['init']);
    expect(r.code).toBe(0);
    const config = loadConfig({ env: { ANTHROPIC_API_KEY: 'sk-test' }, cwd: dir, knownTools: builtinToolNames() });
    expect(Object.keys(config.agents)).toEqual(['main']);
    expect(readFileSync(join(dir, '.env'), 'utf8')).not.toMatch(/TELEGRAM|SLACK|DISCORD/);
  });

  test('refuses to overwrite: an existing file is named, exit 1, and neither file is written', async () => {
    writeFileSync(join(dir, '.env'), 'ANTHROPIC_API_KEY=mine\n');
    const r = await gatehouse(['init', '--telegram']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${join(dir, '.env')} already exists; nothing was written`);
    expect(readFileSync(join(dir, '.env'), 'utf8')).toBe('ANTHROPIC_API_KEY=mine\n');
    expect(existsSync(join(dir, 'gatehouse.yaml'))).toBe(false);
  });

  test('an id of the wrong shape or an unknown option is bad usage (exit 2), nothing written', async () => {
    const bad = await gatehouse(['init', '--telegram-user-id', '@alice']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--telegram-user-id "@alice": Telegram ids are numbers/);
    const unknown = await gatehouse(['init', '--matrix']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown argument "--matrix"/);
    expect(existsSync(join(dir, 'gatehouse.yaml'))).toBe(false);
  });
});

describe('gatehouse doctor', () => {
  const boxedAgent = (workspace: string) =>
    `agents:\n  ops:\n    model: m\n    tools: [read_file, execute_command]\n    workspace: ${workspace}\n    sandboxLimits: { processes: 100, openFiles: 512, memory: 256M, tmpSize: 32M, cpuSeconds: 60 }\n`;

  test("all pass: the config loads, a box starts with the agent's limits in force, the store is private, the port is free: exit 0", async () => {
    writeFileSync(join(dir, 'gatehouse.yaml'), boxedAgent('./ws'));
    mkdirSync(join(dir, 'ws'), { mode: 0o755 });
    const port = await freePort();
    const r = await gatehouse(['doctor'], { GATEHOUSE_HTTP_PORT: String(port) });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^ok {4}config: .*gatehouse\.yaml load; agents: ops/m);
    expect(r.stdout).toMatch(
      /^ok {4}sandbox \(agent ops\): a box starts, network off; limits in force: 100 processes, 512 open files, 256 MiB memory and 60 CPU s per process, \/tmp 32 MiB$/m,
    );
    expect(r.stdout).toMatch(/^ok {4}store: sqlite:\/\/.*not created yet/m);
    // ANTHROPIC_BASE_URL is an IP address: nothing to resolve.
    expect(r.stdout).toMatch(/^ok {4}model API: ANTHROPIC_API_KEY set; 127\.0\.0\.1 resolves/m);
    expect(r.stdout).toMatch(new RegExp(`^ok {4}http: 127\\.0\\.0\\.1:${port} is free$`, 'm'));
    expect(r.stdout).toMatch(/All \d+ checks passed/);
    expect(r.code).toBe(0);
    // It changed nothing: no store folder, no pid file.
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });

  test('failures: each is named with what to fix, exit 1, and a host that cannot resolve is said plainly without hanging', async () => {
    writeFileSync(join(dir, 'gatehouse.yaml'), 'agents:\n  ops:\n    model: m\n    tier: admin\n    tols: [read_file]\n');
    // A store folder shared with other things and open to everyone: the start would leave it so.
    mkdirSync(join(dir, 'data'));
    chmodSync(join(dir, 'data'), 0o755);
    writeFileSync(join(dir, 'data', 'notes.txt'), 'not the store');
    const squatter: Server = createServer((_req, res) => res.end('hello from something else'));
    await new Promise<void>((r) => squatter.listen(0, '127.0.0.1', () => r()));
    const port = (squatter.address() as AddressInfo).port;
    try {
      const secret = '123456:AAsecret_doctor_must_not_print_this_0123';
      const r = await gatehouse(['doctor'], {
        GATEHOUSE_HTTP_PORT: String(port),
        TELEGRAM_BOT_TOKEN: secret,
        // .invalid never resolves (RFC 6761), with or without internet.
        TELEGRAM_API_ROOT: 'https://api.telegram.invalid',
      });
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^FAIL {2}config: 2 problems:$/m);
      expect(r.stdout).toMatch(/^ {10}agents\.ops\.tier: expected one of/m);
      expect(r.stdout).toMatch(/^ {10}agents\.ops\.tols: .*did you mean "tools"/m);
      expect(r.stdout).toMatch(/fix: change each key or variable named above in .*gatehouse\.yaml/);
      expect(r.stdout).toMatch(/^note {2}sandbox: not checked: the config does not load$/m);
      expect(r.stdout).toMatch(/^FAIL {2}store: .*the folder .*data is 0755 and holds other things/m);
      expect(r.stdout).toMatch(/fix: give the store a folder of its own, owned by the service user, 0700/);
      expect(r.stdout).toMatch(
        /^FAIL {2}telegram: TELEGRAM_BOT_TOKEN set \(long polling\); api\.telegram\.invalid does not resolve \(ENOTFOUND: no address for this name/m,
      );
      expect(r.stdout).toMatch(new RegExp(`^FAIL {2}http: 127\\.0\\.0\\.1:${port} is in use by another program`, 'm'));
      expect(r.stdout).toMatch(/fix: stop that program or set GATEHOUSE_HTTP_PORT to a free port/);
      expect(r.stdout).toMatch(/^4 of \d+ checks failed: config, store, telegram, http\.$/m);
      expect(r.stdout + r.stderr).not.toContain(secret);
    } finally {
      await new Promise<void>((r) => squatter.close(() => r()));
    }
  });

  test('--json: one array of checks', async () => {
    const r = await gatehouse(['doctor', '--json'], { GATEHOUSE_HTTP_PORT: '0' });
    const checks = JSON.parse(r.stdout) as Array<{ name: string; status: string }>;
    expect(checks.map((c) => c.name)).toEqual(expect.arrayContaining(['config', 'store', 'model API', 'http']));
    expect(r.code).toBe(checks.some((c) => c.status === 'fail') ? 1 : 0);
  });

  test('the port held by the Gatehouse running in this folder passes, naming its pid', async () => {
    const port = await freePort();
    const env = { GATEHOUSE_HTTP_PORT: String(port) };
    const bot = startGatehouse(['serve'], { cwd: dir, env: { ...baseEnv(), ...env }, onlyEnv: true });
    try {
      await waitForProcess(
        bot,
        'the service to start and write its pid file',
        () => /Gatehouse started/.test(bot.output()) && existsSync(join(dir, 'data', 'gatehouse.pid')),
        60_000,
      );
      const r = await gatehouse(['doctor'], env);
      expect(r.stdout).toMatch(new RegExp(`^ok {4}http: 127\\.0\\.0\\.1:${port} is in use by a running Gatehouse \\(pid ${bot.pid}\\): service mode`, 'm'));
      // The running service's store: 0700 folder, 0600 files.
      expect(r.stdout).toMatch(/^ok {4}store: sqlite:\/\/.*: folder 0700, files 0600$/m);
    } finally {
      await bot.stop();
    }
  });
});

describe('the environment at start', () => {
  test('an unknown GATEHOUSE_* variable stops the start, naming it and the closest known name', async () => {
    const r = await gatehouse(['serve'], { GATEHOUSE_HTTP_PROT: '9999' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/GATEHOUSE_HTTP_PROT: is not a variable Gatehouse reads \(a typo\?\) \(did you mean "GATEHOUSE_HTTP_PORT"\?\)/);
  });

  test('ANTHROPIC_API_KEY_FILE is read at start; with ANTHROPIC_API_KEY as well the start stops naming both', async () => {
    const keyFile = join(dir, 'anthropic_key');
    writeFileSync(keyFile, 'sk-ant-from-docker-secret-1234567890\n', { mode: 0o600 });
    const env = { ...baseEnv(), ANTHROPIC_API_KEY: '' };
    const ok = await gatehouse(['doctor'], { ...env, ANTHROPIC_API_KEY_FILE: keyFile, GATEHOUSE_HTTP_PORT: '0' });
    expect(ok.stdout).toMatch(/^ok {4}model API: ANTHROPIC_API_KEY set;/m);
    const both = await gatehouse(['serve'], { ANTHROPIC_API_KEY: 'sk-direct', ANTHROPIC_API_KEY_FILE: keyFile });
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/ANTHROPIC_API_KEY, ANTHROPIC_API_KEY_FILE: both are set; keep one/);
    const missing = await gatehouse(['serve'], { ANTHROPIC_API_KEY: '', ANTHROPIC_API_KEY_FILE: join(dir, 'nope') });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/ANTHROPIC_API_KEY_FILE: cannot read .*nope \(no such file\)/);
    expect(both.stderr + missing.stderr).not.toContain('sk-ant-from-docker-secret');
  });
});
