/**
 * Command strings git runs: `git -c KEY=VALUE` and `--config-env` for keys whose value is a command
 * (core.pager, core.sshCommand, aliases with `!`), keys refused outright (core.hooksPath, include.path),
 * and the same keys set by `git config`. An entry of TOOLS in ./embedded.ts.
 */
import { matchLong } from './options.js';
import { cmd, optionValues, refuse, UNKNOWN_TEXT, type Embedded } from './embedded-kit.js';

// ---- git

/** Config keys whose value git runs as a command (or that make git run other code). */
const GIT_EXEC_KEYS =
  /^(core\.(sshcommand|pager|editor|fsmonitor|askpass|gitproxy)|sequence\.editor|diff\.external|diff\..+\.(command|textconv)|filter\..+\.(clean|smudge|process)|merge\..+\.driver|mergetool\..+\.cmd|difftool\..+\.cmd|credential(\..+)?\.helper|gpg(\..+)?\.program|pager\..+|interactive\.difffilter|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack|proxy)|browser\..+\.cmd|web\.browser|sendemail\.(smtpserver|tocmd|cccmd)|.+\.(command|cmd))$/i;
/** Config keys refused outright: they point git at code or config the command cannot show. */
const GIT_REFUSED_KEYS = /^(core\.hookspath|include\.path|includeif\..+\.path|core\.worktree|init\.templatedir)$/i;

/** A config key that runs code or points git at other code or config (for keys set from the environment). */
export function isGitCodeKey(key: string): boolean {
  return GIT_EXEC_KEYS.test(key) || GIT_REFUSED_KEYS.test(key) || /^alias\./i.test(key);
}

function gitConfigEntry(where: string, key: string, value: string | null): Embedded[] {
  if (UNKNOWN_TEXT.test(key)) return [refuse(where, 'a config key not known until the command runs')];
  if (GIT_REFUSED_KEYS.test(key)) {
    if (/^core\.hookspath$/i.test(key) && value === '/dev/null') return [];
    return [refuse(where, `git config ${key} points git at other code`)];
  }
  if (/^protocol\..*allow$/i.test(key) && value === 'always') return [refuse(where, `git config ${key}=always enables command transports`)];
  if (value === null) return [];
  if (/^alias\./i.test(key)) return value.startsWith('!') ? [cmd(`${where} ${key}`, value.slice(1))] : [];
  if (/^core\.fsmonitor$/i.test(key) && /^(true|false|yes|no|on|off|0|1)$/i.test(value)) return [];
  if (GIT_EXEC_KEYS.test(key)) return [cmd(`${where} ${key}`, value.replace(/^!/, ''))];
  return [];
}

export function gitCommands(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  let i = 0;
  // global options
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-c' || a.startsWith('-c')) {
      const kv = a === '-c' ? (args[++i] ?? '') : a.slice(2);
      const eq = kv.indexOf('=');
      out.push(...gitConfigEntry('git -c', eq > 0 ? kv.slice(0, eq) : kv, eq > 0 ? kv.slice(eq + 1) : null));
      continue;
    }
    const ce = matchLong(a, ['config-env'], 3);
    if (ce) {
      const kv = ce.value ?? args[++i] ?? '';
      const key = kv.slice(0, Math.max(0, kv.indexOf('=')));
      if (isGitCodeKey(key)) out.push(refuse('git --config-env', `${key} is taken from the environment`));
      continue;
    }
    if (matchLong(a, ['exec-path'], 3)?.value != null) {
      out.push(refuse('git --exec-path', 'git runs its subcommands from another directory'));
      continue;
    }
    if (['-C', '--git-dir', '--work-tree', '--namespace', '--super-prefix'].includes(a)) {
      i++;
      continue;
    }
    if (a.startsWith('-')) continue;
    break;
  }
  const sub = args[i] ?? '';
  const rest = args.slice(i + 1);
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!;
    const up = matchLong(a, ['upload-pack', 'receive-pack', 'exec'], 3);
    if (up) out.push(cmd(`git ${a.split('=')[0]}`, up.value ?? args[++k] ?? ''));
    else if (a === '-u' && k > i && (sub === 'clone' || sub === 'fetch' || sub === 'ls-remote' || sub === 'archive')) out.push(cmd('git -u', args[++k] ?? ''));
    else if (a.startsWith('ext::')) out.push(cmd('git ext:: transport', a.slice(5).replace(/%(.)/g, '$1')));
  }
  switch (sub) {
    case 'submodule': {
      const f = rest.indexOf('foreach');
      if (f >= 0)
        out.push(
          cmd(
            'git submodule foreach',
            rest
              .slice(f + 1)
              .filter((w) => w !== '--recursive' && w !== '-q' && w !== '--quiet')
              .join(' '),
          ),
        );
      break;
    }
    case 'rebase':
      for (const t of optionValues(rest, ['exec'], 'x', 3)) out.push(cmd('git rebase --exec', t));
      break;
    case 'filter-branch':
      for (const t of optionValues(
        rest,
        ['env-filter', 'tree-filter', 'index-filter', 'parent-filter', 'msg-filter', 'commit-filter', 'tag-name-filter'],
        '',
        3,
      )) {
        out.push(cmd('git filter-branch', t));
      }
      break;
    case 'difftool':
    case 'mergetool':
      for (const t of optionValues(rest, ['extcmd'], 'x', 3)) out.push(cmd(`git ${sub} --extcmd`, t));
      break;
    case 'bisect':
      if (rest[0] === 'run') out.push(cmd('git bisect run', rest.slice(1).join(' ')));
      break;
    case 'config': {
      const ops = rest.filter((w) => !w.startsWith('-'));
      if (ops.length >= 2 && !rest.some((w) => /^--(get|list|unset|remove)/.test(w))) out.push(...gitConfigEntry('git config', ops[0]!, ops[1]!));
      break;
    }
  }
  return out;
}
