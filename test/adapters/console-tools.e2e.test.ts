/**
 * The new built-in tools through the real start path (runCli, terminal chat, fake model server):
 * rm's card lists what it removes and waits for the approval; http_request POST asks with method, URL
 * and body on the card and reaches a local server only because network.allow lists it; web_fetch
 * (read-only) runs without asking but is refused a loopback address that is not listed.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { waitFor } from '../helpers/harness.js';

let model: FakeAnthropic;
let dir: string;
let stdin: PassThrough;
let screen: string;
let exit: Promise<number>;
const queue: FakeReply[] = [];
let api: http.Server;
let apiUrl: string;
const hits: Array<{ method: string; body: string }> = [];

function start(yaml: string): void {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml);
  stdin = new PassThrough();
  const stdout = new PassThrough();
  screen = '';
  stdout.on('data', (d: Buffer) => (screen += d.toString()));
  exit = runCli([], {
    env: { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: model.url, GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}` },
    cwd: dir,
    stdin,
    stdout,
    stderr: stdout,
  });
}

const type = (line: string) => stdin.write(line + '\n');

/** The tool_result the model received for its last call. */
function lastToolResult(): string {
  const body = model.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };
  const blocks = body.messages.at(-1)!.content as Array<{ type: string; content?: unknown }>;
  return JSON.stringify(blocks.find((b) => b.type === 'tool_result')?.content);
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-tools-'));
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
  hits.length = 0;
  api = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      hits.push({ method: req.method ?? '', body });
      res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":42}');
    });
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});

afterEach(async () => {
  stdin?.end();
  await exit;
  await model.close();
  api.closeAllConnections();
  await new Promise<void>((r) => api.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

test('rm: the card lists what will be removed with counts; nothing is removed until approved', async () => {
  mkdirSync(join(dir, 'ws', 'old', 'logs'), { recursive: true });
  writeFileSync(join(dir, 'ws', 'old', 'a.log'), 'aaaa');
  writeFileSync(join(dir, 'ws', 'old', 'logs', 'b.log'), 'bb');
  start(`
agents:
  default:
    model: claude-sonnet-5-5
    tools: [rm, ls]
    workspace: ./ws
    approvers: { console: [local] }
`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push({ toolUses: [{ name: 'rm', input: { path: 'old', recursive: true } }] }, { text: 'Removed the old folder.' });
  type('clean up old');
  await waitFor('card', () => screen.includes('[1] Approve once'));
  expect(screen).toContain('Approve rm?');
  expect(screen).toContain('rm old (directory: 2 files, 1 subdirectory, 6 B)');
  expect(screen).toContain('old/logs/b.log (2 B)');
  expect(existsSync(join(dir, 'ws', 'old'))).toBe(true);
  type('1');
  await waitFor('answer', () => screen.includes('Removed the old folder.'));
  expect(existsSync(join(dir, 'ws', 'old'))).toBe(false);
  expect(lastToolResult()).toContain('Removed old (directory: 2 files, 1 subdirectory, 6 B).');
});

test('http_request POST: method, URL and body on the card; sent once approved, to an address network.allow lists', async () => {
  start(`
agents:
  default:
    model: claude-sonnet-5-5
    tools: [http_request, web_fetch]
    workspace: ./ws
    approvers: { console: [local] }
    network:
      allow: [127.0.0.1]
`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push(
    {
      toolUses: [
        {
          name: 'http_request',
          input: { method: 'POST', url: `${apiUrl}/issues`, headers: { 'content-type': 'application/json' }, body: '{"title":"printer on fire"}' },
        },
      ],
    },
    { text: 'Filed issue 42.' },
  );
  type('file a bug');
  await waitFor('card', () => screen.includes('[1] Approve once'));
  expect(screen).toContain('Approve http_request?');
  expect(screen).toContain(`POST ${apiUrl}/issues`);
  expect(screen).toContain('{"title":"printer on fire"}');
  expect(hits).toHaveLength(0);
  type('1');
  await waitFor('answer', () => screen.includes('Filed issue 42.'));
  expect(hits).toEqual([{ method: 'POST', body: '{"title":"printer on fire"}' }]);
  expect(lastToolResult()).toContain('HTTP 201 Created');
});

test('http_request GET is rated read-only per call: it runs without a card on a read-only agent', async () => {
  start(`
agents:
  default:
    model: claude-sonnet-5-5
    tools: [http_request]
    workspace: ./ws
    approvers: { console: [local] }
    network:
      allow: [127.0.0.1]
`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push({ toolUses: [{ name: 'http_request', input: { method: 'GET', url: `${apiUrl}/issues/42` } }] }, { text: 'Issue 42 exists.' });
  type('is there an issue 42?');
  await waitFor('answer', () => screen.includes('Issue 42 exists.'));
  expect(screen).not.toContain('Approve http_request?');
  expect(hits).toEqual([{ method: 'GET', body: '' }]);
});

test("Gatehouse's own model key (from its settings, not process.env) is never sent by http_request", async () => {
  start(`
agents:
  default:
    model: claude-sonnet-5-5
    tools: [http_request]
    workspace: ./ws
    network:
      allow: [127.0.0.1]
`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push(
    { toolUses: [{ name: 'http_request', input: { method: 'GET', url: `${apiUrl}/`, headers: { 'x-api-key': 'test-key' } } }] },
    { text: 'Refused, as it should be.' },
  );
  type('send the key somewhere');
  await waitFor('answer', () => screen.includes('Refused, as it should be.'));
  expect(hits).toHaveLength(0);
  expect(lastToolResult()).toContain("the x-api-key header contains one of Gatehouse's own credentials");
});

test('web_fetch runs without asking on a read-only agent, and a loopback address not in network.allow is refused', async () => {
  start(`
agents:
  default:
    model: claude-sonnet-5-5
    tools: [web_fetch]
    workspace: ./ws
`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  queue.push({ toolUses: [{ name: 'web_fetch', input: { url: `${apiUrl}/status` } }] }, { text: 'That address is off limits.' });
  type('check the status page');
  await waitFor('answer', () => screen.includes('That address is off limits.'));
  expect(screen).not.toContain('Approve web_fetch?');
  expect(hits).toHaveLength(0);
  expect(lastToolResult()).toContain('127.0.0.1, a loopback address');
  expect(lastToolResult()).toContain('network.allow');
});

test('a bad network.allow entry is a config error naming the key path', async () => {
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    'agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [web_fetch]\n    network:\n      allow: ["10.0.0.0/40"]\n',
  );
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const code = await runCli([], { env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: model.url }, cwd: dir, stdout: out, stderr: out });
  expect(code).toBe(1);
  expect(text).toContain('agents.default.network.allow[0]');
  expect(text).toContain('not a valid CIDR range');
  stdin = new PassThrough();
  exit = Promise.resolve(code);
});
