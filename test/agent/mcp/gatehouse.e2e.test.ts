/**
 * MCP and per-tool policy through a real Gatehouse (config from YAML, SQLite store, the real runner,
 * gate and approval broker, the Anthropic SDK against the fake model), with the fixture MCP server
 * as a real child process: lazy start, the approval card, toolPolicy and commandRules deciding real
 * calls, the listing cache across a restart, and shutdown leaving no process.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Harness, waitFor } from '../../helpers/harness.js';
import type { RecordedRequest } from '../../fakes/anthropic.js';
import { alive, FIXTURE, starts } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function yaml(extra: string[] = []): string {
  return [
    'agents:',
    '  default:',
    '    model: claude-sonnet-5-5',
    '    tools: [read_file, execute_command]',
    ...(extra.some((l) => l.startsWith('tier:')) ? [] : ['    tier: read-only']),
    '    workspace: "{{workspace}}"',
    '    sandbox: none',
    '    approvers: { console: [local] }',
    '    mcpServers:',
    // The harness puts the workspace in its temp folder: the starts file sits next to it.
    `      fx: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FIXTURE)}], env: { FIXTURE_STARTS_FILE: "{{workspace}}/../starts" }, sandbox: none }`,
    '      broken: { command: /nonexistent/mcp-server, args: [--stdio] }',
    ...extra.map((l) => `    ${l}`),
  ].join('\n');
}

async function start(extra: string[] = [], logs: string[] = []): Promise<Harness> {
  return Harness.start({ yaml: yaml(extra), log: (level, msg) => void logs.push(`${level} ${msg}`) });
}

const toolNames = (req: RecordedRequest) => (req.body as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
const toolSpec = (req: RecordedRequest, name: string) =>
  (req.body as { tools: Array<{ name: string; input_schema: unknown }> }).tools.find((t) => t.name === name);
function toolResults(req: RecordedRequest): Array<{ content: unknown; is_error?: boolean }> {
  const msgs = (req.body as { messages: Array<{ content: Array<{ type: string }> }> }).messages;
  return msgs.at(-1)!.content.filter((b) => b.type === 'tool_result') as unknown as Array<{ content: unknown; is_error?: boolean }>;
}
const resultText = (r: { content: unknown }) => (typeof r.content === 'string' ? r.content : JSON.stringify(r.content));

test('start-up connects nothing (even with a broken server); the first run lists, the card shows server, tool and arguments', async () => {
  const logs: string[] = [];
  h = await start([], logs);
  const startsFile = join(h.dir, 'starts');
  expect(starts(startsFile)).toEqual([]); // nothing ran at start

  const args = { text: 'ship it', tags: ['release'], extra: { n: 1 } };
  h.script({ toolUses: [{ name: 'mcp_fx_echo', input: args }] }, { text: 'done' });
  await h.adapter.send('echo something');
  const card = await waitFor('card', () => h!.adapter.cards[0]);
  expect(card.card.title).toBe('Approve mcp_fx_echo?');
  expect(card.card.body).toContain('MCP server "fx", tool "echo"');
  expect(card.card.body).toMatch(/Rated high-risk, above the agent's tier \(read-only\)/);
  expect(card.card.preview).toBe(JSON.stringify(args, null, 2));

  // The model saw the server's schema as given, and nothing from the broken server.
  const first = h.modelRequests()[0]!;
  expect(toolNames(first)).toEqual(expect.arrayContaining(['read_file', 'mcp_fx_echo', 'mcp_fx_slow']));
  expect(toolNames(first).some((n) => n.startsWith('mcp_broken_'))).toBe(false);
  expect(toolSpec(first, 'mcp_fx_echo')!.input_schema).toMatchObject({ type: 'object', properties: { text: { type: 'string', description: 'what to echo' } } });
  expect(logs.join('\n')).toMatch(/MCP server broken of agent default: MCP server "broken" could not be started: `\/nonexistent\/mcp-server --stdio`/);

  await h.adapter.click(card, 'Approve once');
  await waitFor('second model call', () => h!.modelRequests()[1]);
  expect(JSON.parse(resultText(toolResults(h.modelRequests()[1]!)[0]!))).toEqual(args);
  expect(starts(startsFile)).toHaveLength(1);
});

test('toolPolicy: a glob allows a server without a card, an exact deny forbids one tool; the model is told', async () => {
  const logs: string[] = [];
  h = await start(['toolPolicy: { "mcp_fx_*": allow, mcp_fx_crash: deny, mcp_fx_no_such_tool: ask }'], logs);
  h.script(
    {
      toolUses: [
        { name: 'mcp_fx_echo', input: { text: 'a' } },
        { name: 'mcp_fx_crash', input: {} },
      ],
    },
    { text: 'ok' },
  );
  await h.adapter.send('go');
  await waitFor('second model call', () => h!.modelRequests()[1]);
  const [echo, crash] = toolResults(h.modelRequests()[1]!);
  expect(JSON.parse(resultText(echo!))).toEqual({ text: 'a' });
  expect(crash!.is_error).toBe(true);
  expect(resultText(crash!)).toContain('Forbidden: mcp_fx_crash is not allowed for this agent here (agents.default.toolPolicy["mcp_fx_crash"]: deny)');
  expect(h.adapter.cards).toHaveLength(0);
  // The server was not crashed: it is still the one that started.
  expect(starts(join(h.dir, 'starts'))).toHaveLength(1);
  // An exact MCP name in toolPolicy is checked once the server is listed.
  expect(logs.join('\n')).toMatch(/agents\.default\.toolPolicy\["mcp_fx_no_such_tool"\]: MCP server fx offers no such tool \(its tools: mcp_fx_echo, /);
});

test('one server process serves every conversation of the agent', async () => {
  h = await start(['toolPolicy: { "mcp_fx_*": allow }']);
  h.script({ toolUses: [{ name: 'mcp_fx_pid', input: {} }] }, { text: 'a done' });
  await h.adapter.send('pid please', { conversation: 'a' });
  await waitFor('a answered', () => h!.modelRequests()[1]);
  h.script({ toolUses: [{ name: 'mcp_fx_pid', input: {} }] }, { text: 'b done' });
  await h.adapter.send('pid please', { conversation: 'b' });
  await waitFor('b answered', () => h!.modelRequests()[3]);
  const pidA = resultText(toolResults(h.modelRequests()[1]!)[0]!);
  const pidB = resultText(toolResults(h.modelRequests()[3]!)[0]!);
  expect(pidA).toMatch(/^\d+$/);
  expect(pidB).toBe(pidA);
  expect(starts(join(h.dir, 'starts'))).toEqual([Number(pidA)]);
});

test('a toolPolicy ask and a commandRules ask each put a card up within the tier, with the rule and its reason; long arguments are cut on the card only', async () => {
  h = await start(['tier: high-risk', 'toolPolicy: { mcp_fx_echo: ask }', 'commandRules: [{ match: "echo", policy: ask, reason: "echo is audited here" }]']);
  const long = 'y'.repeat(5000);
  h.script(
    { toolUses: [{ name: 'mcp_fx_echo', input: { text: long } }] },
    { toolUses: [{ name: 'execute_command', input: { command: 'echo hi' } }] },
    { text: 'ok' },
  );
  await h.adapter.send('go');
  const card = await waitFor('card', () => h!.adapter.cards[0]);
  expect(card.card.body).toContain('Approval required by agents.default.toolPolicy["mcp_fx_echo"] (ask), even within the tier.');
  expect(card.card.buttons.map((b) => b.label).some((l) => l.startsWith('Always'))).toBe(false);
  expect(card.card.preview!.length).toBeLessThan(3000);
  expect(card.card.preview).toMatch(/arguments cut for this card: \d+ more characters not shown; the tool receives them all/);
  await h.adapter.click(card, 'Approve once');
  await waitFor('second model call', () => h!.modelRequests()[1]);
  expect(JSON.parse(resultText(toolResults(h.modelRequests()[1]!)[0]!))).toEqual({ text: long });

  const card2 = await waitFor('command card', () => h!.adapter.cards[1]);
  expect(card2.card.body).toContain('Approval required by agents.default.commandRules[0] (match "echo" on `echo hi`) (reason: echo is audited here).');
  await h.adapter.click(card2, 'Deny');
  await waitFor('third model call', () => h!.modelRequests()[2]);
});

test('commandRules deny blocks a command even under toolPolicy allow: it does not run', async () => {
  h = await start(['toolPolicy: { execute_command: allow }', 'commandRules: [{ match: "touch *", policy: deny, reason: "no new files from the shell" }]']);
  h.script({ toolUses: [{ name: 'execute_command', input: { command: 'echo hi && touch pwned' } }] }, { text: 'ok' });
  await h.adapter.send('go');
  await waitFor('second model call', () => h!.modelRequests()[1]);
  const [r] = toolResults(h.modelRequests()[1]!);
  expect(r!.is_error).toBe(true);
  expect(resultText(r!)).toContain('Blocked by agents.default.commandRules[0]');
  expect(resultText(r!)).toContain('no new files from the shell');
  expect(existsSync(join(h.workspace, 'pwned'))).toBe(false);
  expect(h.adapter.cards).toHaveLength(0);
});

test('the listing is cached: after a restart the tools are offered before any server starts; stop leaves no process', async () => {
  h = await start(['toolPolicy: { "mcp_fx_*": allow }']);
  const startsFile = join(h.dir, 'starts');
  h.script({ toolUses: [{ name: 'mcp_fx_spawn_child', input: {} }] }, { text: 'ok' });
  await h.adapter.send('go');
  await waitFor('second model call', () => h!.modelRequests()[1]);
  const grandchild = Number(resultText(toolResults(h.modelRequests()[1]!)[0]!));
  const [server] = starts(startsFile);
  expect(alive(server!)).toBe(true);
  expect(alive(grandchild)).toBe(true);

  await h.gh.stop();
  expect(alive(server!)).toBe(false);
  expect(alive(grandchild)).toBe(false);
  await h.store.close();

  // A new process on the same store: the cached listing is offered, no server is started for it.
  await h.restart();
  h.script({ text: 'nothing to do' });
  await h.adapter.send('hello');
  await waitFor('answer', () => h!.modelRequests()[2]);
  expect(toolNames(h.modelRequests()[2]!)).toContain('mcp_fx_echo');
  expect(starts(startsFile)).toHaveLength(1);
});
