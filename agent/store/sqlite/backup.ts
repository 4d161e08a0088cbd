/**
 * An online, consistent copy of a SQLite store (`gatehouse backup`), here so bot/ imports no driver.
 *
 * Contract: one read transaction (`VACUUM INTO`): committed data, WAL included, without stopping the
 * running bot's writes. `target` must not exist; it is created 0600 before SQLite writes into it.
 * The copy must pass `PRAGMA integrity_check`; the result says what it holds (conversations of this
 * schema, or entries of a keyv-format store not yet upgraded). A failed copy is removed.
 */
import { chmodSync, rmSync } from 'node:fs';
import { createPrivate } from './files.js';
import { startSqliteWorker, type Row } from './worker.js';

export async function backupSqliteStore(path: string, target: string): Promise<{ holds: string }> {
  createPrivate(target);
  try {
    const source = await startSqliteWorker(path, { mustExist: true, readonly: true });
    try {
      await source.batch([{ sql: 'VACUUM INTO ?', params: [target], mode: 'run' }], { transaction: false });
    } finally {
      await source.close();
    }
    const copy = await startSqliteWorker(target, { mustExist: true, readonly: true });
    let holds: string;
    try {
      const [check, tables] = (await copy.batch([
        { sql: 'PRAGMA integrity_check', params: [], mode: 'all' },
        { sql: "SELECT name FROM sqlite_master WHERE type = 'table'", params: [], mode: 'all' },
      ])) as [Row[], Row[]];
      const verdict = check.map((r) => String(Object.values(r)[0])).join('; ');
      if (verdict !== 'ok') throw new Error(`the copy failed its integrity check: ${verdict}`);
      const names = new Set(tables.map((t) => String(t.name)));
      const table = names.has('conversations') ? 'conversations' : names.has('keyv') ? 'keyv' : undefined;
      const [count] = table ? ((await copy.batch([{ sql: `SELECT count(*) AS n FROM ${table}`, params: [], mode: 'get' }])) as [Row]) : [{ n: 0 }];
      holds = `${Number(count.n)} ${table === 'conversations' ? 'conversations' : 'entries'}`;
    } finally {
      await copy.close();
    }
    chmodSync(target, 0o600);
    return { holds };
  } catch (err) {
    rmSync(target, { force: true });
    throw err;
  }
}
