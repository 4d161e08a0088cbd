/**
 * The shell denylist: absolute refusals that no approval overrides.
 *
 * `findDenial(facts)` judges what `Evaluator` (./parse.ts) found: every simple command with its words
 * expanded (all alternatives), unwrapped from wrappers (env, nohup, xargs, sudo, ...), with its stdin
 * source and the redirections of the whole command. It returns the first rule that matches, as
 * `{ rule, reason }` with a stable rule id (see RULES), or null.
 *
 * Fail closed: a command name that cannot be known statically is 'dynamic-command'; constructs the
 * evaluator does not know are 'unsupported-syntax'; too many alternatives is 'too-complex'.
 * One carve-out: rm -r/-f whose every target is a directory this command created with mktemp, or
 * $TMPDIR, or something under them (no `..`), passes.
 */
import { basename, unwrapCommand } from './wrappers.js';
import { MARK, displayField, isStatic, type CommandSite, type RedirectSite, type ScriptFacts } from './parse.js';

export interface DenyVerdict {
  /** stable id, e.g. 'rm-recursive' */
  rule: string;
  /** says which rule matched and that approval cannot override it */
  reason: string;
}

/** Every rule id with what it refuses (used in reasons; also documentation). */
export const RULES: Readonly<Record<string, string>> = {
  unparseable: 'the command could not be parsed as shell',
  'unsupported-syntax': 'it uses shell syntax the policy cannot judge',
  'too-complex': 'it has too many possible expansions to judge',
  'dynamic-command': 'the command name is not known until it runs (a variable, substitution or glob)',
  'privilege-escalation': 'it runs something as another user (sudo, su, doas, pkexec)',
  'no-preserve-root': '--no-preserve-root',
  'rm-dangerous-target': 'rm targets /, ~, . / .. or a glob',
  'rm-recursive': 'rm is recursive',
  'rm-force': 'rm is forced',
  'disk-format': 'it formats or partitions a disk (mkfs, fdisk, parted, ...)',
  'dd-device': 'dd writes to a device or reads /dev/zero or /dev/random',
  'device-write': 'it writes directly to a device file',
  'system-power': 'it shuts down, reboots or changes the runlevel',
  'remote-code-exec': 'it runs downloaded content (curl/wget piped, chained or process-substituted into an interpreter)',
  'decoded-exec': 'it pipes decoded content into a shell or interpreter',
  'pipe-to-interpreter': 'it pipes content into a shell or interpreter',
  'inline-code': 'it runs inline interpreter code (sh -c, python -c, node -e, eval, a here-string or heredoc to an interpreter)',
  'process-kill': 'it kills processes broadly (kill -9, kill -1, pkill, killall)',
  'fork-bomb': 'it is a fork bomb',
  'infinite-loop': 'it loops forever (while true)',
  'chmod-world-writable': 'chmod makes files world-writable (777, a+rwx, o+w)',
  'setuid-setgid': 'chmod sets the setuid or setgid bit',
  'chown-root': 'it gives files to root',
  mount: 'it mounts or unmounts a filesystem',
  firewall: 'it changes the firewall (iptables, nft, ufw)',
  'authorized-keys-write': 'it writes to an SSH authorized_keys file',
  'secret-file': 'it reads or copies a secret file (/etc/shadow, /etc/passwd, /etc/sudoers, SSH keys, AWS credentials, GnuPG private keys)',
  'disk-wipe': 'it destroys data irrecoverably (shred, wipefs, blkdiscard, hdparm --security-erase)',
  truncate: 'it truncates files',
  'reverse-shell': 'it looks like a reverse shell (nc -e/-c, socat EXEC:, /dev/tcp)',
  crontab: 'it edits, replaces or removes the crontab',
  'history-tamper': 'it clears or rewrites the shell history',
  'user-management': 'it creates, changes or removes users or groups',
  passwd: 'it changes a password',
  visudo: 'it edits the sudoers file',
};

