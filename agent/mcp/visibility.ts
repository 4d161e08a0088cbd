/**
 * What a boxed stdio MCP server can see of the host beyond the box's system view, and what to tell the
 * operator when it could not see enough to start.
 *
 * Contract:
 * - The box is default-deny (agent/tools/sandbox/bwrap.ts): read-only /usr, /bin, /lib*, chosen /etc
 *   files, the server's own folder. A server's script or packages elsewhere are invisible unless made
 *   visible here:
 *   - `readPaths` (config): bound read-only as named (files or folders). Config validation refuses one
 *     holding the bot's config, .env or store (bot/config/index.ts); the masks of credential files and the
 *     bot's files still apply inside (index.ts boxCommand).
 *   - `cwd` (config), when set: bound read-only (the box starts there); the same validation applies.
 *   - automatic, `autoReadPaths`: the resolved command binary and every argv element that names an
 *     existing regular FILE (absolute, or relative to the working directory), each bound read-only as
 *     that one file, at the path as written (a symlink's target is what is bound there). Never a
 *     folder, so the files next to it (the bot's .env, gatehouse.yaml.bak, logs, when a script sits in
 *     the bot's folder) stay out. Skipped: what the box shows anyway (system dirs, its own folder, cwd,
 *     readPaths) and the bot's own files (never bound; a mask would hide them anyway).
 * - `invisibleHint(at, stderr)`: when a boxed server's start failed and its stderr says a file, module
 *   or package was not found (ENOENT, "Cannot find module/package", "can't open file", bwrap's
 *   "Can't find source path"/"Can't chdir to", prlimit's "failed to execute", sh's "not found"), or
 *   that the sandbox user could not reach a bound path, a sentence naming the missing path when it can
 *   tell and the fixes: `<at>.readPaths` for that server, or `<at>.sandbox: none`. Else undefined.
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { findExecutable } from '../tools/sandbox/index.js';

/** What the box shows of the host anyway (index.ts systemView). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

export interface AutoViewInput {
  command: string;
  args: readonly string[];
  /** The working directory in the box (relative argv elements are resolved against it). */
  cwd: string;
  /** The server's PATH (a bare command is looked up there). */
  searchPath: string | undefined;
  /** Paths the box shows already: its own folder, cwd, readPaths. */
  visible: readonly string[];
  /** The bot's own files (config, .env, store): never bound. */
  botFiles: readonly string[];
}

/** The single files to bind read-only for the server to start (see the contract). */
export function autoReadPaths(input: AutoViewInput): string[] {
  const candidates: string[] = [];
  const program = input.command.includes('/') ? path.resolve(input.cwd, input.command) : findExecutable(input.command, input.searchPath);
  if (program) candidates.push(program);
  for (const a of input.args) {
    if (a === '' || a.includes('\u0000') || a.startsWith('-')) continue;
    candidates.push(path.resolve(input.cwd, a));
  }
  const bot = input.botFiles.map(real);
  const shown = (p: string) => SYSTEM_DIRS.some((d) => inside(d, p)) || input.visible.some((v) => inside(v, p) || inside(real(v), p));
  const out = new Set<string>();
  for (const abs of candidates) {
    let file: boolean;
    try {
      file = statSync(abs).isFile();
    } catch {
      continue; // missing, or not reachable: nothing to show (the start failure will say so)
    }
    if (!file) continue;
    const target = real(abs);
    if (bot.some((b) => inside(b, target)) || input.botFiles.some((b) => inside(b, abs))) continue;
    if (!shown(abs)) out.add(abs);
    else if (!shown(target)) out.add(target); // a visible symlink to an invisible file
  }
  return [...out];
}

interface Missing {
  what?: string;
  /** The sandbox user was refused, rather than the path being absent from the box. */
  denied?: boolean;
}

const PATTERNS: Array<[RegExp, (m: RegExpExecArray) => Missing]> = [
  [/Cannot find package '([^']+)' imported from (\S+)/, (m) => ({ what: `the package ${m[1]} (imported from ${m[2]})` })],
  [/Cannot find module '([^']+)'(?: imported from (\S+))?/, (m) => ({ what: m[2] ? `${m[1]} (imported from ${m[2]})` : m[1]! })],
  [/can't open file '([^']+)'/, (m) => ({ what: m[1]! })],
  [/bwrap: Can't (?:find source path|chdir to|get type of source) (.+?): Permission denied/, (m) => ({ what: m[1]!, denied: true })],
  [/bwrap: Can't (?:find source path|chdir to|get type of source) (.+?): No such file or directory/, (m) => ({ what: m[1]! })],
  [/failed to execute (.+?): No such file or directory/, (m) => ({ what: m[1]! })],
  [/ENOENT[^'\n]*'([^'\n]+)'/, (m) => ({ what: m[1]! })],
  [/(\/[^\s:'"]+): (?:\d+: )?(?:No such file or directory|not found)/, (m) => ({ what: m[1]! })],
  [/\b(?:ENOENT|MODULE_NOT_FOUND|ERR_MODULE_NOT_FOUND|No such file or directory)\b/, () => ({})],
];

/** The fix for a boxed server that could not see what it needs (see the contract), or undefined. */
export function invisibleHint(at: string, stderr: string): string | undefined {
  for (const [re, read] of PATTERNS) {
    const m = re.exec(stderr);
    if (!m) continue;
    const missing = read(m);
    const subject = missing.what ?? 'something it needs';
    if (missing.denied) {
      return (
        `It runs in the sandbox as the sandbox user, which cannot reach ${subject}: let that user enter the folders on the way ` +
        `(chmod o+x on each; credential files in them stay hidden in the box), name a reachable copy in ${at}.readPaths, ` +
        `or set ${at}.sandbox: none (it then runs on this host with the bot's own rights).`
      );
    }
    return (
      `It runs in the sandbox, which shows only the system (/usr, /bin, /lib*), its own folder, its command and the files ` +
      `its args name, and ${at}.readPaths: ${subject} is not visible there. Add the folder it needs (e.g. the server's ` +
      `folder and the node_modules it imports from; not one holding the bot's config, .env or store) to ${at}.readPaths, ` +
      `or set ${at}.sandbox: none (it then runs on this host with the bot's own rights).`
    );
  }
  return undefined;
}
