/**
 * Command allowlist matching (autoApprovedCommands, and keys added by "Always approve").
 *
 * An entry is a sequence of words ('git status', 'npm test', 'ls'). It matches one simple command when:
 * - the command's approval key starts with it word by word ('git' and 'git status' match key
 *   'git status'; 'git status' does not match key 'git statusfoo'), or
 * - the command's words, after wrappers and assignments are skipped, start with it word by word: this
 *   is how entries that name more than a key work ('git push origin' matches `git push origin main`,
 *   not `git push --force origin main`; 'ls -la' matches `ls -la src`, not `ls -R /`).
 * A whole command matches only when it parsed, the denylist passed, it has at least one simple
 * command, it has no file redirection and no command/process substitution, it assigns no variable that
 * changes what runs (PATH, LD_PRELOAD, GIT_SSH_COMMAND, ...: only SAFE_ASSIGNMENTS are tolerated), no
 * simple command in it carries an option that runs other code, writes files or moves it to another
 * directory or configuration (`git -c core.fsmonitor=...`, `npm test --script-shell=x`, `make --eval=...`,
 * `find -delete`: the tables of ./option-risk.ts; this holds even when the entry spells the option out),
 * and EVERY simple command matches an entry: `git status && rm -rf x` never rides on a 'git status' entry.
 * An "Always approve" key is such an entry, so it too never covers a later command with a risky option.
 */
import type { ShellAnalysis } from './analysis.js';

/** Variables that may be set in front of an auto-approved command: they change no program that runs. */
const SAFE_ASSIGNMENTS: ReadonlySet<string> = new Set([
  'NODE_ENV',
  'CI',
  'DEBUG',
  'FORCE_COLOR',
  'NO_COLOR',
  'TERM',
  'COLUMNS',
  'LINES',
  'TZ',
  'LANG',
  'LANGUAGE',
  'RUST_BACKTRACE',
  'RUST_LOG',
  'LOG_LEVEL',
  'PYTHONUNBUFFERED',
  'PYTHONDONTWRITEBYTECODE',
  'GIT_PAGER_IN_USE',
]);
const isSafeAssignment = (name: string): boolean => SAFE_ASSIGNMENTS.has(name) || /^LC_[A-Z]+$/.test(name);

const splitWords = (s: string): string[] => s.trim().split(/\s+/).filter(Boolean);

function startsWith(words: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length > 0 && prefix.length <= words.length && prefix.every((w, i) => words[i] === w);
}

/** Does one simple command (its key and its unwrapped words) match one entry? */
export function entryMatches(entry: string, key: string, words: readonly string[]): boolean {
  const e = splitWords(entry);
  const k = splitWords(key);
  if (e.length === 0 || k.length === 0) return false;
  return startsWith(k, e) || startsWith(words, e);
}

/** An extra way a simple command can be covered (an `allow` commandRule, policies/tool-policy.ts). */
export type SimpleCommandMatcher = (key: string, words: readonly string[]) => boolean;

export function isCommandAllowlisted(analysis: ShellAnalysis, entries: readonly string[], extra?: SimpleCommandMatcher): boolean {
  return allowlistMiss(analysis, entries, extra) === null;
}

/** Why the command does not match the entries (for `gatehouse policy check`), or null when it does. */
export function allowlistMiss(analysis: ShellAnalysis, entries: readonly string[], extra?: SimpleCommandMatcher): string | null {
  if (!analysis.parsed || analysis.denied) return 'the denylist blocks it';
  if (analysis.hasFileRedirect) return 'it redirects output to a file';
  if (analysis.hasSubstitution) return 'it substitutes a command';
  if (analysis.approvalKeys.length === 0) return 'it runs no command';
  const unsafe = analysis.assignments.find((n) => !isSafeAssignment(n));
  if (unsafe !== undefined) return `it sets ${unsafe}, which may change what runs`;
  const risk = analysis.optionRisks.find((r) => r !== null);
  if (risk) return `\`${risk.word}\` ${risk.kind}`;
  const missing = analysis.approvalKeys.findIndex((key, i) => {
    const words = analysis.commandWords[i] ?? splitWords(key);
    return key === '' || !(entries.some((entry) => entryMatches(entry, key, words)) || (extra?.(key, words) ?? false));
  });
  return missing < 0 ? null : `\`${analysis.approvalKeys[missing]}\` matches no entry`;
}
