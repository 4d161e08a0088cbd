/**
 * Issue 24, "nobody approves their own request": the broker's rule for clicks and host decisions,
 * the default (one approver bound: the requester may; more, or a group: not), questions unaffected,
 * every refusal audited; the config key's errors and the start-log line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApprovalBroker } from '../../agent/approvals/index.js';
import type { AuditEvent } from '../../agent/audit.js';
import { defaultRequesterMayApprove } from '../../agent/approvals/requester.js';
import { openSqliteStore } from '../../agent/store/sqlite/index.js';
import type { Store } from '../../agent/store/types.js';
import { ConfigError, loadConfig } from '../../bot/config/index.js';
import { requesterApprovalLine } from '../../bot/config/requester-approval.js';

let store: Store;
beforeEach(async () => {
  store = await openSqliteStore({ path: ':memory:' });
});
afterEach(async () => {
  await store.close();
});

function broker(approvers: Record<string, string[]>, explicit?: boolean) {
  const audit: AuditEvent[] = [];
  const b = new ApprovalBroker({
    approvals: store.approvals,
    outputs: () => ({ emit: async () => undefined, streamsText: false, postCard: async () => 'h', updateCard: async () => undefined }),
    approversOf: (_agent, platform) => approvers[platform] ?? [],
    requesterMayApprove: () => explicit,
    audit: (e) => void audit.push(e),
  });
  return { b, audit };
}

const approval = (platform: string, starterId: string) => ({
  conversationKey: `${platform}:1`,
  platform,
  agentName: 'default',
  runId: 'run-1',
  title: 'Approve write_file?',
  body: 'plan.md',
  alwaysLabel: null,
  timeoutMs: 600_000,
  starterId,
});

async function clickFirst(b: ApprovalBroker, id: string, user: string) {
  const token = (await b.buttonChoices(id))[0]!.token;
  return b.click({ token, conversationKey: (await b.get(id))!.conversationKey, user: { id: user } });
}

test('the default: a lone approver may approve their own request; with two, or a group, they may not', () => {
  expect(defaultRequesterMayApprove(['501'])).toBe(true);
  expect(defaultRequesterMayApprove([])).toBe(true);
  expect(defaultRequesterMayApprove(['501', '502'])).toBe(false);
  expect(defaultRequesterMayApprove(['group:S0OPS'])).toBe(false);
  expect(defaultRequesterMayApprove(['role:123'])).toBe(false);
});

test('two approvers bound: the requester is refused (audited), the other decides', async () => {
  const { b, audit } = broker({ telegram: ['501', '502'] });
  const id = await b.askApproval(approval('telegram', '502'));
  const own = await clickFirst(b, id, '502');
  expect(own).toEqual({ accepted: false, notice: expect.stringMatching(/You started this request/) });
  expect((await b.get(id))!.decision).toBeUndefined();
  expect(audit).toContainEqual(expect.objectContaining({ event: 'approval_refused', userId: '502', reason: 'requester_may_not_approve', requestId: id }));
  expect((await clickFirst(b, id, '501')).accepted).toBe(true);
  expect((await b.get(id))!.decision).toMatchObject({ outcome: 'approved', by: '501' });
});

test('one approver bound: the requester who is that approver may approve; an explicit false still refuses them', async () => {
  const lone = broker({ telegram: ['502'] });
  const id = await lone.b.askApproval(approval('telegram', '502'));
  expect((await clickFirst(lone.b, id, '502')).accepted).toBe(true);

  const strict = broker({ telegram: ['502'] }, false);
  const id2 = await strict.b.askApproval(approval('telegram', '502'));
  expect((await clickFirst(strict.b, id2, '502')).accepted).toBe(false);
  expect((await strict.b.get(id2))!.decision).toBeUndefined();
});

test('an explicit true lets the requester approve even with several approvers', async () => {
  const { b } = broker({ slack: ['U0ADA', 'U0BOB'] }, true);
  const id = await b.askApproval(approval('slack', 'U0BOB'));
  expect((await clickFirst(b, id, 'U0BOB')).accepted).toBe(true);
});

test('"Approve all" follows the rule too', async () => {
  const { b } = broker({ telegram: ['501', '502'] });
  const m1 = await b.askApproval(approval('telegram', '502'));
  const m2 = await b.askApproval(approval('telegram', '502'));
  const all = await b.askApproveAll({ ...approval('telegram', '502') }, [m1, m2]);
  expect((await clickFirst(b, all, '502')).accepted).toBe(false);
  expect((await b.get(m1))!.decision).toBeUndefined();
  expect((await clickFirst(b, all, '501')).accepted).toBe(true);
  expect((await b.get(m2))!.decision).toMatchObject({ outcome: 'approved' });
});

test('a question is answered by its asker whatever the rule says', async () => {
  const { b } = broker({ telegram: ['501', '502'] }, false);
  const id = await b.askQuestion({
    conversationKey: 'telegram:1',
    platform: 'telegram',
    agentName: 'default',
    runId: 'run-1',
    question: 'Which region?',
    suggestions: [
      { value: 'eu', label: 'eu' },
      { value: 'us', label: 'us' },
    ],
    allowCustom: true,
    starterId: '502',
    timeoutMs: 600_000,
  });
  expect((await clickFirst(b, id, '502')).accepted).toBe(true);
});

test('the host operator is the requester of terminal and headless runs only', async () => {
  const { b, audit } = broker({ cli: ['local'], telegram: ['501'] }, false);
  const headless = await b.askApproval(approval('cli', 'cli'));
  const refused = await b.decideAsHost(headless, 'approve');
  expect(refused).toMatchObject({ accepted: false, reason: 'requester_may_not_approve', notice: expect.stringMatching(/started from the host/) });
  expect((await b.get(headless))!.decision).toBeUndefined();
  expect(audit).toContainEqual(expect.objectContaining({ event: 'approval_refused', platform: 'cli', userId: 'local', reason: 'requester_may_not_approve' }));
  // A Telegram user's run: the host operator did not ask for it, so may decide it.
  const chat = await b.askApproval(approval('telegram', '501'));
  expect((await b.decideAsHost(chat, 'approve')).accepted).toBe(true);
});

describe('config', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  function load(yaml: string) {
    const cwd = mkdtempSync(join(tmpdir(), 'gatehouse-requester-'));
    dirs.push(cwd);
    writeFileSync(join(cwd, 'gatehouse.yaml'), yaml);
    return loadConfig({ env: { ANTHROPIC_API_KEY: 'sk-test-not-real' }, cwd, knownTools: ['write_file'] });
  }

  test('a value that is not a boolean is an error naming the key path', () => {
    let err: unknown;
    try {
      load('agents:\n  default:\n    model: m\n    requesterMayApprove: "no"\n');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems).toContainEqual(expect.objectContaining({ path: 'agents.default.requesterMayApprove', message: expect.stringMatching(/true or false/) }));
  });

  test('set in defaults, every agent gets it; the start-log line states the effective value per agent and platform', () => {
    const config = load(
      'defaultAgent: ops\ndefaults:\n  requesterMayApprove: true\nagents:\n  ops:\n    model: m\n    approvers: { telegram: ["1", "2"], slack: [U1] }\n  team:\n    model: m\n    requesterMayApprove: false\n    approvers: { telegram: ["1"] }\n',
    );
    expect(config.agents['ops']!.requesterMayApprove).toBe(true);
    expect(config.agents['team']!.requesterMayApprove).toBe(false);
    const unset = load('agents:\n  ops:\n    model: m\n    approvers: { telegram: ["1", "2"], slack: [U1] }\n');
    expect(unset.agents['ops']!.requesterMayApprove).toBeUndefined();
    expect(requesterApprovalLine(unset.agents, ['telegram', 'slack'])).toBe(
      'requester may approve their own request: ops: telegram no (default: 2 bound), slack yes (default: 1 bound)',
    );
    expect(requesterApprovalLine(config.agents, ['telegram'])).toBe('requester may approve their own request: ops: telegram yes; team: telegram no');
  });
});
