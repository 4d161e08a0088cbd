/**
 * `gatehouse run` as a real process (bot/main.ts through test/helpers/register-ts.mjs, what
 * bin/gatehouse.js runs once built) against the fake Anthropic server: what a script, a CI step or a
 * bridge sees on stdout, stderr and in the exit code; and attach mode against a running service.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { gatehouseMain as main, registerTs as register, startGatehouse, unattendedEnv } from '../helpers/process.js';
import { askReply } from '../helpers/questions.js';
import { waitFor } from '../helpers/wait.js';

interface Done {
  code: number | null;
  stdout: string;
  stderr: string;
}

let fake: FakeAnthropic;
let dir: string;
let workspace: string;
let script: Array<FakeReply | ((req: RecordedRequest) => FakeReply)>;

const YAML = (ws: string) => `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file, write_file, ask_user_question, ask_file_picker, get_time]
    tier: read-only
    workspace: "${ws}"
    approvers: { console: [local] }
`;

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  script = [];
  fake.setHandler((req) => {
    const next = script.shift();
    if (!next) return { text: '(no scripted reply)' };
    return typeof next === 'function' ? next(req) : next;
  });
  dir = mkdtempSync(join(tmpdir(), 'gh-run-'));
  chmodSync(dir, 0o711);
  workspace = join(dir, 'workspace');
  writeFileSync(join(dir, 'gatehouse.yaml'), YAML(workspace));
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}) => unattendedEnv(dir, fake.url, extra);

function start(
  args: string[],
  opts: { env?: Record<string, string>; stdin?: string } = {},
): { child: ChildProcess; done: Promise<Done>; stderr: () => string } {
  const p = startGatehouse(args, { cwd: dir, env: opts.env ?? env(), onlyEnv: true });
  if (opts.stdin !== undefined) p.child.stdin.end(opts.stdin);
  const done = p.exited.then(({ code }): Done => ({ code, stdout: p.stdout(), stderr: p.stderr() }));
  return { child: p.child, done, stderr: p.stderr };
}

function run(args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}): Promise<Done> {
  return start(args, { stdin: '', ...opts }).done;
}

const until = <T>(what: string, check: () => T | undefined | false, timeoutMs = 60_000): Promise<T> => waitFor(what, check, { timeoutMs, intervalMs: 20 });

const lines = (s: string): Array<Record<string, unknown>> =>
  s
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** The text of the last tool_result the model was sent. */
function lastToolResult(req: RecordedRequest): string {
  const msgs = (req.body as { messages: Array<{ role: string; content: unknown }> }).messages;
  const last = msgs[msgs.length - 1]!;
  const blocks = Array.isArray(last.content) ? (last.content as Array<{ type: string; content?: unknown }>) : [];
  const r = blocks.find((b) => b.type === 'tool_result');
  return typeof r?.content === 'string' ? r.content : JSON.stringify(r?.content ?? '');
}

const echoToolResult = (req: RecordedRequest): FakeReply => ({ text: `RESULT: ${lastToolResult(req)}` });
const toolNames = (req: RecordedRequest) => ((req.body as { tools?: Array<{ name: string }> }).tools ?? []).map((t) => t.name);

