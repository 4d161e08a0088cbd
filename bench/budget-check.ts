/**
 * The budget check's cost per model call (issue 24): one reserve (the call's worst case on every
 * line of a budget with all four scopes) plus one settle, against a real store, sequential calls.
 * Prints the median and p95 in ms per engine.
 *
 * Run: node --import ./test/helpers/register-ts.mjs bench/budget-check.ts [--calls 500]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BudgetGate } from '../agent/budget/gate.js';
import { createDatabase } from '../agent/store/postgres/admin.js';
import { openPostgresStore } from '../agent/store/postgres/index.js';
import { openSqliteStore } from '../agent/store/sqlite/index.js';
import type { Store } from '../agent/store/types.js';
import { startBenchPostgres } from './postgres-server.js';

const calls = Number(process.argv[process.argv.indexOf('--calls') + 1] || 500) || 500;
const usage = { inputTokens: 1000, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0, costUSD: 0.006, costKnown: true };

async function measure(name: string, store: Store): Promise<void> {
  const gate = new BudgetGate({
    spend: store.spend,
    limits: { conversation: { usd: 1e6 }, userPerDay: { usd: 1e6 }, agentPerDay: { usd: 1e6 }, agentPerMonth: { usd: 1e6, tokens: 1e12 } },
  });
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const r = await gate.reserve({ agent: 'bench', conversation: `c${i % 20}`, user: `u${i % 5}` }, 'claude-sonnet-4-6', 1000, 1024);
    if (!r.ok) throw new Error('refused');
    await r.reservation.settle(usage);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(3);
  console.log(`${name}: ${calls} calls, reserve+settle median ${at(0.5)} ms, p95 ${at(0.95)} ms`);
}

const dir = mkdtempSync(join(tmpdir(), 'gh-bench-budget-'));
const sqlite = await openSqliteStore({ path: join(dir, 'store.db'), log: () => undefined });
await measure('sqlite', sqlite);
await sqlite.close();
rmSync(dir, { recursive: true, force: true });

const server = process.env.GATEHOUSE_TEST_POSTGRES_URL ? undefined : await startBenchPostgres();
const adminUrl = process.env.GATEHOUSE_TEST_POSTGRES_URL ?? server!.url;
const pg = await openPostgresStore({ url: await createDatabase(adminUrl, `bench_budget_${process.pid}`), log: () => undefined });
await measure('postgres', pg);
await pg.close();
await server?.stop();
