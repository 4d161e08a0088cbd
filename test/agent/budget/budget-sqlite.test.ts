import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import { budgetSuite } from './shared-budget.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// Two stores on one file: two processes sharing one SQLite budget.
budgetSuite('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-budget-'));
  dirs.push(dir);
  const path = join(dir, 'store.db');
  const a = await openSqliteStore({ path, log: () => undefined });
  const b = await openSqliteStore({ path, log: () => undefined });
  return [a, b];
});
