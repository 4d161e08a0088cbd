/**
 * The shell denylist's public entry point; the rules live in ./denylist/, one file per family:
 * rules.ts (ids and reasons), index.ts (findDenial: how each command is judged), commands.ts
 * (per-program rules), interpreters.ts (inline code), embedded.ts + awk-sed.ts (command strings inside
 * tools, environment variables that carry code), paths.ts (protected paths), options.ts (GNU option
 * reading: clusters, glued values, abbreviations).
 */
export { findDenial, type DenyVerdict } from './denylist/index.js';
