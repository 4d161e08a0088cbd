/**
 * `gatehouse acp` as a real process, driven by the ACP SDK's client side over its stdio, against the
 * fake Anthropic server: what an editor sees (streamed chunks, tool calls and their status,
 * permission requests) and what the gate did (files written or not).
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Readable, Writable } from 'node:stream';
import {
  client,
  ndJsonStream,
  type ClientConnection,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type CreateElicitationRequest,
  type CreateElicitationResponse,
  type McpServer,
  type SessionNotification,
} from '@agentclientprotocol/sdk';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { startGatehouse, type TestProcess, unattendedEnv, waitForProcess } from '../helpers/process.js';

let fake: FakeAnthropic;
let dir: string;
let workspace: string;
let script: Array<FakeReply | ((req: RecordedRequest) => FakeReply)>;

const YAML = (ws: string) => `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file, write_file, get_time]
    tier: read-only
    workspace: "${ws}"
  locked:
    model: claude-sonnet-5-5
    tools: [read_file, write_file]
    tier: read-only
    workspace: "${ws}"
    toolPolicy: { write_file: deny }
  thinker:
    model: claude-sonnet-5-5
    tools: [get_time]
    workspace: "${ws}"
    maxTokens: 4096
    thinking: { budgetTokens: 2048 }
  asking:
    model: claude-sonnet-5-5
    tools: [read_file, ask_user_question, ask_file_picker]
    tier: read-only
    workspace: "${ws}"
  delegating:
    model: claude-sonnet-5-5
    tools: [read_file, write_file, spawn_subagent]
    tier: low-risk
    workspace: "${ws}"
    toolPolicy: { write_file: ask }
`;

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  script = [];
  fake.setHandler((req) => {
    const next = script.shift();
    if (!next) return { text: '(no scripted reply)' };
    return typeof next === 'function' ? next(req) : next;
  });
  dir = mkdtempSync(join(tmpdir(), 'gh-acp-'));
  chmodSync(dir, 0o711);
  workspace = join(dir, 'workspace');
  writeFileSync(join(dir, 'gatehouse.yaml'), YAML(workspace));
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The text of the last tool_result the model was sent. */
function lastToolResult(req: RecordedRequest): string {
  const msgs = (req.body as { messages: Array<{ role: string; content: unknown }> }).messages;
  const last = msgs[msgs.length - 1]!;
  const blocks = Array.isArray(last.content) ? (last.content as Array<{ type: string; content?: unknown }>) : [];
  const r = blocks.find((b) => b.type === 'tool_result');
  return typeof r?.content === 'string' ? r.content : JSON.stringify(r?.content ?? '');
}
const echoToolResult = (req: RecordedRequest): FakeReply => ({ text: `RESULT: ${lastToolResult(req)}` });

type Decide = (req: RequestPermissionRequest) => RequestPermissionResponse | Promise<RequestPermissionResponse>;

interface Editor {
  p: TestProcess;
  conn: ClientConnection;
  updates: SessionNotification[];
  asked: RequestPermissionRequest[];
  decide: { fn: Decide };
  forms: CreateElicitationRequest[];
  answerForm: { fn: (req: CreateElicitationRequest) => CreateElicitationResponse };
}

const pick =
  (optionId: string): Decide =>
  () => ({ outcome: { outcome: 'selected', optionId } });

