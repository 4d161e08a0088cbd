import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { executeCommandTool, type ExecuteCommandInput } from '../../../agent/tools/builtin/execute-command.js';
import { prepareWorkspace } from '../../../agent/tools/sandbox/index.js';
import { ToolError, type ToolContext, type ToolResult } from '../../../agent/tools/types.js';
import { waitFor } from '../../helpers/wait.js';

// Every test here runs in the default sandbox (bubblewrap) unless it passes NONE: the sandbox is what runs.
const NONE = { sandbox: { mode: 'none' as const, network: false, botFiles: [] } };

let base: string;
let workspace: string;
let outside: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), 'gh-exec-')));
  workspace = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await mkdir(path.join(workspace, 'sub'), { recursive: true });
  await mkdir(outside);
  // mkdtemp makes 0700 directories; the sandbox user (when the test runs as root) must reach the workspace.
  await chmod(base, 0o755);
  await prepareWorkspace(workspace);
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

function context(over: Partial<ToolContext> = {}): ToolContext {
  const state = new Map<string, unknown>();
  return {
    workspace,
    signal: new AbortController().signal,
    conversationKey: 'telegram:1',
    agentName: 'test',
    envAllowlist: [],
    state: { get: <T>(name: string) => state.get(name) as T | undefined, set: (name, value) => state.set(name, value) },
    ...over,
  };
}

/** propose then execute, as the executor does after the gate allowed the call. */
async function run(
  tool: ReturnType<typeof executeCommandTool>,
  input: ExecuteCommandInput,
  ctx: ToolContext = context(),
): Promise<ToolResult & { content: string }> {
  const parsed = tool.input.parse(input);
  const proposal = await tool.propose!(parsed, ctx);
  const result = await tool.execute(parsed, ctx, { proposal });
  if (typeof result.content !== 'string') throw new Error('execute_command returns text');
  return { ...result, content: result.content };
}

function section(content: string, name: 'stdout' | 'stderr'): string {
  const start = content.indexOf(`--- ${name} ---\n`);
  if (start < 0) throw new Error(`no ${name} section in:\n${content}`);
  const from = start + `--- ${name} ---\n`.length;
  const end = name === 'stdout' ? content.indexOf('\n--- stderr ---\n', from) : content.length;
  return content.slice(from, end);
}

/**
 * A pid counts as running when it exists and is not a zombie. PID 1 in a container often never reaps
 * orphans, so a killed grandchild can linger as a zombie: dead, but `kill(pid, 0)` still succeeds.
 */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== 'Z' && state !== 'X';
}

