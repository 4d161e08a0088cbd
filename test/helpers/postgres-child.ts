/**
 * A second real process for the PostgreSQL tests: `node --import ./test/helpers/register-ts.mjs
 * test/helpers/postgres-child.ts <url> open` opens the store (migrating if needed), prints its
 * log lines as JSON on stdout and closes it.
 */
import { openPostgresStore } from '../../agent/store/postgres/index.js';

const [url, what] = process.argv.slice(2);
if (!url || what !== 'open') {
  process.stderr.write('usage: postgres-child.ts <url> open\n');
  process.exit(2);
}
const lines: string[] = [];
const store = await openPostgresStore({ url, log: (_level, m) => lines.push(m) });
await store.close();
process.stdout.write(JSON.stringify(lines) + '\n');
