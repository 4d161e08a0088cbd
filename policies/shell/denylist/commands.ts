/**
 * Rules on one command (argv after expansion): what each known-dangerous program refuses, with its
 * options read the way the program reads them (clusters, glued values, abbreviated long options; see
 * ./options.ts). `judgeArgv` is called for the command as written, for the command its wrappers run,
 * and for every argument slice that starts with a known-dangerous command (`foo --bar rm -rf /`).
 * The rules that read options at length are in ./program-rules.ts; where an interpreter's code comes
 * from (stdin, a process substitution) is in ./code-sources.ts.
 */
import { basename } from '../wrappers.js';
import { MARK, displayField, isStatic, type CommandSite, type ScriptFacts } from '../parse.js';
import { deny, type DenyVerdict } from './rules.js';
import { hasLong, longValue, readOptions } from './options.js';
import { inlineCodeOption, interpreterName, scriptOperand } from './interpreters.js';
import { isDangerousTarget, type LinkMap } from './paths.js';
import { SYSTEM_COMMANDS, systemRule } from './system.js';
import { FD_PATH, procSubstCode, STDIN_PATHS, stdinCode } from './code-sources.js';
import { chmodRule, findRule, gitRule, killRule, operands, persistenceRule, psRule, rmRule, rsyncRule } from './program-rules.js';

export interface Judge {
  site: CommandSite;
  facts: ScriptFacts;
  /** false for argument slices of unknown programs: their stdin is not the slice's */
  ownStdin: boolean;
  /** symlinks made earlier in the same command (for the paths a rule looks at) */
  links?: LinkMap;
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
      return rmRule(args, j.site.origin) ?? system();
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
