// jest globalTeardown: stops this run's PostgreSQL server (it runs from node_modules), then puts
// back the modes globalSetup opened.
import { restoreParents } from './open-parents.mjs';
import teardownPostgres from './postgres-global-teardown.mjs';

export default async function teardown() {
  try {
    await teardownPostgres();
  } finally {
    restoreParents();
  }
}