/** `gatehouse acp ARGS` with an SDK client on its stdio; `forms`: it says it shows elicitation forms. */
async function editor(args: string[] = [], opts: { forms?: boolean } = {}): Promise<Editor> {
  const p = startGatehouse(['acp', ...args], {
    cwd: dir,
    onlyEnv: true,
    env: unattendedEnv(dir, fake.url),
  });
  const updates: SessionNotification[] = [];
  const asked: RequestPermissionRequest[] = [];
  const decide = { fn: pick('reject') };
  const forms: CreateElicitationRequest[] = [];
  const answerForm = { fn: (_req: CreateElicitationRequest): CreateElicitationResponse => ({ action: 'decline' }) };
  const app = client({ name: 'test-editor' })
    .onRequest('elicitation/create', async ({ params }) => {
      forms.push(params);
      return answerForm.fn(params);
    })
    .onNotification('session/update', ({ params }) => {
      updates.push(params);
    })
    .onRequest('session/request_permission', async ({ params }) => {
      asked.push(params);
      return decide.fn(params);
    });
  const conn = app.connect(
    ndJsonStream(Writable.toWeb(p.child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(p.child.stdout) as ReadableStream<Uint8Array>),
  );
  const init = await conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: opts.forms ? { elicitation: { form: {} } } : {} });
  expect(init.protocolVersion).toBe(1);
  return { p, conn, updates, asked, decide, forms, answerForm };
}

async function close(e: Editor): Promise<void> {
  e.p.child.stdin.end();
  const exit = await e.p.exited;
  expect(exit.code).toBe(0);
  // stdout carried protocol frames only.
  for (const line of e.p
    .stdout()
    .split('\n')
    .filter((l) => l.trim() !== ''))
    expect((JSON.parse(line) as { jsonrpc?: string }).jsonrpc).toBe('2.0');
}

const newSession = async (e: Editor) => (await e.conn.agent.request('session/new', { cwd: dir, mcpServers: [] })).sessionId;
const prompt = (e: Editor, sessionId: string, text: string) => e.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });
const chunks = (e: Editor, sessionId: string) =>
  e.updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === 'agent_message_chunk')
    .map((u) => (u.update as { content: { type: string; text?: string } }).content.text ?? '')
    .join('');
const toolStatuses = (e: Editor, sessionId: string) =>
  e.updates
    .filter((u) => u.sessionId === sessionId && (u.update.sessionUpdate === 'tool_call' || u.update.sessionUpdate === 'tool_call_update'))
    .map((u) => `${u.update.sessionUpdate}:${(u.update as { status?: string }).status ?? ''}`);

const write = (path: string, content: string): FakeReply => ({ toolUses: [{ name: 'write_file', input: { path, content } }] });

test('a prompt streams its answer as agent_message_chunk updates, and the turn ends end_turn', async () => {
  script.push({ text: 'Hello from the gatehouse agent.' });
  const e = await editor();
  const sid = await newSession(e);
  const r = await prompt(e, sid, 'hi');
  expect(r.stopReason).toBe('end_turn');
  expect(chunks(e, sid)).toBe('Hello from the gatehouse agent.');
  expect(e.updates.filter((u) => u.update.sessionUpdate === 'agent_message_chunk').length).toBeGreaterThan(1);
  const sent = (fake.requests[0]!.body as { messages: Array<{ content: unknown }> }).messages[0]!.content;
  expect(JSON.stringify(sent)).toContain('hi');
  await close(e);
}, 180_000);

test("an agent with thinking: its reasoning streams as agent_thought_chunk, apart from the answer's message chunks", async () => {
  script.push({ thinking: 'Weighing a short greeting.', text: 'Hi there.' });
  const e = await editor(['--agent', 'thinker']);
  const sid = await newSession(e);
  expect((await prompt(e, sid, 'hi')).stopReason).toBe('end_turn');
  const thoughts = e.updates
    .filter((u) => u.sessionId === sid && u.update.sessionUpdate === 'agent_thought_chunk')
    .map((u) => (u.update as { content: { text?: string } }).content.text ?? '');
  expect(thoughts.length).toBeGreaterThan(1);
  expect(thoughts.join('')).toBe('Weighing a short greeting.');
  expect(chunks(e, sid)).toBe('Hi there.');
  await close(e);
}, 180_000);

