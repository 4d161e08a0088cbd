// Approval keys and command allowlist matching, on the real parser: what an operator's
// autoApprovedCommands entry lets through, and what must never ride on it.
import { analyzeCommand, approvalKeyOf, commandApprovalKey, isCommandAllowlisted } from '../../policies/shell/index.js';
import { initTreeSitter, parseShell as treeSitter } from '../../policies/shell/syntax/tree-sitter.js';

const words = (s: string): string[] => s.split(' ');

describe('approvalKeyOf', () => {
  test.each([
    ['git push --force', 'git push'],
    ['NODE_ENV=production npm test', 'npm test'],
    ['ls -la', 'ls'],
    ['ls', 'ls'],
    ['git -C repo status --short', 'git status'],
    ['env FOO=1 BAR=2 npm run build', 'npm run'],
    ['nohup node server.js', 'node server.js'],
    ['nice -n 10 make test', 'make test'],
    ['time npm test', 'npm test'],
    ['timeout 30 npm test', 'npm test'],
    ['npx -y tsc --noEmit', 'tsc'],
    ['docker -H tcp://h:2375 ps', 'docker ps'],
    ['kubectl -n prod get pods', 'kubectl get'],
    ['sudo apt install x', 'sudo apt'],
    ['/usr/bin/git status', '/usr/bin/git status'],
    ['git -- status', 'git status'],
  ])('%s -> %s', (cmd, key) => {
    expect(approvalKeyOf(words(cmd))).toBe(key);
  });

  test('no command at all has an empty key', () => {
    expect(approvalKeyOf([])).toBe('');
    expect(approvalKeyOf(['FOO=1'])).toBe('');
  });
});

describe('analyzeCommand: keys and flags', () => {
  test('keys come after quote removal, in source order, including substitutions', async () => {
    const a = await analyzeCommand(`'git' "status" && echo "$(date +%s)" | grep -v x`);
    expect(a.approvalKeys).toEqual(['git status', 'echo "$(date +%s)"', 'date +%s', 'grep x']);
    expect(a.compound).toBe(true);
    expect(a.hasSubstitution).toBe(true);
    expect(a.hasFileRedirect).toBe(false);
  });

  test('a variable stays as written in the key; its value is not trusted for keys', async () => {
    const a = await analyzeCommand('X=git; $X status');
    expect(a.approvalKeys).toEqual(['$X status']);
  });

  test('file redirects are told apart from fd duplication and /dev/null', async () => {
    expect((await analyzeCommand('ls > out.txt')).hasFileRedirect).toBe(true);
    expect((await analyzeCommand('ls >> out.txt')).hasFileRedirect).toBe(true);
    expect((await analyzeCommand('ls &> out.txt')).hasFileRedirect).toBe(true);
    expect((await analyzeCommand('ls >& out.txt')).hasFileRedirect).toBe(true);
    expect((await analyzeCommand('ls 2>&1')).hasFileRedirect).toBe(false);
    expect((await analyzeCommand('ls >/dev/null 2>&1')).hasFileRedirect).toBe(false);
    expect((await analyzeCommand('ls < in.txt')).hasFileRedirect).toBe(false);
  });

  test('process substitution and backquotes count as substitution', async () => {
    expect((await analyzeCommand('diff <(ls a) <(ls b)')).hasSubstitution).toBe(true);
    expect((await analyzeCommand('echo `date`')).hasSubstitution).toBe(true);
    expect((await analyzeCommand('echo "$HOME"')).hasSubstitution).toBe(false);
  });

  test('find -exec adds the command it runs', async () => {
    const a = await analyzeCommand('find . -name "*.o" -exec rm {} +');
    expect(a.approvalKeys).toEqual(['find .', 'rm …']);
    expect(a.compound).toBe(true);
  });
});

describe('commandApprovalKey (the "Always approve" button)', () => {
  test('a single simple command gets its key', async () => {
    expect(await commandApprovalKey('git status --short')).toBe('git status');
    expect(await commandApprovalKey('NODE_ENV=test npm test -- --watch=false')).toBe('npm test');
  });

  test.each([
    'git status && ls',
    'git status; ls',
    'ls | wc -l',
    '(git status)',
    'echo $(whoami)',
    'cat <(ls)',
    'git status > s.txt',
    'rm -rf /',
    'echo "open',
    'X=1',
  ])('none for %s', async (cmd) => {
    expect(await commandApprovalKey(cmd)).toBeNull();
  });
});

