/**
 * A PostgreSQL server on a Unix socket, for tests of `GATEHOUSE_STORE=postgres://...?host=/folder`
 * against any test server (ours listens on TCP only, and GATEHOUSE_TEST_POSTGRES_URL may be remote):
 * a socket file `<folder>/.s.PGSQL.<port>`, named as libpq and pg name it, whose connections are piped
 * to the server's TCP port. The bytes are the server's own; only the transport differs.
 *
 * Contract:
 * - `url(database)` is the socket form of a database URL on the same login.
 * - `down()` is what the bot sees when the server restarts: every connection is cut and the socket
 *   file is gone (ENOENT on connect) until `up()` makes it again.
 * - `close()` ends it and removes the folder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'pg-connection-string';

export interface SocketForwarder {
  folder: string;
  socketFile: string;
  url(tcpUrl: string): string;
  /** Connections accepted so far. */
  accepted: number;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startSocketForwarder(tcpUrl: string): Promise<SocketForwarder> {
  const target = parse(tcpUrl);
  const host = target.host ?? '127.0.0.1';
  const port = Number(target.port || 5432);
  const folder = mkdtempSync(join(tmpdir(), 'gh-pgsock-'));
  const socketFile = join(folder, `.s.PGSQL.${port}`);
  const open = new Set<Socket>();
  let server: Server | undefined;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
        f.accepted++;
        const upstream = createConnection({ host, port });
        open.add(client).add(upstream);
        const end = () => {
          client.destroy();
          upstream.destroy();
          open.delete(client);
          open.delete(upstream);
        };
        client.on('error', end).on('close', end);
        upstream.on('error', end).on('close', end);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      s.once('error', reject);
      s.listen(socketFile, () => {
        server = s;
        resolve();
      });
    });

  const f: SocketForwarder = {
    folder,
    socketFile,
    accepted: 0,
    url(forUrl: string) {
      const t = parse(forUrl);
      const auth = encodeURIComponent(t.user ?? '') + (t.password ? `:${encodeURIComponent(t.password)}` : '');
      return `postgres://${auth}@/${encodeURIComponent(t.database ?? 'postgres')}?host=${encodeURIComponent(folder)}&port=${port}`;
    },
    async down() {
      const s = server;
      server = undefined;
      for (const sock of open) sock.destroy();
      open.clear();
      if (s) await new Promise<void>((r) => s.close(() => r()));
      rmSync(socketFile, { force: true });
    },
    up: listen,
    async close() {
      await f.down();
      rmSync(folder, { recursive: true, force: true });
    },
  };
  await listen();
  return f;
}
