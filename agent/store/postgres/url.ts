/**
 * Contract: reads a GATEHOUSE_STORE postgres:// URL the way `pg` reads it (pg-connection-string, the
 * parser pg itself uses), so what the config checks, what the doctor probes and what every message
 * names is the server pg connects to. No driver here: the config and the doctor import it too.
 * - A TCP server: `postgres://user:password@host:5432/database`.
 * - A Unix socket (a server on the same machine; cheaper per statement than TCP on 127.0.0.1):
 *   `postgres://user:password@/database?host=/var/run/postgresql` or the host percent-encoded,
 *   `postgres://user:password@%2Fvar%2Frun%2Fpostgresql:5432/database`. A host that starts with `/`
 *   is the folder holding the socket file `.s.PGSQL.<port>`.
 * A bad URL gets an error naming what is wrong, never echoing the URL (it may hold the password).
 */
import { parse } from 'pg-connection-string';

export interface Target {
  /** A host name or address, or the socket's folder (starts with `/`). */
  host: string;
  port: number;
  database: string;
  user: string;
  /** Kept only to scrub it from messages; never printed. */
  password: string;
  /** The socket file when `host` is a folder: `<host>/.s.PGSQL.<port>`. */
  socket?: string;
}

const EXAMPLE = 'postgres://user:password@host:5432/database';
const SOCKET_EXAMPLE = 'postgres://user:password@/database?host=/var/run/postgresql';

/** The target, or what is wrong with the URL (a sentence to follow "GATEHOUSE_STORE "). */
export function readPostgresUrl(url: string): Target | { problem: string } {
  if (!/^postgres(ql)?:\/\//i.test(url)) return { problem: `must start with postgres:// for PostgreSQL; expected ${EXAMPLE}` };
  let c: ReturnType<typeof parse>;
  try {
    c = parse(url);
  } catch (err) {
    // sslrootcert, sslcert and sslkey are read as the URL is: say which file, not "invalid".
    const e = err as NodeJS.ErrnoException;
    if (typeof e.code === 'string' && typeof e.path === 'string') return { problem: `names an SSL file that cannot be read (${e.code}: ${e.path})` };
    return { problem: `is not a valid PostgreSQL URL (check the port and any %-escapes); expected ${EXAMPLE} or, for a Unix socket, ${SOCKET_EXAMPLE}` };
  }
  const host = c.host ?? '';
  if (host === '') return { problem: `names no server; expected ${EXAMPLE} or, for a Unix socket, ${SOCKET_EXAMPLE}` };
  const port = c.port ? Number(c.port) : 5432;
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { problem: `has port "${c.port}"; expected a number from 1 to 65535` };
  const user = c.user ?? '';
  const database = c.database ?? '';
  if (!database) {
    return {
      problem: `names no database: add it after the host (postgres://${user || 'user'}@${host.startsWith('/') ? '' : host}/gatehouse${host.startsWith('/') ? `?host=${host}` : ''})`,
    };
  }
  return {
    host,
    port,
    database,
    // pg's own default when the URL names no user.
    user: user || process.env.PGUSER || process.env.USER || 'postgres',
    password: c.password ?? '',
    socket: host.startsWith('/') ? `${host.replace(/\/+$/, '')}/.s.PGSQL.${port}` : undefined,
  };
}

/** Where it is, safe to print (no password), in a form pg and psql accept. */
export function describeTarget(t: Target): string {
  const user = encodeURIComponent(t.user);
  const db = encodeURIComponent(t.database);
  if (t.socket) return `postgres://${user}@/${db}?host=${t.host}&port=${t.port}`;
  const host = t.host.includes(':') ? `[${t.host}]` : t.host;
  return `postgres://${user}@${host}:${t.port}/${db}`;
}

/** "PostgreSQL at host:port" or "PostgreSQL at socket /dir/.s.PGSQL.5432", for sentences. */
export function serverOf(t: Target): string {
  return t.socket ? `PostgreSQL at socket ${t.socket}` : `PostgreSQL at ${t.host}:${t.port}`;
}
