/**
 * agent/store/postgres/url.ts: a GATEHOUSE_STORE postgres URL read as pg reads it (TCP or a Unix
 * socket's folder), what is printed of it, and the problems said of a bad one without echoing it.
 */
import { describeTarget, readPostgresUrl, serverOf, type Target } from '../../../agent/store/postgres/url.js';

const target = (url: string): Target => {
  const t = readPostgresUrl(url);
  if ('problem' in t) throw new Error(`${url}: ${t.problem}`);
  return t;
};
const problem = (url: string): string => {
  const t = readPostgresUrl(url);
  if (!('problem' in t)) throw new Error(`${url} was accepted`);
  return t.problem;
};

test('a TCP server: host, port (5432 by default), database, user and password, IPv6 in brackets', () => {
  expect(target('postgres://bot:s3cret@db.example:5433/gatehouse')).toEqual({
    host: 'db.example',
    port: 5433,
    database: 'gatehouse',
    user: 'bot',
    password: 's3cret',
    socket: undefined,
  });
  expect(target('postgresql://bot@db/g').port).toBe(5432);
  const v6 = target('postgres://bot:p%40ss@[::1]:5444/my%20db');
  expect(v6).toMatchObject({ host: '::1', database: 'my db', password: 'p@ss' });
  expect(describeTarget(v6)).toBe('postgres://bot@[::1]:5444/my%20db');
  expect(serverOf(v6)).toBe('PostgreSQL at ::1:5444');
});

test('a Unix socket, named by ?host=/folder or a %-encoded host: the socket file is <folder>/.s.PGSQL.<port>', () => {
  const byQuery = target('postgres://bot:s3cret@/gatehouse?host=/var/run/postgresql');
  expect(byQuery).toMatchObject({ host: '/var/run/postgresql', port: 5432, database: 'gatehouse', user: 'bot', socket: '/var/run/postgresql/.s.PGSQL.5432' });
  expect(target('postgres:///gatehouse?host=/tmp/pg&port=5499&user=bot').socket).toBe('/tmp/pg/.s.PGSQL.5499');
  expect(target('postgres://bot@%2Ftmp%2Fpg:5498/gatehouse').socket).toBe('/tmp/pg/.s.PGSQL.5498');
  expect(serverOf(byQuery)).toBe('PostgreSQL at socket /var/run/postgresql/.s.PGSQL.5432');
  // What is printed reads back to the same server, without the password.
  const shown = describeTarget(byQuery);
  expect(shown).not.toContain('s3cret');
  expect(target(shown)).toMatchObject({ host: byQuery.host, port: byQuery.port, database: byQuery.database, user: byQuery.user });
});

test('a bad URL gets a problem that says what is wrong and never echoes the password', () => {
  expect(problem('mysql://bot:s3cret@db/x')).toMatch(/^must start with postgres:\/\//);
  expect(problem('postgres://bot:s3cret@db:99999/x')).toMatch(/^is not a valid PostgreSQL URL \(check the port/);
  expect(problem('postgres://bot:s3cret@/gatehouse')).toMatch(/^names no server; expected .* for a Unix socket, postgres:\/\/user:password@\/database\?host=/);
  expect(problem('postgres://bot:s3cret@db:5432')).toBe('names no database: add it after the host (postgres://bot@db/gatehouse)');
  expect(problem('postgres://bot:s3cret@/?host=/run/pg')).toBe('names no database: add it after the host (postgres://bot@/gatehouse?host=/run/pg)');
  for (const url of ['mysql://bot:s3cret@db/x', 'postgres://bot:s3cret@db:99999/x', 'postgres://bot:s3cret@/gatehouse', 'postgres://bot:s3cret@db:5432']) {
    expect(problem(url)).not.toContain('s3cret');
  }
});

test('an SSL file the URL names that cannot be read is said as such, not as an invalid URL', () => {
  expect(problem('postgres://bot:s3cret@db/g?sslmode=verify-full&sslrootcert=/nonexistent/root.crt')).toBe(
    'names an SSL file that cannot be read (ENOENT: /nonexistent/root.crt)',
  );
});
