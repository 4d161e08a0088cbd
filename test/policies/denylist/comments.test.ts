// Class: a `#` inside a word. A parser that opens a comment at `#` right after a closing quote, an
// expansion or a substitution (mvdan/sh did: `echo "x"#; rm -rf /` read as `echo` + comment) misses what
// bash runs: bash keeps the `#` in the word and runs the next command. Each attack is run in real bash (its
// second command does run) and the policy must refuse it, never approve it on an `echo` allowlist entry:
// tree-sitter reads it as bash does, and the denylist refuses the rm.
import { execFileSync } from 'node:child_process';
import { analyzeCommand, commandApprovalKey, isCommandAllowlisted } from '../../../policies/shell/index.js';
import { initTreeSitter, parseShell as treeSitter } from '../../../policies/shell/syntax/tree-sitter.js';

// Each prefix is followed by `; <second command>`; bash runs the second command for every one.
const PREFIXES = [
  'echo "x"#',
  "echo 'x'#",
  'echo $v#',
  'echo ${v}#',
  'echo a"b"#',
  'echo $(true)#',
  'echo `true`#',
  'echo $((1))#',
  "echo $'x'#",
  'echo "é"#',
  'v="x"#',
  'echo ok && echo "x"#',
  'echo "$v"#',
];

describe('a # inside a word is not a comment', () => {
  test.each(PREFIXES.map((p) => [p]))('bash runs what follows %s', (prefix) => {
    const out = execFileSync('bash', ['-c', `${prefix}; echo PWNED`], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    expect(out).toContain('PWNED');
  });

  beforeAll(async () => {
    await initTreeSitter();
  });

  test.each(PREFIXES.map((p) => [`${p}; rm -rf /`]))('refused: %s', async (command) => {
    const t = await analyzeCommand(command, treeSitter);
    expect([t.parsed, t.denied?.rule]).toEqual([true, 'rm-dangerous-target']);
    for (const a of [t, await analyzeCommand(command)]) expect(isCommandAllowlisted(a, ['echo', 'v'])).toBe(false);
    expect(await commandApprovalKey(command)).toBeNull();
  });

  test('the same holds inside a string run later (alias value)', async () => {
    const a = await analyzeCommand(`alias x='echo "y"#; rm -rf /'; x`);
    expect(a.denied).not.toBeNull();
    expect(isCommandAllowlisted(a, ['echo', 'alias', 'x'])).toBe(false);
  });

  // Real comments, `#` inside quotes and words, and ${#v} / ${v#p} still parse and pass.
  test.each([
    'echo x # a comment',
    'echo x;# a comment',
    '# only a comment',
    'echo x\n# next line',
    'echo "a#b" \'c#d\'',
    'echo x#y',
    'echo x\\#; echo y',
    'echo ${#v} ${v#p} ${v##*/}',
    'echo $(echo hi # inner\n)',
    'cat <<E\n#not a comment\nE',
    'echo {a,b}#',
    'echo "é" # é',
  ])('passes: %j', async (command) => {
    const a = await analyzeCommand(command);
    expect(a.parsed).toBe(true);
    expect(a.denied).toBeNull();
  });
});
