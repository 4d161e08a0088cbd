/**
 * Issue 24 headless: `gatehouse run` as a real process, execute_command in bwrap with
 * `sandboxNetwork: { allow }`, a command connecting to a 127.0.0.1 port not on the list. Unattended: the
 * explained decline (and the fix: --interactive-stdin, or the allow entry) in the tool result, nothing
 * reached. --interactive-stdin: the held connection is an `approval_required` on stderr; approved on
 * stdin, the command gets the server's response.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { runGatehouse, startGatehouse, unattendedEnv } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { type CountingServer, lastToolResult, startCountingServer } from '../agent/egress/helpers.js';

let fake: FakeAnthropic;
let dir: string;
let srv: CountingServer;
let port: number;
let hits: string[];
const script: Array<FakeReply | ((req: RecordedRequest) => FakeReply)> = [];

const echo = (req: RecordedRequest): FakeReply => ({ text: `RESULT: ${lastToolResult(req)}` });
const lines = (s: string): Array<Record<string, unknown>> =>
  s
    .split('\n')
    .filter((l) => l.trim().startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

beforeAll(async () => {
  srv = await startCountingServer(() => 'hello-headless');
  ({ port, hits } = srv);
});
afterAll(() => srv.close());
beforeEach(async () => {
  hits.length = 0;
  script.length = 0;
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  fake.setHandler((req) => {
    const next = script.shift();
    if (!next) return { text: '(no scripted reply)' };
    return typeof next === 'function' ? next(req) : next;
  });
  dir = mkdtempSync(join(tmpdir(), 'gh-run-egress-'));
  chmodSync(dir, 0o711);
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [execute_command]\n    tier: read-only\n    autoApprovedCommands: ["curl"]\n    workspace: "${join(dir, 'ws')}"\n    sandboxNetwork: { allow: ["127.0.0.1:1"] }\n`,
  );
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const env = () => unattendedEnv(dir, fake.url);
const command = () => ({ toolUses: [{ name: 'execute_command', input: { command: `curl -sS -w ' %{http_code}' http://127.0.0.1:${port}/h` } }] });

test('unattended: the connection is declined with what would allow it; nothing reached the server', async () => {
  script.push(command(), echo);
  const r = await runGatehouse(['run', '--json', 'fetch'], dir, fake.url);
  expect(r.code).toBe(0);
  const answer = (JSON.parse(r.stdout) as { answer: string }).answer;
  expect(answer).toContain(`gatehouse egress proxy: 127.0.0.1:${port} is not on this agent's sandboxNetwork.allow list, and no approver is bound for cli`);
  expect(answer).toContain(' 403');
  expect(answer).toContain(
    `add "127.0.0.1:${port}" to agents.default.sandboxNetwork.allow in gatehouse.yaml, or run it again with --interactive-stdin to approve it`,
  );
  expect(hits).toEqual([]);
}, 180_000);

test('--interactive-stdin: the held connection is an approval_required; approved on stdin, the command gets the response', async () => {
  script.push(command(), echo);
  const p = startGatehouse(['run', '--json', '--interactive-stdin', 'fetch'], { cwd: dir, env: env(), onlyEnv: true });
  const asked = await waitFor(
    'approval_required',
    () => lines(p.stderr()).find((e) => e['type'] === 'approval_required' && JSON.stringify(e).includes(`wants 127.0.0.1:${port}`)),
    { timeoutMs: 60_000, intervalMs: 20 },
  );
  expect(hits).toEqual([]);
  p.child.stdin.write(`${JSON.stringify({ type: 'approval_response', requestId: asked['requestId'], value: 'approve' })}\n`);
  const { code } = await p.exited;
  expect(code).toBe(0);
  expect((JSON.parse(p.stdout()) as { answer: string }).answer).toContain('hello-headless 200');
  expect(hits).toEqual(['/h']);
}, 180_000);
