/**
 * Rules on one command (argv after expansion): what each known-dangerous program refuses, with its
 * options read the way the program reads them (clusters, glued values, abbreviated long options; see
 * ./options.ts). `judgeArgv` is called for the command as written, for the command its wrappers run,
 * and for every argument slice that starts with a known-dangerous command (`foo --bar rm -rf /`).
 */
import { basename, unwrapCommand } from '../wrappers.js';
import { MARK, displayField, isStatic, type CommandSite, type ScriptFacts } from '../parse.js';
import { deny, type DenyVerdict } from './rules.js';
import { hasLong, longValue, readOptions } from './options.js';
import { inlineCodeOption, interpreterName, scriptOperand } from './interpreters.js';
import { isDangerousTarget, normalizePath, type LinkMap } from './paths.js';
import { SYSTEM_COMMANDS, systemRule } from './system.js';

export interface Judge {
  site: CommandSite;
  facts: ScriptFacts;
  /** false for argument slices of unknown programs: their stdin is not the slice's */
  ownStdin: boolean;
  /** symlinks made earlier in the same command (for the paths a rule looks at) */
  links?: LinkMap;
}

const DOWNLOADERS = new Set(['curl', 'wget', 'aria2c', 'fetch', 'http', 'https', 'xh', 'lwp-download', 'lwp-request', 'GET']);
export function isDownload(argv: string[]): boolean {
  const { words } = unwrapCommand(argv, { deep: true });
  return DOWNLOADERS.has(basename(words[0] ?? ''));
}

function isDecoder(argv: string[]): boolean {
  const { words } = unwrapCommand(argv, { deep: true });
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
  const name = basename(unwrapCommand(argv, { deep: true }).words[0] ?? '');
  if (name === 'echo' || name === 'printf') return true;
  return name === 'cat' && argv.length === 1 && site.stdin.kind === 'here';
}

/** Words that mean "the program's stdin" when given as a script path. */
export const STDIN_PATHS = /^(-|\/dev\/stdin|\/dev\/fd\/0|\/proc\/self\/fd\/0)$/;
/** Another open descriptor as a script path: its content is not known here. */
const FD_PATH = /^(\/dev\/fd\/[1-9]\d*|\/proc\/(self|thread-self|\d+)\/fd\/\d+)$/;

/** `sh <(curl ...)`, `source <(...)`: code from a process substitution. */
function procSubstCode(arg: string, facts: ScriptFacts): DenyVerdict {
  const ps = facts.procSubsts[arg.charCodeAt(1) - 0xe100];
  if (ps && ps.sites.some((s) => s.argvs.some(isDownload))) return deny('remote-code-exec', 'process substitution of a download');
  return deny('inline-code', 'code from a process substitution');
}

/** An interpreter with no script operand reads its code from stdin: judge where stdin comes from. */
function stdinCode(site: CommandSite, facts: ScriptFacts, name: string): DenyVerdict | null {
  const stdin = site.stdin;
  if (stdin.kind === 'here') return deny('inline-code', `${stdin.heredoc ? 'heredoc' : 'here-string'} fed to ${name}`);
  if (stdin.kind === 'file') {
    // bash < <(curl ...): the "file" is a process substitution
    const ps = stdin.paths.find((p) => p.startsWith(MARK.PSUB));
    if (ps) return procSubstCode(ps, facts);
    const fd = stdin.paths.find((p) => /^(&|\/dev\/fd\/[1-9]|\/proc\/self\/fd\/[1-9])/.test(p));
    return fd ? deny('pipe-to-interpreter', `${name} reads code from descriptor ${fd.replace(/^&/, '')}`) : null;
  }
  if (stdin.kind !== 'pipe') return null;
  const up = stdin.upstream;
  if (up.some((s) => s.argvs.some(isDownload))) return deny('remote-code-exec', `download piped into ${name}`);
  if (up.some((s) => s.argvs.some(isDecoder))) return deny('decoded-exec', `decoded content piped into ${name}`);
  if (up.length > 0 && up.every((s) => s.argvs.every((a) => isLiteralProducer(s, a)))) return deny('inline-code', `literal code piped into ${name}`);
  return deny('pipe-to-interpreter', `piped into ${name}`);
}

