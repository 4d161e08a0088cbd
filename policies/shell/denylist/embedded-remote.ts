/**
 * Command strings in remote-access, transfer and archive tools (ssh -o ProxyCommand, the ssh remote
 * command, scp -S, rsync -e, tar --to-command, zip -TT) and the container options that break isolation
 * (docker --privileged, host mounts, --pid=host). Entries of TOOLS in ./embedded.ts.
 */
import { matchLong } from './options.js';
import { cmd, optionValues, refuse, UNKNOWN_TEXT, type Embedded } from './embedded-kit.js';

// ---- ssh family

const SSH_COMMAND_KEYS = /^(proxycommand|localcommand|knownhostscommand|remotecommand|permitlocalcommand)$/i;
function sshOptions(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  for (const v of optionValues(args, [], 'o')) {
    const m = /^\s*([A-Za-z]+)\s*[= ]\s*(.*)$/s.exec(v);
    if (!m && UNKNOWN_TEXT.test(v)) out.push(refuse('ssh -o', 'an option not known until the command runs'));
    if (m && SSH_COMMAND_KEYS.test(m[1]!) && !/^permitlocalcommand$/i.test(m[1]!)) out.push(cmd(`-o ${m[1]}`, m[2]!));
  }
  return out;
}

export function sshCommands(args: readonly string[]): Embedded[] {
  const out = sshOptions(args);
  // ssh [options] HOST COMMAND...: option parsing stops at HOST; the remote shell runs the rest as one string.
  const valueLetters = 'BbcDEeFIiJLlmOopQRSWw';
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      if (args.length > i + 2) out.push(cmd('ssh remote command', args.slice(i + 2).join(' ')));
      break;
    }
    if (a.startsWith('-') && a.length > 1) {
      const k = [...a.slice(1)].findIndex((c) => valueLetters.includes(c));
      if (k >= 0 && k === a.length - 2) i++;
      continue;
    }
    if (args.length > i + 1) out.push(cmd('ssh remote command', args.slice(i + 1).join(' ')));
    break;
  }
  return out;
}

export function scpCommands(args: readonly string[]): Embedded[] {
  return [...sshOptions(args), ...optionValues(args, [], 'S').map((p) => cmd('-S program', p))];
}

export function rsyncCommands(args: readonly string[]): Embedded[] {
  return [
    ...optionValues(args, ['rsh'], 'e').map((t) => cmd('rsync -e/--rsh', t)),
    ...optionValues(args, ['rsync-path'], '', 7).map((t) => cmd('rsync --rsync-path', t)),
  ];
}

// ---- archivers

export function tarCommands(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  for (const v of optionValues(args, ['checkpoint-action'], '', 12)) {
    const m = /^(exec|exec-action)=(.*)$/s.exec(v);
    if (m) out.push(cmd('tar --checkpoint-action=exec', m[2]!));
  }
  for (const t of optionValues(args, ['to-command'], '', 4)) out.push(cmd('tar --to-command', t));
  for (const t of optionValues(args, ['use-compress-program'], 'I', 5)) out.push(cmd('tar --use-compress-program', t));
  for (const t of optionValues(args, ['rsh-command'], '', 4)) out.push(cmd('tar --rsh-command', t));
  for (const t of optionValues(args, ['info-script', 'new-volume-script'], 'F', 4)) out.push(cmd('tar --info-script', t));
  return out;
}

export function zipCommands(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-TT' || matchLong(a, ['unzip-command'], 3)) out.push(cmd('zip -TT', a.includes('=') ? a.slice(a.indexOf('=') + 1) : (args[++i] ?? '')));
    else if (a.startsWith('-TT')) out.push(cmd('zip -TT', a.slice(3)));
  }
  return out;
}

// ---- containers

export function dockerCommands(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  const sub = args.find((a) => !a.startsWith('-')) ?? '';
  if (!['run', 'create', 'exec', 'container'].includes(sub)) return out;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (/^--privileged(=true)?$/.test(a)) out.push(refuse('docker --privileged', 'a privileged container can take over the host'));
    const val = (long: string, short?: string): string | null => {
      if (a === `--${long}` || (short && a === `-${short}`)) return args[i + 1] ?? '';
      if (a.startsWith(`--${long}=`)) return a.slice(long.length + 3);
      if (short && a.startsWith(`-${short}`) && a.length > 2 && !a.startsWith('--')) return a.slice(2);
      return null;
    };
    const vol = val('volume', 'v');
    if (vol !== null) {
      const src = vol.split(':')[0] ?? '';
      if (HOST_SOURCE.test(src)) out.push(refuse('docker -v', `mounts the host's ${src}`));
    }
    const mount = val('mount');
    if (mount !== null) {
      const src = /(?:^|,)(?:source|src)=([^,]*)/.exec(mount)?.[1] ?? '';
      if (HOST_SOURCE.test(src)) out.push(refuse('docker --mount', `mounts the host's ${src}`));
    }
    for (const [opt, bad] of [
      ['pid', /^host$/],
      ['ipc', /^host$/],
      ['userns', /^host$/],
      ['uts', /^host$/],
      ['cap-add', /^(all|sys_admin|sys_ptrace|sys_module|dac_read_search|cap_sys_admin)$/i],
      ['security-opt', /unconfined|label[:=]disable/i],
      ['device', /^\/dev\/(sd|nvme|mem|kmem|vd|xvd|hd|mmcblk|dm-|mapper)/],
    ] as const) {
      const v = val(opt);
      if (v !== null && bad.test(v)) out.push(refuse(`docker --${opt}`, `--${opt}=${v} breaks the container's isolation`));
    }
  }
  return out;
}
const HOST_SOURCE = /^(\/+|~\/?|\/(etc|root|home|boot|proc|sys|dev|usr|bin|sbin|lib|lib64|var|run)(\/.*)?|.*docker\.sock|~\/\..*)$/;
