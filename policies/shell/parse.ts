/**
 * Shell parsing for the policy gate: a real bash parser (tree-sitter-bash, ./syntax/parser.ts) turned into
 * a small, typed syntax tree (`parseShell`), and a static evaluator (`Evaluator`, ./evaluate/) that walks it the way bash would run
 * it and reports every simple command with its words expanded (see `ScriptFacts`).
 *
 * Contract:
 * - `parseShell(text)` never throws: `{ ok: true, script }` or `{ ok: false, error }` where `error` is the
 *   parser's own message (line:col included). Callers MUST treat `ok: false` as "deny" (fail closed).
 * - The tree keeps only what a policy needs: statements, commands, words (as parts: literal text with its
 *   quoting, parameter expansions, command/process substitutions, brace expansions), redirections
 *   (operator, fd, target word, heredoc body), assignments, and source offsets for ordering/display.
 * - Constructs whose inner words matter only for the substitutions they may hold ([[ ]], (( )), let,
 *   $(( )), ${a[i]}, ${a:o:l}) are flattened to the words they contain.
 * - A node type this module does not know becomes `{ k: 'unsupported' }`: callers deny it.
 * - `Evaluator` facts also carry assignment values (`CommandSite.assignValues` for FOO=v cmd,
 *   `ScriptFacts.envAssigns` for standalone X=v / export X=v) so the denylist can judge variables that
 *   programs run (PAGER, GIT_SSH_COMMAND, LD_PRELOAD, ...). A string run later (alias value, trap, watch)
 *   is parsed with its unknown parts kept as markers: an unknown command name stays 'dynamic-command'.
 * - `<&N` (N not 0) on a command's stdin is reported as a file path `&N` (content unknown).
 * - What changes what a name runs is followed, fail-closed: an alias (or `hash -p PATH NAME`) defined
 *   ANYWHERE in the script expands every command whose first word is that plain name (dash expands aliases
 *   in scripts; an alias is not expanded inside its own expansion); a function defined anywhere runs its
 *   body again for each call, with $1.. $@ $# bound to the call's words (after `shift` every shift is
 *   possible; after `set ARGS` they are unknown); `declare/local/typeset -n R=T` makes reads and writes
 *   of R go to T (an unknown T reads as unknown).
 *
 * Why not sh-syntax (the WASM build of mvdan/sh): 0.7 serialises only Stmt positions (`Cmd` is `{Pos, End}`,
 * word parts carry no type or value), so there is no tree to walk, and it instantiates a fresh Go WASM
 * runtime on every call (~20 ms a parse). mvdan-sh (its GopherJS build) exposed the full tree but is
 * unmaintained (removed); tree-sitter-bash is maintained and its glue repairs or refuses where it misreads
 * bash (test/policies/shell-bash-oracle.e2e.test.ts compares it with real bash).
 *
 * This file is the public entry; the evaluator lives in ./evaluate/ (facts.ts: what it reports,
 * values.ts: pure helpers, state.ts: variables, words.ts: expansion, statements.ts: redirects and
 * compound commands, commands.ts: simple commands and what they run, evaluator.ts: the walk).
 */
import { parseShell } from './syntax/parser.js';
import { Evaluator } from './evaluate/evaluator.js';
import type { ScriptFacts } from './evaluate/facts.js';
import type { ParseResult } from './syntax/tree.js';

export type { ParseResult } from './syntax/tree.js';
export { parseShell, shellParserReady } from './syntax/parser.js';
export { MARK, isStatic, displayField, type RedirectSite, type CommandSite, type ScriptFacts } from './evaluate/facts.js';
export { Evaluator } from './evaluate/evaluator.js';

/**
 * Parse and evaluate. `ok: false` (with the parser's message) when it does not parse: callers deny.
 * `parse` defaults to the gate's parser (tests may pass another reading).
 */
export function analyzeScript(
  text: string,
  parse: (text: string) => ParseResult = parseShell,
): { ok: true; facts: ScriptFacts } | { ok: false; error: string } {
  const res = parse(text);
  if (!res.ok) return res;
  return { ok: true, facts: new Evaluator(parse).run(res.script) };
}
