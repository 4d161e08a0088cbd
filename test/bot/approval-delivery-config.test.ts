/**
 * `approvalDelivery` in gatehouse.yaml (bot/config/approval-delivery.ts): the accepted shapes and what
 * they resolve to, the errors (naming the key path), and the start-log lines.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, type ConfigProblem } from '../../bot/config/index.js';
import { approvalDeliveryLines } from '../../bot/config/approval-delivery.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function load(agentLines: string) {
  const cwd = mkdtempSync(join(tmpdir(), 'gatehouse-delivery-config-'));
  dirs.push(cwd);
  writeFileSync(join(cwd, 'gatehouse.yaml'), `agents:\n  ops:\n    model: m\n${agentLines}`);
  return loadConfig({ env: { ANTHROPIC_API_KEY: 'sk-test-not-real' }, cwd, knownTools: ['write_file'] });
}

function problemsOf(agentLines: string): ConfigProblem[] {
  try {
    load(agentLines);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a config error');
}

test.each([
  ['here', { mode: 'here' }],
  ['dm', { mode: 'dm' }],
  ['both', { mode: 'both' }],
  ['ephemeral', { mode: 'ephemeral' }],
  ['{ dm: telegram }', { mode: 'dm', platform: 'telegram' }],
  ['{ both: telegram }', { mode: 'both', platform: 'telegram' }],
])('approvalDelivery: %s resolves to %j', (yaml, resolved) => {
  const config = load(`    approvers: { telegram: ["501"] }\n    approvalDelivery: ${yaml}\n`);
  expect(config.agents['ops']!.approvalDelivery).toEqual(resolved);
});

test('unset: no delivery setting (the broker posts here)', () => {
  expect(load('    approvers: { telegram: ["501"] }\n').agents['ops']!.approvalDelivery).toBeUndefined();
});

test('a wrong value names the key path and the shapes accepted', () => {
  expect(problemsOf('    approvalDelivery: email\n')).toContainEqual(
    expect.objectContaining({ path: 'agents.ops.approvalDelivery', message: expect.stringMatching(/expected one of here, dm, both, ephemeral.*got "email"/) }),
  );
  expect(problemsOf('    approvalDelivery: { dm: fax }\n')).toContainEqual(
    expect.objectContaining({ path: expect.stringMatching(/^agents\.ops\.approvalDelivery/) }),
  );
});

test('a cross-platform target with nobody to message there is an error that says what to add', () => {
  expect(problemsOf('    approvers: { slack: [U0ADA], discord: ["role:123456789012345678"] }\n    approvalDelivery: { dm: discord }\n')).toContainEqual({
    path: 'agents.ops.approvalDelivery',
    message: expect.stringMatching(/agents\.ops\.approvers\.discord names no user to message/),
  });
});

test('the start log says what the setting does on each enabled platform', () => {
  const config = load('    approvers: { telegram: ["501"], slack: [U0ADA] }\n    approvalDelivery: { dm: telegram }\n');
  expect(approvalDeliveryLines(config.agents, ['telegram', 'slack'])).toEqual([
    'agent ops: approvalDelivery: telegram: Telegram direct messages; slack: Telegram direct messages',
  ]);
  expect(approvalDeliveryLines(config.agents, ['slack'])).toEqual([
    'agent ops: approvalDelivery: slack: here (telegram is not enabled, so no direct messages)',
  ]);
  const eph = load('    approvers: { slack: [U0ADA] }\n    approvalDelivery: ephemeral\n');
  expect(approvalDeliveryLines(eph.agents, ['slack', 'telegram'])).toEqual([
    'agent ops: approvalDelivery: slack: ephemeral to the requester when they are an approver, else here; telegram: here (ephemeral is Slack only)',
  ]);
  expect(approvalDeliveryLines(load('    approvalDelivery: here\n').agents, ['slack'])).toEqual([]);
});