export function operands(args: string[]): string[] {
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

function rmRule(args: string[], j: Judge): DenyVerdict | null {
  const o = readOptions(args);
  const recursive = o.short.has('r') || o.short.has('R') || hasLong(o, 'recursive');
  const force = o.short.has('f') || hasLong(o, 'force');
  const targets = o.operands;
  if (targets.length > 0 && targets.every(isTmpPath)) return null;
  for (const t of targets) if (isDangerousTarget(t)) return deny('rm-dangerous-target', `target ${displayField(t)}`);
  if (recursive) return deny('rm-recursive');
  if (force) return deny('rm-force');
  // files found at run time by find -exec / xargs: deletion in bulk
  if (j.site.origin === 'find-exec' && targets.some((t) => t.includes(MARK.UNKNOWN))) return deny('recursive-delete', 'find -exec rm');
  return null;
}

/** Numeric modes may be written 4755, 04755, 0004755, =4755, +4000. */
function chmodRule(args: string[]): DenyVerdict | null {
  const o = readOptions(args, { longValue: ['reference'] });
  // GNU chmod takes `-w`, `-s` style modes too: a word of mode letters after '-' is a mode, not an option
  const mode = o.operands[0] ?? args.find((a) => /^-[rwxXst]+$/.test(a));
  if (mode === undefined) return null;
  for (const clause of mode.split(',')) {
    const num = /^([-+=]?)([0-7]{1,7})$/.exec(clause);
    if (num) {
      if (num[1] === '-') continue;
      const v = parseInt(num[2]!, 8);
      if ((v & 0o6000) !== 0) return deny('setuid-setgid', `mode ${mode}`);
      if ((v & 0o002) !== 0) return deny('chmod-world-writable', `mode ${mode}`);
      continue;
    }
    const m = /^([ugoa]*)((?:[-+=][rwxXstugo0-7]*)+)$/.exec(clause);
    if (!m) continue;
    const who = m[1]!;
    for (const op of m[2]!.match(/[-+=][rwxXstugo0-7]*/g) ?? []) {
      if (op[0] === '-') continue;
      if (op.includes('s') && who !== 'o') return deny('setuid-setgid', `mode ${mode}`);
      if (op.includes('w') && (who.includes('a') || who.includes('o'))) return deny('chmod-world-writable', `mode ${mode}`);
    }
  }
  return null;
}

const KILL_SIGNAL = /^(SIG)?KILL$|^0*9$|^0x0*9$/i;
function killRule(args: string[]): DenyVerdict | null {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') break;
    if (/^-(SIG)?KILL$|^-0*9$/i.test(a)) return deny('process-kill', `kill ${a}`);
    // -s SIG, -sSIG, -n NUM, -nNUM, --signal SIG, --signal=SIG (abbreviated: --sig, --s)
    const s = /^-([sn])(.*)$/.exec(a);
    const long = /^--(s|si|sig|sign|signa|signal)(?:=(.*))?$/.exec(a);
    const value = s ? (s[2] !== '' ? s[2] : args[i + 1]) : long ? (long[2] ?? args[i + 1]) : undefined;
    if (value !== undefined && KILL_SIGNAL.test(value)) return deny('process-kill', `kill ${a} ${s?.[2] || long?.[2] ? '' : value}`.trim());
  }
  if (operands(args).some((a) => a === '-1' || a === '0') || args.includes('-1')) return deny('process-kill', 'kill of every process');
  return null;
}

/** BSD-style `ps e`, `ps auxe`, `ps eww`, and `-E`/`-o environ` show other processes' environments. */
function psRule(args: string[]): DenyVerdict | null {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (/^[a-zA-Z]+$/.test(a) && a.includes('e') && !/^(-|--)/.test(a)) return deny('process-environment', `ps ${a}`);
    // `ps -auxe`: a dash cluster with x is read BSD-style, where e shows environments
    if (/^-[a-zA-Z]+$/.test(a) && a.includes('x') && a.includes('e')) return deny('process-environment', `ps ${a}`);
    if (/^-[a-zA-Z]*E/.test(a)) return deny('process-environment', `ps ${a}`);
    const fmt = /^(-[a-zA-Z]*[oO]|--format|--forest-format|[a-zA-Z]*[oO])(=?)(.*)$/.exec(a);
    const v = fmt ? (fmt[3] !== '' ? fmt[3] : (args[i + 1] ?? '')) : '';
    if (fmt && /(^|,)\s*(environ|env)\b/.test(v!)) return deny('process-environment', `ps ${a} ${v}`.trim());
  }
  return null;
}

