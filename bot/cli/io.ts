/**
 * What every command shares, apart from the command table: its streams and environment (`CliIO`),
 * its shape (`Command`) and the version. Commands import this, never bot/cli/index.ts, so the table that
 * loads them and the modules it loads do not import each other.
 *
 * Contract: nothing here imports beyond node: modules (`--version` loads bot/main.ts, bot/cli/index.ts and
 * this file only; test/bot/lazy-loading.e2e checks it).
 */
import { readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';

export interface CliIO {
  env: Record<string, string | undefined>;
  cwd: string;
  stdin?: Readable;
  stdout: Writable;
  stderr: Writable;
}

/** One command: its arguments (after the command name) in, an exit code out. */
export type Command = (args: string[], io: CliIO) => number | Promise<number>;

/** The version in package.json (found from this file, built or not). */
export function gatehouseVersion(): string {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'gatehouse' && pkg.version) return pkg.version;
    } catch {
      // Try the next place.
    }
  }
  return 'unknown';
}
