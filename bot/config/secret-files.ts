/**
 * Secrets from files (Docker secrets, systemd credentials): every secret variable NAME also accepts
 * NAME_FILE, the path of a file holding the value.
 *
 * Contract:
 * - `readSecretFiles(env, names, problems)`: for each NAME in `names` whose NAME_FILE is set (blank
 *   counts as unset, as everywhere in bot/config/env.ts), reads the file, drops ONE trailing newline (`\n`
 *   or `\r\n`: what `echo` and editors add), writes the value into `env[NAME]` and removes NAME_FILE.
 *   Written into `env` (process.env in production) so the secret registries (policies/secrets.ts,
 *   the log's scrub) know the value as if it had been set directly; NAME_FILE removed so a second
 *   read (a reload, another command in the same process) sees only NAME.
 * - NAME and NAME_FILE both set: a problem naming both, nothing read. An unreadable, empty or
 *   oversized file: a problem naming NAME_FILE and the path with the reason (an errno code), never
 *   any of the file's content.
 */
import { readFileSync, statSync } from 'node:fs';
import type { ConfigProblem, Env } from './problems.js';

/** A secret larger than this is a wrong path (a log, a binary), not a token or key. */
const MAX_SECRET_BYTES = 64 * 1024;

export const FILE_SUFFIX = '_FILE';

const set = (env: Env, name: string): boolean => (env[name] ?? '').trim() !== '';

export function readSecretFiles(env: Env, names: readonly string[], problems: ConfigProblem[]): void {
  for (const name of names) {
    const fileVar = name + FILE_SUFFIX;
    if (!set(env, fileVar)) continue;
    const path = env[fileVar]!.trim();
    if (set(env, name)) {
      problems.push({
        path: `${name}, ${fileVar}`,
        message: `both are set; keep one (${fileVar} names a file holding the value, e.g. a Docker secret or a systemd credential)`,
      });
      continue;
    }
    let text: string;
    try {
      const size = statSync(path).size;
      if (size > MAX_SECRET_BYTES) {
        problems.push({
          path: fileVar,
          message: `${path} is ${size} bytes, too big for a secret (at most ${MAX_SECRET_BYTES}); point ${fileVar} at the file holding only the value`,
        });
        continue;
      }
      text = readFileSync(path, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      const why =
        code === 'ENOENT'
          ? 'no such file'
          : code === 'EACCES' || code === 'EPERM'
            ? 'permission denied for the user Gatehouse runs as'
            : code === 'EISDIR'
              ? 'it is a folder'
              : code;
      problems.push({ path: fileVar, message: `cannot read ${path} (${why}); point it at a readable file holding the value, or set ${name} instead` });
      continue;
    }
    const value = text.replace(/\r?\n$/, '');
    if (value.trim() === '') {
      problems.push({ path: fileVar, message: `${path} is empty; put the value of ${name} in it` });
      continue;
    }
    env[name] = value;
    delete env[fileVar];
  }
}
