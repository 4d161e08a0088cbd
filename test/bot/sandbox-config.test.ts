/**
 * The sandbox keys of gatehouse.yaml: `sandboxLimits` (sizes with units, merged per key over defaults and
 * built-ins) and `sandboxReadPaths` (resolved against the config's folder; one holding the bot's files is
 * an error at that entry). Bad values name the key path.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SANDBOX_LIMITS } from '../../agent/tools/sandbox/index.js';
import { ConfigError, loadConfig, type Config, type ConfigProblem } from '../../bot/config/index.js';

const KNOWN = ['read_file', 'execute_command'];
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-sandbox-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function load(yaml: string): Config {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml);
  return loadConfig({ env: { ANTHROPIC_API_KEY: 'sk-test' }, cwd: dir, knownTools: KNOWN });
}

function problems(yaml: string): ConfigProblem[] {
  try {
    load(yaml);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

test('unset: the built-in limits and no read paths', () => {
  const c = load('agents:\n  ops:\n    model: m\n');
  expect(c.agents['ops']!.sandboxLimits).toEqual(DEFAULT_SANDBOX_LIMITS);
  expect(c.agents['ops']!.sandboxReadPaths).toEqual([]);
});

test('sizes take units; each key falls back on its own: agent < defaults < built-in', () => {
  const c = load(
    [
      'defaults:',
      '  model: m',
      '  sandboxLimits: { memory: 2G, cpuSeconds: 60 }',
      'agents:',
      '  ops:',
      '    sandboxLimits: { tmpSize: 64M, cpuSeconds: 5 }',
      '  other: {}',
      'defaultAgent: ops',
    ].join('\n'),
  );
  expect(c.agents['ops']!.sandboxLimits).toEqual({ ...DEFAULT_SANDBOX_LIMITS, memoryBytes: 2 * 1024 ** 3, cpuSeconds: 5, tmpBytes: 64 * 1024 ** 2 });
  expect(c.agents['other']!.sandboxLimits).toEqual({ ...DEFAULT_SANDBOX_LIMITS, memoryBytes: 2 * 1024 ** 3, cpuSeconds: 60 });
});

test('bad values and unknown keys name the key path', () => {
  const p = problems('agents:\n  ops:\n    model: m\n    sandboxLimits: { memory: lots, tmpSize: 0, cpuSeconds: -1, swap: 1G }\n');
  const paths = p.map((x) => x.path);
  expect(paths).toEqual(expect.arrayContaining(['agents.ops.sandboxLimits.memory', 'agents.ops.sandboxLimits.tmpSize', 'agents.ops.sandboxLimits.cpuSeconds']));
  expect(p.find((x) => x.path === 'agents.ops.sandboxLimits.memory')!.message).toMatch(/512M or 2G/);
  expect(p.some((x) => x.path.startsWith('agents.ops.sandboxLimits') && /swap/.test(`${x.path} ${x.message}`))).toBe(true);
});

test('sandboxReadPaths resolve against the config folder; one holding the config is an error at that entry', () => {
  mkdirSync(join(dir, 'docs'));
  const c = load('agents:\n  ops:\n    model: m\n    sandboxReadPaths: [docs, /usr/share/doc]\n');
  expect(c.agents['ops']!.sandboxReadPaths).toEqual([join(dir, 'docs'), '/usr/share/doc']);
  const p = problems(`agents:\n  ops:\n    model: m\n    sandboxReadPaths: [docs, ${dir}]\n`);
  expect(p).toEqual([expect.objectContaining({ path: 'agents.ops.sandboxReadPaths[1]', message: expect.stringMatching(/contains the config file/) })]);
});
