/**
 * `gatehouse backup FILE`: an online, consistent copy of the SQLite store (GATEHOUSE_STORE, or the
 * default ./data/gatehouse.sqlite) while the bot keeps running.
 *
 * Contract:
 * - The copy is one read transaction (`VACUUM INTO`): a snapshot of committed data, WAL included,
 *   taken without stopping the bot's writes (WAL readers do not block writers). It is then opened
 *   and must pass `PRAGMA integrity_check` before the command reports success.
 * - FILE must not exist (an old backup is never overwritten); its folder is created (0700).
 * - The copy holds every transcript: it is created 0600 (only this user reads it) before SQLite
 *   writes into it, and chmodded 0600 again after.
 * - Exit 0 with a line saying where and how many entries; 1 with the reason (no store there, FILE
 *   exists, a bad GATEHOUSE_STORE as a config error); 2 for bad usage.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { backupSqliteStore } from '../../agent/store/sqlite/backup.js';
import type { CliIO } from './io.js';
import { ConfigError, formatConfigError } from '../config/index.js';
import { storeFromEnv } from '../config/env.js';
import { messageOf } from '../../agent/log.js';

const USAGE = 'Usage: gatehouse backup FILE   (an online, consistent copy of the store; FILE must not exist)';

export async function backupCommand(args: string[], io: CliIO): Promise<number> {
  if (args.length !== 1 || args[0]!.startsWith('-')) {
    io.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const { store, problems } = storeFromEnv(io.env, io.cwd);
  if (problems.length > 0) {
    io.stderr.write(formatConfigError(new ConfigError(problems)) + '\n');
    return 1;
  }
  if (store.kind === 'postgres') {
    io.stderr.write(
      `The store is PostgreSQL (${store.description}): back it up with pg_dump, e.g. pg_dump --format=custom --file ${args[0]} --dbname "$GATEHOUSE_STORE".\n`,
    );
    return 1;
  }
  if (store.path === ':memory:') {
    io.stderr.write('GATEHOUSE_STORE is an in-memory store: there is nothing on disk to back up.\n');
    return 1;
  }
  if (!existsSync(store.path)) {
    io.stderr.write(`There is no store at ${store.path} (GATEHOUSE_STORE); nothing was backed up.\n`);
    return 1;
  }
  const target = resolve(io.cwd, args[0]!);
  if (existsSync(target)) {
    io.stderr.write(`${target} already exists; choose a new file (a backup never overwrites one).\n`);
    return 1;
  }
  try {
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    const { holds } = await backupSqliteStore(store.path, target);
    io.stdout.write(`Backed up ${store.path} to ${target}: ${holds}, integrity check ok.\n`);
    return 0;
  } catch (err) {
    io.stderr.write(`Backup of ${store.path} failed: ${messageOf(err)}\n`);
    return 1;
  }
}
