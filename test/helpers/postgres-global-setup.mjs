// Part of jest globalSetup (global-setup.mjs, not under TEST_FAST): reserves a folder for this run's PostgreSQL test server and nothing else, so a
// run without PostgreSQL tests pays nothing. The first test that needs the server starts it
// (test/helpers/postgres.ts); workers inherit GATEHOUSE_TEST_PG_RUN_DIR from this process.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup() {
  if (process.env.GATEHOUSE_TEST_POSTGRES_URL) return;
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-pg-'));
  // The server runs as the postgres user when the tests run as root: it must pass through.
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'owner'), String(process.pid));
  process.env.GATEHOUSE_TEST_PG_RUN_DIR = dir;
}