function deny(rule: string, detail?: string): DenyVerdict {
  const what = RULES[rule] ?? rule;
  return {
    rule,
    reason: `Blocked by the shell denylist, rule '${rule}': ${what}${detail ? ` (${detail})` : ''}. This rule is absolute: approval cannot override it. Use a different approach.`,
  };
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh', 'yash', 'rbash']);
const isPython = (n: string): boolean => /^python[0-9.]*$/.test(n) || n === 'pypy' || n === 'pypy3';
const INTERPRETERS = new Set(['node', 'nodejs', 'deno', 'bun', 'perl', 'ruby', 'php', 'lua', 'luajit', 'Rscript', 'osascript', 'pwsh', 'powershell', 'tclsh', 'wish', 'irb', 'jshell', 'groovy', 'expect']);
const isInterpreter = (n: string): boolean => SHELLS.has(n) || isPython(n) || INTERPRETERS.has(n);

/** Inline-code options per interpreter (a short-option cluster containing the letter counts). */
function inlineCodeFlag(name: string, args: string[]): boolean {
  const cluster = (letters: string): boolean =>
    args.some((a) => /^-[A-Za-z]+$/.test(a) && [...a.slice(1)].some((c) => letters.includes(c)));
  if (SHELLS.has(name)) return cluster('c') || args.includes('--command');
  if (isPython(name)) return cluster('c');
  if (name === 'node' || name === 'nodejs' || name === 'bun') return cluster('ep') || args.some((a) => /^--(eval|print)(=|$)/.test(a));
  if (name === 'deno') return args[0] === 'eval';
  if (name === 'perl') return cluster('eE');
  if (name === 'ruby' || name === 'lua' || name === 'luajit' || name === 'Rscript' || name === 'osascript' || name === 'tclsh') return cluster('e');
  if (name === 'php') return cluster('rR');
  if (name === 'pwsh' || name === 'powershell') return args.some((a) => /^-(c|command|e|ec|encodedcommand)$/i.test(a));
  if (name === 'expect') return cluster('c');
  return false;
}

/** Value-taking options, so that `python -W ignore x.py` finds `x.py` as the script. */
const VALUE_OPTS: Readonly<Record<string, readonly string[]>> = {
  python: ['-W', '-X', '-Q'],
  node: ['-r', '--require', '--import', '--loader', '--input-type', '--env-file', '-C', '--conditions'],
  shell: ['-o', '-O', '+o', '+O'],
  perl: ['-I', '-M', '-m'],
  ruby: ['-I', '-r'],
};

/**
 * The script operand of an interpreter: a string, '-' for stdin, null when there is none (then it reads
 * code from stdin), or 'module' for python -m / node --test style runs that read no code from stdin.
 */
function scriptOperand(name: string, args: string[]): string | null {
  const key = SHELLS.has(name) ? 'shell' : isPython(name) ? 'python' : name === 'nodejs' || name === 'bun' ? 'node' : name;
  const valueOpts = VALUE_OPTS[key] ?? [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return args[i + 1] ?? null;
    if (a === '-') return '-';
    if (SHELLS.has(name) && a === '-s') return '-';
    if (isPython(name) && a.startsWith('-m')) return 'module';
    if ((name === 'node' || name === 'nodejs') && /^--(test|version|help|check)$|^-[vhc]$/.test(a)) return 'module';
    if (/^--?(version|help|V|h)$/.test(a) || a === '-v') return 'module';
    if (a.startsWith('-') || a.startsWith('+')) {
      if (valueOpts.includes(a)) i++;
      continue;
    }
    if ((name === 'deno' || name === 'bun') && (a === 'run' || a === 'x')) continue;
    if ((name === 'deno' || name === 'bun') && !/[./]/.test(a)) return 'module';
    return a;
  }
  return null;
}

const DOWNLOADERS = new Set(['curl', 'wget', 'aria2c', 'fetch', 'http', 'https', 'xh', 'lwp-download', 'lwp-request', 'GET']);
function isDownload(argv: string[]): boolean {
  const { words } = unwrapCommand(argv);
  const name = basename(words[0] ?? '');
  return DOWNLOADERS.has(name);
}

function isDecoder(argv: string[]): boolean {
  const { words } = unwrapCommand(argv);
  const name = basename(words[0] ?? '');
  const args = words.slice(1);
  const has = (re: RegExp): boolean => args.some((a) => re.test(a));
  switch (name) {
    case 'base64':
    case 'base32':
    case 'basenc':
      return has(/^(-[a-zA-Z]*[dD][a-zA-Z]*|--decode)$/);
    case 'xxd':
      return has(/^-[a-zA-Z]*r/);
    case 'openssl':
      return true;
    case 'uudecode':
    case 'gunzip':
    case 'zcat':
    case 'bunzip2':
    case 'bzcat':
    case 'unxz':
    case 'xzcat':
    case 'zstdcat':
    case 'rev':
    case 'tr':
    case 'iconv':
      return true;
    case 'gzip':
    case 'bzip2':
    case 'xz':
    case 'zstd':
      return has(/^(-[a-zA-Z]*d|--decompress)$/);
    case 'printf':
      return args.some((a) => a.includes('\\'));
    case 'echo':
      return has(/^-[a-zA-Z]*e/) || args.some((a) => a.includes('\\'));
    default:
      return false;
  }
}

/** echo/printf/cat-of-a-here-text: the content is written in the command itself. */
function isLiteralProducer(site: CommandSite, argv: string[]): boolean {
  const name = basename(unwrapCommand(argv).words[0] ?? '');
  if (name === 'echo' || name === 'printf') return true;
  return name === 'cat' && argv.length === 1 && site.stdin.kind === 'here';
}

// ---------------------------------------------------------------------------------------------------
// Paths

/** Lexical normalisation: $HOME, /root and /home/<user> become ~, `.`, `..` and `//` resolved. */
export function normalizePath(p: string, cwd = ''): string {
  let path = p;
  if (!path.startsWith('/') && !path.startsWith('~') && cwd !== '') path = `${cwd}/${path}`;
  path = path.replace(/^\/root(?=\/|$)/, '~').replace(/^\/home\/[^/]+(?=\/|$)/, '~').replace(/^~[A-Za-z_][\w-]*(?=\/|$)/, '~');
  const abs = path.startsWith('/');
  const out: string[] = [];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..' && out[out.length - 1] !== '~') out.pop();
      else if (!abs) out.push('..');
      continue;
    }
    out.push(seg);
  }
  const joined = out.join('/');
  return abs ? `/${joined}` : joined === '' ? '.' : joined;
}