test('a model error is shown to the editor as a message chunk; /reset starts the session over, as in a chat', async () => {
  script.push({ text: 'remember 7' }, { error: { status: 400, type: 'invalid_request_error', message: 'prompt is too long' } }, { text: 'fine now' });
  const e = await editor();
  const sid = await newSession(e);
  await prompt(e, sid, 'first');
  expect((await prompt(e, sid, 'too much')).stopReason).toBe('end_turn');
  expect(chunks(e, sid)).toMatch(/\[error\] This conversation is too long.*\/reset/);
  expect((await prompt(e, sid, '/reset')).stopReason).toBe('end_turn');
  expect(chunks(e, sid)).toContain('Started a new conversation');
  await prompt(e, sid, 'again');
  expect(chunks(e, sid)).toContain('fine now');
  // After the reset the model sees only the new message.
  const last = fake.requests[fake.requests.length - 1]!.body as { messages: unknown[] };
  expect(last.messages).toHaveLength(1);
  await close(e);
}, 180_000);

test('a call above the tier asks the client; allow once runs it, reject does not (the file is never written)', async () => {
  script.push(write('once.txt', 'yes'), echoToolResult, write('never.txt', 'no'), echoToolResult);
  const e = await editor();
  const sid = await newSession(e);
  e.decide.fn = pick('allow_once');
  expect((await prompt(e, sid, 'write once')).stopReason).toBe('end_turn');
  expect(e.asked).toHaveLength(1);
  expect(e.asked[0]!.options.map((o) => o.kind)).toEqual(['allow_once', 'allow_always', 'reject_once']);
  expect(readFileSync(join(workspace, 'once.txt'), 'utf8')).toBe('yes');
  expect(toolStatuses(e, sid)).toEqual(['tool_call:pending', 'tool_call_update:in_progress', 'tool_call_update:completed']);

  const sid2 = await newSession(e);
  e.decide.fn = pick('reject');
  expect((await prompt(e, sid2, 'write never')).stopReason).toBe('end_turn');
  expect(e.asked).toHaveLength(2);
  expect(existsSync(join(workspace, 'never.txt'))).toBe(false);
  expect(toolStatuses(e, sid2)).toEqual(['tool_call:pending', 'tool_call_update:failed']);
  // The model is told the call did not run.
  expect(chunks(e, sid2)).toMatch(/RESULT: .*denied by ACP client/i);
  await close(e);
}, 240_000);

test('two gated calls in one reply are asked one by one, each decided on its own', async () => {
  script.push(
    {
      toolUses: [
        { name: 'write_file', input: { path: 'yes.txt', content: 'y' } },
        { name: 'write_file', input: { path: 'no.txt', content: 'n' } },
      ],
    },
    echoToolResult,
  );
  const e = await editor();
  const sid = await newSession(e);
  e.decide.fn = (req) => ({ outcome: { outcome: 'selected', optionId: JSON.stringify(req.toolCall).includes('yes.txt') ? 'allow_once' : 'reject' } });
  expect((await prompt(e, sid, 'two')).stopReason).toBe('end_turn');
  expect(e.asked).toHaveLength(2);
  expect(existsSync(join(workspace, 'yes.txt'))).toBe(true);
  expect(existsSync(join(workspace, 'no.txt'))).toBe(false);
  await close(e);
}, 180_000);

test('allow always skips the second ask for the same approval key', async () => {
  script.push(write('a.txt', '1'), echoToolResult, write('b.txt', '2'), echoToolResult);
  const e = await editor();
  const sid = await newSession(e);
  e.decide.fn = pick('allow_always');
  await prompt(e, sid, 'first');
  e.decide.fn = pick('reject');
  await prompt(e, sid, 'second');
  expect(e.asked).toHaveLength(1);
  expect(readFileSync(join(workspace, 'a.txt'), 'utf8')).toBe('1');
  expect(readFileSync(join(workspace, 'b.txt'), 'utf8')).toBe('2');
  await close(e);
}, 240_000);

