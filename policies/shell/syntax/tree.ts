/**
 * The shell syntax tree the evaluator (../parse.ts) walks: parser-neutral, built by a parser glue
 * module (./tree-sitter.ts).
 *
 * Contract:
 * - Only what a policy needs: statements, commands, words (as parts: literal text with its quoting,
 *   parameter expansions, command/process substitutions, brace expansions), redirections (operator, fd,
 *   target word, heredoc body), assignments, and source offsets for ordering/display.
 * - A construct the glue does not know becomes `{ k: 'unsupported' }`: the evaluator denies it.
 * - A parse that fails, or that a glue knows disagrees with bash, is `{ ok: false, error }`: callers deny.
 */

export type Part =
  /** Literal text as written (backslashes not yet removed). `dq` = inside double quotes or a heredoc. */
  | { t: 'lit'; v: string; dq: boolean }
  /** '...' (or $'...' when `ansi`, escapes not yet decoded). */
  | { t: 'sq'; v: string; ansi: boolean }
  | { t: 'dq'; parts: Part[] }
  /**
   * $name / ${name...}. `op`: expansion operator (':-', '#', '/', '^^', ...) or null; `arg`: its word;
   * `repl`: for ${a/x/y}; `opaque`: length, indirection, index, slice or name listing (value unknowable
   * here); `inner`: words inside index/slice, for the substitutions they may hold.
   */
  | {
      t: 'param';
      name: string;
      op: string | null;
      arg: Word | null;
      repl: { all: boolean; orig: Word; with: Word | null } | null;
      opaque: boolean;
      index: Word | null;
      inner: Word[];
    }
  | { t: 'cmdsubst'; stmts: Stmt[] }
  | { t: 'procsubst'; op: '<(' | '>('; stmts: Stmt[] }
  | { t: 'arith'; inner: Word[] }
  | { t: 'extglob'; src: string }
  | { t: 'brace'; seq: boolean; elems: Word[] };

export interface Word {
  parts: Part[];
  /** source text of the word, for display (e.g. an approval key word that is not static) */
  readonly src: string;
}

export interface Redirect {
  op: string;
  /** the fd written before the operator (`2>`), or null */
  fd: string | null;
  word: Word | null;
  /** heredoc body (its parts are `dq` unless the delimiter was quoted) */
  hdoc: Word | null;
}

export interface Assign {
  name: string;
  append: boolean;
  /** `export X` with no `=` */
  naked: boolean;
  value: Word | null;
  /** x=(a b c) */
  array: Word[] | null;
  /** words inside an index x[i]=... */
  inner: Word[];
}

export interface Stmt {
  cmd: Command | null;
  redirs: Redirect[];
  background: boolean;
  negated: boolean;
}

export type Command =
  | { k: 'call'; assigns: Assign[]; args: Word[] }
  | { k: 'binary'; op: '&&' | '||' | '|' | '|&'; x: Stmt; y: Stmt }
  | { k: 'group'; subshell: boolean; stmts: Stmt[] }
  | { k: 'if'; cond: Stmt[]; then: Stmt[]; else: Command | null }
  | { k: 'while'; until: boolean; cond: Stmt[]; body: Stmt[] }
  /** for NAME in ITEMS (items null = "$@"); c-style loops have `cstyle` words and `infinite` if no condition */
  | { k: 'for'; name: string | null; items: Word[] | null; cstyle: Word[] | null; infinite: boolean; body: Stmt[] }
  | { k: 'case'; word: Word; items: { patterns: Word[]; stmts: Stmt[] }[] }
  | { k: 'func'; name: string; body: Stmt }
  | { k: 'decl'; variant: string; args: Assign[] }
  | { k: 'words'; what: string; words: Word[] }
  | { k: 'time'; stmt: Stmt | null }
  | { k: 'coproc'; stmt: Stmt }
  | { k: 'unsupported'; type: string };

export interface Script {
  stmts: Stmt[];
  text: string;
}

export type ParseResult = { ok: true; script: Script } | { ok: false; error: string };
