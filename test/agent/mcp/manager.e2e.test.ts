/**
 * The MCP manager against a real MCP server (the SDK's McpServer in a child process, over stdio and
 * Streamable HTTP on 127.0.0.1): lazy connect, listing, calls with untouched arguments, failures as
 * tool errors that say what happened, output cap, and shutdown that leaves no process behind.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpManager } from '../../../agent/mcp/manager.js';
import type { McpServerConfig } from '../../../agent/mcp/config.js';
import { alive, FIXTURE, startHttpServer, starts, stdioServer } from './helpers.js';
import { waitFor } from '../../helpers/wait.js';

let dir: string;
let manager: McpManager | undefined;
const never = new AbortController().signal;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-'));
});
afterEach(async () => {
  await manager?.close();
  manager = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function managerFor(servers: Record<string, McpServerConfig>): McpManager {
  manager = new McpManager({ servers: (agent) => (agent === 'ops' ? servers : undefined) });
  return manager;
}

const text = (r: { content: unknown }) => (typeof r.content === 'string' ? r.content : JSON.stringify(r.content));

test('nothing starts until the first call; the connection is then reused, and arguments arrive untouched', async () => {
  const startsFile = join(dir, 'starts');
  const m = managerFor({ fx: stdioServer({ FIXTURE_STARTS_FILE: startsFile }) });
  await m.load(['ops']);
  expect(m.knownTools('ops', 'fx')).toBeUndefined();
  expect(starts(startsFile)).toEqual([]);

  // Arguments a lossy local conversion would reject or empty: extra keys, nulls, nesting, unicode.
  const args = { text: 'hé ✓', tags: ['a'], extra: { nested: [1, null, { deep: true }] }, empty: {} };
  const r = await m.call('ops', 'fx', 'echo', args, never);
  expect(r.isError).toBeUndefined();
  expect(JSON.parse(text(r))).toEqual(args);
  expect(m.knownTools('ops', 'fx')!.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'slow', 'crash', 'big']));
  // The schema is the server's own JSON Schema.
  expect(m.knownTools('ops', 'fx')!.find((t) => t.name === 'echo')!.inputSchema).toMatchObject({
    type: 'object',
    properties: { text: { type: 'string', description: 'what to echo' } },
  });

  const pid1 = Number(text(await m.call('ops', 'fx', 'pid', {}, never)));
  const pid2 = Number(text(await m.call('ops', 'fx', 'pid', {}, never)));
  expect(pid1).toBe(pid2);
  expect(starts(startsFile)).toEqual([pid1]);
});

test('a server that crashes mid-call is reported with its exit and stderr, and started again on the next call', async () => {
  const startsFile = join(dir, 'starts');
  const m = managerFor({ fx: stdioServer({ FIXTURE_STARTS_FILE: startsFile }) });
  const first = Number(text(await m.call('ops', 'fx', 'pid', {}, never)));
  const crashed = await m.call('ops', 'fx', 'crash', {}, never);
  expect(crashed.isError).toBe(true);
  expect(text(crashed)).toContain('MCP server "fx" stopped during the call to crash');
  expect(text(crashed)).toContain('exit code 3');
  expect(text(crashed)).toContain('crashing on purpose');
  expect(text(crashed)).toContain('started again on the next call');
  expect(alive(first)).toBe(false);

  const again = await m.call('ops', 'fx', 'echo', { text: 'back' }, never);
  expect(JSON.parse(text(again))).toEqual({ text: 'back' });
  const pids = starts(startsFile);
  expect(pids).toHaveLength(2);
  expect(pids[1]).not.toBe(first);
});

test('a slow server times out with a message that says so, and the connection stays usable', async () => {
  const m = managerFor({ fx: stdioServer({}, 500) });
  const r = await m.call('ops', 'fx', 'slow', { ms: 5000 }, never);
  expect(r.isError).toBe(true);
  expect(text(r)).toContain('did not answer slow within 0.5 s (timed out');
  const ok = await m.call('ops', 'fx', 'echo', { text: 'still here' }, never);
  expect(JSON.parse(text(ok))).toEqual({ text: 'still here' });
});

test('one signal through many calls: nothing piles up on it, a stop later cancels none of the answered calls, and a stop mid-call cancels that one', async () => {
  const traceFile = join(dir, 'trace');
  writeFileSync(traceFile, '');
  const trace = () => readFileSync(traceFile, 'utf8').split('\n').filter(Boolean);
  const m = managerFor({ fx: stdioServer({ FIXTURE_TRACE_FILE: traceFile }) });
  const run = new AbortController();
  const warnings: string[] = [];
  const onWarning = (w: Error) => void warnings.push(w.name);
  process.on('warning', onWarning);
  try {
    for (let i = 0; i < 15; i++) expect(JSON.parse(text(await m.call('ops', 'fx', 'echo', { text: `n${i}` }, run.signal)))).toEqual({ text: `n${i}` });
    // A call in flight when the run stops: that request, and only it, is cancelled.
    const slow = m.call('ops', 'fx', 'slow', { ms: 60_000 }, run.signal);
    const slowCall = await waitFor('the slow call to reach the server', () => trace().find((l) => l.endsWith(' slow')), { timeoutMs: 20_000 });
    run.abort();
    await expect(slow).rejects.toBeDefined();
    // Another call after the stop: the cancellation (sent before it) has been read by the server.
    expect(text(await m.call('ops', 'fx', 'pid', {}, never))).toMatch(/^\d+$/);
    expect(trace().filter((l) => l.startsWith('call '))).toHaveLength(17);
    expect(trace().filter((l) => l.startsWith('cancelled '))).toEqual([`cancelled ${slowCall.split(' ')[1]}`]);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  } finally {
    process.off('warning', onWarning);
  }
});

test('a server that cannot start: the command and its stderr tail, as a tool error; the next call tries again', async () => {
  const m = managerFor({
    missing: { kind: 'stdio', command: join(dir, 'no-such-server'), args: ['--flag'], env: {}, timeoutMs: 5000, sandbox: 'none', network: false },
    dies: {
      kind: 'stdio',
      command: process.execPath,
      args: ['-e', 'console.error("GITHUB_TOKEN rejected: bad credentials"); process.exit(2)'],
      env: {},
      timeoutMs: 5000,
      sandbox: 'none',
      network: false,
    },
  });
  const r1 = await m.call('ops', 'missing', 'anything', {}, never);
  expect(r1.isError).toBe(true);
  expect(text(r1)).toContain('MCP server "missing" could not be started');
  expect(text(r1)).toContain(`${join(dir, 'no-such-server')} --flag`);
  expect(text(r1)).toContain('ENOENT');

  const r2 = await m.call('ops', 'dies', 'anything', {}, never);
  expect(r2.isError).toBe(true);
  expect(text(r2)).toContain('could not be started');
  expect(text(r2)).toContain('exit code 2');
  expect(text(r2)).toContain('GITHUB_TOKEN rejected: bad credentials');

  // Not cached as failed: a fixed server works on the next call.
  writeFileSync(join(dir, 'no-such-server'), `#!/bin/sh\nexec "${process.execPath}" "${FIXTURE}"\n`, { mode: 0o755 });
  const r3 = await m.call('ops', 'missing', 'echo', { text: 'fixed' }, never);
  expect(JSON.parse(text(r3))).toEqual({ text: 'fixed' });
});

test('a tool the server no longer offers is reported as gone, with what it offers now', async () => {
  const hide = join(dir, 'hide');
  const m = managerFor({ fx: stdioServer({ FIXTURE_HIDE_FILE: hide }) });
  expect(JSON.parse(text(await m.call('ops', 'fx', 'echo', { text: 'x' }, never)))).toEqual({ text: 'x' });
  writeFileSync(hide, 'echo');
  await m.call('ops', 'fx', 'crash', {}, never); // restart with the new tool set
  const r = await m.call('ops', 'fx', 'echo', { text: 'x' }, never);
  expect(r.isError).toBe(true);
  expect(text(r)).toContain('MCP server "fx" no longer offers the tool echo');
  expect(text(r)).toContain('slow');
  expect(m.knownTools('ops', 'fx')!.map((t) => t.name)).not.toContain('echo');
});

test('output over 256 KB is cut with a truncation marker; an error result stays an error', async () => {
  const m = managerFor({ fx: stdioServer() });
  const big = await m.call('ops', 'fx', 'big', {}, never);
  const body = text(big);
  expect(Buffer.byteLength(body)).toBeLessThanOrEqual(256 * 1024 + 100);
  expect(body.startsWith('HEAD')).toBe(true);
  expect(body.endsWith('TAIL')).toBe(true);
  expect(body).toMatch(/\[\.\.\. output truncated: \d+ bytes omitted \.\.\.\]/);

  const failed = await m.call('ops', 'fx', 'fail', {}, never);
  expect(failed.isError).toBe(true);
  expect(text(failed)).toContain('reported an error from fail');
  expect(text(failed)).toContain('the issue tracker said no');
});

test('close() stops the server and everything it started: no process is left', async () => {
  const m = managerFor({ fx: stdioServer() });
  const server = Number(text(await m.call('ops', 'fx', 'pid', {}, never)));
  const grandchild = Number(text(await m.call('ops', 'fx', 'spawn_child', {}, never)));
  expect(alive(server)).toBe(true);
  expect(alive(grandchild)).toBe(true);
  await m.close();
  expect(alive(server)).toBe(false);
  expect(alive(grandchild)).toBe(false);
  const after = await m.call('ops', 'fx', 'pid', {}, never);
  expect(after.isError).toBe(true);
  expect(text(after)).toContain('shutting down');
});

test('Streamable HTTP on 127.0.0.1: headers sent, tools listed and called; an unreachable server is a tool error', async () => {
  const http = await startHttpServer({ FIXTURE_REQUIRE_AUTH: 'Bearer s3cret' });
  try {
    const m = managerFor({
      web: { kind: 'http', url: http.url, headers: { Authorization: 'Bearer s3cret' }, timeoutMs: 5000 },
      noauth: { kind: 'http', url: http.url, headers: {}, timeoutMs: 5000 },
      gone: { kind: 'http', url: 'http://127.0.0.1:9/mcp', headers: {}, timeoutMs: 5000 },
    });
    const r = await m.call('ops', 'web', 'echo', { text: 'over http', n: 1.5 }, never);
    expect(JSON.parse(text(r))).toEqual({ text: 'over http', n: 1.5 });
    expect(m.knownTools('ops', 'web')!.map((t) => t.name)).toContain('echo');

    const denied = await m.call('ops', 'noauth', 'echo', { text: 'x' }, never);
    expect(denied.isError).toBe(true);
    expect(text(denied)).toContain(`MCP server "noauth" at ${http.url} could not be reached`);

    const gone = await m.call('ops', 'gone', 'echo', { text: 'x' }, never);
    expect(gone.isError).toBe(true);
    expect(text(gone)).toContain('could not be reached');
  } finally {
    await http.stop();
  }
});

test('tools declared in the config are offered without starting anything; a never-listed broken server does not hold a run up', async () => {
  const startsFile = join(dir, 'starts');
  const declared = { ...stdioServer({ FIXTURE_STARTS_FILE: startsFile }), tools: [{ name: 'echo', inputSchema: { type: 'object' } }] };
  const m = managerFor({
    fx: declared,
    broken: { kind: 'stdio', command: join(dir, 'missing'), args: [], env: {}, timeoutMs: 5000, sandbox: 'none', network: false },
  });
  await m.ensureListed('ops', 2000);
  expect(m.knownTools('ops', 'fx')!.map((t) => t.name)).toEqual(['echo']);
  expect(m.knownTools('ops', 'broken')).toBeUndefined();
  expect(starts(startsFile)).toEqual([]);
  // The first call lists for real: the listing replaces the declaration.
  await m.call('ops', 'fx', 'echo', { text: 'x' }, never);
  expect(m.knownTools('ops', 'fx')!.map((t) => t.name)).toContain('slow');
});

test("a server removed from the config (reload) is stopped on the agent's next run; a changed one is restarted on its next call", async () => {
  let servers: Record<string, McpServerConfig> = { fx: stdioServer(), other: stdioServer() };
  manager = new McpManager({ servers: () => servers });
  const m = manager;
  const fx = Number(text(await m.call('ops', 'fx', 'pid', {}, never)));
  const other = Number(text(await m.call('ops', 'other', 'pid', {}, never)));
  servers = { fx: { ...stdioServer(), timeoutMs: 19_000 } };
  await m.prune('ops');
  expect(alive(other)).toBe(false);
  expect(alive(fx)).toBe(true);
  const fx2 = Number(text(await m.call('ops', 'fx', 'pid', {}, never)));
  expect(fx2).not.toBe(fx);
  await waitGone(fx);
});

async function waitGone(pid: number): Promise<void> {
  await waitFor(`pid ${pid} to be gone`, () => !alive(pid), { intervalMs: 50 }).catch(() => undefined);
  expect(alive(pid)).toBe(false);
}