test('a client that cannot answer (an error, or a cancelled outcome) declines the call; never a silent allow', async () => {
  script.push(write('err.txt', 'x'), echoToolResult, write('cancel.txt', 'x'), echoToolResult);
  const e = await editor();
  const sid = await newSession(e);
  e.decide.fn = () => {
    throw new Error('this editor has no permission UI');
  };
  expect((await prompt(e, sid, 'one')).stopReason).toBe('end_turn');
  e.decide.fn = () => ({ outcome: { outcome: 'cancelled' } });
  expect((await prompt(e, sid, 'two')).stopReason).toBe('end_turn');
  expect(e.asked).toHaveLength(2);
  expect(existsSync(join(workspace, 'err.txt'))).toBe(false);
  expect(existsSync(join(workspace, 'cancel.txt'))).toBe(false);
  // Each time the model is told why it did not run.
  const told = chunks(e, sid).split('RESULT: ').slice(1);
  expect(told).toHaveLength(2);
  for (const t of told) expect(t).toMatch(/no answer given/);
  await close(e);
}, 240_000);

test('a toolPolicy deny never asks: the call is reported failed and nothing is written', async () => {
  script.push(write('denied.txt', 'x'), echoToolResult);
  const e = await editor(['--agent', 'locked']);
  const sid = await newSession(e);
  e.decide.fn = pick('allow_once');
  await prompt(e, sid, 'try');
  expect(e.asked).toHaveLength(0);
  expect(existsSync(join(workspace, 'denied.txt'))).toBe(false);
  expect(toolStatuses(e, sid)).toEqual(['tool_call:failed']);
  expect(chunks(e, sid)).toMatch(/RESULT: .*toolPolicy/);
  await close(e);
}, 240_000);

test('--approval-policy raises the tier for the process: the call runs without asking', async () => {
  script.push(write('tier.txt', 'ok'), echoToolResult);
  const e = await editor(['--approval-policy', 'low-risk']);
  const sid = await newSession(e);
  await prompt(e, sid, 'write');
  expect(e.asked).toHaveLength(0);
  expect(readFileSync(join(workspace, 'tier.txt'), 'utf8')).toBe('ok');
  await close(e);
}, 240_000);

test('session/cancel stops a running turn: the prompt resolves cancelled', async () => {
  script.push({ hang: true });
  const e = await editor();
  const sid = await newSession(e);
  const running = prompt(e, sid, 'take forever');
  await waitForProcess(e.p, 'the model request', () => fake.requests.length >= 1, 60_000);
  await e.conn.agent.notify('session/cancel', { sessionId: sid });
  expect((await running).stopReason).toBe('cancelled');
  // The session takes the next prompt.
  script.push({ text: 'back' });
  expect((await prompt(e, sid, 'again')).stopReason).toBe('end_turn');
  expect(chunks(e, sid)).toContain('back');
  await close(e);
}, 240_000);

test('cancel while a permission request is open: the turn stops, the call never runs, a second prompt meanwhile is refused', async () => {
  script.push(write('late.txt', 'x'), echoToolResult);
  const e = await editor();
  const sid = await newSession(e);
  // An editor whose user has not answered yet: the answer comes only when the request is withdrawn.
  e.decide.fn = () => new Promise<RequestPermissionResponse>(() => undefined);
  const running = prompt(e, sid, 'write late');
  await waitForProcess(e.p, 'the permission request', () => e.asked.length === 1, 60_000);
  await expect(prompt(e, sid, 'meanwhile')).rejects.toThrow(/already runs a prompt/);
  await e.conn.agent.notify('session/cancel', { sessionId: sid });
  expect((await running).stopReason).toBe('cancelled');
  expect(existsSync(join(workspace, 'late.txt'))).toBe(false);
  expect(toolStatuses(e, sid)).toContain('tool_call:pending');
  expect(toolStatuses(e, sid)).not.toContain('tool_call_update:completed');
  await close(e);
}, 240_000);

