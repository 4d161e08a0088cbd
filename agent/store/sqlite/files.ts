/**
 * The store's files on disk: the folder checked (and created 0700) before SQLite opens, the store
 * file created 0600 first (SQLite gives its -wal and -shm the main file's mode), and every file of
 * the store (main, -wal, -shm, -journal, .lock, .holder, .pre-<version> backups) narrowed to 0600 at start.
 *
 * Contract (privacy): transcripts are readable by this user only. A store folder Gatehouse creates is
 * 0700; an existing one is narrowed to 0700 when it is the store's own (ours, not sticky, nothing in
 * it but the store's and Gatehouse's own data files), else it is left as it is (it may hold a
 * workspace the sandbox user must enter) and a warning names it. A folder or file this process may
 * not write is reported naming it, as a permission problem.
 */
import { accessSync, chmodSync, closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Log } from '../../log.js';
import { messageOf } from '../../log.js';

export const PERMISSION_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'SQLITE_READONLY', 'SQLITE_PERM', 'SQLITE_READONLY_DIRECTORY', 'SQLITE_CANTOPEN']);

const FIX = 'make it writable for the user Gatehouse runs as, or point GATEHOUSE_STORE at a writable folder';
const who = (): string => (typeof process.getuid === 'function' ? ` (user id ${process.getuid()})` : '');

/** Says which folder or file is in the way, and whether it is a permission problem; creates the folder (0700). */
export function storeProblem(path: string): string | undefined {
  const folder = dirname(path);
  if (!existsSync(folder)) {
    // Node's recursive mkdir reports a read-only parent as ENOENT: look at the parent ourselves.
    let parent = dirname(folder);
    while (!existsSync(parent) && dirname(parent) !== parent) parent = dirname(parent);
    if (!statSync(parent).isDirectory()) return `the store folder ${folder} cannot be created: part of that path (${parent}) is a file, not a folder`;
    try {
      accessSync(parent, constants.W_OK | constants.X_OK);
    } catch (err) {
      return `permission problem: cannot create the store folder ${folder}: ${parent} is not writable${who()} (${(err as NodeJS.ErrnoException).code}); ${FIX}`;
    }
    try {
      mkdirSync(folder, { recursive: true, mode: 0o700 });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (PERMISSION_CODES.has(code)) return `permission problem: cannot create the store folder ${folder}${who()} (${code}); ${FIX}`;
      return `cannot create the store folder ${folder}: ${messageOf(err)}`;
    }
  } else if (!statSync(folder).isDirectory()) {
    return `the store folder ${folder} is a file, not a folder`;
  }
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch (err) {
    return `permission problem: the store folder ${folder} is not writable${who()} (${(err as NodeJS.ErrnoException).code}); ${FIX}`;
  }
  if (existsSync(path)) {
    // Before anything touches it: SQLite would call a folder here a permission problem, and the
    // narrowing below would make it 0600.
    const st = statSync(path);
    if (st.isDirectory())
      return `the store path ${path} is a folder, not a file: point GATEHOUSE_STORE at a file (e.g. sqlite://${path}/gatehouse.sqlite) or move the folder away`;
    if (!st.isFile()) return `the store path ${path} is not a regular file: point GATEHOUSE_STORE at a file`;
    try {
      accessSync(path, constants.R_OK | constants.W_OK);
    } catch (err) {
      return `permission problem: the store file ${path} is not writable${who()} (${(err as NodeJS.ErrnoException).code}); ${FIX}`;
    }
  }
  return undefined;
}

/** Creates `file` 0600 when it is not there (before SQLite or a copy creates it with the umask's mode). */
export function createPrivate(file: string): void {
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** The files SQLite keeps beside the store, and the engine's own. */
const STORE_SIDE_FILES = ['', '-wal', '-shm', '-journal', '.lock', '.lock-journal', '.holder'] as const;

/** Every store file that exists (backups `<store>.pre-*` included), 0600. */
export function narrowStoreFiles(path: string, log: Log): void {
  const files: string[] = STORE_SIDE_FILES.map((s) => path + s);
  try {
    for (const name of readdirSync(dirname(path))) if (name.startsWith(`${basename(path)}.pre-`)) files.push(`${dirname(path)}/${name}`);
  } catch {
    // unreadable folder: the known names only
  }
  for (const file of files) {
    let mode: number;
    try {
      const st = lstatSync(file);
      if (!st.isFile()) continue; // a folder or link of that name is not ours to narrow
      mode = st.mode & 0o777;
    } catch {
      continue; // not there
    }
    if ((mode & 0o077) === 0) continue;
    try {
      chmodSync(file, 0o600);
    } catch (err) {
      log('warn', `warning: ${file} is readable by other users (mode ${mode.toString(8)}) and could not be made 0600: ${messageOf(err)}`);
    }
  }
}

/** What Gatehouse itself keeps in its data folder besides the store (bot/service/reload.ts, bot/headless/attach.ts, bot/audit/trail.ts). */
const DATA_FOLDER_FILES = new Set(['gatehouse.pid', 'gatehouse.reload.json', 'gatehouse.sock', 'gatehouse.token', 'audit', 'audit.key']);

/** The store's files 0600, and its folder 0700 when it is the store's own (see the contract). */
export function narrowStorePermissions(path: string, log: Log): void {
  narrowStoreFiles(path, log);
  const folder = dirname(path);
  let st;
  try {
    st = statSync(folder);
  } catch {
    return;
  }
  const mode = st.mode & 0o7777;
  if ((mode & 0o077) === 0) return;
  const ours = typeof process.getuid !== 'function' || st.uid === process.getuid();
  const sticky = (mode & 0o1000) !== 0;
  const own = basename(path);
  let onlyOurs = false;
  try {
    onlyOurs = readdirSync(folder).every((name) => name.startsWith(own) || DATA_FOLDER_FILES.has(name));
  } catch {
    // unreadable: treat as shared
  }
  if (ours && !sticky && onlyOurs) {
    try {
      chmodSync(folder, mode & 0o700);
    } catch (err) {
      log('warn', `warning: could not make the store folder ${folder} 0700: ${messageOf(err)}`);
    }
    return;
  }
  if ((mode & 0o044) === 0) return; // others may pass through but not list: nothing to say
  log(
    'warn',
    `warning: the store folder ${folder} is open to other users (mode ${mode.toString(8)}) and holds other things, so it was left as it is; ` +
      `the store files are 0600. Give the store a folder of its own (GATEHOUSE_STORE=sqlite://./data/gatehouse.sqlite).`,
  );
}
