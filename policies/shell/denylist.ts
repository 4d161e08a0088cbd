/**
 * The shell denylist's public entry point; the rules live in ./denylist/, one file per family:
 * rules.ts (ids and reasons), index.ts (findDenial: how each command is judged), runs.ts (what a
 * command really runs: wrapper levels, xargs items, symlinks it makes), commands.ts (per-program rules,
 * with program-rules.ts for the ones that read options at length and code-sources.ts for where an
 * interpreter's code comes from), slice-names.ts (name lists for argument slices), interpreters.ts
 * (inline code), embedded.ts (the table of command strings inside tools, with embedded-remote.ts,
 * embedded-git.ts, embedded-tools.ts, awk-sed.ts; environment variables that carry code), paths.ts and
 * path-args.ts (protected paths, the paths a command names), writes.ts, system.ts, options.ts (GNU
 * option reading: clusters, glued values, abbreviations).
 */
export { findDenial, type DenyVerdict } from './denylist/index.js';
