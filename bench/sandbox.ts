/**
 * Benchmark: what the sandbox costs per command. Runs `true` through the real execute_command tool N times
 * with `sandbox: none` and with bubblewrap (network off, the usual masks, the default limits, the seccomp
 * filter, the launcher that closes stray descriptors, and the setuid/device walk after each command), interleaved so both see the same
 * machine load, after a warm-up. Prints median, p99 and max of the whole call (spawn to result), and the
 * difference. Not a test: numbers only.
 * Run: npx tsc -p tsconfig.build.json && node dist/bench/sandbox.js [runs]
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { executeCommandTool } from '../agent/tools/builtin/execute-command.js';
import { prepareWorkspace, type SandboxPolicy } from '../agent/tools/sandbox/index.js';
import type { ToolContext } from '../agent/tools/types.js';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function summary(label: string, samples: number[]): { median: number; p99: number } {
  const s = [...samples].sort((a, b) => a - b);
  const median = percentile(s, 50);
  const p99 = percentile(s, 99);
  console.log(`${label.padEnd(12)} median ${median.toFixed(2)} ms   p99 ${p99.toFixed(2)} ms   max ${s[s.length - 1]!.toFixed(2)} ms   (n=${s.length})`);
  return { median, p99 };
}

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 200);
  const base = mkdtempSync('/var/tmp/gh-bench-sandbox-');
  chmodSync(base, 0o755);
  const workspace = path.join(base, 'ws');
  mkdirSync(workspace);
  await prepareWorkspace(workspace);
  const state = new Map<string, unknown>();
  const ctx: ToolContext = {
    workspace,
    signal: new AbortController().signal,
    conversationKey: 'console:bench',
    agentName: 'bench',
    envAllowlist: [],
    state: { get: <T>(n: string) => state.get(n) as T | undefined, set: (n, v) => state.set(n, v) },
  };
  const boxed: SandboxPolicy = { mode: 'bubblewrap', network: false, botFiles: [] };
  const none: SandboxPolicy = { mode: 'none', network: false, botFiles: [] };
  const tools = { bubblewrap: executeCommandTool({ sandbox: boxed }), none: executeCommandTool({ sandbox: none }) };
  const input = { command: 'true' };
  const once = async (tool: (typeof tools)['none']): Promise<number> => {
    const t0 = performance.now();
    const proposal = await tool.propose!(input, ctx);
    const r = await tool.execute(input, ctx, { proposal });
    const ms = performance.now() - t0;
    if (!String(r.content).startsWith('exit code: 0')) throw new Error(`unexpected result: ${String(r.content)}`);
    return ms;
  };
  for (let i = 0; i < 20; i++) {
    await once(tools.none);
    await once(tools.bubblewrap);
  }
  const samples = { none: [] as number[], bubblewrap: [] as number[] };
  for (let i = 0; i < runs; i++) {
    samples.none.push(await once(tools.none));
    samples.bubblewrap.push(await once(tools.bubblewrap));
  }
  console.log(`execute_command \`true\`, ${runs} runs each (interleaved), uid ${process.getuid?.()}:`);
  const a = summary('none', samples.none);
  const b = summary('bubblewrap', samples.bubblewrap);
  console.log(`overhead     median +${(b.median - a.median).toFixed(2)} ms   p99 +${(b.p99 - a.p99).toFixed(2)} ms`);
  rmSync(base, { recursive: true, force: true });
}

await main();
