/**
 * The budget check's cost per model call (issue 24): one reserve (the call's worst case on every
 * line of a budget with all four scopes) plus one settle, against a real store, sequential calls,
 * with hard limits and with soft ones under their limit (the same statements, `raised` read in
 * them); a refused call (the reserve rolled back, the total read); and the purge of a month of day
 * totals. Prints the median and p95 in ms per engine.
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
import type { BudgetLimits } from '../agent/budget/limits.js';
import { startBenchPostgres } from './postgres-server.js';

const calls = Number(process.argv[process.argv.indexOf('--calls') + 1] || 500) || 500;
const usage = { inputTokens: 1000, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0, costUSD: 0.006, costKnown: true };

const BIG = 1e6;
const HARD: BudgetLimits = { conversation: { usd: BIG }, userPerDay: { usd: BIG }, agentPerDay: { usd: BIG }, agentPerMonth: { usd: BIG, tokens: 1e12 } };
const SOFT: BudgetLimits = {
  conversation: { usd: { soft: BIG } },
  userPerDay: { usd: { soft: BIG, hard: 2 * BIG } },
  agentPerDay: { usd: { soft: BIG } },
  agentPerMonth: { usd: { soft: BIG }, tokens: { soft: 1e12 } },
};

function report(name: string, times: number[]): void {
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(3);
  console.log(`${name}: ${times.length} calls, median ${at(0.5)} ms, p95 ${at(0.95)} ms`);
}

async function reserveSettle(name: string, store: Store, limits: BudgetLimits): Promise<void> {
  const gate = new BudgetGate({ spend: store.spend, limits });
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const r = await gate.reserve({ agent: 'bench', conversation: `c${i % 20}`, user: `u${i % 5}` }, 'claude-sonnet-4-6', 1000, 1024);
    if (!r.ok) throw new Error('refused');
    await r.reservation.settle(usage);
    times.push(performance.now() - t0);
  }
  report(name, times);
}

async function refused(name: string, store: Store): Promise<void> {
  // Over a soft limit with nobody to approve: the reserve rolls back, the total is read, no card.
  const gate = new BudgetGate({ spend: store.spend, limits: { conversation: { usd: { soft: 0.001 } } }, approve: async () => ({ outcome: 'no_approver' }) });
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const r = await gate.reserve({ agent: 'bench-refused', conversation: 'c' }, 'claude-sonnet-4-6', 1000, 1024);
    if (r.ok) throw new Error('not refused');
    times.push(performance.now() - t0);
  }
  report(name, times);
}

async function purge(name: string, store: Store): Promise<void> {
  // 31 days x 50 users x 2 units of day totals, then everything they cover has passed.
  const day0 = Date.UTC(2026, 0, 1);
  for (let d = 0; d < 31; d++) {
    const lines = Array.from({ length: 50 }, (_, u) =>
      (['usd', 'tokens'] as const).map((unit) => ({
        key: `user:bench:u${u}:2026-01-${String(d + 1).padStart(2, '0')}:${unit}`,
        amount: 1,
        limit: BIG,
        resetsAt: day0 + (d + 1) * 86_400_000,
      })),
    ).flat();
    await store.spend.reserve(lines, day0);
  }
  const t0 = performance.now();
  const n = await store.spend.purge(day0 + 40 * 86_400_000);
  console.log(`${name}: purged ${n} totals in ${(performance.now() - t0).toFixed(1)} ms`);
}

async function measure(name: string, store: Store): Promise<void> {
  await reserveSettle(`${name} reserve+settle, hard limits`, store, HARD);
  await reserveSettle(`${name} reserve+settle, soft limits (under)`, store, SOFT);
  await refused(`${name} refused at a soft limit, no approver`, store);
  await purge(`${name}`, store);
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
