/**
 * agent/store/sqlite/worker.ts: WAL checkpoints run on a connection of their own (the checkpointer),
 * never on the store's. A reader that holds a snapshot for long (another process's read, a backup)
 * keeps a checkpoint from finishing; a checkpoint that waited for it on the store's thread (RESTART
 * with the busy timeout) held every call of the bot back meanwhile. Here the store's busy timeout is
 * ten minutes, so a store that waited would not answer within the test's time.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSqliteWorker, type Statement } from '../../../agent/store/sqlite/worker.js';

// The other process's reader: a plain connection that opens a read transaction and keeps it.
const Database = createRequire(import.meta.url)('better-sqlite3') as new (
  path: string,
  o?: { readonly?: boolean },
) => { exec(sql: string): void; prepare(sql: string): { get(): unknown }; close(): void };

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gatehouse-checkpointer-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const insert = (i: number): Statement[] => [{ sql: 'INSERT INTO t VALUES (?, ?)', params: [i, 'x'.repeat(2048)], mode: 'run' }];
const yieldTo = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("a reader holding an old snapshot does not hold the store's calls back: checkpoints wait beside them, and catch up once it is gone", async () => {
  const path = join(dir, 'gatehouse.sqlite');
  const store = await startSqliteWorker(path, { checkpointMs: 1, restartFrames: 1, busyTimeoutMs: 600_000 });
  await store.batch([{ sql: 'CREATE TABLE t(i INTEGER, v TEXT)', params: [], mode: 'run' }]);
  for (let i = 0; i < 20; i++) await store.batch(insert(i));

  const reader = new Database(path, { readonly: true });
  reader.exec('BEGIN');
  reader.prepare('SELECT count(*) FROM t').get();
  try {
    // Writes past the reader's snapshot: no checkpoint can finish them while it reads. The pauses
    // give the checkpoint timer its turns (the assertion is on answers, never on time).
    for (let i = 20; i < 220; i++) {
      await store.batch(insert(i));
      if (i % 20 === 0) await yieldTo(5);
    }
    expect(await store.batch([{ sql: 'SELECT count(*) AS n FROM t', params: [], mode: 'get' }])).toEqual([{ n: 220 }]);
  } finally {
    reader.exec('COMMIT');
    reader.close();
  }
  await store.close();
  expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0);
}, 60_000);
