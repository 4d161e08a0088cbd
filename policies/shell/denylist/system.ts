/**
 * Rules on system state and on tools that escape the policy's view, each closed as a class:
 * - deletion tools (rimraf, del-cli, trash, ...) judged like rm, whoever runs them (a package runner
 *   is looked through in ../wrappers.ts);
 * - recursive permission, ownership, attribute and ACL changes of /, a top-level directory, the home
 *   directory or the whole workspace ('recursive-permissions');
 * - shell history tampering: writing, deleting or linking away a history file, the variables and
 *   builtins that stop recording ('history-tamper');
 * - capability tools ('capabilities') and tools that enter or create another namespace, container,
 *   pod or machine ('container-entry': what runs there is outside the sandbox or this policy's view);
 * - secure deletion and filesystem / pool / volume destroyers ('disk-wipe', 'disk-format');
 * - the account databases read through getent ('secret-file').
 */
import { basename } from '../wrappers.js';
import { MARK, displayField } from '../parse.js';
import { deny, type DenyVerdict } from './rules.js';
import { hasLong, readOptions } from './options.js';
import { HISTORY_FILE, hasGlob, isDangerousTarget, normalizePaths, resolveLinks, type LinkMap } from './paths.js';

/** Deletion tools that remove what they are given recursively (trash-like ones can be undone). */
const DELETE_TOOLS: ReadonlySet<string> = new Set(['rimraf', 'rimraf-cli', 'del', 'del-cli', 'premove', 'rmrf', 'trash', 'trash-put', 'trash-cli']);
const RECOVERABLE = new Set(['trash', 'trash-put', 'trash-cli']);

/** rimraf/del-cli expand globs themselves: a quoted `"/*"` is as dangerous as an unquoted one. */
function deletionTool(name: string, args: string[]): DenyVerdict | null {
  const targets = readOptions(args).operands;
  for (const t of targets) {
    if (isDangerousTarget(t.replace(/\*/g, MARK.STAR).replace(/\?/g, MARK.QMARK))) return deny('rm-dangerous-target', `${name} target ${displayField(t)}`);
  }
  if (targets.length === 0 || RECOVERABLE.has(name)) return null;
  return deny('recursive-delete', `${name} deletes recursively`);
}

/**
 * The places a recursive permission change must not sweep: `/`, a top-level directory (/etc, /usr,
 * /home), `~`, and the directory the command starts in (the workspace root) or above it (`.`, `..`), or
 * a glob directly in one of them (`/*`, `~/*`, `*`). Anything below them (./build, ~/.ssh) is everyday.
 */
function sweepTarget(t: string, cwds: string[]): string | null {
  for (const p of cwds.flatMap((cwd) => normalizePaths(t, cwd))) {
    const segs = p.split('/');
    const base = hasGlob(segs[segs.length - 1] ?? '') ? segs.slice(0, -1).join('/') || (p.startsWith('/') ? '/' : '.') : p;
    if (base === '/' || base === '~' || base === '.' || /^\/[^/]+$/.test(base) || /^\.\.(\/\.\.)*$/.test(base)) return displayField(p);
  }
  return null;
}

function permissionSweep(name: string, args: string[], cwds: string[]): DenyVerdict | null {
  const o = readOptions(
    args,
    name === 'setfacl'
      ? { shortValue: 'mMxX', longValue: ['modify', 'modify-file', 'remove', 'remove-file', 'set', 'set-file'] }
      : { longValue: ['reference', 'from'] },
  );
  if (!(o.short.has('R') || hasLong(o, 'recursive', 3))) return null;
  for (const t of o.operands) {
    const hit = sweepTarget(t, cwds);
    if (hit) return deny('recursive-permissions', `${name} -R on ${hit}`);
  }
  return null;
}

/** Commands that delete, move, or change the permissions of the files they name. */
const HISTORY_MODIFIERS = new Set(['rm', 'unlink', 'mv', 'chmod', 'chattr', 'chown', 'srm', 'wipe', 'sdel', ...DELETE_TOOLS]);
const HISTORY_VARS = /^(HISTFILE|HISTSIZE|HISTFILESIZE|HISTIGNORE)$/;

