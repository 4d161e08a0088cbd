// jest globalSetup (every selection, TEST_FAST included): opens the checkout's parents for the run
// (open-parents.mjs) and, when PostgreSQL tests may run, reserves their server's folder.
import { openParents } from './open-parents.mjs';
import setupPostgres from './postgres-global-setup.mjs';

export default function setup() {
  openParents();
  if (process.env.TEST_FAST !== '1') setupPostgres();
}
