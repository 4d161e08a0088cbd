/**
 * A child process of the race tests (test/agent/store/races.ts): opens the store described by argv[2]
 * (JSON StoreFactory), prints "ready", waits for "go" on stdin, then fires every operation of argv[3]
 * (JSON RacePlan) at once and prints the ids it won as one JSON line.
 */
import { createInterface } from 'node:readline';
import type { Store } from '../../../agent/store/types.js';
import type { RacePlan, StoreFactory } from './races.js';

export async function openFromFactory(f: StoreFactory): Promise<Store> {
  if (f.engine === 'sqlite') {
    const { openSqliteStore } = await import('../../../agent/store/sqlite/index.js');
    return openSqliteStore({ path: f.path, log: () => undefined });
  }
  // Loaded only for PostgreSQL races, so a SQLite race child does not pay for pg (about 100-200 ms a
  // process here); a literal path, so tsc checks it.
  const { openPostgresStore } = await import('../../../agent/store/postgres/index.js');
  return openPostgresStore({ url: f.url, log: () => undefined });
}

const factory = JSON.parse(process.argv[2]!) as StoreFactory;
const plan = JSON.parse(process.argv[3]!) as RacePlan;
const store = await openFromFactory(factory);
process.stdout.write('ready\n');
const rl = createInterface({ input: process.stdin });
await new Promise<void>((resolve) => rl.once('line', () => resolve()));
rl.close();
const won: Record<string, string[]> = { decideOnce: [], claim: [], swap: [] };
const ops: Array<Promise<void>> = [];
for (const id of plan.approvals) {
  ops.push(store.approvals.decideOnce(id, { by: process.pid }, plan.now, plan.now + 60_000).then((ok) => void (ok && won.decideOnce!.push(id))));
}
for (const id of plan.events) ops.push(store.events.claim(id, 60_000, plan.now).then((ok) => void (ok && won.claim!.push(id))));
for (const id of plan.reminders) {
  const next = { id, conversation: plan.conversation, dueAt: plan.now + 1000, rev: 2, reminder: { by: process.pid } };
  ops.push(store.reminders.swap(id, 1, next).then((ok) => void (ok && won.swap!.push(id))));
}
await Promise.all(ops);
await store.close();
process.stdout.write(`${JSON.stringify(won)}\n`);
