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
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { CliIO } from './cli.js';
import { ConfigError, formatConfigError } from './config.js';
import { storeFromEnv } from './env.js';

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
    // VACUUM INTO accepts an empty file: made here, it is 0600 from its first byte.
    closeSync(openSync(target, 'wx', 0o600));
    const source = new Database(store.path, { readonly: true, fileMustExist: true, timeout: 10_000 });
    try {
      source.prepare('VACUUM INTO ?').run(target);
    } finally {
      source.close();
    }
    const copy = new Database(target, { readonly: true, fileMustExist: true });
    let entries: number;
    try {
      const check = String(copy.pragma('integrity_check', { simple: true }));
      if (check !== 'ok') throw new Error(`the copy failed its integrity check: ${check}`);
      entries = copy.prepare('SELECT count(*) FROM keyv').pluck().get() as number;
    } finally {
      copy.close();
    }
    chmodSync(target, 0o600);
    io.stdout.write(`Backed up ${store.path} to ${target}: ${entries} entries, integrity check ok.\n`);
    return 0;
  } catch (err) {
    rmSync(target, { force: true });
    io.stderr.write(`Backup of ${store.path} failed: ${(err as Error).message}\n`);
    return 1;
  }
}
