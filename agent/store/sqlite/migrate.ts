/**
 * Brings a store to SCHEMA_VERSION: a new file gets the tables; a store of an older version (the
 * keyv build included) is first copied to `<store>.pre-<version>` (0600; VACUUM INTO, so what was in
 * the WAL is in the copy) and then migrated in ONE transaction, which also bumps user_version.
 *
 * Contract: of several processes opening the same old store at once, one migrates; the others see
 * the new version (the batch starts with a `require`d check of the version it read). A store of a
 * newer version than this build knows is refused, naming both versions. An existing backup is
 * never overwritten: an earlier copy is the older original.
 */
import { existsSync } from 'node:fs';
import { StoreError } from '../types.js';
import { createPrivate } from './files.js';
import { importKeyv } from './legacy.js';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.js';
import { WorkerError, type Row, type SqliteWorker, type Statement } from './worker.js';
import type { Log } from '../../log.js';

export interface MigrateOptions {
  path: string;
  mustExist: boolean;
  now: number;
  log: Log;
  /** Called when the store holds no Gatehouse data at all (mustExist). */
  notAStore: () => Error;
}

export async function migrate(worker: SqliteWorker, o: MigrateOptions, attempt = 0): Promise<void> {
  const [version, keyv, tables] = (await worker.batch([
    { sql: 'PRAGMA user_version', params: [], mode: 'get' },
    { sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'keyv'", params: [], mode: 'get' },
    { sql: "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'", params: [], mode: 'get' },
  ])) as [Row, Row | undefined, Row];
  const from = Number(version.user_version);
  if (from === SCHEMA_VERSION) return;
  if (from > SCHEMA_VERSION) {
    throw new StoreError(
      `the store ${o.path} has schema version ${from}, newer than this Gatehouse knows (${SCHEMA_VERSION}): run the newer Gatehouse, or restore a backup made before it (${o.path}.pre-${from})`,
      'SCHEMA_TOO_NEW',
    );
  }
  const hasData = Number(tables.n) > 0;
  if (!hasData && o.mustExist) throw o.notAStore();
  if (hasData && o.path !== ':memory:') {
    const backup = `${o.path}.pre-${SCHEMA_VERSION}`;
    if (existsSync(backup)) {
      o.log('warn', `a backup ${backup} is already there (an earlier upgrade that did not finish?): kept as it is`);
    } else {
      createPrivate(backup);
      await worker.batch([{ sql: 'VACUUM INTO ?', params: [backup], mode: 'run' }], { transaction: false });
      o.log('info', `before upgrading the store to schema version ${SCHEMA_VERSION}, copied it to ${backup}`);
    }
  }
  const stmts: Statement[] = [{ sql: 'SELECT user_version FROM pragma_user_version WHERE user_version = ?', params: [from], mode: 'get', require: true }];
  for (let v = from; v < SCHEMA_VERSION; v++) for (const sql of MIGRATIONS[v]!) stmts.push({ sql, params: [], mode: 'run' });
  let summary = '';
  if (from === 0 && keyv) {
    const [rows] = (await worker.batch([{ sql: 'SELECT key, value FROM keyv ORDER BY rowid', params: [], mode: 'all' }])) as [
      Array<{ key: string; value: string }>,
    ];
    const imported = importKeyv(rows, o.now);
    stmts.push(...imported.stmts, { sql: 'DROP TABLE keyv', params: [], mode: 'run' });
    summary = Object.entries(imported.counts)
      .map(([what, n]) => `${n} ${what}`)
      .join(', ');
    if (imported.skipped.length > 0)
      o.log(
        'warn',
        `upgrade: ${imported.skipped.length} entries of the old store were not understood and are left out (kept in the backup): ${imported.skipped.slice(0, 10).join(', ')}`,
      );
  }
  stmts.push({ sql: `PRAGMA user_version = ${SCHEMA_VERSION}`, params: [], mode: 'run' });
  try {
    await worker.batch(stmts);
  } catch (err) {
    // Another process migrated it meanwhile: read the version again.
    if (err instanceof WorkerError && err.code === 'GATEHOUSE_PRECONDITION' && err.index === 0 && attempt < 3) return migrate(worker, o, attempt + 1);
    throw err;
  }
  if (summary) o.log('info', `upgraded the store from the keyv format to schema version ${SCHEMA_VERSION}: ${summary}`);
  else if (hasData) o.log('info', `upgraded the store from schema version ${from} to ${SCHEMA_VERSION}`);
}