test("a sub-agent's gated call asks the client with a title naming the sub-agent; rejected, nothing is written", async () => {
  script.push(
    { toolUses: [{ name: 'spawn_subagent', input: { task: 'Write sub.txt.', tools: ['write_file'] } }] },
    write('sub.txt', 'from the sub-agent'),
    echoToolResult,
    echoToolResult,
  );
  const e = await editor(['--agent', 'delegating']);
  const sid = await newSession(e);
  e.decide.fn = pick('reject');
  expect((await prompt(e, sid, 'delegate')).stopReason).toBe('end_turn');
  expect(e.asked).toHaveLength(1);
  expect(JSON.stringify(e.asked[0]!.toolCall)).toContain('Sub-agent: approve write_file?');
  expect(existsSync(join(workspace, 'sub.txt'))).toBe(false);
  // The sub-agent read the denial; its answer (echoing it) is what the parent read.
  expect(chunks(e, sid)).toMatch(/RESULT: RESULT: write_file did not run: denied by ACP client/i);
  await close(e);
}, 240_000);

test('session/load after a restart replays the conversation (messages, tool calls) and the next prompt continues it', async () => {
  script.push({ toolUses: [{ name: 'get_time', input: {} }] }, { text: 'Noted: the number is 7.' });
  const first = await editor();
  const sid = await newSession(first);
  expect((await prompt(first, sid, 'remember the number 7')).stopReason).toBe('end_turn');
  await close(first);

  const e = await editor();
  await e.conn.agent.request('session/load', { sessionId: sid, cwd: dir, mcpServers: [] });
  // Every replayed update arrived before session/load answered.
  const replayed = e.updates.filter((u) => u.sessionId === sid).map((u) => u.update);
  const shown = replayed.map((u) => `${u.sessionUpdate}:${'content' in u && !Array.isArray(u.content) ? (u.content as { text?: string }).text : ''}`);
  expect(shown).toEqual(['user_message_chunk:remember the number 7', 'tool_call:', 'agent_message_chunk:Noted: the number is 7.']);
  expect(replayed[1]).toMatchObject({ sessionUpdate: 'tool_call', title: 'get_time', kind: 'other', status: 'completed' });

  script.push({ text: 'It was 7.' });
  expect((await prompt(e, sid, 'which number?')).stopReason).toBe('end_turn');
  const sent = JSON.stringify((fake.requests.at(-1)!.body as { messages: unknown[] }).messages);
  expect(sent).toContain('remember the number 7');
  expect(sent).toContain('Noted: the number is 7.');
  expect(chunks(e, sid)).toBe('Noted: the number is 7.It was 7.');
  await close(e);
}, 240_000);

test("session/load of a session the store does not hold, or of another agent's, is refused and replays nothing", async () => {
  script.push({ text: 'hello' });
  const first = await editor();
  const sid = await newSession(first);
  await prompt(first, sid, 'hi');
  await close(first);

  const e = await editor(['--agent', 'locked']);
  const init = await e.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  expect(init.agentCapabilities?.loadSession).toBe(true);
  await expect(e.conn.agent.request('session/load', { sessionId: 'no-such-session', cwd: dir, mcpServers: [] })).rejects.toThrow(/not found/i);
  await expect(e.conn.agent.request('session/load', { sessionId: sid, cwd: dir, mcpServers: [] })).rejects.toThrow(/--agent default/);
  expect(e.updates).toEqual([]);
  // Still not loaded: a prompt to it is refused as an unknown session.
  await expect(prompt(e, sid, 'hi again')).rejects.toThrow(/not found/i);
  await close(e);
}, 240_000);

const offeredTools = (req: RecordedRequest) => ((req.body as { tools?: Array<{ name: string }> }).tools ?? []).map((t) => t.name);

