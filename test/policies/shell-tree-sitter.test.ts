// The tree-sitter glue's own traps, on the real WASM parser: it fails closed until loaded and on any
// error-tolerant reading, and it fixes the places where tree-sitter-bash and bash disagree.
import { initTreeSitter, parseShell } from '../../policies/shell/syntax/tree-sitter.js';
import type { Command, Stmt } from '../../policies/shell/syntax/tree.js';

const lits = (s: Stmt): string[] => (s.cmd?.k === 'call' ? s.cmd.args.map((w) => w.parts.map((p) => (p.t === 'lit' ? p.v : `<${p.t}>`)).join('')) : []);
const only = (text: string): Stmt => {
  const r = parseShell(text);
  if (!r.ok) throw new Error(`${text}: ${r.error}`);
  expect(r.script.stmts).toHaveLength(1);
  return r.script.stmts[0]!;
};
const binary = (c: Command | null): Extract<Command, { k: 'binary' }> => {
  if (c?.k !== 'binary') throw new Error(`not a binary: ${c?.k}`);
  return c;
};

test('before initTreeSitter every parse is refused (the gate fails closed)', () => {
  const r = parseShell('ls');
  expect(r).toEqual({ ok: false, error: expect.stringContaining('not loaded') });
});

describe('after loading', () => {
  beforeAll(async () => {
    await initTreeSitter();
  });

  test.each(['echo "unterminated', 'if true; then', 'a |', 'echo $(', 'ls @(a|b)', 'f() {'])('refuses what does not parse: %s', (text) => {
    expect(parseShell(text).ok).toBe(false);
  });

  test('a redirect after a pipeline belongs to its last command, as bash applies it', () => {
    const p = binary(only('a | b > f').cmd);
    expect(p.x.redirs).toEqual([]);
    expect(p.y.redirs.map((r) => r.op)).toEqual(['>']);
    const l = binary(only('a && b | c 2>&1').cmd);
    expect(l.x.redirs).toEqual([]);
    expect(binary(l.y.cmd).y.redirs.map((r) => `${r.fd}${r.op}`)).toEqual(['2>&']);
  });

  test('words after a redirect are arguments (tree-sitter takes them as more destinations)', () => {
    const s = only('rm 2>/dev/null -rf /');
    expect(lits(s)).toEqual(['rm', '-rf', '/']);
  });

  test('a word tree-sitter leaves out of the tree is put back (`python3 - <<EOF`)', () => {
    expect(lits(only('python3 - <<EOF\nx\nEOF'))).toEqual(['python3', '-']);
  });

  test('{a,b} becomes a brace part, as the evaluator expects; quoted or escaped braces stay literal', () => {
    const [, arg] = (only('echo x{a,{b,c}}y').cmd as { args: { parts: { t: string }[] }[] }).args;
    expect(arg!.parts.map((p) => p.t)).toEqual(['lit', 'brace', 'lit']);
    expect(lits(only('echo "{a,b}" \\{a,b\\} {}'))).toEqual(['echo', '<dq>', '\\{a,b\\}', '{}']);
  });

  test('`echo "x"#; rm -rf /` is two commands, as bash runs it', () => {
    const r = parseShell('echo "x"#; rm -rf /');
    expect(r.ok && r.script.stmts.map(lits)).toEqual([
      ['echo', '<dq>#'],
      ['rm', '-rf', '/'],
    ]);
  });
});
