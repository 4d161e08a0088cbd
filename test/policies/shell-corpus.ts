/**
 * Command strings for the bash-oracle test (./shell-bash-oracle.e2e.test.ts): every string literal of the
 * shell policy suites (commands, and a few rule names and titles: parsed all the same), an everyday set,
 * and the forms where a parser is most likely to read bash wrong.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const here = join(process.cwd(), 'test/policies');
const suiteFiles = [
  ...readdirSync(join(here, 'denylist'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(here, 'denylist', f)),
  join(here, 'shell-denylist.test.ts'),
  join(here, 'shell-allowlist.test.ts'),
];

export function suiteStrings(): string[] {
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

export const EVERYDAY = [
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
  'echo a # a comment',
  'cat <<<"$x"',
  '! grep -q x f',
  'sleep 1 & wait',
  'unset FOO',
];

/** The forms a parser most often gets wrong, each written so that bash runs every command in it. */
export const TRICKY = [
  // heredocs
  'cat <<EOF\na $(date) `id` ${x:-$(whoami)}\nEOF\necho after',
  'cat <<-EOF\n\tindented $(hostname)\n\tEOF\nls',
  "cat <<'EOF'\n$(not run) `nor this`\nEOF\npwd",
  'cat <<"E O"\n$(not run)\nE O\nuname',
  'cat <<A; cat <<B\na $(id -u)\nA\nb $(id -g)\nB',
  'cat <<EOF | grep x\nx\nEOF',
  'cat <<EOF && echo ok\nbody\nEOF',
  'cat <<EOF\nEOFX\nEOF\necho done',
  'cat <<\\EOF\n$(no)\nEOF\nid',
  'cat <<E\\OF\n$(no)\nEOF\nid',
  // command substitution, backquotes
  'echo $(echo $(echo deep))',
  'echo "$(printf "%s" "a b")"',
  'echo `echo \\`echo nested\\``',
  'x=$(ls -d /); echo "$x"',
  'echo $( (cd / && pwd) )',
  'echo $(case x in x) echo paren;; esac)',
  'echo "$(echo ")")"',
  'echo `echo "a)"`',
  'echo $(# comment inside\nid)',
  // process substitution
  'cat <(echo a) <(echo b)',
  'tee >(wc -c) < /dev/null',
  'diff <(ls /) <(ls /)',
  // quoting
  'echo \'a"b\' "c\'d" a\\ b',
  "echo \"a\\\"b\" 'x'\\''y'",
  'echo "$(echo "inner "quoted" words")"',
  "echo $'tab\\there' $'\\x41\\101' $'it\\'s'",
  "printf '%s\\n' $'a\\nb'",
  'echo "" \'\' x""y',
  'echo \\$HOME \\`id\\` \\$(id)',
  'echo "\\$(id)" "`echo bq`"',
  'echo $"translated"',
  // line continuations, comments
  'echo a \\\n  b \\\n  c',
  'ls \\\n-la',
  'echo a#b # c\necho d',
  'echo x; # echo hidden\necho y',
  'echo "# not a comment" \'#\' \\#',
  'e\\\ncho joined',
  // lists and pipelines
  'true && echo and1 || echo or1',
  'false || echo or2 && echo and2',
  'echo a; echo b & echo c',
  'echo p | cat | cat -n',
  'echo p |& cat',
  '! false && echo negated',
  'echo a;echo b;;echo c',
  // redirects
  'echo x > out1 2>&1; cat < out1',
  'echo x >> out2; echo y 1>&2 2>/dev/null',
  'cat 0<out3 3>out4 4>&3 <>rw',
  'echo x &> out5; echo y &>> out5',
  'exec 3>fd3; echo to3 >&3; exec 3>&-',
  'echo x >| clob',
  '>empty; <empty cat',
  'echo $(cat < /dev/null)',
  // groups, subshells, functions
  '{ echo g1; echo g2; }',
  '( echo s1; ( echo s2 ) )',
  '{ echo g; } | cat',
  'f() { echo "in f $1"; }; f arg1; f arg2',
  'function g { echo g "$@"; }; g x y',
  'h() ( echo subshell-body ); h',
  'k() { ls "$@"; }; k -l /',
  'f() { echo once; }; f; unset -f f',
  // aliases: bash -c does not expand them
  'alias ll="ls -l"; ll',
  'shopt -s expand_aliases\nalias ll="ls -la"\nll',
  // arithmetic
  'echo $((2**10)) $((7/2)) $(( (1+2) * 3 ))',
  'x=5; echo $((x + 1)) $[x * 2]',
  '(( 1 + 1 )) && echo arith-ok',
  'let y=3 z=4; echo $y $z',
  'for ((i=0;i<2;i++)); do echo i$i; done',
  'x=1; (( x++ )); echo $x',
  'i=0; for ((i=0;i<2;i++)); do echo $i; done',
  'x=1; echo $(( x = 5 )) $x',
  // bash evaluates a variable's value as an expression in arithmetic: an index in it runs its substitution
  "x='a[$(id)]'; echo $(( x ))",
  "x='a[$(id)]'; (( x ))",
  "x='a[`id`]'; [[ $x -eq 0 ]]",
  // loops, conditionals that run every branch they hold
  'for w in a "b c" d; do echo "$w"; done',
  'for w in x y; do ls $w; done',
  'while false; do never; done; echo after-while',
  'if true; then echo yes; fi',
  'case ab in a*) echo starts-a;; esac',
  '[[ a == a && -n x ]] && echo dbl',
  '[ -z "" ] && test 1 -eq 1 && echo single',
  // expansions
  'x=value; echo ${x} ${x:-d} ${x:+alt} ${#x} ${x%e} ${x#v} ${x/a/A} ${x^^}',
  'arr=(one two); echo ${arr[@]} ${#arr[@]} "${arr[1]}"',
  'echo {a,b}{1,2} {1..3} {a..c}',
  'echo ~ ~/x "~"',
  'set -- p q; echo "$@" $# $1',
  'IFS=:; x=a:b; echo $x',
  'v="ls -l"; $v',
  'cmd=uname; "$cmd" -a',
  // assignments, env prefixes
  'A=1 B="two words" env',
  'export P=1 Q; readonly R=2; declare -a S=(1 2); echo $P $R',
  'X=$(echo sub) && echo "$X"',
  // builtins that run commands
  'eval "echo from-eval"',
  'command -v ls; command ls -d /',
  'trap "echo trapped" EXIT; echo body',
  'time ls -d /',
  'exec echo replaced',
  'xargs echo < /dev/null',
  'nohup ls &',
  'env -i ls',
  'sudo -u nobody id',
  'timeout 5 ls',
  'bash -c "echo nested"',
  'sh -c \'ls "$0"\' arg',
];