const SECRET_PATTERNS: readonly RegExp[] = [
  /^\/etc\/(passwd|shadow|gshadow|sudoers|master\.passwd)(-|\.bak|\.old)?$/,
  /^\/etc\/sudoers\.d(\/|$)/,
  /(^|\/)(shadow|gshadow)$/,
  /(^|\/)id_(rsa|dsa|ecdsa|ed25519)(_sk)?$/,
  /(^|\/)\.ssh\/[^/]*(id_[^/]*|_key|\.pem)$/,
  /(^|\/)authorized_keys2?$/,
  /(^|\/)\.aws\/credentials$/,
  /(^|\/)\.gnupg\/(private-keys-v1\.d(\/|$)|secring\.gpg$|[^/]*\.key$)/,
];
/** Concrete secret paths that a glob is tested against (`cat ~/.ssh/*`, `cat /etc/sha*`). */
const SECRET_EXAMPLES = [
  '/etc/passwd', '/etc/shadow', '/etc/gshadow', '/etc/sudoers', '~/.ssh/id_rsa', '~/.ssh/id_ed25519', '~/.ssh/id_ecdsa',
  '~/.ssh/id_dsa', '~/.ssh/authorized_keys', '~/.aws/credentials', '~/.gnupg/secring.gpg', '~/.gnupg/private-keys-v1.d/a.key',
];
/** Directories that hold secrets: copying or archiving them copies the secrets. */
const SECRET_DIRS = /^(~\/\.ssh|~\/\.gnupg|~\/\.aws|\/etc\/sudoers\.d|~\/\.gnupg\/private-keys-v1\.d|~|\/etc|\/root|\/home)$/;
const COPIERS = new Set(['cp', 'scp', 'rsync', 'tar', 'zip', '7z', 'mv', 'rclone', 'sftp', 'curl', 'base64', 'xxd', 'gpg']);