test('an editor that shows forms gets ask_user_question as an elicitation form; a chosen suggestion and a typed answer come back', async () => {
  const question = {
    name: 'ask_user_question',
    input: {
      question: 'Which color?',
      suggestions: [
        { value: 'red-value', label: 'Red' },
        { value: 'blue-value', label: 'Blue' },
      ],
    },
  };
  script.push({ toolUses: [question] }, echoToolResult, { toolUses: [question] }, echoToolResult);
  const e = await editor(['--agent', 'asking'], { forms: true });
  const sid = await newSession(e);
  e.answerForm.fn = () => ({ action: 'accept', content: { choice: 'answer:1' } });
  expect((await prompt(e, sid, 'ask me')).stopReason).toBe('end_turn');
  expect(offeredTools(fake.requests[0]!)).toContain('ask_user_question');
  expect(e.forms).toHaveLength(1);
  expect(e.forms[0]).toMatchObject({ mode: 'form', sessionId: sid, message: expect.stringContaining('Which color?') });
  const schema = (e.forms[0] as { requestedSchema: { properties: Record<string, { oneOf?: Array<{ const: string; title: string }> }> } }).requestedSchema;
  expect(schema.properties['choice']?.oneOf?.map((o) => o.title)).toEqual(['Red', 'Blue']);
  expect(schema.properties['answer']).toBeDefined();
  expect(chunks(e, sid)).toContain('RESULT: Answer from ACP client: blue-value');

  // Typed text answers too (allowCustom is the default).
  e.answerForm.fn = () => ({ action: 'accept', content: { answer: 'green, actually' } });
  await prompt(e, sid, 'ask again');
  expect(chunks(e, sid)).toContain('RESULT: Answer from ACP client: green, actually');
  await close(e);
}, 240_000);

test('the file picker is a form of the files; a declined form or a choice it did not offer is no answer, never a pick', async () => {
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, 'a.md'), 'a');
  writeFileSync(join(workspace, 'b.md'), 'b');
  const picker = { toolUses: [{ name: 'ask_file_picker', input: { prompt: 'Which doc?', pattern: '*.md' } }] };
  script.push(picker, echoToolResult, picker, echoToolResult, picker, echoToolResult);
  const e = await editor(['--agent', 'asking'], { forms: true });
  const sid = await newSession(e);
  e.answerForm.fn = () => ({ action: 'accept', content: { choice: 'answer:1' } });
  await prompt(e, sid, 'pick one');
  const schema = (e.forms[0] as { requestedSchema: { properties: Record<string, { oneOf?: Array<{ title: string }> }> } }).requestedSchema;
  expect(schema.properties['choice']?.oneOf?.map((o) => o.title)).toEqual(['a.md', 'b.md']);
  expect(chunks(e, sid)).toContain('RESULT: Picked by ACP client: b.md');

  e.answerForm.fn = () => ({ action: 'decline' });
  await prompt(e, sid, 'pick again');
  expect(chunks(e, sid)).toContain('RESULT: Nobody picked a file in time');

  e.answerForm.fn = () => ({ action: 'accept', content: { choice: 'answer:7' } });
  await prompt(e, sid, 'and again');
  expect(e.forms).toHaveLength(3);
  expect(chunks(e, sid).split('Nobody picked a file in time')).toHaveLength(3);
  await close(e);
}, 240_000);

test('an editor without forms is offered no ask_user_question', async () => {
  script.push({ text: 'ok' });
  const e = await editor(['--agent', 'asking']);
  const sid = await newSession(e);
  await prompt(e, sid, 'hi');
  expect(offeredTools(fake.requests[0]!)).not.toContain('ask_user_question');
  expect(e.forms).toEqual([]);
  await close(e);
}, 240_000);

const MCP_FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', 'fakes', 'mcp-server.mjs');

