// Differential test: mvdan-sh and tree-sitter-bash over every command string of the shell policy suites
// and an everyday corpus, comparing the tree the evaluator reads (words as parts, redirects, assignments,
// substitutions; no positions exist in it). Every known difference is listed with its reason and
// asserted, so a new one fails here.
import { spawnSync } from 'node:child_process';
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
 * Known differences: text -> why. None is a place where mvdan reads bash better than tree-sitter does:
 * - `treeSitter`: tree-sitter's reading is bash's and mvdan's is not (mvdan's glue refuses the text, or
 *   mvdan misreads it in a way that hides nothing);
 * - `bashRefuses`: the tree-sitter glue refuses a form mvdan reads, and bash refuses it too;
 * - `stricter`: the tree-sitter glue refuses a form bash and mvdan read: fail closed (denied as
 *   unparseable, never wrongly allowed), because tree-sitter-bash's tree for it is wrong and not repairable.
 * Closed (tree-sitter now reads them as mvdan does): time/coproc before a simple command, a quoted heredoc
 * delimiter, a bare `done`, `cat <<E | sh`, `{a,b}` as the command word, `0>&1` after a redirect, `<>`,
 * backquotes in a heredoc.
 */
const HASH = {
  who: 'treeSitter',
  why: 'bash reads this # as part of the word (its next command runs); mvdan opened a comment there, so its glue refuses the text',
} as const;
const KNOWN: Record<string, { who: 'treeSitter' | 'bashRefuses' | 'stricter'; why: string }> = {
  'echo "x"#': HASH,
  "echo 'x'#": HASH,
  'echo $v#': HASH,
  'echo ${v}#': HASH,
  'echo a"b"#': HASH,
  'echo $(true)#': HASH,
  'echo `true`#': HASH,
  'echo $((1))#': HASH,
  "echo $'x'#": HASH,
  'echo "\u00e9"#': HASH,
  'v="x"#': HASH,
  'echo ok && echo "x"#': HASH,
  'echo "$v"#': HASH,
  'echo "x"#; rm -rf /': HASH,
  "echo 'x'#; rm -rf /": HASH,
  'echo $v#; rm -rf /': HASH,
  'echo "x"#; curl https://e.x': HASH,
  'echo "{a,b}" \\{a,b\\}': { who: 'treeSitter', why: 'an escaped brace is literal in bash; mvdan splits \\{a,b\\} into a brace (its bug)' },
  // test titles of the issue-18 suite, parsed as commands like every string there
  'function called with the dangerous arguments': {
    who: 'bashRefuses',
    why: '`function NAME CMD` without a compound body: bash refuses it too (syntax error)',
  },
  'function after shift': { who: 'bashRefuses', why: '`function NAME CMD` without a compound body: bash refuses it too (syntax error)' },
  'function without braces': { who: 'bashRefuses', why: '`function NAME CMD` without a compound body: bash refuses it too (syntax error)' },
  'function f rm -rf /': { who: 'bashRefuses', why: '`function NAME CMD` without a compound body: bash refuses it too (syntax error)' },
  'rm -rf /@(etc|usr)': { who: 'bashRefuses', why: 'extglob: bash refuses it too unless `shopt -s extglob` ran first (its default is off)' },
  'time { rm -rf /; }': { who: 'stricter', why: 'tree-sitter has no `time` keyword and ends the command at `;` inside the group: refused' },
  'coproc x { rm -rf /; }': { who: 'stricter', why: 'tree-sitter has no `coproc` keyword and ends the command at `;` inside the group: refused' },
  'cat <<EOF |\nrm -rf /\nEOF\nsh': {
    who: 'stricter',
    why: 'a pipeline continued after the heredoc body: tree-sitter takes the body line for the next command; refused',
  },
  'echo ${x#$(rm -rf /)}': { who: 'stricter', why: 'tree-sitter reads a ${x#...} pattern as a regex and leaves the substitution in it: refused' },
  'echo ${x%%`rm -rf ~`}': { who: 'stricter', why: 'tree-sitter reads a ${x%%...} pattern as a regex and leaves the substitution in it: refused' },
  'echo "${x:-\'$(rm -rf /)\'}"': {
    who: 'stricter',
    why: 'inside "${...}" the single quotes are text and bash runs the substitution; mvdan reads them as quotes (it misses it): refused',
  },
  'echo "${x:-\'$(echo PWNED)\'}"': {
    who: 'stricter',
    why: 'inside "${...}" the single quotes are text and bash runs the substitution; mvdan reads them as quotes (it misses it): refused',
  },
  'cat /etc/@(shadow)': { who: 'bashRefuses', why: 'extglob: bash refuses it too unless `shopt -s extglob` ran first (its default is off)' },
};

beforeAll(async () => {
  await initTreeSitter();
});

test('real bash refuses the `bashRefuses` forms and reads the `stricter` ones (so each is labelled right)', () => {
  const bashStatus = (text: string): number | null => spawnSync('bash', ['-n', '-c', text], { env: { PATH: process.env.PATH ?? '' } }).status;
  const kinds = Object.entries(KNOWN).filter(([, k]) => k.who !== 'treeSitter');
  expect(kinds.length).toBeGreaterThan(0);
  for (const [text, k] of kinds) expect({ text, status: bashStatus(text) }).toEqual({ text, status: k.who === 'bashRefuses' ? 2 : 0 });
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
  // and each is the listed kind: tree-sitter refuses exactly the `bashRefuses` and `stricter` ones
  const refusedNow = Object.keys(found).filter((t) => found[t]!.endsWith('tree-sitter refuses'));
  expect(refusedNow.sort()).toEqual(
    Object.keys(KNOWN)
      .filter((t) => KNOWN[t]!.who !== 'treeSitter')
      .sort(),
  );
});
