/**
 * Contract: turns what `pg` and the network throw into what an operator can act on, and never lets
 * the password out. Every message that leaves this folder (errors, log lines) goes through
 * `redact`; start-up failures become a StoreError naming host, port, database and the fix.
 * `isConnectionLoss` / `notSent` classify errors for the retry policy in db.ts.
 */
import { StoreError } from '../types.js';
import { messageOf } from '../../log.js';
import { describeTarget, readPostgresUrl, serverOf, type Target } from './url.js';

export type { Target } from './url.js';
export { describeTarget } from './url.js';

/** Oldest server this engine supports (server_version_num). */
const MIN_SERVER_VERSION = 130000;

/** The target of a postgres:// URL (see ./url.ts), or a StoreError saying what is wrong with it. */
export function parseTarget(url: string): Target {
  const t = readPostgresUrl(url);
  if ('problem' in t) throw new StoreError(`GATEHOUSE_STORE ${t.problem}`, 'bad-url');
  return t;
}

/**
 * The message with every form of the password (plain, URL-encoded) replaced. A form is replaced
 * where it stands apart (in a URL, in quotes, after `=`), not inside a longer word: a short password
 * such as `p` must not turn "port" into "***ort". An edge that is not a letter or digit needs no
 * separation (`p@ss` is found wherever it appears).
 */
export function redact(text: string, password: string): string {
  if (!password) return text;
  let out = text;
  for (const form of new Set([password, encodeURIComponent(password), encodeURI(password)])) {
    if (!form) continue;
    const escaped = form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const before = /^[\p{L}\p{N}]/u.test(form) ? '(?<![\\p{L}\\p{N}])' : '';
    const after = /[\p{L}\p{N}]$/u.test(form) ? '(?![\\p{L}\\p{N}])' : '';
    out = out.replace(new RegExp(before + escaped + after, 'gu'), '***');
  }
  return out;
}

interface PgLikeError {
  code?: unknown;
  message?: unknown;
  errno?: unknown;
}

function codeOf(err: unknown): string | undefined {
  const c = (err as PgLikeError | null)?.code;
  return typeof c === 'string' ? c : undefined;
}