function gitRule(args: string[]): DenyVerdict | null {
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--config-env'].includes(a)) i++;
    else if (!a.startsWith('-')) break;
  }
  if (args[i] !== 'clean') return null;
  const o = readOptions(args.slice(i + 1), { shortValue: 'e', longValue: ['exclude'] });
  const dry = o.short.has('n') || hasLong(o, 'dry-run', 2) || o.short.has('i') || hasLong(o, 'interactive', 2);
  const force = o.short.has('f') || hasLong(o, 'force', 1);
  return force && !dry ? deny('recursive-delete', 'git clean -f') : null;
}

function rsyncRule(args: string[]): DenyVerdict | null {
  const o = readOptions(args, {
    shortValue: 'eBfMT',
    longValue: [
      'rsh',
      'rsync-path',
      'filter',
      'exclude',
      'include',
      'exclude-from',
      'include-from',
      'files-from',
      'temp-dir',
      'compare-dest',
      'copy-dest',
      'link-dest',
      'backup-dir',
      'suffix',
      'chmod',
      'chown',
      'usermap',
      'groupmap',
      'log-file',
      'password-file',
      'port',
      'bwlimit',
      'timeout',
      'contimeout',
      'max-size',
      'min-size',
      'partial-dir',
      'out-format',
      'info',
      'debug',
      'iconv',
      'checksum-choice',
      'compress-choice',
      'compress-level',
      'skip-compress',
      'modify-window',
      'max-delete',
      'block-size',
      'outbuf',
      'remote-option',
      'sockopts',
      'write-batch',
      'only-write-batch',
      'read-batch',
      'protocol',
      'address',
      'mkpath',
    ],
  });
  const deletes =
    o.long.some((l) => l.name.length >= 3 && (/^del/.test(l.name) || 'remove-source-files'.startsWith(l.name))) || o.long.some((l) => /^delete/.test(l.name));
  if (!deletes) return null;
  const dest = o.operands[o.operands.length - 1];
  if (dest === undefined) return null;
  const path = dest.replace(/^[^/:]*:/, '');
  const p = normalizePath(path === '' ? '~' : path);
  return p === '/' || p === '~' || p === '.' || p === '..' || /^\/[^/]+\/?$/.test(p) || (/^~\/[^/]*$/.test(p) && p.startsWith('~/.'))
    ? deny('recursive-delete', `rsync --delete onto ${displayField(dest)}`)
    : null;
}

function findRule(args: string[]): DenyVerdict | null {
  if (args.includes('-delete')) return deny('recursive-delete', 'find -delete');
  return null;
}

/** Persistence: schedulers and service managers. */
function persistenceRule(name: string, args: string[]): DenyVerdict | null {
  switch (name) {
    case 'at':
    case 'batch': {
      const o = readOptions(args, { shortValue: 'qfmMt' });
      if (name === 'at' && (o.short.has('l') || o.short.has('d') || o.short.has('r') || o.short.has('c'))) return null;
      return deny('persistence', name);
    }
    case 'systemd-run':
      return deny('persistence', 'systemd-run');
    case 'systemctl': {
      const verbs = args.filter((a) => !a.startsWith('-'));
      const v = verbs.find((a) => /^(enable|reenable|link|preset|preset-all|edit|set-default|add-wants|add-requires|set-property|revert|mask)$/.test(a));
      return v ? deny('persistence', `systemctl ${v}`) : null;
    }
    case 'update-rc.d':
      return args.some((a) => /^(defaults|enable|start)$/.test(a)) ? deny('persistence', name) : null;
    case 'chkconfig':
      return args.some((a) => /^(on|--add)$/.test(a)) ? deny('persistence', name) : null;
    case 'rc-update':
      return args.includes('add') ? deny('persistence', name) : null;
    case 'loginctl':
      return args.includes('enable-linger') ? deny('persistence', name) : null;
    case 'launchctl':
      return args.some((a) => /^(load|bootstrap|submit|enable|kickstart|setenv)$/.test(a)) ? deny('persistence', 'launchctl') : null;
    case 'sysctl': {
      const o = readOptions(args, { shortValue: 'p' });
      return o.short.has('w') ||
        hasLong(o, 'write', 3) ||
        o.short.has('p') ||
        hasLong(o, 'load', 2) ||
        hasLong(o, 'system', 2) ||
        o.operands.some((a) => a.includes('='))
        ? deny('proc-write', 'sysctl -w')
        : null;
    }
  }
  return null;
}