/** HISTFILE=..., HISTSIZE=0, HISTIGNORE='*': the shell stops recording what it runs. */
export function historyAssignment(name: string, value: string): DenyVerdict | null {
  if (!HISTORY_VARS.test(name)) return null;
  if (name === 'HISTFILE') return deny('history-tamper', `${name}=${displayField(value)}`);
  if (name === 'HISTIGNORE') return /[*\uE002]/.test(value) ? deny('history-tamper', `${name}=${displayField(value)}`) : null;
  return /^0*$/.test(value) ? deny('history-tamper', `${name}=${value}`) : null;
}

function historyRule(name: string, args: string[], cwds: string[], links: LinkMap): DenyVerdict | null {
  if (name === 'unset' && args.includes('HISTFILE')) return deny('history-tamper', 'unset HISTFILE');
  if (name === 'set' && args.some((a, i) => (a === '+o' && args[i + 1] === 'history') || a === '+ohistory')) return deny('history-tamper', 'set +o history');
  if (name === 'shopt' && args.includes('-o') && args.includes('-u') && args.includes('history')) return deny('history-tamper', 'shopt -uo history');
  if (!HISTORY_MODIFIERS.has(name)) return null;
  for (const t of readOptions(args).operands) {
    for (const p of cwds.flatMap((cwd) => normalizePaths(t, cwd)).map((n) => resolveLinks(n, links))) {
      if (HISTORY_FILE.test(p)) return deny('history-tamper', `${name} ${displayField(p)}`);
    }
  }
  return null;
}

/** The first operand of a subcommand-style tool, skipping its options (and their values). */
function subcommands(args: readonly string[], valueOpts: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') break;
    if (a.startsWith('-')) {
      if (valueOpts.includes(a)) i++;
      continue;
    }
    out.push(a);
  }
  return out;
}

const DOCKER_OPTS = [
  '-H',
  '--host',
  '-c',
  '--context',
  '--config',
  '-l',
  '--log-level',
  '-f',
  '--file',
  '-p',
  '--project-name',
  '--project-directory',
  '--profile',
  '--env-file',
  '--ansi',
];
const KUBE_OPTS = [
  '-n',
  '--namespace',
  '--context',
  '--cluster',
  '--user',
  '-s',
  '--server',
  '--kubeconfig',
  '--token',
  '--as',
  '--as-group',
  '--request-timeout',
];
const ENTRY_TOOLS = new Set([
  'nsenter',
  'unshare',
  'chroot',
  'systemd-nspawn',
  'lxc-attach',
  'lxc-execute',
  'lxc-console',
  'bwrap',
  'distrobox-enter',
  // from inside a sandbox out to the host
  'flatpak-spawn',
  'host-spawn',
  'distrobox-host-exec',
]);
export const ENTRY_WRAPPERS: ReadonlySet<string> = new Set(['nsenter', 'unshare', 'chroot', 'bwrap']);

/** Tools that run a command in another namespace, container, pod or machine. */
export function containerEntry(argv: readonly string[]): DenyVerdict | null {
  const name = basename(argv[0] ?? '');
  const args = argv.slice(1);
  if (ENTRY_TOOLS.has(name)) return deny('container-entry', name);
  const entry = (sub: string): DenyVerdict => deny('container-entry', `${name} ${sub}`);
  switch (name) {
    case 'docker':
    case 'podman':
    case 'nerdctl':
    case 'docker-compose':
    case 'podman-compose': {
      const subs = subcommands(args, DOCKER_OPTS);
      const s = subs[0] === 'container' || subs[0] === 'compose' ? subs[1] : subs[0];
      return s === 'exec' || s === 'attach' || (name === 'podman' && s === 'unshare') ? entry(s) : null;
    }
    case 'kubectl':
    case 'oc':
    case 'microk8s.kubectl': {
      const s = subcommands(args, KUBE_OPTS)[0];
      return s !== undefined && ['exec', 'attach', 'debug', 'rsh'].includes(s) ? entry(s) : null;
    }
    case 'lxc':
    case 'incus': {
      const s = subcommands(args, ['--project'])[0];
      return s === 'exec' || s === 'shell' || s === 'console' ? entry(s) : null;
    }
    case 'machinectl': {
      const s = subcommands(args, ['-M', '--machine', '-H', '--host', '--uid', '-E', '--setenv'])[0];
      return s === 'shell' || s === 'login' ? entry(s) : null;
    }
    case 'ip': {
      const [a = '', b = ''] = subcommands(args, ['-n', '-netns', '-b', '-batch']);
      // ip abbreviates: `ip net e` is `ip netns exec` (`ip ne` is neighbour)
      return 'netns'.startsWith(a) && a.length >= 3 && b !== '' && 'exec'.startsWith(b) ? entry('netns exec') : null;
    }
    case 'firejail':
      return args.some((w) => /^--join(-|=|$)/.test(w)) ? entry('--join') : null;
    case 'toolbox':
    case 'distrobox': {
      const s = subcommands(args, [])[0];
      return s === 'enter' || s === 'run' ? entry(s) : null;
    }
  }
  return null;
}

