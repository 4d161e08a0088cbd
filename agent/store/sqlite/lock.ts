/**
 * One process per SQLite store: an OS-level lock on `<store>.lock`, and who holds it in
 * `<store>.holder` (JSON: pid, since).
 *
 * Contract:
 * - The lock is SQLite's own fcntl lock on a small database (exclusive locking mode, held by a
 *   connection in the store's worker thread, ./worker.ts `lockPath`; this file names the holder).
 *   The kernel releases it when the process dies, however it dies (kill -9), so a killed holder's
 *   lock is simply taken over, and a reused pid cannot fool it.
 * - Held by another process (or another open in this one): rejects with a StoreError, code
 *   ALREADY_RUNNING, "already running (pid N, since <ISO time>)", having read the holder file and
 *   changed nothing.
 * - The holder file is written (0600) after the lock is taken and removed at release if still ours;
 *   a stale one (left by a killed holder) is only ever read while the lock is held by someone else.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { StoreError } from '../types.js';
import type { Log } from '../../log.js';
import { messageOf } from '../../log.js';

interface Holder {
  pid: number;
  since: number;
}

function readHolder(file: string): Holder | undefined {
  try {
    const h = JSON.parse(readFileSync(file, 'utf8')) as Partial<Holder>;
    return typeof h.pid === 'number' && typeof h.since === 'number' ? { pid: h.pid, since: h.since } : undefined;
  } catch {
    return undefined;
  }
}

/** The error of an exclusive open that found the lock held, naming the holder (read only). */
export function alreadyRunning(path: string): StoreError {
  const h = readHolder(`${path}.holder`);
  const who = h ? `pid ${h.pid}, since ${new Date(h.since).toISOString()}` : 'pid unknown';
  return new StoreError(
    `Gatehouse is already running (${who}) on the store ${path}: stop that one first; operator commands (approvals, conversations, backup, reload, run) work beside it`,
    'ALREADY_RUNNING',
  );
}

/** Records this process as the holder once the lock is held; the returned function forgets it. */
export function recordHolder(path: string, log: Log): () => void {
  const holderPath = `${path}.holder`;
  const me: Holder = { pid: process.pid, since: Date.now() };
  try {
    writeFileSync(holderPath, `${JSON.stringify(me)}\n`, { mode: 0o600 });
  } catch (err) {
    log('warn', `warning: could not write ${holderPath} (a second start will not say which process runs): ${messageOf(err)}`);
  }
  return () => {
    const h = readHolder(holderPath);
    if (h && h.pid === me.pid && h.since === me.since) rmSync(holderPath, { force: true });
  };
}
