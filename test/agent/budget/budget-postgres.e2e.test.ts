import { openPostgresStore } from '../../../agent/store/postgres/index.js';
import { testPostgresUrl } from '../../helpers/postgres.js';
import { budgetSuite } from './shared-budget.js';

// Two stores on one database: two replicas sharing one budget.
budgetSuite('PostgreSQL', async () => {
  const url = await testPostgresUrl();
  const a = await openPostgresStore({ url, log: () => undefined });
  const b = await openPostgresStore({ url, log: () => undefined });
  return [a, b];
});