const ZFS_DESTROY = /^(destroy|rollback|labelclear)$/;

/** The system rules for one command (argv after expansion); `cwds`/`links` for the paths it names. */
export function systemRule(name: string, args: string[], cwds: string[], links: LinkMap): DenyVerdict | null {
  if (DELETE_TOOLS.has(name)) {
    return historyRule(name, args, cwds, links) ?? deletionTool(name, args);
  }
  switch (name) {
    case 'chmod':
    case 'chown':
    case 'chgrp':
    case 'chattr':
    case 'setfacl':
      return permissionSweep(name, args, cwds) ?? historyRule(name, args, cwds, links);
    case 'setcap':
    case 'capsh':
    case 'filecap':
      return deny('capabilities', name);
    case 'srm':
    case 'wipe':
    case 'sdel':
      return deny('disk-wipe', name);
    case 'zfs':
    case 'zpool': {
      const s = subcommands(args, [])[0];
      return s !== undefined && ZFS_DESTROY.test(s) ? deny('disk-format', `${name} ${s}`) : null;
    }
    case 'btrfs': {
      const [a = '', b = ''] = subcommands(args, []);
      const pre = (full: string, w: string, min: number): boolean => w.length >= min && full.startsWith(w);
      const subvolDelete = pre('subvolume', a, 2) && pre('delete', b, 1);
      const deviceRemove = pre('device', a, 2) && (pre('delete', b, 1) || pre('remove', b, 1));
      return subvolDelete || deviceRemove ? deny('disk-format', `btrfs ${a} ${b}`) : null;
    }
    case 'pvremove':
    case 'lvreduce':
    case 'vgreduce':
      return deny('disk-format', name);
    case 'dmsetup': {
      const s = subcommands(args, [])[0] ?? '';
      return /^(remove|remove_all|wipe_table|clear|reload)$/.test(s) ? deny('disk-format', `dmsetup ${s}`) : null;
    }
    case 'getent': {
      const db = subcommands(args, ['-s', '--service'])[0];
      return db === 'passwd' || db === 'shadow' || db === 'gshadow' ? deny('secret-file', `getent ${db}: the account database`) : null;
    }
    case 'unshadow':
      return deny('secret-file', 'unshadow reads /etc/shadow');
    case 'enable':
      return readOptions(args).short.has('f') ? deny('embedded-command', 'enable -f loads a builtin from a shared library') : null;
  }
  return historyRule(name, args, cwds, links);
}

/** Names the system rules know (for argument slices: `foo --bar rimraf /`). */
export const SYSTEM_COMMANDS: ReadonlySet<string> = new Set([
  ...DELETE_TOOLS,
  'chattr',
  'setfacl',
  'setcap',
  'capsh',
  'filecap',
  'srm',
  'wipe',
  'sdel',
  'zfs',
  'btrfs',
  'pvremove',
  'lvreduce',
  'vgreduce',
  'dmsetup',
  'getent',
  'unshadow',
  ...ENTRY_TOOLS,
]);