function globRegex(field: string): RegExp {
  let re = '';
  for (const c of field) {
    if (c === MARK.STAR) re += '[^/]*';
    else if (c === MARK.QMARK) re += '[^/]';
    else if (c === MARK.BRACKET) re += '[^/]';
    else if (c === MARK.UNKNOWN) re += '.*';
    else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

const hasGlob = (f: string): boolean => f.includes(MARK.STAR) || f.includes(MARK.QMARK) || f.includes(MARK.BRACKET);

/** Is this (possibly globbed) word a secret path? Returns the path shown in the reason, or null. */
function secretPath(word: string, cwds: string[]): string | null {
  // --file=/etc/shadow, file=@/etc/shadow (curl -F), @/etc/shadow (curl -d)
  const eq = word.indexOf('=');
  const candidates = [word, ...(eq > 0 ? [word.slice(eq + 1)] : [])].map((c) => (c.startsWith('@') ? c.slice(1) : c));
  for (const c of candidates) {
    const hit = c.startsWith('-') ? null : secretCandidate(c, cwds);
    if (hit) return hit;
  }
  return null;
}

function secretCandidate(candidate: string, cwds: string[]): string | null {
  if (candidate === '' || candidate.startsWith(MARK.PSUB)) return null;
  for (const cwd of cwds) {
    const p = normalizePath(candidate, cwd);
    if (hasGlob(p)) {
      const re = globRegex(p);
      const hit = SECRET_EXAMPLES.find((ex) => re.test(ex));
      if (hit) return displayField(p);
    } else if (SECRET_PATTERNS.some((re) => re.test(p)) && !p.endsWith('.pub')) return displayField(p);
  }
  return null;
}

const HARMLESS_DEV = /^\/dev\/(null|zero|full|random|urandom|stdin|stdout|stderr|tty\d*|pts\/\d+|fd\/\d+)$/;

// ---------------------------------------------------------------------------------------------------
// Rules on one command

interface Judge {
  site: CommandSite;
  facts: ScriptFacts;
}

function shortFlags(args: string[]): Set<string> {
  const out = new Set<string>();
  for (const a of args) {
    if (a === '--') break;
    if (/^-[A-Za-z0-9]+$/.test(a)) for (const c of a.slice(1)) out.add(c);
  }
  return out;
}

function operands(args: string[]): string[] {
  const out: string[] = [];
  let opts = true;
  for (const a of args) {
    if (opts && a === '--') {
      opts = false;
      continue;
    }
    if (opts && a.startsWith('-') && a !== '-') continue;
    out.push(a);
  }
  return out;
}

const isTmpPath = (f: string): boolean => f.startsWith(MARK.TMP) && (f.length === 1 || f[1] === '/') && !f.split('/').includes('..');

function rmRule(args: string[]): DenyVerdict | null {
  const flags = shortFlags(args);
  const long = (n: string): boolean => args.includes(`--${n}`);
  const recursive = flags.has('r') || flags.has('R') || long('recursive');
  const force = flags.has('f') || long('force');
  const targets = operands(args);
  if (targets.length > 0 && targets.every(isTmpPath)) return null;
  for (const t of targets) {
    const p = normalizePath(t);
    if (p === '/' || p === '~' || p === '.' || p === '..' || /^\/[^/]*$/.test(p) && hasGlob(p) || hasGlob(t) || /^(\/|~)\*?$/.test(p) || /^(\.\.\/)+\.\.$/.test(p)) {
      return deny('rm-dangerous-target', `target ${displayField(t)}`);
    }
  }
  if (recursive) return deny('rm-recursive');
  if (force) return deny('rm-force');
  return null;
}

function chmodRule(args: string[]): DenyVerdict | null {
  const mode = operands(args)[0];
  if (mode === undefined) return null;
  if (/^[0-7]{3,4}$/.test(mode)) {
    const digits = mode.padStart(4, '0');
    if ((Number(digits[0]) & 6) !== 0) return deny('setuid-setgid', `mode ${mode}`);
    if ((Number(digits[3]) & 2) !== 0) return deny('chmod-world-writable', `mode ${mode}`);
    return null;
  }
  for (const clause of mode.split(',')) {
    const m = /^([ugoa]*)((?:[-+=][rwxXstugo]*)+)$/.exec(clause);
    if (!m) continue;
    const who = m[1]!;
    for (const op of m[2]!.match(/[-+=][rwxXstugo]*/g) ?? []) {
      if (op[0] === '-') continue;
      if (op.includes('s') && who !== 'o') return deny('setuid-setgid', `mode ${mode}`);
      if (op.includes('w') && (who.includes('a') || who.includes('o'))) return deny('chmod-world-writable', `mode ${mode}`);
    }
  }
  return null;
}

function judgeArgv(argv: string[], j: Judge): DenyVerdict | null {
  const first = argv[0];
  if (first === undefined || first === '') return null;
  if (!isStatic(first)) return deny('dynamic-command', `command ${displayField(first)}`);
  const name = basename(first);
  const args = argv.slice(1);
  const flags = shortFlags(args);

  if (args.includes('--no-preserve-root')) return deny('no-preserve-root');
  switch (name) {
    case 'sudo':
    case 'su':
    case 'doas':
    case 'pkexec':
    case 'runuser':
    case 'sg':
      return deny('privilege-escalation', name);
    case 'rm':
      return rmRule(args);
    case 'dd': {
      for (const a of args) {
        const of = /^of=(.*)$/.exec(a);
        if (of && of[1]!.startsWith('/dev/') && !HARMLESS_DEV.test(of[1]!)) return deny('dd-device', a);
        if (/^if=\/dev\/(zero|random|urandom)$/.test(a)) return deny('dd-device', a);
      }
      return null;
    }
    case 'shutdown':
    case 'reboot':
    case 'halt':
    case 'poweroff':
      return deny('system-power', name);
    case 'init':
    case 'telinit':
      return args.some((a) => /^[0-6sS]$/.test(a)) ? deny('system-power', `${name} ${args.join(' ')}`) : null;
    case 'systemctl':
      return args.some((a) => /^(poweroff|reboot|halt|kexec|suspend|hibernate|emergency|rescue|soft-reboot)$/.test(a)) ? deny('system-power') : null;
    case 'eval':
      return deny('inline-code', 'eval');
    case 'kill': {
      if (args.some((a) => /^-(9|KILL|SIGKILL)$/i.test(a))) return deny('process-kill', 'kill -9');
      const sIdx = args.findIndex((a) => a === '-s' || a === '-n' || a === '--signal');
      if (sIdx >= 0 && /^(9|KILL|SIGKILL)$/i.test(args[sIdx + 1] ?? '')) return deny('process-kill', 'kill -s KILL');
      if (operands(args).some((a) => a === '-1' || a === '0') || args.includes('-1')) return deny('process-kill', 'kill of every process');
      return null;
    }
    case 'pkill':
    case 'killall':
    case 'killall5':
    case 'skill':
    case 'slay':
      return deny('process-kill', name);
    case 'chmod':
      return chmodRule(args);
    case 'chown':
    case 'chgrp': {
      const owner = operands(args)[0] ?? '';
      const parts = owner.split(/[:.]/);
      return parts.some((p) => p === 'root' || p === '0') ? deny('chown-root', `${name} ${owner}`) : null;
    }
    case 'mount':
    case 'umount':
    case 'fusermount':
      return deny('mount', name);
    case 'iptables':
    case 'ip6tables':
    case 'iptables-restore':
    case 'ip6tables-restore':
    case 'iptables-legacy':
    case 'iptables-nft':
    case 'nft':
    case 'ufw':
    case 'firewall-cmd':
    case 'ebtables':
    case 'arptables':
      return deny('firewall', name);
    case 'shred':
    case 'wipefs':
    case 'blkdiscard':
      return deny('disk-wipe', name);
    case 'hdparm':
      return args.some((a) => /^--security-(erase|erase-enhanced|set-pass)$|^--trim-sector-ranges/.test(a)) ? deny('disk-wipe', 'hdparm') : null;
    case 'truncate':
      return deny('truncate');
    case 'nc':
    case 'ncat':
    case 'netcat':
    case 'nc.traditional':
    case 'nc.openbsd':
      return flags.has('e') || flags.has('c') || args.some((a) => /^--(exec|sh-exec|lua-exec)(=|$)/.test(a)) ? deny('reverse-shell', `${name} -e/-c`) : null;
    case 'socat':
      return args.some((a) => /(^|[,!])(EXEC|SYSTEM)[:,]/i.test(a)) ? deny('reverse-shell', 'socat EXEC:/SYSTEM:') : null;
    case 'crontab': {
      const listing = flags.has('l') && !flags.has('r') && !flags.has('e');
      return listing ? null : deny('crontab');
    }
    case 'history':
      return flags.has('c') || flags.has('w') || flags.has('d') || flags.has('r') ? deny('history-tamper') : null;
    case 'useradd':
    case 'userdel':
    case 'usermod':
    case 'adduser':
    case 'deluser':
    case 'groupadd':
    case 'groupdel':
    case 'groupmod':
    case 'addgroup':
    case 'delgroup':
    case 'gpasswd':
    case 'chpasswd':
    case 'newusers':
    case 'chage':
    case 'vipw':
    case 'vigr':
    case 'chsh':
      return deny('user-management', name);
    case 'passwd':
      return args.length > 0 && args.every((a) => a === '-S' || a === '--status' || a === '-a') ? null : deny('passwd');
    case 'visudo':
      return deny('visudo');
    case 'gpg':
    case 'gpg2':
      return args.some((a) => /^--export-secret-(sub)?keys/.test(a)) ? deny('secret-file', 'GnuPG secret key export') : null;
    case 'source':
    case '.': {
      const arg = args[0] ?? '';
      if (arg.startsWith(MARK.PSUB)) return procSubstCode(arg, j.facts);
      if (arg === '/dev/stdin' || arg === '-') return stdinCode(j.site, j.facts, name);
      return null;
    }
    case 'tee':
      return operands(args).some((a) => /(^|\/)authorized_keys2?$/.test(normalizePath(a))) ? deny('authorized-keys-write', 'tee') : null;
  }
  if (name.startsWith('mkfs') || ['mke2fs', 'mkswap', 'mkdosfs', 'mkntfs', 'fdisk', 'sfdisk', 'cfdisk', 'parted', 'gdisk', 'sgdisk'].includes(name)) {
    return deny('disk-format', name);
  }
  if (isInterpreter(name)) {
    if (inlineCodeFlag(name, args)) return deny('inline-code', `${name} with inline code`);
    const script = scriptOperand(name, args);
    if (script !== null && script.startsWith(MARK.PSUB)) return procSubstCode(script, j.facts);
    if (script === null || script === '-' || script === '/dev/stdin') return stdinCode(j.site, j.facts, name);
  }
  return null;
}

/** `sh <(curl ...)`, `source <(...)`: code from a process substitution. */
function procSubstCode(arg: string, facts: ScriptFacts): DenyVerdict {
  const ps = facts.procSubsts[arg.charCodeAt(1) - 0xe100];
  if (ps && ps.sites.some((s) => s.argvs.some(isDownload))) return deny('remote-code-exec', 'process substitution of a download');
  return deny('inline-code', 'code from a process substitution');
}

/** An interpreter with no script operand reads its code from stdin: judge where stdin comes from. */
function stdinCode(site: CommandSite, _facts: ScriptFacts, name: string): DenyVerdict | null {
  const stdin = site.stdin;
  if (stdin.kind === 'here') return deny('inline-code', `${stdin.heredoc ? 'heredoc' : 'here-string'} fed to ${name}`);
  if (stdin.kind !== 'pipe') return null;
  const up = stdin.upstream;
  if (up.some((s) => s.argvs.some(isDownload))) return deny('remote-code-exec', `download piped into ${name}`);
  if (up.some((s) => s.argvs.some(isDecoder))) return deny('decoded-exec', `decoded content piped into ${name}`);
  if (up.length > 0 && up.every((s) => s.argvs.every((a) => isLiteralProducer(s, a)))) return deny('inline-code', `literal code piped into ${name}`);
  return deny('pipe-to-interpreter', `piped into ${name}`);
}

/** The argv as written, and the command that really runs after wrappers (xargs gets its stdin items). */
function levels(argv: string[], site: CommandSite): string[][] {
  const u = unwrapCommand(argv);
  if (u.wrappers.length === 0 && u.assigns.length === 0) return [argv];
  const inner = u.xargs ? xargsArgv(u.words, u.xargs.replace, site) : u.words;
  return inner.length > 0 ? [argv, inner] : [argv];
}

/** The command xargs will run: its words plus the items it reads from stdin. */
function xargsArgv(words: string[], replace: string | null, site: CommandSite): string[] {
  const cmd = words.length > 0 ? words : ['echo'];
  const items = stdinItems(site);
  if (replace !== null && replace !== '') return cmd.map((w) => w.split(replace).join(items.join(' ')));
  return [...cmd, ...items];
}

function stdinItems(site: CommandSite): string[] {
  const s = site.stdin;
  if (s.kind === 'here') return s.texts.flatMap((t) => t.split(/\s+/).filter(Boolean));
  if (s.kind === 'pipe' && s.upstream.length === 1) {
    const up = s.upstream[0]!;
    const argv = up.argvs.length === 1 ? unwrapCommand(up.argvs[0]!).words : [];
    const n = basename(argv[0] ?? '');
    if (n === 'echo' || n === 'printf') return argv.slice(1).filter((a) => !/^-[neE]+$/.test(a)).flatMap((a) => a.split(/\\n|\s+/)).filter(Boolean);
  }
  return [MARK.UNKNOWN];
}

function judgeSite(site: CommandSite, facts: ScriptFacts): DenyVerdict | null {
  for (const argv of site.argvs) {
    const priv = unwrapCommand(argv).wrappers.find((w) => w === 'sudo' || w === 'doas');
    if (priv) return deny('privilege-escalation', priv);
    for (const level of levels(argv, site)) {
      const v = judgeArgv(level, { site, facts });
      if (v) return v;
      // secrets named anywhere in the arguments
      const name = basename(level[0] ?? '');
      for (const a of level.slice(1)) {
        if (a.includes('/dev/tcp/') || a.includes('/dev/udp/')) return deny('reverse-shell', '/dev/tcp');
        const secret = secretPath(a, site.cwd);
        if (secret) return deny('secret-file', secret);
        if (COPIERS.has(name) && SECRET_DIRS.test(normalizePath(a)) && /^(~\/\.|\/etc\/sudoers)/.test(normalizePath(a))) {
          return deny('secret-file', `${name} of ${displayField(normalizePath(a))}`);
        }
      }
    }
    if (site.stdin.kind === 'file') {
      for (const p of site.stdin.paths) {
        const secret = secretPath(p, site.cwd);
        if (secret) return deny('secret-file', `input redirection from ${secret}`);
      }
    }
  }
  return null;
}

function judgeRedirect(r: RedirectSite): DenyVerdict | null {
  for (const t of r.targets) {
    if (/^\/dev\/(tcp|udp)\//.test(t)) return deny('reverse-shell', `redirection to ${t}`);
    const writes = ['>', '>>', '>|', '&>', '&>>', '<>', '>&'].includes(r.op);
    if (writes && /^\d+$|^-$/.test(t) && (r.op === '>&' || r.op === '<&')) continue;
    for (const cwd of r.cwd) {
      const p = normalizePath(t, cwd);
      if (writes && /(^|\/)authorized_keys2?$/.test(p)) return deny('authorized-keys-write', `${r.op} ${displayField(p)}`);
      if (writes && p.startsWith('/dev/') && !HARMLESS_DEV.test(p)) return deny('device-write', `${r.op} ${p}`);
    }
    if (r.op !== '<<' && r.op !== '<<-' && r.op !== '<<<') {
      const secret = secretPath(t, r.cwd);
      if (secret) return deny('secret-file', `redirection ${r.op} ${secret}`);
    }
  }
  return null;
}

/** Download, then an interpreter or a ./script later in the same command: remote content is run. */
function chainedRemote(facts: ScriptFacts): DenyVerdict | null {
  const firstDownload = facts.sites.findIndex((s) => s.argvs.some(isDownload));
  if (firstDownload < 0) return null;
  for (const s of facts.sites.slice(firstDownload + 1)) {
    for (const argv of s.argvs) {
      const words = unwrapCommand(argv).words;
      const n = words[0] ?? '';
      const name = basename(n);
      const runsFile = (isInterpreter(name) && (() => {
        const op = scriptOperand(name, words.slice(1));
        return op !== null && op !== 'module';
      })()) || name === 'source' || name === '.' || (n.includes('/') && !n.startsWith('/usr/') && !n.startsWith('/bin/'));
      if (runsFile) return deny('remote-code-exec', `download followed by ${displayField(name)}`);
    }
  }
  return null;
}

/** The first denylist rule that matches the evaluated command, or null. */
export function findDenial(facts: ScriptFacts): DenyVerdict | null {
  if (facts.tooComplex) return deny('too-complex');
  if (facts.unsupported) return deny('unsupported-syntax', facts.unsupported);
  if (facts.forkBomb) return deny('fork-bomb', `function ${facts.forkBomb}`);
  for (const site of facts.sites) {
    const v = judgeSite(site, facts);
    if (v) return v;
  }
  for (const r of facts.redirects) {
    const v = judgeRedirect(r);
    if (v) return v;
  }
  if (facts.infiniteLoop) return deny('infinite-loop');
  return chainedRemote(facts);
}

export { deny as denyVerdict };
