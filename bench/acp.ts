/**
 * Benchmark (not a test): what one ACP prompt costs through `gatehouse acp`, driven by the SDK's
 * client side over the child's stdio, with the fake model answering at once (so the time is
 * Gatehouse's and the protocol's, plus the fake's local HTTP).
 *
 * Rows, each N prompts one after another in one session, wall time from session/prompt sent to its
 * response:
 *   text         one model reply, streamed as agent_message_chunk updates
 *   gated call   a write_file above the tier: tool_call, session/request_permission answered allow
 *                once by the client at once, the write, a second model call, the answer
 * plus the process's start to its initialize answer.
 *
 * Run: npm run build && node dist/bench/acp.js [--runs 20]
 *   or from source: node --import ./test/helpers/register-ts.mjs bench/acp.ts
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { client, ndJsonStream } from '@agentclientprotocol/sdk';
import { startFakeAnthropic } from '../test/fakes/anthropic.js';

const here = dirname(fileURLToPath(import.meta.url));
const fromSource = import.meta.url.endsWith('.ts');
const root = fromSource ? join(here, '..') : join(here, '..', '..');
const entry = fromSource ? ['--import', join(root, 'test', 'helpers', 'register-ts.mjs'), join(root, 'bot', 'main.ts')] : [join(root, 'bin', 'gatehouse.js')];
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 20;

function stats(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
  return `median ${at(0.5).toFixed(1)} ms   p95 ${at(0.95).toFixed(1)} ms   (n=${s.length})`;
}

const fake = await startFakeAnthropic({ apiKey: 'bench' });
fake.recordRequests = false;
fake.setHandler((req) => {
  const msgs = (req.body as { messages: Array<{ role: string; content: unknown }> }).messages;
  const last = JSON.stringify(msgs[msgs.length - 1]?.content ?? '');
  if (last.includes('tool_result')) return { text: 'written' };
  if (last.includes('please write')) return { toolUses: [{ name: 'write_file', input: { path: 'b.txt', content: 'x' } }] };
  return { text: 'ok, a short answer' };
});
const dir = mkdtempSync(join(tmpdir(), 'gh-bench-acp-'));
writeFileSync(
  join(dir, 'gatehouse.yaml'),
  `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file, write_file]\n    tier: read-only\n    workspace: "${join(dir, 'ws')}"\n`,
);
const env = {
  PATH: process.env.PATH ?? '',
  HOME: dir,
  ANTHROPIC_API_KEY: 'bench',
  ANTHROPIC_BASE_URL: fake.url,
  GATEHOUSE_HTTP_PORT: '0',
  GATEHOUSE_LOG_LEVEL: 'warn',
};

const t0 = performance.now();
const child = spawn(process.execPath, [...entry, 'acp'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'inherit'] });
const conn = client({ name: 'bench' })
  .onNotification('session/update', () => undefined)
  .onRequest('session/request_permission', () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } }))
  .connect(ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>));
try {
  await conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  const startMs = performance.now() - t0;
  const { sessionId } = await conn.agent.request('session/new', { cwd: dir, mcpServers: [] });
  const time = async (text: string): Promise<number> => {
    const t = performance.now();
    const r = await conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });
    if (r.stopReason !== 'end_turn') throw new Error(`stopped: ${r.stopReason}`);
    return performance.now() - t;
  };
  await time('warm up');
  const text: number[] = [];
  for (let i = 0; i < RUNS; i++) text.push(await time(`hello ${i}`));
  const gated: number[] = [];
  for (let i = 0; i < RUNS; i++) gated.push(await time(`please write ${i}`));
  console.log(`gatehouse acp, fake model answering at once (${RUNS} prompts per row)`);
  console.log(`  start to initialize    ${startMs.toFixed(1)} ms`);
  console.log(`  text prompt            ${stats(text)}`);
  console.log(`  gated call + allow     ${stats(gated)}`);
} finally {
  child.stdin.end();
  await new Promise((r) => child.once('exit', r));
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
}
