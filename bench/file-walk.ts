/**
 * Benchmark: grep, find and ls over a 10,000-file tree (100 directories x 100 files, ~1 KB each),
 * the walk the file tools do on the host. Prints the median and max of a few runs of each after a
 * warm-up. Used to check that fd-by-fd walking (no path string of the workspace after its root)
 * stays in the same order of time as the old path walk.
 * Run: npx tsc -p tsconfig.build.json && node dist/bench/file-walk.js
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { closeGrepWorkers, findTool, grepTool, lsTool } from '../agent/tools/builtin/files.js';
import type { Tool, ToolContext } from '../agent/tools/types.js';

const DIRS = 100;
const FILES = 100;
const RUNS = 7;

async function makeTree(ws: string): Promise<void> {
  for (let d = 0; d < DIRS; d++) {
    const dir = path.join(ws, `pkg-${d}`, 'src');
    await mkdir(dir, { recursive: true });
    await Promise.all(
      Array.from({ length: FILES }, (_, f) =>
        writeFile(path.join(dir, `file-${f}.ts`), `// file ${d}/${f}\n${'export const value = 42;\n'.repeat(40)}${f === 7 ? 'NEEDLE here\n' : ''}`),
      ),
    );
  }
}

async function time<I>(label: string, tool: Tool<I>, input: I, ctx: ToolContext): Promise<void> {
  await tool.execute(input, ctx, {}); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await tool.execute(input, ctx, {});
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  console.log(`${label.padEnd(32)} median ${ms[Math.floor(RUNS / 2)]!.toFixed(1)} ms   max ${ms[RUNS - 1]!.toFixed(1)} ms`);
}

const ws = await mkdtemp(path.join(os.tmpdir(), 'gh-bench-walk-'));
try {
  await makeTree(ws);
  const ctx: ToolContext = {
    workspace: ws,
    signal: new AbortController().signal,
    conversationKey: 'console:bench',
    agentName: 'bench',
    envAllowlist: [],
    state: { get: () => undefined, set: () => undefined },
  };
  console.log(`tree: ${DIRS * FILES} files in ${DIRS * 2} directories`);
  await time('grep NEEDLE (10k files)', grepTool(), { pattern: 'NEEDLE', limit: 1000 }, ctx);
  await time('find *.ts (limit 1000, full walk)', findTool(), { pattern: 'nothing-matches-*.ts' }, ctx);
  await time('ls pkg-0/src (100 entries)', lsTool(), { path: 'pkg-0/src' }, ctx);
} finally {
  await closeGrepWorkers();
  await rm(ws, { recursive: true, force: true });
}
