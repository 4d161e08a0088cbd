/**
 * Issue 24: the real execute_command tool with `sandboxNetwork: { allow }` as the bot wires it: an
 * EgressHub proxy per agent, its connections as `egress_connection` audit events, the command's exit
 * and output as the model sees them.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { AuditEvent } from '../../../agent/audit.js';
import { EgressHub, egressPolicy } from '../../../agent/egress/hub.js';
import { executeCommandTool } from '../../../agent/tools/builtin/execute-command.js';
import { prepareWorkspace } from '../../../agent/tools/sandbox/index.js';
import type { ToolContext } from '../../../agent/tools/types.js';

let base: string;
let ws: string;
let server: Server;
let port: number;
let hits = 0;
const events: AuditEvent[] = [];
let allow: string[] = [];
const hub = new EgressHub((e) => events.push(e));

beforeAll(async () => {
  base = mkdtempSync('/var/tmp/gh-egress-tool-');
  chmodSync(base, 0o755);
  ws = path.join(base, 'ws');
  mkdirSync(ws);
  await prepareWorkspace(ws);
  server = createServer((_req, res) => {
    hits++;
    res.end('hello-through-proxy');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  allow = [`127.0.0.1:${port}`];
});

afterAll(async () => {
  await hub.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(base, { recursive: true, force: true });
});

function ctx(): ToolContext {
  const state = new Map<string, unknown>();
  return {
    workspace: ws,
    signal: new AbortController().signal,
    conversationKey: 'console:egress',
    agentName: 'net',
    envAllowlist: [],
    state: { get: <T>(n: string) => state.get(n) as T | undefined, set: (n, v) => state.set(n, v) },
  };
}

async function run(command: string): Promise<string> {
  const socket = await hub.start('net', () => allow);
  const sockets = new Map([['net', socket]]);
  const tool = executeCommandTool({
    sandbox: { mode: 'bubblewrap', network: false, botFiles: [], ...egressPolicy({ name: 'net', sandboxEgress: allow }, sockets) },
    baseEnv: { PATH: '/usr/local/bin:/usr/bin:/bin' },
  });
  const c = ctx();
  const proposal = await tool.propose!({ command }, c);
  const result = await tool.execute({ command }, c, { proposal });
  return String(result.content);
}

test('curl through the tool reaches the allowed server; the connection is an audit event with its bytes', async () => {
  const out = await run(`curl -sS http://127.0.0.1:${port}/`);
  expect(out).toContain('hello-through-proxy');
  expect(hits).toBe(1);
  const e = events.filter((x) => x.event === 'egress_connection');
  expect(e).toEqual([expect.objectContaining({ event: 'egress_connection', agent: 'net', host: '127.0.0.1', port, method: 'HTTP', decision: 'allowed' })]);
  expect((e[0] as { bytesDown: number }).bytesDown).toBe('hello-through-proxy'.length);
});

test('the list is read at each connection: removed from it, the same command gets the proxy 403 and a refusal event', async () => {
  allow = ['example.org:443'];
  events.length = 0;
  const out = await run(`curl -sS -w ' %{http_code}' http://127.0.0.1:${port}/; echo; curl -sS -x '' http://127.0.0.1:${port}/ || echo no-route`);
  expect(out).toContain('list\n 403');
  expect(out).toContain(`gatehouse egress proxy: 127.0.0.1:${port} is not on this agent's sandboxNetwork.allow list`);
  expect(out).toContain('no-route');
  expect(hits).toBe(1);
  expect(events).toEqual([expect.objectContaining({ event: 'egress_connection', decision: 'refused', host: '127.0.0.1', bytesUp: 0, bytesDown: 0 })]);
});
