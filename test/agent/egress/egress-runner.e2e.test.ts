/**
 * Issue 24 on the real start path: gatehouse.yaml `sandboxNetwork: { allow }` -> createGatehouse (starts
 * the agent's egress proxy) -> router -> runner -> gate -> execute_command in bwrap -> proxy -> a server
 * on 127.0.0.1; the audit trail has one `egress_connection` per connection.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RecordedRequest } from '../../fakes/anthropic.js';
import { Harness, agentYaml, waitFor } from '../../helpers/harness.js';

let h: Harness;
let server: Server;
let port: number;
let hits = 0;

beforeAll(async () => {
  server = createServer((_req, res) => {
    hits++;
    res.end('hello-from-allowed');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await h?.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function toolResults(req: RecordedRequest): string[] {
  const last = (req.body as { messages: Array<{ content: unknown }> }).messages.at(-1);
  return ((last?.content ?? []) as Array<{ type: string; content?: unknown }>)
    .filter((b) => b.type === 'tool_result')
    .map((b) => (typeof b.content === 'string' ? b.content : JSON.stringify(b.content)));
}

test('an allowed host is reached, an unlisted one gets the proxy 403, and both connections are audited', async () => {
  const logs: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
  h = await Harness.start({
    yaml: agentYaml('tools: [execute_command]', 'tier: read-only', 'autoApprovedCommands: ["curl"]', `sandboxNetwork: { allow: ["127.0.0.1:${port}"] }`),
    log: (_level, msg, fields) => void logs.push({ msg, ...(fields ? { fields } : {}) }),
  });
  expect(logs.some((l) => l.msg.includes(`network only through the egress proxy to 127.0.0.1:${port}`))).toBe(true);
  h.script(
    {
      toolUses: [
        { name: 'execute_command', input: { command: `curl -sS http://127.0.0.1:${port}/` } },
        { name: 'execute_command', input: { command: `curl -sS http://localhost:${port}/` } },
      ],
    },
    { text: 'done' },
  );
  await h.adapter.send('go');
  await waitFor('answer', () => h.adapter.answers()[0]);
  const req = h.modelRequests()[1];
  if (!req) throw new Error('no second model request');
  const [allowed, unlisted] = toolResults(req);
  expect(allowed).toContain('hello-from-allowed');
  expect(unlisted).toContain(`gatehouse egress proxy: localhost:${port} is not on this agent's sandboxNetwork.allow list`);
  expect(hits).toBe(1);
  const egress = logs.filter((l) => l.fields?.['event'] === 'egress_connection').map((l) => [l.fields?.['host'], l.fields?.['decision']]);
  // The two calls run at once: their connections come in either order.
  expect(egress.sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
    ['127.0.0.1', 'allowed'],
    ['localhost', 'refused'],
  ]);
}, 60_000);
