/**
 * The shell denylist's public entry point; the rules live in ./denylist/ (one file per family:
 * rules.ts ids and reasons, commands.ts per-program rules, interpreters.ts, embedded.ts command strings
 * inside tools and environment variables, paths.ts protected paths, options.ts GNU option reading).
 */
export { findDenial, RULES, denyVerdict, normalizePath, type DenyVerdict } from './denylist/index.js';