const PRIV = new Set(['sudo', 'sudoedit', 'su', 'doas', 'pkexec', 'runuser', 'sg', 'run0', 'setpriv', 'sudo-rs', 'please', 'ksu', 'calife']);

export function judgeArgv(argv: string[], j: Judge): DenyVerdict | null {
  const first = argv[0];
  if (first === undefined || first === '') return null;
  if (!isStatic(first)) return deny('dynamic-command', `command ${displayField(first)}`);
  const name = basename(first);
  const args = argv.slice(1);
  const flags = readOptions(args).short;

  if (
    ['rm', 'chmod', 'chown', 'chgrp'].includes(name)
      ? args.some((a) => /^--no-p/.test(a) && '--no-preserve-root'.startsWith(a.split('=')[0]!))
      : args.includes('--no-preserve-root')
  ) {
    return deny('no-preserve-root');
  }
  if (PRIV.has(name)) return deny('privilege-escalation', name);
  const system = (): DenyVerdict | null => systemRule(name, args, j.site.cwd, j.links ?? new Map());
  switch (name) {
    case 'rm':
      return rmRule(args, j) ?? system();
    case 'unlink': {
      const t = operands(args).find(isDangerousTarget);
      if (t) return deny('rm-dangerous-target', `unlink ${displayField(t)}`);
      return j.site.origin === 'find-exec' ? deny('recursive-delete', 'find -exec unlink') : system();
    }
    case 'find':
      return findRule(args);
    case 'git':
      return gitRule(args);
    case 'rsync':
      return rsyncRule(args);
    case 'dd': {
      for (const a of args) {
        const of = /^of=(.*)$/.exec(a);
        if (of && of[1]!.startsWith('/dev/') && !/^\/dev\/(null|stdout|stderr|fd\/\d+)$/.test(of[1]!)) return deny('dd-device', a);
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
      if (args.some((a) => /^(poweroff|reboot|halt|kexec|suspend|hibernate|emergency|rescue|soft-reboot)$/.test(a))) return deny('system-power');
      return persistenceRule(name, args);
    case 'at':
    case 'batch':
    case 'systemd-run':
    case 'launchctl':
    case 'sysctl':
    case 'update-rc.d':
    case 'chkconfig':
    case 'rc-update':
    case 'loginctl':
      return persistenceRule(name, args);
    case 'eval':
      return deny('inline-code', 'eval');
    case 'kill':
      return killRule(args);
    case 'pkill':
    case 'killall':
    case 'killall5':
    case 'skill':
    case 'slay':
      return deny('process-kill', name);
    case 'ps':
      return psRule(args);
    case 'gdb':
    case 'strace':
    case 'ltrace':
    case 'gcore':
    case 'ptrace':
    case 'pwndbg':
    case 'lldb': {
      const o = readOptions(args, {
        shortValue: name === 'gdb' || name === 'lldb' ? 'pxecs' : 'oesupEaIOSPX',
        longValue: ['pid', 'attach-pid', 'output', 'eval-command', 'ex'],
      });
      const attach =
        name === 'gcore' ||
        o.short.has('p') ||
        hasLong(o, 'pid', 1) ||
        hasLong(o, 'attach', 2) ||
        hasLong(o, 'attach-pid', 2) ||
        (name === 'gdb' && args.includes('attach'));
      return attach ? deny('process-attach', `${name} ${args.join(' ').slice(0, 30)}`) : null;
    }
    case 'chmod':
      return chmodRule(args) ?? system();
    case 'install':
    case 'mkdir':
    case 'mkfifo':
    case 'mknod': {
      const mode = readOptions(args, { shortValue: 'mogtS', longValue: ['mode', 'owner', 'group', 'target-directory', 'suffix', 'context'] });
      const m = mode.short.get('m') ?? longValue(mode, 'mode', 2);
      const owner = mode.short.get('o') ?? longValue(mode, 'owner', 2);
      if (typeof owner === 'string' && /^(root|0)(:|$)/.test(owner)) return deny('chown-root', `${name} -o ${owner}`);
      return typeof m === 'string' ? chmodRule([m]) : null;
    }
    case 'chown':
    case 'chgrp': {
      const owner = readOptions(args, { longValue: ['reference', 'from'] }).operands[0] ?? '';
      const parts = owner.split(/[:.]/);
      return parts.some((p) => p === 'root' || p === '0') ? deny('chown-root', `${name} ${owner}`) : system();
    }
    case 'mount':
    case 'umount':
    case 'fusermount':
    case 'fusermount3':
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
      return flags.has('c') || flags.has('w') || flags.has('d') || flags.has('r') || flags.has('s')
        ? deny('history-tamper', `history ${args.join(' ')}`.slice(0, 40))
        : null;
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
      if (STDIN_PATHS.test(arg)) return j.ownStdin ? stdinCode(j.site, j.facts, name) : deny('inline-code', `${name} of stdin`);
      if (FD_PATH.test(arg)) return deny('pipe-to-interpreter', `${name} reads code from ${arg}`);
      return null;
    }
  }
  const sys = system();
  if (sys) return sys;
  if (
    name.startsWith('mkfs') ||
    [
      'mke2fs',
      'mkswap',
      'mkdosfs',
      'mkntfs',
      'fdisk',
      'sfdisk',
      'cfdisk',
      'parted',
      'gdisk',
      'sgdisk',
      'cryptsetup',
      'pvcreate',
      'lvremove',
      'vgremove',
      'zpool',
      'mdadm',
    ].includes(name)
  ) {
    if (
      ['cryptsetup', 'zpool', 'mdadm'].includes(name) &&
      args.every(
        (a) =>
          /^(status|list|-l|--detail|--examine|-D|-E|iostat|--help|-h)$/.test(a) ||
          (!a.startsWith('-') &&
            !['luksFormat', 'luksErase', 'luksKillSlot', 'create', 'destroy', 'labelclear', 'erase', '--create', '--zero-superblock'].includes(a)),
      )
    ) {
      return null;
    }
    return deny('disk-format', name);
  }
  if (interpreterName(name)) {
    const opt = inlineCodeOption(name, args);
    if (opt) return deny('inline-code', `${name} ${opt.length > 24 ? `${opt.slice(0, 24)}…` : opt}`);
    const script = scriptOperand(name, args);
    if (script !== null && script.startsWith(MARK.PSUB)) return procSubstCode(script, j.facts);
    if (script !== null && FD_PATH.test(script)) return deny('pipe-to-interpreter', `${name} reads code from ${script}`);
    if (script !== null && /^https?:\/\//i.test(script)) return deny('remote-code-exec', `${name} runs ${script}`);
    if (script === null || STDIN_PATHS.test(script)) {
      if (j.ownStdin) return stdinCode(j.site, j.facts, name);
      return script === null ? null : deny('inline-code', `${name} reading code from stdin`);
    }
  }
  return null;
}

/** Names judgeArgv knows: an argument slice starting with one of them is judged as that command. */
export function isKnownCommand(word: string): boolean {
  if (!isStatic(word) || word.startsWith('-')) return false;
  const n = basename(word);
  return KNOWN.has(n) || SYSTEM_COMMANDS.has(n) || n.startsWith('mkfs') || interpreterName(n) !== null;
}
const KNOWN = new Set([
  'rm',
  'unlink',
  'find',
  'rsync',
  'dd',
  'shutdown',
  'reboot',
  'halt',
  'poweroff',
  'init',
  'telinit',
  'systemctl',
  'at',
  'batch',
  'systemd-run',
  'launchctl',
  'sysctl',
  'eval',
  'kill',
  'pkill',
  'killall',
  'killall5',
  'ps',
  'chmod',
  'install',
  'mkdir',
  'chown',
  'chgrp',
  'mount',
  'umount',
  'iptables',
  'ip6tables',
  'nft',
  'ufw',
  'shred',
  'wipefs',
  'blkdiscard',
  'hdparm',
  'truncate',
  'nc',
  'ncat',
  'netcat',
  'socat',
  'crontab',
  'history',
  'useradd',
  'userdel',
  'usermod',
  'passwd',
  'visudo',
  'gpg',
  'source',
  'fdisk',
  'sfdisk',
  'parted',
  'git',
  ...PRIV,
]);
