/**
 * Path safety of the configuration: whether a directory the agent may reach (a workspace, a
 * `sandboxReadPaths` entry, an MCP server's readPaths or cwd) holds one of the bot's own files.
 *
 * Contract:
 * - `botFilesInside(dir, own)` names the first of the config file, the .env loaded and the SQLite
 *   store that `dir` contains or is (`the config file (/etc/gh/gatehouse.yaml)`), or undefined.
 *   An in-memory or PostgreSQL store has no file and never matches.
 * - Compared by real path: symlinks are resolved as far as the path exists (a workspace may not
 *   exist yet), so a link to the config's directory is caught.
 * - Reads the file system (realpath) and never throws.
 */
import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import type { StoreSettings } from './env.js';

/** The bot's own files a directory the agent reaches must not contain. */
export interface BotFiles {
  configFile: string | undefined;
  envFile: string | undefined;
  store: StoreSettings;
}

/** `p` with symlinks resolved as far as it exists (a workspace may not exist yet). */
function physical(p: string): string {
  const tail: string[] = [];
  let cur = p;
  for (;;) {
    try {
      return join(realpathSync(cur), ...tail);
    } catch {
      const parent = dirname(cur);
      if (parent === cur) return p;
      tail.unshift(basename(cur));
      cur = parent;
    }
  }
}

function isWithin(dir: string, p: string): boolean {
  const rel = relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** The first of the bot's own files (config, .env, store) that `workspace` contains, described; or undefined. */
export function botFilesInside(workspace: string, own: BotFiles): string | undefined {
  const ws = physical(workspace);
  const files: Array<[string, string | undefined]> = [
    ['the config file', own.configFile],
    ['the .env file', own.envFile],
    ['the store', own.store.kind === 'sqlite' && own.store.path !== ':memory:' ? own.store.path : undefined],
  ];
  for (const [what, file] of files) {
    if (file !== undefined && isWithin(ws, physical(file))) return `${what} (${file})`;
  }
  return undefined;
}
