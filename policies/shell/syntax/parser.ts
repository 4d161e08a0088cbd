/**
 * Which parser the gate reads shell commands with.
 *
 * Contract: `parseShell` is the selected glue's (same contract in both); `shellParserReady()` resolves
 * once it can parse (tree-sitter loads WASM; mvdan is ready at import). Until then tree-sitter's
 * `parseShell` refuses every text, so a caller that skips the await fails closed.
 * mvdan stays selected while test/policies/shell-parser-diff.test.ts lists a difference where mvdan is
 * right (heredoc backticks, `0>&1` after `>&`, `time`); see that list before switching.
 */
import { parseShell as mvdan } from './mvdan.js';
import { initTreeSitter, parseShell as treeSitter } from './tree-sitter.js';

export const SHELL_PARSER = 'mvdan' as 'mvdan' | 'tree-sitter';

export const parseShell = SHELL_PARSER === 'tree-sitter' ? treeSitter : mvdan;

export function shellParserReady(): Promise<void> {
  return SHELL_PARSER === 'tree-sitter' ? initTreeSitter() : Promise.resolve();
}