describe('output and exit codes', () => {
  test('--json prints exactly one JSON object on stdout and exits 0; without it, the answer text alone', async () => {
    script.push({ text: 'The answer is 42.', usage: { input_tokens: 100, output_tokens: 7 } });
    const r = await run(['run', '--json', '--', 'what is the answer?']);
    expect(r.code).toBe(0);
    expect(r.stdout.endsWith('\n')).toBe(true);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out).toEqual({
      ok: true,
      answer: 'The answer is 42.',
      costUSD: expect.any(Number),
      costKnown: true,
      usage: { inputTokens: 100, outputTokens: 7, cacheReadTokens: 0, cacheWriteTokens: 0 },
      conversation: null,
      declined: [],
    });
    expect(out.costUSD as number).toBeGreaterThan(0);

    script.push({ text: 'plain answer' });
    const plain = await run(['run', 'hello']);
    expect({ code: plain.code, stdout: plain.stdout }).toEqual({ code: 0, stdout: 'plain answer\n' });
  }, 180_000);

  test('the message may come on stdin', async () => {
    script.push((req) => ({ text: `got: ${JSON.stringify((req.body as { messages: Array<{ content: unknown }> }).messages[0]!.content)}` }));
    const r = await run(['run'], { stdin: 'from a pipe\n' });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('from a pipe');
  }, 240_000);

  test('usage and config errors exit 2 and say what is wrong, with nothing on stdout', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['run', '--bogus', 'hi'], /unknown option --bogus/],
      [['run', '--approval-policy', 'admin', 'hi'], /--approval-policy must be one of/],
      [['run', '--timeout', 'soon', 'hi'], /--timeout must be a positive number/],
      [['run', '--events', 'tools,gossip', 'hi'], /unknown category "gossip"/],
      [['run', '--agent', 'nobody', 'hi'], /no agent named "nobody"/],
      // A chat's key cannot be reached: the cli: namespace takes no ':'.
      [['run', '--conversation', 'telegram:42', 'hi'], /--conversation must be/],
      [['run'], /message is empty/],
    ];
    for (const [args, why] of cases) {
      const r = await run(args);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(r.stderr).toMatch(why);
    }
    expect(fake.requests).toHaveLength(0);
    writeFileSync(join(dir, 'gatehouse.yaml'), 'agents:\n  default:\n    tier: admin\n');
    const bad = await run(['run', 'hi']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/agents\.default\.tier/);
  }, 240_000);

  test('a model failure exits 1; --events lines all parse and include the error', async () => {
    script.push({ error: { status: 400, type: 'invalid_request_error', message: 'prompt is too long' } });
    const r = await run(['run', '--json', '--events', 'tools,usage', 'hi']);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { ok: boolean; error: string };
    expect(out.ok).toBe(false);
    expect(out.error).toMatch(/too long|rejected|model/i);
    const events = lines(r.stderr);
    expect(events.some((e) => e.type === 'error')).toBe(true);
    expect(events.some((e) => e.type === 'usage')).toBe(true);
    // Not asked for: no text, no run_started.
    expect(events.some((e) => e.type === 'text' || e.type === 'run_started')).toBe(false);
  }, 240_000);

  test('--events tools shows tool calls; long payloads are cut at the documented size', async () => {
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, 'big.txt'), 'x'.repeat(10_000));
    script.push({ toolUses: [{ name: 'read_file', input: { path: 'big.txt' } }] }, { text: 'y'.repeat(5000) });
    const r = await run(['run', '--events', 'all', 'read it']);
    expect(r.code).toBe(0);
    const events = lines(r.stderr);
    expect(events.filter((e) => e.type === 'tool_started' || e.type === 'tool_finished').map((e) => e.tool)).toEqual(['read_file', 'read_file']);
    const answer = events.find((e) => e.type === 'answer')!;
    expect(String(answer.text)).toMatch(/^y{2000}…\[cut 3000 chars\]$/);
    // stdout is never cut.
    expect(r.stdout).toBe('y'.repeat(5000) + '\n');
  }, 240_000);

  test('--timeout ends a slow run with exit 1', async () => {
    script.push({ text: 'too late', delayMs: 8000 });
    const r = await run(['run', '--json', '--timeout', '1', 'hi']);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { ok: boolean; error: string };
    expect(out).toMatchObject({ ok: false });
    expect(out.error).toMatch(/longer than 1 s/);
  }, 240_000);
});

describe('conversations', () => {
  test('--conversation continues across two runs; without it each run starts clean', async () => {
    const seen: string[] = [];
    const remember = (req: RecordedRequest): FakeReply => {
      seen.push(JSON.stringify((req.body as { messages: unknown }).messages));
      return { text: 'ok' };
    };
    script.push(remember, remember, remember);
    expect((await run(['run', '--conversation', 'nightly-1', 'my name is Ada'])).code).toBe(0);
    expect((await run(['run', '--conversation', 'nightly-1', 'what is my name?'])).code).toBe(0);
    expect((await run(['run', 'what is my name?'])).code).toBe(0);
    expect(seen[1]).toContain('my name is Ada');
    expect(seen[2]).not.toContain('my name is Ada');
    // The kept conversation is in the store's listing under its cli: key; the one-shot run left nothing.
    const listing = await run(['conversations', '--json']);
    expect(listing.code).toBe(0);
    expect(listing.stdout).toContain('"cli:nightly-1"');
    expect(listing.stdout).not.toContain('cli:~');
  }, 180_000);
});