test("the editor's MCP servers are the agent's for the session: a stdio server's tool is offered, asked and run; SSE is refused", async () => {
  const args = { text: 'from the editor', tags: ['acp'] };
  script.push({ toolUses: [{ name: 'mcp_fx-tools_echo', input: args }] }, echoToolResult);
  const e = await editor();
  const mcpServers: McpServer[] = [
    { name: 'fx tools', command: process.execPath, args: [MCP_FIXTURE], env: [{ name: 'FIXTURE_STARTS_FILE', value: join(dir, 'starts') }] },
    { type: 'sse', name: 'old', url: 'http://127.0.0.1:9/sse', headers: [] },
  ];
  const sid = (await e.conn.agent.request('session/new', { cwd: dir, mcpServers })).sessionId;
  e.decide.fn = pick('allow_once');
  expect((await prompt(e, sid, 'echo it')).stopReason).toBe('end_turn');
  const offered = offeredTools(fake.requests[0]!);
  expect(offered).toContain('mcp_fx-tools_echo');
  expect(offered.some((t) => t.startsWith('mcp_old'))).toBe(false);
  // High-risk like any MCP tool: the editor was asked, then the server ran it.
  expect(e.asked).toHaveLength(1);
  expect(JSON.stringify(e.asked[0]!.toolCall)).toContain('mcp_fx-tools_echo');
  expect(chunks(e, sid)).toContain(JSON.stringify(args));
  expect(readFileSync(join(dir, 'starts'), 'utf8').trim().split('\n')).toHaveLength(1);
  expect(e.p.stderr()).toMatch(/MCP server old is not used: SSE MCP servers are not supported/);

  // A second session passing the same server shares it: one server process, no second name.
  script.push({ toolUses: [{ name: 'mcp_fx-tools_echo', input: { text: 'again' } }] }, echoToolResult);
  const again = (await e.conn.agent.request('session/new', { cwd: dir, mcpServers: mcpServers.slice(0, 1) })).sessionId;
  await prompt(e, again, 'echo again');
  expect(offeredTools(fake.requests.at(-2)!).filter((t) => t.startsWith('mcp_'))).toEqual(offered.filter((t) => t.startsWith('mcp_')));
  expect(readFileSync(join(dir, 'starts'), 'utf8').trim().split('\n')).toHaveLength(1);
  await close(e);
}, 240_000);

test('usage errors exit 2 before any frame', async () => {
  for (const [args, why] of [
    [['--approval-policy', 'admin'], /--approval-policy must be one of/],
    [['--agent', 'nobody'], /no agent named "nobody"/],
  ] as const) {
    const p = startGatehouse(['acp', ...args], { cwd: dir, env: { ANTHROPIC_BASE_URL: fake.url } });
    const exit = await p.exited;
    expect({ code: exit.code, stdout: p.stdout() }).toEqual({ code: 2, stdout: '' });
    expect(p.stderr()).toMatch(why);
  }
}, 120_000);

test('a chat service started while a permission request is open leaves the session alone: allowed afterwards, the call runs here', async () => {
  script.push(write('beside.txt', 'kept'), echoToolResult);
  const e = await editor();
  const sid = await newSession(e);
  let answer!: (r: RequestPermissionResponse) => void;
  const asked = new Promise<void>((resolve) => {
    e.decide.fn = () => {
      resolve();
      return new Promise<RequestPermissionResponse>((r) => (answer = r));
    };
  });
  const turn = prompt(e, sid, 'write beside');
  await asked;
  // The service opens the same store at start; the session's run, its stored record and its card
  // belong to this editor's process, which is waiting on them.
  const service = startGatehouse(['serve'], { cwd: dir, onlyEnv: true, env: unattendedEnv(dir, fake.url) });
  await waitForProcess(service, 'the attach socket', () => existsSync(join(dir, 'data', 'gatehouse.sock')));
  answer({ outcome: { outcome: 'selected', optionId: 'allow_once' } });
  expect((await turn).stopReason).toBe('end_turn');
  expect(readFileSync(join(workspace, 'beside.txt'), 'utf8')).toBe('kept');
  expect(chunks(e, sid)).toContain('RESULT');
  expect(toolStatuses(e, sid)).toEqual(['tool_call:pending', 'tool_call_update:in_progress', 'tool_call_update:completed']);
  service.child.kill('SIGTERM');
  expect((await service.exited).code).toBe(0);
  // Before, the service took the session's run as its own to continue, and crashed it for want of an
  // adapter ("no adapter for conversation acp:…").
  expect(service.output()).not.toContain(sid);
  expect(service.output()).not.toMatch(/continuing \d+ run/);
  await close(e);
}, 240_000);