// ENOENT: a Unix socket's file is gone while its server restarts (the next one makes it again).
const NETWORK_CODES = new Set([
  'ENOENT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);
// 57P01 admin_shutdown (pg_terminate_backend, fast shutdown), 57P02 crash_shutdown,
// 57P03 cannot_connect_now (starting up / shutting down); class 08 is connection_exception.
const SERVER_GONE = new Set(['57P01', '57P02', '57P03']);

/** The connection (or the server) went away; the same call may work on a new connection. */
export function isConnectionLoss(err: unknown): boolean {
  const code = codeOf(err);
  if (code && (NETWORK_CODES.has(code) || SERVER_GONE.has(code) || code.startsWith('08'))) return true;
  const msg = messageOf(err);
  return /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|Connection ended|server closed the connection/i.test(
    msg,
  );
}

/**
 * The server refused a new session for now: no connection slot free (max_connections, or the
 * role's or the database's CONNECTION LIMIT: 53300), or the database closed to logins for
 * maintenance (ALLOW_CONNECTIONS false: 55000). Nothing was sent, and a slot may free up.
 */
export function isRefusedForNow(err: unknown): boolean {
  const code = codeOf(err);
  return code === '53300' || (code === '55000' && /not currently accepting connections/i.test(messageOf(err)));
}

/** pg refused before writing anything to the socket: any statement can be sent again. */
export function notSent(err: unknown): boolean {
  return /is not queryable/i.test(messageOf(err));
}

/** Transaction conflicts PostgreSQL asks the client to retry. */
export function isRetryableConflict(err: unknown): boolean {
  const code = codeOf(err);
  return code === '40001' || code === '40P01';
}

/** A start-up failure said so an operator can fix it. */
export function startupError(err: unknown, t: Target): StoreError {
  const where = `${serverOf(t)} (database "${t.database}", user "${t.user}")`;
  const code = codeOf(err);
  const raw = redact(messageOf(err), t.password);
  // Already said for an operator (its foreign parts redacted where it was made): redacting it again
  // would only mangle our own words.
  if (err instanceof StoreError) return err;
  switch (code) {
    case 'ECONNREFUSED':
      if (t.socket)
        return new StoreError(
          `cannot reach ${where}: connection refused (the socket file is there, but no server answers on it). Start the server, or fix host= and the port in GATEHOUSE_STORE.`,
          'unreachable',
        );
      return new StoreError(`cannot reach ${where}: connection refused. Start the server, or fix the host and port in GATEHOUSE_STORE.`, 'unreachable');
    case 'ENOENT':
      return new StoreError(
        `cannot reach ${where}: there is no socket file ${t.socket ?? t.host}. The server is not running, or it makes its socket in another folder or for another port (unix_socket_directories and port in postgresql.conf). Start it, or fix host= and the port in GATEHOUSE_STORE.`,
        'unreachable',
      );
    case 'EACCES':
      return new StoreError(
        `cannot reach ${where}: permission denied on ${t.socket ?? t.host}. Run Gatehouse as a user who may open the server's socket (unix_socket_group and unix_socket_permissions in postgresql.conf), or connect over TCP.`,
        'unreachable',
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StoreError(`cannot reach ${where}: the host name "${t.host}" does not resolve. Fix the host in GATEHOUSE_STORE.`, 'unreachable');
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ETIMEDOUT':
      return new StoreError(`cannot reach ${where}: ${code}. Check the host, port and firewall, or fix GATEHOUSE_STORE.`, 'unreachable');
    case '28P01':
    case '28000':
      return new StoreError(`${where} refused the login (${raw}). Fix the user or password in GATEHOUSE_STORE, or the server's pg_hba.conf.`, 'auth');
    case '3D000':
      return new StoreError(
        `${where}: the database does not exist. Create it (createdb -h ${t.host} -p ${t.port} -U ${t.user} ${t.database}) or fix the database name in GATEHOUSE_STORE.`,
        'no-database',
      );
    case '42501':
      return new StoreError(
        `${where}: permission denied (${raw}). Grant the user CREATE on the database (GRANT CREATE ON DATABASE ${t.database} TO ${t.user}) or use its owner.`,
        'permission',
      );
    case '53300':
      return new StoreError(
        `${where} has no connection slot free (${raw}). Raise max_connections on the server or the user's CONNECTION LIMIT, or run fewer processes against it.`,
        'unreachable',
      );
    case '57P03':
      return new StoreError(`${where} is starting up or shutting down; try again in a moment.`, 'unreachable');
  }
  if (/timeout|Connection terminated/i.test(raw)) {
    return new StoreError(
      `cannot reach ${where}: no answer in time, or the connection was closed (${raw}). Check that the server is up, the host and port in GATEHOUSE_STORE, and any firewall between.`,
      'unreachable',
    );
  }
  return new StoreError(`cannot open ${where}: ${raw}`, code);
}

/** A server too old for this engine, or undefined when it is new enough. */
export function checkServerVersion(versionNum: number, versionText: string, t: Target): StoreError | undefined {
  if (Number.isFinite(versionNum) && versionNum >= MIN_SERVER_VERSION) return undefined;
  return new StoreError(
    `${serverOf(t)} (database "${t.database}") is version ${versionText}; Gatehouse needs PostgreSQL ${MIN_SERVER_VERSION / 10000} or newer. Upgrade the server or point GATEHOUSE_STORE at a newer one.`,
    'old-server',
  );
}

/** A runtime failure, scrubbed, keeping pg's SQLSTATE for callers that look at it. */
export function runtimeError(err: unknown, t: Target, what: string): Error {
  if (err instanceof StoreError) return err;
  const e = new StoreError(`PostgreSQL ${describeTarget(t)}: ${what} failed: ${redact(messageOf(err), t.password)}`, codeOf(err));
  return e;
}