/** Host pids of live `sleep <duration>` processes (sandboxed pids are not host pids, so pidfiles cannot tell). */
async function runningWith(duration: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (argv[0] === 'sleep' && argv[1] === duration && isRunning(Number(name))) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function waitForFile(file: string): Promise<string> {
  return waitFor(`${file} to be written`, async () => (existsSync(file) ? (await readFile(file, 'utf8')).trim() : ''), { intervalMs: 10 });
}

describe('execute_command: environment', () => {
  const baseEnv = {
    PATH: process.env.PATH,
    HOME: '/home/gatehouse',
    ANTHROPIC_API_KEY: 'sk-ant-LEAKED-1',
    TELEGRAM_BOT_TOKEN: '999:LEAKED-2',
    SLACK_BOT_TOKEN: 'xoxb-LEAKED-3',
    SLACK_SIGNING_SECRET: 'LEAKED-4',
    DISCORD_TOKEN: 'LEAKED-5',
    SSH_AUTH_SOCK: '/tmp/LEAKED-6.sock',
    DEPLOY_TOKEN: 'allowed-deploy-value',
  };

  it('`env` shows PATH and an allowlisted name, never a credential or SSH_AUTH_SOCK', async () => {
    const tool = executeCommandTool({ baseEnv });
    const ctx = context({ envAllowlist: ['DEPLOY_TOKEN', 'SSH_AUTH_SOCK', 'INVENTED_TOKEN'] });
    const result = await run(tool, { command: 'env' }, ctx);
    const out = section(result.content, 'stdout');
    expect(out).toContain(`PATH=${process.env.PATH}`);
    expect(out).toContain('DEPLOY_TOKEN=allowed-deploy-value');
    expect(out).not.toMatch(/LEAKED/);
    for (const name of ['ANTHROPIC_API_KEY', 'TELEGRAM_BOT_TOKEN', 'SLACK_BOT_TOKEN', 'DISCORD_TOKEN', 'SSH_AUTH_SOCK']) {
      expect(out).not.toContain(`${name}=`);
    }
    // The allowlist cannot invent a variable that the gateway does not have.
    expect(out).not.toContain('INVENTED_TOKEN');
  });

  it('does not inherit the gateway environment beyond the sanitized copy (defaults to process.env)', async () => {
    process.env.GH_TEST_API_KEY = 'LEAKED-from-process-env';
    process.env.GH_TEST_VISIBLE = 'visible-value';
    try {
      const result = await run(executeCommandTool(), {
        command: 'printf "%s|%s\\n" "${GH_TEST_API_KEY-unset}" "${GH_TEST_VISIBLE-unset}"',
      });
      expect(section(result.content, 'stdout')).toBe('unset|visible-value\n');
    } finally {
      delete process.env.GH_TEST_API_KEY;
      delete process.env.GH_TEST_VISIBLE;
    }
  });
});

describe('execute_command: results', () => {
  it('reports a non-zero exit as a normal result with stdout and stderr labelled', async () => {
    const result = await run(executeCommandTool(), { command: 'echo to-out; echo to-err >&2; exit 3' });
    expect(result.isError).toBe(false);
    expect(result.content.split('\n')[0]).toBe('exit code: 3');
    expect(section(result.content, 'stdout')).toBe('to-out\n');
    expect(section(result.content, 'stderr')).toBe('to-err\n');
    expect(result.content).toMatch(/duration: \d/);
  });

  it('reports exit code 0 and marks empty streams', async () => {
    const result = await run(executeCommandTool(), { command: 'true' });
    expect(result.isError).toBe(false);
    expect(result.content).toMatch(/^exit code: 0\n/);
    expect(section(result.content, 'stdout')).toBe('(empty)');
    expect(section(result.content, 'stderr')).toBe('(empty)');
  });

  it('closes stdin, so a command that reads it ends at once instead of hanging', async () => {
    const result = await run(executeCommandTool({ defaultTimeoutMs: 10_000 }), { command: 'cat; echo "read done"' });
    expect(result.isError).toBe(false);
    expect(section(result.content, 'stdout')).toBe('read done\n');
  });

  it('reports a command killed by a signal it sent itself, without claiming Gatehouse killed it', async () => {
    const result = await run(executeCommandTool(NONE), { command: 'kill -USR1 $$' });
    expect(result.isError).toBe(false);
    expect(result.content).toMatch(/^terminated by signal SIGUSR1/);
  });

  it('in the sandbox, a shell killed by its own signal shows as exit code 128+N, never as killed by Gatehouse', async () => {
    const result = await run(executeCommandTool(), { command: 'kill -USR1 $$' });
    expect(result.isError).toBe(false);
    expect(result.content).toMatch(/^exit code: 138\n/);
  });

  it('says the command could not be started when the shell is missing', async () => {
    await expect(run(executeCommandTool({ shell: '/nonexistent/sh' }), { command: 'true' })).rejects.toThrow(/could not be started/);
  });

  it('uses the configured shell', async () => {
    const result = await run(executeCommandTool({ shell: '/bin/bash' }), { command: 'echo "${BASH_VERSION:+bash}"' });
    expect(section(result.content, 'stdout')).toBe('bash\n');
  });
});

describe('execute_command: output caps', () => {
  it('keeps the start and end of a stream within the cap and says exactly how much was cut', async () => {
    const expected = Array.from({ length: 100_000 }, (_, i) => `${i + 1}\n`).join('');
    const result = await run(executeCommandTool({ maxOutputBytes: 1000 }), { command: 'seq 1 100000' });
    const out = section(result.content, 'stdout');
    const match = /^([\s\S]*)\n\[\.\.\. output truncated: (\d+) bytes omitted \.\.\.\]\n([\s\S]*)$/.exec(out);
    expect(match).not.toBeNull();
    const [, head, omitted, tail] = match!;
    expect(Buffer.byteLength(head!) + Buffer.byteLength(tail!)).toBe(1000);
    expect(Number(omitted)).toBe(Buffer.byteLength(expected) - 1000);
    expect(expected.startsWith(head!)).toBe(true);
    expect(expected.endsWith(tail!)).toBe(true);
    expect(tail!.endsWith('99999\n100000\n')).toBe(true);
  });

  it('caps stderr on its own and never splits a UTF-8 character at the cut', async () => {
    // 'é' is 2 bytes; an odd cap forces a cut in the middle of one.
    const result = await run(executeCommandTool({ maxOutputBytes: 101 }), {
      command: 'i=0; while [ $i -lt 500 ]; do printf "é"; i=$((i+1)); done >&2; echo fine',
    });
    const err = section(result.content, 'stderr');
    expect(err).not.toContain('\uFFFD');
    expect(err).toMatch(/^(é)+\n\[\.\.\. output truncated: \d+ bytes omitted \.\.\.\]\n(é)+$/);
    const omitted = Number(/truncated: (\d+) bytes/.exec(err)![1]);
    const shown = (err.match(/é/g) ?? []).length * 2;
    expect(shown + omitted).toBe(1000);
    expect(section(result.content, 'stdout')).toBe('fine\n');
  });

  it('drains a 100 MB flood without buffering it: capped output, marker, and little memory growth', async () => {
    const tool = executeCommandTool(); // default cap: 256 KB per stream
    // Warm up (module code, first spawn) so the measurement sees the flood alone.
    await run(tool, { command: "head -c 1000000 /dev/zero | tr '\\0' y" });
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    let result: ToolResult & { content: string };
    try {
      result = await run(tool, { command: "head -c 100000000 /dev/zero | tr '\\0' y; echo tail-marker" });
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const out = section(result.content, 'stdout');
    expect(result.isError).toBe(false);
    expect(result.content).toMatch(/^exit code: 0\n/);
    expect(out).toContain(`[... output truncated: ${100_000_000 + 'tail-marker\n'.length - 256 * 1024} bytes omitted ...]`);
    expect(out.endsWith('tail-marker\n')).toBe(true);
    expect(Buffer.byteLength(out)).toBeLessThan(256 * 1024 + 100);
    const growthMB = (peak - before) / 1024 / 1024;
    // Buffering the flood would keep at least 100 MB. Draining it costs the runtime's own read buffers
    // until the next GC (about 30-40 MB measured here), so the bound sits between the two.
    expect(growthMB).toBeLessThan(80);
  });
});

describe.each([
  ['sandboxed', {}],
  ['sandbox: none', NONE],
] as const)('execute_command: killing (%s)', (_mode, sandboxOpt) => {
  let n = 0;
  /** A unique `sleep` duration: its command line finds the process on the host whatever its pid namespace. */
  const marker = (): string => `30.${process.pid}${++n}${sandboxOpt === NONE ? 1 : 2}`;

  it('on timeout kills the whole process group, grandchild included', async () => {
    const pidfile = path.join(workspace, `timeout-${n}.pid`);
    const sleep = marker();
    const tool = executeCommandTool({ killGraceMs: 200, ...sandboxOpt });
    const result = await run(tool, {
      command: `sh -c 'sleep ${sleep} & echo $! > ${pidfile}; wait'; echo never-printed`,
      timeoutMs: 300,
    });
    await waitForFile(pidfile);
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^killed: it ran longer than its timeout of 300 ms/);
    expect(result.content).toContain('process group');
    expect(result.content).not.toContain('never-printed');
    expect(await runningWith(sleep)).toEqual([]);
  });

  it('escalates to SIGKILL for a grandchild that ignores SIGTERM', async () => {
    const pidfile = path.join(workspace, `stubborn-${n}.pid`);
    const sleep = marker();
    const tool = executeCommandTool({ killGraceMs: 200, ...sandboxOpt });
    const result = await run(tool, {
      command: `(trap '' TERM; exec sleep ${sleep}) & echo $! > ${pidfile}; wait`,
      timeoutMs: 300,
    });
    await waitForFile(pidfile);
    expect(result.isError).toBe(true);
    expect(await runningWith(sleep)).toEqual([]);
  });

  it('on ctx.signal abort (/stop) kills the group and says the run was stopped', async () => {
    const pidfile = path.join(workspace, `abort-${n}.pid`);
    const sleep = marker();
    const controller = new AbortController();
    const ctx = context({ signal: controller.signal });
    const tool = executeCommandTool({ killGraceMs: 200, ...sandboxOpt });
    const pending = run(tool, { command: `sh -c 'sleep ${sleep} & echo $! > ${pidfile}; wait'` }, ctx);
    await waitForFile(pidfile);
    // The pid is known before `sleep` has replaced the forked shell: poll for it.
    await waitFor(`a running sleep ${sleep}`, async () => (await runningWith(sleep)).length > 0, { intervalMs: 10 });
    expect((await runningWith(sleep)).length).toBe(1);
    controller.abort();
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^killed: the run was stopped/);
    expect(await runningWith(sleep)).toEqual([]);
  });
});

