/**
 * execute_command reports how each command ended to its call's telemetry (agent/telemetry seam):
 * a CPU spin in a real box is killed by the box's CPU limit, a command on the host past its timeout
 * is killed by Gatehouse. These reports become gatehouse_sandbox_* metrics and execute_tool span attributes.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { executeCommandTool, type ExecuteCommandOptions } from '../../agent/tools/builtin/execute-command.js';
import { prepareWorkspace } from '../../agent/tools/sandbox/index.js';
import type { SandboxReport } from '../../agent/telemetry/types.js';

let ws: string;
beforeAll(async () => {
  ws = mkdtempSync('/var/tmp/gh-sandbox-telemetry-');
  chmodSync(ws, 0o755);
  await prepareWorkspace(ws);
});
afterAll(() => rmSync(ws, { recursive: true, force: true }));

async function reported(command: string, opts: ExecuteCommandOptions, timeoutMs: number): Promise<SandboxReport[]> {
  const reports: SandboxReport[] = [];
  const tool = executeCommandTool({ baseEnv: { PATH: '/usr/local/bin:/usr/bin:/bin' }, killGraceMs: 200, ...opts });
  const state = new Map<string, unknown>();
  const ctx = {
    workspace: ws,
    signal: new AbortController().signal,
    conversationKey: 'console:telemetry',
    agentName: 'a',
    envAllowlist: [],
    state: { get: <T>(n: string) => state.get(n) as T | undefined, set: (n: string, v: unknown) => state.set(n, v) },
    telemetry: { sandbox: (r: SandboxReport) => reports.push(r) },
  };
  const input = { command, timeoutMs };
  await tool.execute(input, ctx, { proposal: await tool.propose!(input, ctx) });
  return reports;
}

test('a CPU spin in the box: killed by the CPU limit', async () => {
  const r = await reported('while :; do :; done', { sandbox: { mode: 'bubblewrap', network: false, botFiles: [], limits: { cpuSeconds: 1 } } }, 120_000);
  expect(r).toEqual([{ boxed: true, killed: 'cpu', limits: ['cpu'] }]);
}, 60_000);

test('a command on the host past its timeout: killed by Gatehouse, no box limits', async () => {
  const r = await reported('sleep 30', { sandbox: { mode: 'none', network: false, botFiles: [] } }, 300);
  expect(r).toEqual([{ boxed: false, killed: 'timeout', limits: [] }]);
}, 60_000);

test('a command that exits by itself: reported once, nothing killed', async () => {
  const r = await reported('true', { sandbox: { mode: 'bubblewrap', network: false, botFiles: [] } }, 10_000);
  expect(r).toEqual([{ boxed: true, limits: [] }]);
}, 60_000);
