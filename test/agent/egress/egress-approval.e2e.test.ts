/**
 * Issue 24, a host not on the list: on the real start path (gatehouse.yaml -> createGatehouse -> router ->
 * runner -> gate -> execute_command in bwrap -> the command's own proxy socket), a connection to an unlisted
 * 127.0.0.1 port is held on an approval card ("`curl …` wants 127.0.0.1:P"); Approve once lets it through,
 * Always persists it (a later command and a restarted bot go straight through), Deny and /stop leave the
 * server untouched; no approver bound: the explained decline, with the fix in the tool result. And an
 * allowlist added by a config reload starts its proxy.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { builtinToolNames } from '../../../agent/tools/catalog.js';
import { loadConfig } from '../../../bot/config/index.js';
import { reloadConfig } from '../../../bot/service/reload.js';
import { agentYaml, Harness, waitFor } from '../../helpers/harness.js';
import type { PostedCard } from '../../helpers/recording-adapter.js';
import { type CountingServer, lastToolResult, startCountingServer } from './helpers.js';

let h: Harness | undefined;
let srv: CountingServer;
let port: number;
let hits: string[];
let logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  srv = await startCountingServer((path) => `hello-${path.slice(1)}`);
  ({ port, hits } = srv);
});
afterEach(async () => {
  await h?.close();
  h = undefined;
  hits.length = 0;
});
afterAll(() => srv.close());

// One listed port (nothing listens there); the server's port is not on the list.
const yaml = (...extra: string[]) =>
  agentYaml(
    'tools: [execute_command]',
    'tier: read-only',
    'autoApprovedCommands: ["curl"]',
    'approvalTimeoutMs: 60000',
    `sandboxNetwork: { allow: ["127.0.0.1:1"] }`,
    ...extra,
  );

async function boot(text: string): Promise<Harness> {
  logs = [];
  h = await Harness.start({ yaml: text, log: (_l, _m, fields) => void (fields && logs.push(fields)) });
  return h;
}

const toolResult = lastToolResult;

const curl = (path: string) => ({
  toolUses: [{ name: 'execute_command', input: { command: `curl -sS -w ' %{http_code}' http://127.0.0.1:${port}/${path}` } }],
});
const egressCard = (g: Harness) => g.adapter.cards.find((c) => c.card.title.includes(`wants 127.0.0.1:${port}`));
const egressEvents = () => logs.filter((l) => l['event'] === 'egress_connection');

async function heldCard(g: Harness): Promise<PostedCard> {
  return waitFor('the egress card', () => egressCard(g));
}

test('Approve once: the held connection goes through; the card, its buttons and the audit say so', async () => {
  const g = await boot(yaml('approvers: { console: [local] }'));
  // Two connections at once (curl --parallel) of one command to the same target: one card.
  g.script(
    { toolUses: [{ name: 'execute_command', input: { command: `curl -sS -Z http://127.0.0.1:${port}/a http://127.0.0.1:${port}/b` } }] },
    { text: 'done' },
  );
  await g.adapter.send('fetch');
  const card = await heldCard(g);
  // The title keeps the command short; the card's preview has all of it.
  expect(card.card.title).toBe(`\`curl -sS -Z http://127.0.0.1:${port}/a http://127.0.0.1:${port}…\` wants 127.0.0.1:${port}`);
  expect(card.card.preview).toBe(`curl -sS -Z http://127.0.0.1:${port}/a http://127.0.0.1:${port}/b`);
  expect(card.card.buttons.map((b) => b.label)).toEqual(['Approve once', 'Always for this host', 'Deny']);
  expect(hits).toEqual([]);
  expect((await g.adapter.click(card, 'Approve once')).accepted).toBe(true);
  await waitFor('answer', () => g.adapter.answers()[0]);
  const out = toolResult(g.modelRequests()[1]);
  expect(out).toContain('hello-a');
  expect(out).toContain('hello-b');
  expect(hits.sort()).toEqual(['/a', '/b']);
  expect(g.adapter.cards.filter((c) => c.card.title.includes('wants'))).toHaveLength(1);
  const events = egressEvents();
  expect(events).toHaveLength(2);
  for (const e of events)
    expect(e).toMatchObject({ host: '127.0.0.1', port, decision: 'allowed', conversation: 'console:main', requestId: expect.any(String), bytesDown: 7 });
  expect(logs).toContainEqual(expect.objectContaining({ event: 'approval_decided', outcome: 'approved', by: 'local' }));
  // Once is not Always: nothing was kept.
  expect(await g.store.allowlists.list('default')).toEqual([]);
}, 90_000);

test('Always for this host: kept in the store; a later command and a restarted bot go straight through', async () => {
  const g = await boot(yaml('approvers: { console: [local] }'));
  g.script(curl('first'), { text: 'one' }, curl('second'), { text: 'two' });
  await g.adapter.send('first');
  await g.adapter.click(await heldCard(g), 'Always');
  await waitFor('first answer', () => g.adapter.answers()[0]);
  expect(toolResult(g.modelRequests()[1])).toContain('hello-first 200');
  expect(await g.store.allowlists.list('default')).toEqual([{ kind: 'egress', value: `127.0.0.1:${port}` }]);

  await g.adapter.send('second');
  await waitFor('second answer', () => g.adapter.answers()[1]);
  expect(toolResult(g.modelRequests()[3])).toContain('hello-second 200');
  expect(g.adapter.cards.filter((c) => c.card.title.includes('wants'))).toHaveLength(1);

  await g.restart();
  g.script(curl('after-restart'), { text: 'three' });
  await g.adapter.send('third');
  await waitFor('third answer', () => g.adapter.answers()[0]);
  expect(toolResult(g.modelRequests()[5])).toContain('hello-after-restart 200');
  expect(g.adapter.cards).toHaveLength(0);
  expect(hits).toEqual(['/first', '/second', '/after-restart']);
}, 120_000);

test('a card held when the bot crashed is closed by the restart: its command is gone, and an Always clicked on it grants nothing', async () => {
  const g = await boot(yaml('approvers: { console: [local] }'));
  g.script(curl('before-crash'), { text: 'after the restart' });
  await g.adapter.send('fetch');
  const card = await heldCard(g);
  await g.restart();
  // The resumed run goes on without the command (its process died with the bot).
  await waitFor('the resumed run to answer', () => g.adapter.answers()[0]);
  await waitFor('the card closed', () => logs.find((l) => l['event'] === 'approval_decided' && l['outcome'] === 'denied'));
  // Not shown again as if it still waited.
  expect(g.adapter.cards.filter((c) => c.card.title.includes('wants'))).toEqual([]);
  const click = await g.adapter.click(card, 'Always');
  expect(click.accepted).toBe(false);
  expect(click.notice).toContain('the bot restarted while this waited: nothing was done');
  expect(await g.store.allowlists.list('default')).toEqual([]);
  expect(hits).toEqual([]);
}, 120_000);

test('Deny: the command gets the proxy 403 with the reason, the server saw nothing, the audit records the refusal', async () => {
  const g = await boot(yaml('approvers: { console: [local] }'));
  g.script(curl('denied'), { text: 'ok' });
  await g.adapter.send('go');
  await g.adapter.click(await heldCard(g), 'Deny');
  await waitFor('answer', () => g.adapter.answers()[0]);
  const out = toolResult(g.modelRequests()[1]);
  expect(out).toContain(`gatehouse egress proxy: 127.0.0.1:${port} is not on this agent's sandboxNetwork.allow list; the connection was denied by local`);
  expect(out).toContain(' 403');
  expect(out).toContain(`--- network ---\nThe egress proxy declined 127.0.0.1:${port} (HTTP): denied by local.`);
  expect(hits).toEqual([]);
  expect(egressEvents()).toEqual([expect.objectContaining({ port, decision: 'refused', requestId: expect.any(String), bytesUp: 0, bytesDown: 0 })]);
}, 90_000);

test('/stop while a connection is held: the run stops, the card closes, the server saw nothing', async () => {
  const g = await boot(yaml('approvers: { console: [local] }'));
  g.script(curl('stopped'), { text: 'never' });
  await g.adapter.send('go');
  const card = await heldCard(g);
  await g.adapter.send('/stop');
  await waitFor('the card closed', () => card.updates.at(-1)?.outcome);
  expect(card.updates.at(-1)!.buttons).toEqual([]);
  expect(card.updates.at(-1)!.outcome).toMatch(/stopped/);
  await waitFor('run finished', () => g.adapter.events.find((e) => e.event.type === 'run_finished'));
  expect(hits).toEqual([]);
  expect(g.adapter.answers()).not.toContain('never');
  await waitFor('the refusal audited', () => egressEvents().find((e) => e['decision'] === 'refused' || e['decision'] === 'failed'));
}, 90_000);

test('no approver bound: the explained decline, with both fixes in the tool result; no card', async () => {
  const g = await boot(yaml());
  g.script(curl('nobody'), { text: 'ok' });
  await g.adapter.send('go');
  await waitFor('answer', () => g.adapter.answers()[0]);
  const out = toolResult(g.modelRequests()[1]);
  expect(out).toContain(
    `gatehouse egress proxy: 127.0.0.1:${port} is not on this agent's sandboxNetwork.allow list, and no approver is bound for console to approve it: add "127.0.0.1:${port}" to agents.default.sandboxNetwork.allow`,
  );
  expect(out).toContain(
    `--- network ---\nThe egress proxy declined 127.0.0.1:${port} (HTTP): it is not on agents.default.sandboxNetwork.allow and nobody here can approve it.`,
  );
  expect(out).toContain('agents.default.approvers.console');
  expect(g.adapter.cards).toEqual([]);
  expect(hits).toEqual([]);
}, 90_000);

test('an allowlist added by a config reload starts the proxy: the next command reaches the listed host', async () => {
  const g = await boot(agentYaml('tools: [execute_command]', 'tier: read-only', 'autoApprovedCommands: ["curl"]'));
  g.script(curl('before'), { text: 'one' }, curl('after'), { text: 'two' });
  await g.adapter.send('before');
  await waitFor('first answer', () => g.adapter.answers()[0]);
  expect(toolResult(g.modelRequests()[1])).not.toContain('hello-before');

  writeFileSync(
    join(g.dir, 'gatehouse.yaml'),
    agentYaml('tools: [execute_command]', 'tier: read-only', 'autoApprovedCommands: ["curl"]', `sandboxNetwork: { allow: ["127.0.0.1:${port}"] }`).replaceAll(
      '{{workspace}}',
      g.workspace,
    ),
  );
  const env = { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: g.fake.url, GATEHOUSE_STORE: g.storeUrl };
  const r = reloadConfig(g.config, () => loadConfig({ env, cwd: g.dir, knownTools: builtinToolNames() }));
  expect(r.ok).toBe(true);
  await g.adapter.send('after');
  await waitFor('second answer', () => g.adapter.answers()[1]);
  expect(toolResult(g.modelRequests()[3])).toContain('hello-after 200');
  expect(hits).toEqual(['/after']);
}, 90_000);
