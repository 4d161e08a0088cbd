/**
 * What `analyzeCommand` (./index.ts) reports about a shell command, in its own module so the allowlist
 * matcher (./allowlist.ts) and the analyser both depend on it without importing each other.
 *
 * Contract: a plain data shape; no behaviour. `parsed: false` always comes with `denied` set (rule
 * 'unparseable'); the per-command arrays (`approvalKeys`, `commandWords`, `optionRisks`) share indexes.
 */
import type { DenyVerdict } from './denylist.js';
import type { OptionRisk } from './option-risk.js';

export interface ShellAnalysis {
  /** false: the parser could not parse it -> denied with rule 'unparseable' */
  parsed: boolean;
  denied: DenyVerdict | null;
  /** approval key of every simple command found (including inside substitutions), in order */
  approvalKeys: string[];
  /** per approval key (same index): the command's words after wrappers and VAR=value are skipped */
  commandWords: string[][];
  /** true if the command has a pipe, list (&&, ||, ;), subshell, etc.: more than one simple command */
  compound: boolean;
  /** > file, >> file, &> file ... (not >/dev/null, 2>&1) */
  hasFileRedirect: boolean;
  /** $(...), `...`, <(...), >(...) */
  hasSubstitution: boolean;
  /** every variable name the command assigns (FOO=1 cmd, env FOO=1 cmd, export FOO=1, read FOO, ...) */
  assignments: string[];
  /** per approval key (same index): its first option that runs code, writes files or moves it elsewhere */
  optionRisks: Array<OptionRisk | null>;
}
