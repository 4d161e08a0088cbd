/**
 * Statements with parameters are prepared once per connection (agent/store/postgres/db.ts): the
 * server then parses and plans each statement text once, not at every call, which was most of its
 * CPU per message. The number of texts a connection prepares is bounded, so SQL that varied
 * without end could not grow the server's memory.
 */
import pg from 'pg';
import { Db } from '../../../agent/store/postgres/db.js';
import { parseTarget } from '../../../agent/store/postgres/errors.js';
import { testPostgresUrl } from '../../helpers/postgres.js';

let pool: pg.Pool | undefined;
afterEach(async () => {
  await pool?.end();
  pool = undefined;
});

async function oneConnectionDb(): Promise<Db> {
  const url = await testPostgresUrl();
  pool = new pg.Pool({ connectionString: url, max: 1 });
  return new Db(pool, parseTarget(url), () => undefined, 1_000);
}

const prepared = async (db: Db): Promise<string[]> =>
  // No parameters: this read is not prepared, so it does not list itself.
  (
    (await db.query('list prepared', 'read', "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'gh\\_%' ORDER BY name", [])).rows as Array<{
      statement: string;
    }>
  ).map((r) => r.statement);

test('a statement text is prepared once on a connection and reused', async () => {
  const db = await oneConnectionDb();
  for (let i = 0; i < 5; i++) expect((await db.query('add', 'read', 'SELECT $1::int + 1 AS n', [i])).rows[0]).toEqual({ n: i + 1 });
  await db.query('other', 'read', 'SELECT $1::text AS t', ['x']);
  expect(await prepared(db)).toEqual(['SELECT $1::int + 1 AS n', 'SELECT $1::text AS t']);
});

test('past 200 texts, new ones run unprepared: a connection never holds more', async () => {
  const db = await oneConnectionDb();
  for (let i = 0; i < 230; i++) expect((await db.query('vary', 'read', `SELECT $1::int + ${i} AS n`, [1])).rows[0]).toEqual({ n: 1 + i });
  const names = await prepared(db);
  expect(names).toHaveLength(200);
  expect(names).not.toContain('SELECT $1::int + 229 AS n');
});