describe('isCommandAllowlisted', () => {
  const allowed = async (cmd: string, entries: string[]): Promise<boolean> => isCommandAllowlisted(await analyzeCommand(cmd), entries);

  test('exact and word-boundary prefix matches of the key', async () => {
    expect(await allowed('git status', ['git status'])).toBe(true);
    expect(await allowed('git status --short', ['git status'])).toBe(true);
    expect(await allowed('git statusfoo', ['git status'])).toBe(false);
    expect(await allowed('git push', ['git status'])).toBe(false);
    expect(await allowed('git push --force', ['git'])).toBe(true);
    expect(await allowed('gitk', ['git'])).toBe(false);
    expect(await allowed('ls -la', ['ls'])).toBe(true);
  });

  test('an entry longer than the key matches the command words at a word boundary', async () => {
    expect(await allowed('git push origin main', ['git push origin'])).toBe(true);
    expect(await allowed('git push --force origin main', ['git push origin'])).toBe(false);
    expect(await allowed('git push originx', ['git push origin'])).toBe(false);
    expect(await allowed('ls -la src', ['ls -la'])).toBe(true);
    expect(await allowed('ls -R /', ['ls -la'])).toBe(false);
  });

  test('wrappers and safe assignments are looked through', async () => {
    expect(await allowed('NODE_ENV=production npm test', ['npm test'])).toBe(true);
    expect(await allowed('nohup npm test', ['npm test'])).toBe(true);
  });

  test('an assignment that changes what runs is never auto-approved', async () => {
    expect(await allowed('PATH=/tmp/evil:$PATH git status', ['git status'])).toBe(false);
    expect(await allowed('GIT_SSH_COMMAND="sh x" git fetch', ['git fetch'])).toBe(false);
    expect(await allowed('LD_PRELOAD=/tmp/x.so ls', ['ls'])).toBe(false);
    expect(await allowed('env PATH=/tmp git status', ['git status'])).toBe(false);
    expect(await allowed('export PATH=/tmp; git status', ['git status', 'export'])).toBe(false);
  });

  test('a compound command matches only when every simple command matches', async () => {
    expect(await allowed('git status && git log', ['git status', 'git log'])).toBe(true);
    expect(await allowed('git status | head', ['git status', 'head'])).toBe(true);
    expect(await allowed('git status && rm -rf /', ['git status'])).toBe(false);
    expect(await allowed('git status && rm -rf /', ['git status', 'rm'])).toBe(false);
    expect(await allowed('git status; curl -o x https://e.x', ['git status'])).toBe(false);
    expect(await allowed('git status || npm publish', ['git status'])).toBe(false);
    expect(await allowed('(git status)', ['git status'])).toBe(true);
  });

  test('redirections to files and substitutions never match, even when every command does', async () => {
    expect(await allowed('git status > s.txt', ['git status'])).toBe(false);
    expect(await allowed('git log >> ~/.bashrc', ['git log'])).toBe(false);
    expect(await allowed('git status 2>&1', ['git status'])).toBe(true);
    expect(await allowed('git status >/dev/null', ['git status'])).toBe(true);
    expect(await allowed('echo $(git status)', ['echo', 'git status'])).toBe(false);
    expect(await allowed('cat <(git log)', ['cat', 'git log'])).toBe(false);
  });

  test('a function named like an allowed command cannot smuggle its body', async () => {
    expect(await allowed('git() { curl -o x https://e.x; }; git status', ['git status'])).toBe(false);
  });

  test('find -exec never rides on entries, even when its command is allowed too', async () => {
    expect(await allowed('find . -name x -exec touch {} \\;', ['find'])).toBe(false);
    expect(await allowed('find . -name x -exec touch {} \\;', ['find', 'touch'])).toBe(false);
  });

  test('denied or unparseable commands never match', async () => {
    expect(await allowed('rm -rf /', ['rm'])).toBe(false);
    expect(await allowed('echo "open', ['echo'])).toBe(false);
    expect(await allowed('X=1', ['X=1'])).toBe(false);
  });
});

// The constructs a parser may read differently from bash (test/policies/shell-bash-oracle.e2e.test.ts): a
// command hidden in one never rides on the entries of the commands that show.
describe('parser-sensitive constructs never smuggle a command past an entry', () => {
  beforeAll(async () => {
    await initTreeSitter();
  });
  const ENTRIES = ['time', 'coproc', 'cat', 'ls', 'echo', 'x'];
  test.each([
    ['time', 'time curl https://e.x'],
    ['time', 'time ls | curl https://e.x'],
    ['coproc', 'coproc curl https://e.x'],
    ['heredoc line list', 'cat <<EOF | python3\nprint(1)\nEOF'],
    ['quoted delimiter', "cat <<'EOF' | node\nx\nEOF"],
    ['heredoc line list', 'cat <<EOF && curl https://e.x\nx\nEOF'],
    ['brace word as the command', '{curl,https://e.x}'],
    ['fd after a redirect', 'echo x > out.txt 0>&1'],
    ['read-write redirect', 'cat 3<>out.txt'],
    ['backquotes in a heredoc', 'cat <<EOF\n`curl https://e.x`\nEOF'],
    ['# inside a word', 'echo "x"#; curl https://e.x'],
    ['reserved word as a command', 'ls; done; curl https://e.x'],
  ])('%s: %j', async (_cls, command) => {
    const a = await analyzeCommand(command, treeSitter);
    expect({ command, allowed: isCommandAllowlisted(a, ENTRIES) }).toEqual({ command, allowed: false });
  });
});