describe('unattended and interactive', () => {
  test('unattended: ask_user_question is not offered and a call above the tier is declined with the reason', async () => {
    let tools: string[] = [];
    script.push((req) => {
      tools = toolNames(req);
      return { toolUses: [{ name: 'write_file', input: { path: 'out.txt', content: 'hi' } }] };
    }, echoToolResult);
    const r = await run(['run', '--json', 'write out.txt']);
    expect(r.code).toBe(0);
    expect(tools).toContain('write_file');
    expect(tools).not.toContain('ask_user_question');
    const out = JSON.parse(r.stdout) as { answer: string; declined: Array<{ tool: string; reason: string }> };
    expect(out.answer).toMatch(/Declined: write_file needs approval/);
    expect(out.answer).toMatch(/--approval-policy/);
    // What the script can act on without reading the answer: which tool, and the gate's reason.
    expect(out.declined).toEqual([{ tool: 'write_file', reason: expect.stringMatching(/^Declined: write_file needs approval.*--approval-policy/s) }]);
    expect(existsSync(join(workspace, 'out.txt'))).toBe(false);
  }, 240_000);

  test('--approval-policy low-risk lets a low-risk call run without asking', async () => {
    script.push({ toolUses: [{ name: 'write_file', input: { path: 'out.txt', content: 'hi' } }] }, echoToolResult);
    const r = await run(['run', '--approval-policy', 'low-risk', 'write out.txt']);
    expect(r.code).toBe(0);
    expect(readFileSync(join(workspace, 'out.txt'), 'utf8')).toBe('hi');
  }, 240_000);

  test('--interactive-stdin: an approval answered on stdin; a bad line gets an error event and changes nothing', async () => {
    script.push({ toolUses: [{ name: 'write_file', input: { path: 'approved.txt', content: 'yes' } }] }, echoToolResult);
    const p = start(['run', '--json', '--interactive-stdin', 'write approved.txt']);
    const asked = await until('approval_required', () => lines(p.stderr()).find((e) => e.type === 'approval_required'));
    expect(asked.choices).toEqual(expect.arrayContaining([expect.objectContaining({ value: 'approve' }), expect.objectContaining({ value: 'deny' })]));
    p.child.stdin!.write('this is not json\n');
    p.child.stdin!.write(JSON.stringify({ type: 'approval_response', requestId: 'made-up-id-000000000', value: 'approve' }) + '\n');
    await until('two error events', () => lines(p.stderr()).filter((e) => e.type === 'error').length >= 2);
    expect(existsSync(join(workspace, 'approved.txt'))).toBe(false);
    p.child.stdin!.write(JSON.stringify({ type: 'approval_response', requestId: asked.requestId, value: 'approve' }) + '\n');
    const r = await p.done;
    expect(r.code).toBe(0);
    expect(readFileSync(join(workspace, 'approved.txt'), 'utf8')).toBe('yes');
    expect((JSON.parse(r.stdout) as { answer: string }).answer).toMatch(/RESULT/);
  }, 240_000);

  test('--interactive-stdin: ask_file_picker offers the workspace files as suggestions, and a picked one comes back', async () => {
    mkdirSync(join(workspace, 'docs'), { recursive: true });
    writeFileSync(join(workspace, 'docs', 'a.md'), 'a');
    writeFileSync(join(workspace, 'docs', 'b.md'), 'b');
    writeFileSync(join(workspace, 'notes.txt'), 'n');
    script.push({ toolUses: [{ name: 'ask_file_picker', input: { prompt: 'Which doc?', pattern: '*.md' } }] }, echoToolResult);
    const p = start(['run', '--interactive-stdin', 'edit a doc']);
    const asked = await until('user_input_required', () => lines(p.stderr()).find((e) => e.type === 'user_input_required'));
    expect(asked.question).toMatch(/^Which doc\?/);
    expect(asked.suggestions).toEqual([
      { value: 'docs/a.md', label: 'docs/a.md' },
      { value: 'docs/b.md', label: 'docs/b.md' },
    ]);
    p.child.stdin!.write(JSON.stringify({ type: 'user_input_response', requestId: asked.requestId, value: 'docs/b.md' }) + '\n');
    const r = await p.done;
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/RESULT: Picked.*: docs\/b\.md/);
  }, 240_000);

  test('--interactive-stdin: a question answered with a suggestion value; the question is never cut', async () => {
    const long = `Which environment?\n${'(details) '.repeat(300)}`;
    script.push(
      askReply(
        long,
        [
          { value: 'staging', label: 'Staging' },
          { value: 'prod', label: 'Production' },
        ],
        false,
      ),
      echoToolResult,
    );
    const p = start(['run', '--interactive-stdin', 'deploy']);
    const asked = await until('user_input_required', () => lines(p.stderr()).find((e) => e.type === 'user_input_required'));
    expect(asked.question).toBe(long);
    expect(asked.suggestions).toEqual([
      { value: 'staging', label: 'Staging' },
      { value: 'prod', label: 'Production' },
    ]);
    expect(asked.allowCustom).toBe(false);
    p.child.stdin!.write(JSON.stringify({ type: 'user_input_response', requestId: asked.requestId, value: 'staging' }) + '\n');
    const r = await p.done;
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/RESULT: .*staging/);
  }, 240_000);

  test('--interactive-stdin with stdin already ended: an approval gets no answer at once (denied), not a wait for its timeout', async () => {
    script.push({ toolUses: [{ name: 'write_file', input: { path: 'eof.txt', content: 'x' } }] }, echoToolResult);
    const r = await run(['run', '--interactive-stdin', '--events', 'approval', 'write eof.txt'], { stdin: '' });
    expect(r.code).toBe(0);
    expect(lines(r.stderr).some((e) => e.type === 'approval_required')).toBe(true);
    expect(lines(r.stderr).find((e) => e.type === 'approval_resolved')).toMatchObject({ outcome: 'denied' });
    expect(existsSync(join(workspace, 'eof.txt'))).toBe(false);
  }, 240_000);

  // That waiting for an answer does not count against --timeout (it sets the run's runTimeoutMs) is
  // tested on a fake clock in test/agent/core.e2e ("time spent waiting for a human..."): a process
  // test would need a real wait longer than the timeout, which means nothing on a busy machine.

  test('CI=true on a terminal (pty) does not ask: the call is declined and the run ends', async () => {
    script.push({ toolUses: [{ name: 'write_file', input: { path: 'ci.txt', content: 'x' } }] }, echoToolResult);
    const cmd = [process.execPath, '--import', register, main, 'run', 'write ci.txt'].map((a) => `'${a}'`).join(' ');
    const child = spawn('/usr/bin/script', ['-qec', cmd, '/dev/null'], { cwd: dir, env: env({ CI: 'true' }), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve)); // after the last output
    expect(code).toBe(0);
    expect(out).toMatch(/Declined: write_file needs approval/);
    expect(out).not.toMatch(/Number \(empty/);
    expect(existsSync(join(workspace, 'ci.txt'))).toBe(false);
    child.stdin.end();
  }, 240_000);

  test('on a terminal without CI a numbered prompt asks, and a number answers', async () => {
    script.push({ toolUses: [{ name: 'write_file', input: { path: 'tty.txt', content: 'x' } }] }, echoToolResult);
    const cmd = [process.execPath, '--import', register, main, 'run', 'write tty.txt'].map((a) => `'${a}'`).join(' ');
    const child = spawn('/usr/bin/script', ['-qec', cmd, '/dev/null'], { cwd: dir, env: env(), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await until('the prompt', () => /Number \(empty: no answer\)> /.test(out));
    expect(out).toMatch(/\[1\] Approve once/);
    child.stdin.write('1\r');
    expect(await exited).toBe(0);
    expect(existsSync(join(workspace, 'tty.txt'))).toBe(true);
  }, 240_000);
});

describe('attach to a running service', () => {
  function post(socketPath: string, path: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath, path, method: 'POST', headers }, (res) => {
        let b = '';
        res.on('data', (c: Buffer) => (b += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  }

  test('a run goes through the running service (which alone reaches the model), a wrong or missing token is refused, and with the service gone runs fall back to in-process', async () => {
    const service = start(['serve']);
    const dataDir = join(dir, 'data');
    const socket = join(dataDir, 'gatehouse.sock');
    await until('the attach socket', () => existsSync(socket) && existsSync(join(dataDir, 'gatehouse.token')));
    expect(statSync(join(dataDir, 'gatehouse.token')).mode & 0o777).toBe(0o600);
    expect(statSync(socket).mode & 0o777).toBe(0o600);

    // The client cannot reach the model itself: only the service can have answered.
    script.push({ text: 'via the service' }, { text: 'again' });
    const unreachable = env({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' });
    const r = await run(['run', '--json', '--conversation', 'attach-1', '--events', 'all', 'hi'], { env: unreachable });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, answer: 'via the service', conversation: 'attach-1' });
    expect(lines(r.stderr).map((e) => e.type)).toEqual(expect.arrayContaining(['run_started', 'answer', 'usage', 'run_finished']));
    const r2 = await run(['run', '--conversation', 'attach-1', 'and again'], { env: unreachable });
    expect(r2.stdout).toBe('again\n');
    // The same conversation: the second request carried the first turn.
    expect(JSON.stringify(fake.requests.at(-1)!.body)).toContain('"hi"');

    const before = fake.requests.length;
    const body = { message: 'should not run', interactive: false };
    const token = readFileSync(join(dataDir, 'gatehouse.token'), 'utf8').trim();
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer wrong' },
      { authorization: `Bearer ${token.slice(0, -1)}x` },
      { authorization: token },
    ]) {
      const res = await post(socket, '/run', headers, body);
      expect(res.status).toBe(401);
      expect((await post(socket, '/respond', headers, { type: 'approval_response', requestId: 'x', value: 'approve' })).status).toBe(401);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(fake.requests.length).toBe(before);

    service.child.kill('SIGTERM');
    expect((await service.done).code).toBe(0);
    expect(existsSync(join(dataDir, 'gatehouse.token'))).toBe(false);
    // No service: the run loads the agent itself, on the same store (the conversation goes on).
    script.push((req) => ({ text: JSON.stringify(req.body).includes('and again') ? 'in-process, same store' : 'lost the conversation' }));
    const r3 = await run(['run', '--conversation', 'attach-1', 'third']);
    expect({ code: r3.code, stdout: r3.stdout }).toEqual({ code: 0, stdout: 'in-process, same store\n' });
  }, 240_000);

  test('through the service, an approval is answered on stdin (the answer goes back over the socket)', async () => {
    const service = start(['serve']);
    await until('the attach socket', () => existsSync(join(dir, 'data', 'gatehouse.sock')));
    script.push({ toolUses: [{ name: 'write_file', input: { path: 'attached.txt', content: 'ok' } }] }, echoToolResult);
    const p = start(['run', '--interactive-stdin', 'write attached.txt'], { env: env({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' }) });
    const asked = await until('approval_required', () => lines(p.stderr()).find((e) => e.type === 'approval_required'));
    p.child.stdin!.write(JSON.stringify({ type: 'approval_response', requestId: asked.requestId, value: 'approve' }) + '\n');
    const r = await p.done;
    expect(r.code).toBe(0);
    expect(readFileSync(join(workspace, 'attached.txt'), 'utf8')).toBe('ok');
    service.child.kill('SIGTERM');
    expect((await service.done).code).toBe(0);
  }, 240_000);

  test('a service started while an in-process run waits on an approval leaves that card alone: the run is still approved from stdin', async () => {
    script.push({ toolUses: [{ name: 'write_file', input: { path: 'beside.txt', content: 'kept' } }] }, echoToolResult);
    const p = start(['run', '--json', '--interactive-stdin', 'write beside.txt']);
    const asked = await until('approval_required', () => lines(p.stderr()).find((e) => e.type === 'approval_required'));
    // The service opens the same store at start and closes the cards no stored run of its own waits
    // on; this one's waiter is the live `gatehouse run` beside it.
    const service = start(['serve']);
    await until('the attach socket', () => existsSync(join(dir, 'data', 'gatehouse.sock')));
    p.child.stdin!.write(JSON.stringify({ type: 'approval_response', requestId: asked.requestId, value: 'approve' }) + '\n');
    const r = await p.done;
    expect(r.code).toBe(0);
    // Before, the service continued the run itself and the live one failed on a changed transcript.
    expect(lines(r.stderr).filter((e) => e.type === 'error' || e.level === 'error')).toEqual([]);
    expect(readFileSync(join(workspace, 'beside.txt'), 'utf8')).toBe('kept');
    service.child.kill('SIGTERM');
    expect((await service.done).code).toBe(0);
  }, 240_000);

  test('a stale socket left by a killed service does not stop runs: they run in-process', async () => {
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir, { recursive: true });
    const service = start(['serve']);
    await until('the attach socket', () => existsSync(join(dataDir, 'gatehouse.sock')));
    service.child.kill('SIGKILL');
    await service.done;
    expect(existsSync(join(dataDir, 'gatehouse.sock'))).toBe(true);
    script.push({ text: 'fallback' });
    const r = await run(['run', 'hi']);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 0, stdout: 'fallback\n' });
  }, 180_000);
});
