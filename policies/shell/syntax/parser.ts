/**
 * Which parser the gate reads shell commands with.
 *
 * Contract: `parseShell` is the selected glue's (same contract in both); `shellParserReady()` resolves
 * once it can parse (tree-sitter loads WASM; mvdan is ready at import). Until then tree-sitter's
 * `parseShell` refuses every text, so a caller that skips the await fails closed.
 * tree-sitter (web-tree-sitter + tree-sitter-bash, maintained) is the default: every difference left in
 * test/policies/shell-parser-diff.test.ts is one where its reading is bash's, or where it refuses (bash
 * refuses too, or it is stricter). 'mvdan' (the unmaintained GopherJS build of mvdan/sh) stays selectable
 * here until it is removed.
 */
import { parseShell as mvdan } from './mvdan.js';
import { initTreeSitter, parseShell as treeSitter } from './tree-sitter.js';

export const SHELL_PARSER = 'tree-sitter' as 'mvdan' | 'tree-sitter';

export const parseShell = SHELL_PARSER === 'tree-sitter' ? treeSitter : mvdan;

export function shellParserReady(): Promise<void> {
  return SHELL_PARSER === 'tree-sitter' ? initTreeSitter() : Promise.resolve();
}