describe('execute_command: limits and stopping', () => {
  it('clamps the requested timeout to the configured maximum', async () => {
    const tool = executeCommandTool({ defaultTimeoutMs: 300, killGraceMs: 200 });
    const result = await run(tool, { command: 'sleep 30', timeoutMs: 600_000 });
    expect(result.isError).toBe(true);
    expect(result.content).toContain('timeout of 300 ms');
  });

  it('rejects a non-positive configured limit with a message that names it', () => {
    expect(() => executeCommandTool({ maxOutputBytes: 0 })).toThrow(/maxOutputBytes must be a positive number/);
  });

  it('does not start anything when the run is already stopped', async () => {
    const controller = new AbortController();
    controller.abort();
    const marker = path.join(workspace, 'should-not-exist');
    const tool = executeCommandTool();
    const input = { command: `touch ${marker}` };
    const ctx = context({ signal: controller.signal });
    const proposal = await tool.propose!(input, ctx);
    await expect(tool.execute(input, ctx, { proposal })).rejects.toThrow(/stopped before the command started/);
    expect(existsSync(marker)).toBe(false);
  });
});

describe('execute_command: propose and cwd', () => {
  it('proposes without running: summary, preview, command and resolved cwd', async () => {
    const tool = executeCommandTool();
    const marker = path.join(workspace, 'proposed-only');
    const command = `touch ${marker}\necho second line`;
    const proposal = await tool.propose!({ command, cwd: 'sub' }, context());
    expect(proposal.summary).toBe(`$ touch ${marker} …`);
    expect(proposal.preview).toBe(command);
    expect(proposal.command).toBe(command);
    expect(proposal.data).toEqual({ cwd: path.join(workspace, 'sub') });
    expect(existsSync(marker)).toBe(false);
  });

  it('cuts a long first line in the summary', async () => {
    const proposal = await executeCommandTool().propose!({ command: `echo ${'x'.repeat(500)}` }, context());
    expect(proposal.summary.length).toBeLessThanOrEqual(102);
    expect(proposal.summary.endsWith('…')).toBe(true);
  });

  it('runs in the workspace by default and in a subdirectory when asked', async () => {
    const tool = executeCommandTool();
    expect(section((await run(tool, { command: 'pwd' })).content, 'stdout')).toBe(`${workspace}\n`);
    expect(section((await run(tool, { command: 'pwd', cwd: 'sub' })).content, 'stdout')).toBe(`${path.join(workspace, 'sub')}\n`);
  });

  it.each([
    ['..', /outside the workspace/],
    ['../outside', /outside the workspace/],
    ['sub/../../outside', /outside the workspace/],
    ['/etc', /outside the workspace/],
    ['missing-dir', /does not exist in the workspace/],
  ])('refuses cwd %s with a clear ToolError', async (cwd, message) => {
    const promise = executeCommandTool().propose!({ command: 'pwd', cwd }, context());
    await expect(promise).rejects.toBeInstanceOf(ToolError);
    await expect(promise).rejects.toThrow(message);
  });

  it('refuses a symlink that leads out of the workspace', async () => {
    await symlink(outside, path.join(workspace, 'escape'));
    const promise = executeCommandTool().propose!({ command: 'pwd', cwd: 'escape' }, context());
    await expect(promise).rejects.toThrow(/leads outside the workspace .* through a symlink/);
  });

  it('refuses a file as cwd', async () => {
    await writeFile(path.join(workspace, 'afile'), 'x');
    await expect(executeCommandTool().propose!({ command: 'pwd', cwd: 'afile' }, context())).rejects.toThrow(/is a file, not a directory/);
  });

  it('re-checks cwd at execute: a directory swapped for a symlink while waiting for approval is refused', async () => {
    const tool = executeCommandTool();
    const dir = path.join(workspace, 'swapped');
    await mkdir(dir);
    const ctx = context();
    const input = { command: 'pwd', cwd: 'swapped' };
    const proposal = await tool.propose!(input, ctx);
    await rm(dir, { recursive: true });
    await symlink(outside, dir);
    await expect(tool.execute(input, ctx, { proposal })).rejects.toThrow(/leads outside the workspace/);
  });

  it('refuses to run a command other than the one the gate judged', async () => {
    const tool = executeCommandTool();
    const ctx = context();
    const proposal = await tool.propose!({ command: 'ls' }, ctx);
    await expect(tool.execute({ command: 'ls; rm -rf /' }, ctx, { proposal })).rejects.toThrow(/differs from the one that was approved/);
  });

  it('validates input: empty command and non-positive timeout are rejected', () => {
    const tool = executeCommandTool();
    expect(tool.input.safeParse({ command: '' }).success).toBe(false);
    expect(tool.input.safeParse({ command: 'ls', timeoutMs: -5 }).success).toBe(false);
    expect(tool.name).toBe('execute_command');
    expect(tool.tier).toBe('unknown');
  });
});
