/**
 * What the static evaluator reports: every simple command with its words expanded, the redirects, the
 * process substitutions, assignments and the shape of the script. The denylist, option risk and approval
 * keys read only these types.
 *
 * Contract:
 * - Expanded words are strings in which private-use characters (`MARK`) stand for what cannot be known
 *   statically; `isStatic(field)` is true only for a field whose value is known exactly.
 * - `displayField` is for people (messages, approval cards), never for a decision.
 * - A value is a list of alternatives (a variable assigned in a branch may hold either value): a rule
 *   must judge every alternative of `CommandSite.argvs` and `RedirectSite.targets`.
 */

/** Markers inside expanded fields. */
export const MARK = {
  /** some text that cannot be known here (an outside variable, a command substitution's output) */
  UNKNOWN: '\uE000',
  /** a directory this command created with mktemp, or $TMPDIR */
  TMP: '\uE001',
  /** unquoted glob characters * ? [ */
  STAR: '\uE002',
  QMARK: '\uE003',
  BRACKET: '\uE004',
  /** a process substitution; the next char is String.fromCharCode(0xE100 + index into `procSubsts`) */
  PSUB: '\uE005',
} as const;
const MARK_RE = /[\uE000-\uE005\uE100-\uE1FF]/;

/** A field with no marker is fully static (its value is known exactly). */
export const isStatic = (field: string): boolean => !MARK_RE.test(field);

/** Human-readable form of a field: globs back to * ? [, unknown parts as `…`, mktemp dirs as $TMP. */
export function displayField(field: string): string {
  return field
    .replace(/\uE000/g, '…')
    .replace(/\uE001/g, '$TMP')
    .replace(/\uE002/g, '*')
    .replace(/\uE003/g, '?')
    .replace(/\uE004/g, '[')
    .replace(/\uE005[\uE100-\uE1FF]/g, '/dev/fd/63');
}

export type Stdin =
  | { kind: 'none' }
  /** fed by a pipe: every simple command upstream in the same pipeline */
  | { kind: 'pipe'; upstream: CommandSite[] }
  /** a here-string or heredoc: its possible texts */
  | { kind: 'here'; heredoc: boolean; texts: string[] }
  | { kind: 'file'; paths: string[] };

export interface RedirectSite {
  op: string;
  fd: string | null;
  /** possible targets (expanded, markers kept) */
  targets: string[];
  /** working directory alternatives at that point ('' = where the command started) */
  cwd: string[];
}

export interface CommandSite {
  /** possible argv lists after expansion (markers kept) */
  argvs: string[][];
  /** the words for display / approval keys: static value, or the source text of a word that is not */
  display: string[];
  /** names assigned in front of the command (FOO=1 cmd) */
  assigns: string[];
  /** the same assignments as NAME=value words, one per possible value (for rules on the values) */
  assignValues: string[];
  redirs: RedirectSite[];
  stdin: Stdin;
  cwd: string[];
  pos: number;
  inPipeline: boolean;
  background: boolean;
  /** names of the functions whose body this is in (innermost last) */
  functions: string[];
  /** 'find-exec': the command of a find -exec; 'nested': from a string run later (trap, watch, alias) */
  origin: 'shell' | 'find-exec' | 'nested';
}

export interface ScriptFacts {
  sites: CommandSite[];
  redirects: RedirectSite[];
  procSubsts: { op: string; sites: CommandSite[] }[];
  /** every variable name assigned anywhere (prefix, standalone, export/declare/local, read, for) */
  assigned: string[];
  /** standalone assignments (X=v, export X=v) as NAME=value words, one per possible value */
  envAssigns: string[];
  hasSubstitution: boolean;
  /** anything beyond one plain simple command: pipes, lists, groups, loops, functions, background... */
  structure: boolean;
  infiniteLoop: boolean;
  forkBomb: string | null;
  /** a construct the evaluator does not know, or a nested string that did not parse */
  unsupported: string | null;
  tooComplex: boolean;
}
