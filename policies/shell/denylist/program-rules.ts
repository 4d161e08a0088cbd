/**
 * The rules of the programs that need more than their name to judge (rm, chmod, kill, ps, git clean,
 * rsync --delete, find -delete, schedulers and service managers), each reading its options the way the
 * program does (./options.ts). `judgeArgv` (./commands.ts) picks the rule by program name.
 */
import { MARK, displayField, type CommandSite } from '../parse.js';
import { deny, type DenyVerdict } from './rules.js';
import { hasLong, readOptions } from './options.js';
import { isDangerousTarget, normalizePath } from './paths.js';

/** Operands of `args`: every word that is not an option, and everything after `--`. */
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

/** `origin`: where the command came from (`find-exec`: its targets are found at run time). */
export function rmRule(args: string[], origin: CommandSite['origin']): DenyVerdict | null {
  const o = readOptions(args);
  const recursive = o.short.has('r') || o.short.has('R') || hasLong(o, 'recursive');
  const force = o.short.has('f') || hasLong(o, 'force');
  const targets = o.operands;
  if (targets.length > 0 && targets.every(isTmpPath)) return null;
  for (const t of targets) if (isDangerousTarget(t)) return deny('rm-dangerous-target', `target ${displayField(t)}`);
  if (recursive) return deny('rm-recursive');
  if (force) return deny('rm-force');
  // files found at run time by find -exec / xargs: deletion in bulk
  if (origin === 'find-exec' && targets.some((t) => t.includes(MARK.UNKNOWN))) return deny('recursive-delete', 'find -exec rm');
  return null;
}

/** Numeric modes may be written 4755, 04755, 0004755, =4755, +4000. */
export function chmodRule(args: string[]): DenyVerdict | null {
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
export function killRule(args: string[]): DenyVerdict | null {
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
export function psRule(args: string[]): DenyVerdict | null {
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

export function gitRule(args: string[]): DenyVerdict | null {
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

export function rsyncRule(args: string[]): DenyVerdict | null {
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

export function findRule(args: string[]): DenyVerdict | null {
  if (args.includes('-delete')) return deny('recursive-delete', 'find -delete');
  return null;
}

/** Persistence: schedulers and service managers. */
export function persistenceRule(name: string, args: string[]): DenyVerdict | null {
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
