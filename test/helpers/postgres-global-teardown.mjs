// Part of jest globalTeardown (global-teardown.mjs): stops this run's PostgreSQL test server if a test started it, and removes
// its folder (data included).
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export default async function teardown() {
  const dir = process.env.GATEHOUSE_TEST_PG_RUN_DIR;
  if (!dir || !existsSync(dir)) return;
  const pidFile = join(dir, 'pid');
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8'));
    if (pid > 0 && alive(pid)) {
      process.kill(pid, 'SIGINT'); // fast shutdown: ends sessions, no waiting for clients
      for (let i = 0; i < 300 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }
  rmSync(dir, { recursive: true, force: true });
}
