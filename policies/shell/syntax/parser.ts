/**
 * The shell parser the gate reads commands with: tree-sitter-bash (web-tree-sitter, maintained), through
 * the glue in ./tree-sitter.ts. test/policies/shell-bash-oracle.e2e.test.ts holds it against real bash.
 *
 * Contract: `parseShell` is the glue's; `shellParserReady()` resolves once it can parse (it loads WASM).
 * Until then `parseShell` refuses every text, so a caller that skips the await fails closed.
 */
export { initTreeSitter as shellParserReady, parseShell } from './tree-sitter.js';
