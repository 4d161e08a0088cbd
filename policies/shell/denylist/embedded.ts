/**
 * Command strings inside ordinary tools: options and arguments that a tool hands to a shell (or runs as
 * a program). `embeddedCommands(name, args)` returns, per tool, every such string it can find
 * (`{ where, text }`: the denylist judges `text` as a shell command of its own, so `tar
 * --to-command='rm -rf ~'` is refused as `rm -rf ~` would be) and the constructs it refuses outright
 * because the command they run cannot be known (`{ where, refuse }`: sed's `e`, awk's `system(var)`,
 * `git -c core.hooksPath=dir`, a vim `:!` escape).
 *
 * Each tool family is one entry of `TOOLS`; long options are matched as GNU abbreviations.
 */
import { matchLong, readOptions } from './options.js';
import { awkCommands, sedCommands } from './awk-sed.js';
import { cmd, optionValues, refuse, type Embedded, type Extractor } from './embedded-kit.js';

export type { Embedded } from './embedded-kit.js';
export { awkFiles, readSed, sedScripts } from './awk-sed.js';

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

function sshCommands(args: readonly string[]): Embedded[] {
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

function scpCommands(args: readonly string[]): Embedded[] {
  return [...sshOptions(args), ...optionValues(args, [], 'S').map((p) => cmd('-S program', p))];
}

function rsyncCommands(args: readonly string[]): Embedded[] {
  return [
    ...optionValues(args, ['rsh'], 'e').map((t) => cmd('rsync -e/--rsh', t)),
    ...optionValues(args, ['rsync-path'], '', 7).map((t) => cmd('rsync --rsync-path', t)),
  ];
}

// ---- archivers

function tarCommands(args: readonly string[]): Embedded[] {
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

function zipCommands(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-TT' || matchLong(a, ['unzip-command'], 3)) out.push(cmd('zip -TT', a.includes('=') ? a.slice(a.indexOf('=') + 1) : (args[++i] ?? '')));
    else if (a.startsWith('-TT')) out.push(cmd('zip -TT', a.slice(3)));
  }
  return out;
}

// ---- git

/** Config keys whose value git runs as a command (or that make git run other code). */
const GIT_EXEC_KEYS =
  /^(core\.(sshcommand|pager|editor|fsmonitor|askpass|gitproxy)|sequence\.editor|diff\.external|diff\..+\.(command|textconv)|filter\..+\.(clean|smudge|process)|merge\..+\.driver|mergetool\..+\.cmd|difftool\..+\.cmd|credential(\..+)?\.helper|gpg(\..+)?\.program|pager\..+|interactive\.difffilter|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack|proxy)|browser\..+\.cmd|web\.browser|sendemail\.(smtpserver|tocmd|cccmd)|.+\.(command|cmd))$/i;
/** Config keys refused outright: they point git at code or config the command cannot show. */
const GIT_REFUSED_KEYS = /^(core\.hookspath|include\.path|includeif\..+\.path|core\.worktree|init\.templatedir)$/i;

/** Text the evaluator could not know (an outside variable, a substitution's output). */
const UNKNOWN_TEXT = /[\uE000\uE005]/;

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

function gitCommands(args: readonly string[]): Embedded[] {
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
      if (GIT_EXEC_KEYS.test(key) || GIT_REFUSED_KEYS.test(key) || /^alias\./i.test(key))
        out.push(refuse('git --config-env', `${key} is taken from the environment`));
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

// ---- pagers, editors, make, package managers, debuggers, database shells

const VIM_ESCAPE =
  /!|\b(sh|shell|te|ter|term|terminal|py|pyt|python|python3|py3|pyx|pythonx|pydo|py3do|lua|luado|luafile|perl|perldo|ruby|rubydo|tcl|tcldo|mz|mzscheme|system|systemlist|libcall|call|exe|exec|execute|so|source|redir|cq)\b/i;
function vimCommands(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    let c: string | null = null;
    if (a === '-c' || a === '--cmd') c = args[++i] ?? '';
    else if (a.startsWith('-c') && a.length > 2) c = a.slice(2);
    else if (a.startsWith('+') && a.length > 1) c = a.slice(1);
    if (c !== null && VIM_ESCAPE.test(c) && !/^\d+$/.test(c)) out.push(refuse('vim -c / +cmd', `an editor command that can run programs (${c})`));
  }
  return out;
}

function lessCommands(args: readonly string[]): Embedded[] {
  return args.filter((a) => a.startsWith('+') && /[!|]/.test(a)).map((a) => refuse('less +cmd', `a pager command that runs a program (${a})`));
}

function manCommands(args: readonly string[]): Embedded[] {
  return [
    ...optionValues(args, ['pager'], 'P', 3).map((t) => cmd('man --pager', t)),
    ...optionValues(args, ['html', 'preprocessor'], 'Hp', 3)
      .filter((t) => /[\s/]/.test(t))
      .map((t) => cmd('man --html', t)),
  ];
}

/** $(shell ...) / ${shell ...} inside make text, with balanced parentheses. */
function makeShellCalls(text: string): string[] {
  const out: string[] = [];
  const re = /\$([({])shell\s/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const open = m[1]!;
    const close = open === '(' ? ')' : '}';
    let depth = 1;
    let j = m.index + m[0].length;
    const start = j;
    for (; j < text.length && depth > 0; j++) {
      if (text[j] === open) depth++;
      else if (text[j] === close) depth--;
    }
    out.push(text.slice(start, j - 1));
  }
  return out;
}

/** What a makefile text runs: its recipes (after ';' on a rule line, or tab-indented lines) and $(shell ...). */
export function makefileCommands(t: string, where: string): Embedded[] {
  const out: Embedded[] = [];
  for (const s of makeShellCalls(t)) out.push(cmd(`${where} $(shell)`, s));
  for (const line of t.split('\n')) {
    const recipe = /^[^=#\t]*:[^=]*;(.*)$/.exec(line)?.[1] ?? (line.startsWith('\t') ? line.slice(1) : null);
    if (recipe !== null && recipe.trim() !== '') out.push(cmd(`${where} recipe`, recipe.replace(/^[@+-]+/, '')));
  }
  return out;
}

function makeCommands(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  for (const t of optionValues(args, ['eval'], 'E', 2)) out.push(...makefileCommands(t, 'make --eval'));
  // VAR=value overrides become parts of recipes ($(CC) ...) and $(shell) runs at parse time.
  for (const a of args) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\s*[:+?]?=(.*)$/s.exec(a);
    if (!m) continue;
    for (const s of makeShellCalls(m[2]!)) out.push(cmd(`make ${m[1]}=$(shell)`, s));
    if (m[1] === 'SHELL' || m[1] === '.SHELLFLAGS') out.push(cmd(`make ${m[1]}=`, m[2]!));
  }
  return out;
}

const KNOWN_SHELLS = /^(\/usr)?(\/local)?(\/bin\/)?(sh|bash|dash|zsh|ksh|fish)$/;
function scriptShell(args: readonly string[]): Embedded[] {
  return optionValues(args, ['script-shell'], '', 3)
    .filter((v) => !KNOWN_SHELLS.test(v))
    .map((v) => refuse('--script-shell', `package scripts would run through ${v}`));
}

function npmCommands(args: readonly string[]): Embedded[] {
  const out = scriptShell(args);
  const o = readOptions(args, { longValue: ['prefix', 'workspace', 'package', 'call', 'loglevel', 'script-shell'] });
  const sub = o.operands[0] ?? '';
  for (const t of optionValues(args, ['call'], 'c', 4)) out.push(cmd('npm exec --call', t));
  if (['exec', 'x', 'dlx', 'run-script-shell'].includes(sub)) {
    const i = args.indexOf(sub);
    const rest = args.slice(i + 1).filter((w) => !w.startsWith('-') || w === '-');
    if (rest.length > 0) out.push(cmd(`${sub}`, rest.join(' ')));
  }
  if (sub === 'config' && o.operands[1] === 'set' && /script-shell/.test(o.operands[2] ?? '')) {
    const v = (o.operands[2]!.includes('=') ? o.operands[2]!.split('=')[1] : o.operands[3]) ?? '';
    if (!KNOWN_SHELLS.test(v)) out.push(refuse('npm config set script-shell', `package scripts would run through ${v}`));
  }
  return out;
}

function npxCommands(args: readonly string[]): Embedded[] {
  return optionValues(args, ['call'], 'c', 4).map((t) => cmd('npx --call', t));
}

function nixShellCommands(args: readonly string[]): Embedded[] {
  return optionValues(args, ['run', 'command'], '', 3).map((t) => cmd('nix-shell --run', t));
}

function gdbCommands(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  for (const c of [
    ...optionValues(args, ['eval-command', 'init-eval-command'], '', 3),
    ...args.flatMap((a, i) => (/^-(ex|iex)$/.test(a) ? [args[i + 1] ?? ''] : [])),
  ]) {
    const m = /^\s*(!|shell\s|pipe\s|\|)(.*)$/s.exec(c);
    if (m) out.push(cmd('gdb shell command', m[2]!));
    else if (/^\s*(python|py|pi|python-interactive|guile|gu|source)\b/.test(c) || /\b(system|popen|exec[lv]p?e?|dlopen)\s*\(/.test(c))
      out.push(refuse('gdb -ex', `a debugger command that runs code (${c})`));
  }
  return out;
}

const DB_ESCAPE = /(^|\n|;)\s*(\.shell|\.system|\\!|system\s|\\setenv|\.output\s*\|)/;
function dbShellCommands(args: readonly string[]): Embedded[] {
  return args.filter((a) => DB_ESCAPE.test(a)).map((a) => refuse('database shell escape', `a client command that runs programs (${a.trim().slice(0, 40)})`));
}

/** Text fed to a database shell on stdin must not escape to the system shell either. */
export const DB_SHELLS = new Set(['sqlite3', 'sqlite', 'psql', 'mysql', 'mariadb', 'duckdb']);
export const dbEscapes = (text: string): boolean => DB_ESCAPE.test(text);

// ---- command-string wrappers: the rest of the arguments (or one option) is a shell command

function optionThenString(short: string, long: readonly string[]): Extractor {
  return (args) => optionValues(args, long, short, 3).map((t) => cmd(`-${short || long[0]}`, t));
}

function parallelCommands(args: readonly string[]): Embedded[] {
  const sep = args.findIndex((a) => /^:::+$/.test(a) || a === '::::');
  const head = sep < 0 ? args : args.slice(0, sep);
  const o = readOptions(head, { shortValue: 'jPSIadEn', longValue: ['jobs', 'arg-file', 'delimiter', 'sshlogin', 'joblog', 'results', 'replace', 'max-args'] });
  return o.operands.length > 0 ? [cmd('parallel', o.operands.join(' '))] : [];
}

function hyperfineCommands(args: readonly string[]): Embedded[] {
  const o = readOptions(args, {
    shortValue: 'wrmMpcsSnNLu',
    longValue: [
      'warmup',
      'runs',
      'prepare',
      'cleanup',
      'setup',
      'shell',
      'export-json',
      'export-markdown',
      'parameter-scan',
      'parameter-list',
      'command-name',
      'output',
      'min-runs',
      'max-runs',
    ],
  });
  return [
    ...o.operands.map((t) => cmd('hyperfine', t)),
    ...optionValues(args, ['prepare', 'cleanup', 'setup'], 'pcs', 3).map((t) => cmd('hyperfine --prepare', t)),
  ];
}

/** tmux/screen: a command given to a new session, window or pane (or run-shell) is a shell string. */
function tmuxCommands(args: readonly string[]): Embedded[] {
  const o = readOptions(args, { shortValue: 'cCeFLlnNsStTxywWp', longValue: [] });
  const sub = o.operands[0] ?? '';
  if (
    !/^(new|new-session|new-window|neww|split-window|splitw|respawn-pane|respawnp|respawn-window|respawnw|run-shell|run|if-shell|if|pipe-pane|pipep|display-popup|popup)$/.test(
      sub,
    )
  )
    return [];
  const rest = o.operands.slice(1);
  return rest.length > 0 ? [cmd(`tmux ${sub}`, rest.join(' '))] : [];
}

function nodemonCommands(args: readonly string[]): Embedded[] {
  return optionValues(args, ['exec'], 'x', 3).map((t) => cmd('nodemon --exec', t));
}

function dockerCommands(args: readonly string[]): Embedded[] {
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

/** Per tool: the command strings its arguments carry. */
export const TOOLS: Readonly<Record<string, Extractor>> = {
  awk: awkCommands,
  gawk: awkCommands,
  mawk: awkCommands,
  nawk: awkCommands,
  'busybox-awk': awkCommands,
  sed: sedCommands,
  gsed: sedCommands,
  ssh: sshCommands,
  scp: scpCommands,
  sftp: scpCommands,
  rsync: rsyncCommands,
  tar: tarCommands,
  gtar: tarCommands,
  bsdtar: tarCommands,
  zip: zipCommands,
  git: gitCommands,
  vim: vimCommands,
  vi: vimCommands,
  nvim: vimCommands,
  view: vimCommands,
  vimdiff: vimCommands,
  gvim: vimCommands,
  ex: vimCommands,
  evim: vimCommands,
  less: lessCommands,
  more: lessCommands,
  man: manCommands,
  make: makeCommands,
  gmake: makeCommands,
  npm: npmCommands,
  pnpm: npmCommands,
  yarn: npmCommands,
  bun: npmCommands,
  npx: npxCommands,
  'nix-shell': nixShellCommands,
  gdb: gdbCommands,
  sqlite3: dbShellCommands,
  sqlite: dbShellCommands,
  psql: dbShellCommands,
  mysql: dbShellCommands,
  mariadb: dbShellCommands,
  duckdb: dbShellCommands,
  docker: dockerCommands,
  podman: dockerCommands,
  nerdctl: dockerCommands,
  // programs that run a shell command string given as an option or their arguments
  flock: optionThenString('c', ['command']),
  script: optionThenString('c', ['command']),
  su: optionThenString('c', ['command']),
  runuser: optionThenString('c', ['command']),
  nodemon: nodemonCommands,
  tmux: tmuxCommands,
  parallel: parallelCommands,
  hyperfine: hyperfineCommands,
  entr: (args) => (args.includes('-s') ? [cmd('entr -s', args[args.indexOf('-s') + 1] ?? '')] : []),
  'xvfb-run': () => [],
};

export function embeddedCommands(name: string, args: readonly string[]): Embedded[] {
  const f = TOOLS[name];
  return f ? f(args) : [];
}

// ---- environment variables that carry commands or code

/** Variables whose value a program runs as a shell command (pagers, editors, ssh commands, ...). */
const COMMAND_VARS = new Set([
  'PAGER',
  'MANPAGER',
  'GIT_PAGER',
  'SYSTEMD_PAGER',
  'BAT_PAGER',
  'EDITOR',
  'VISUAL',
  'GIT_EDITOR',
  'SUDO_EDITOR',
  'FCEDIT',
  'GIT_SEQUENCE_EDITOR',
  'GIT_SSH_COMMAND',
  'GIT_SSH',
  'GIT_PROXY_COMMAND',
  'GIT_EXTERNAL_DIFF',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
  'BROWSER',
  'LESSOPEN',
  'LESSCLOSE',
  'RSYNC_RSH',
  'CVS_RSH',
  'RSYNC_CONNECT_PROG',
  'PROMPT_COMMAND',
  'FZF_DEFAULT_COMMAND',
  'TERMINAL',
  'DIFFPROG',
  'MERGE',
]);

/** Variables that make a program load or run other code whatever the value: refused when set. */
const CODE_VARS =
  /^(LD_PRELOAD|LD_AUDIT|DYLD_INSERT_LIBRARIES|BASH_ENV|ENV|PERL5OPT|PERL5DB|RUBYOPT|GCONV_PATH|GIT_EXEC_PATH|GIT_CONFIG_PARAMETERS|GIT_TEMPLATE_DIR|BASH_FUNC_.*|PYTHONSTARTUP|NPM_CONFIG_SCRIPT_SHELL|npm_config_script_shell|SHELLOPTS|BASHOPTS)$/;

/** What an assignment NAME=value carries: a command to judge, a refusal, or nothing. */
export function assignmentEmbedded(name: string, value: string): Embedded[] {
  if (value === '') return [];
  if (CODE_VARS.test(name)) {
    if (/script_shell$/i.test(name) && KNOWN_SHELLS.test(value)) return [];
    return [refuse(`${name}=`, `${name} makes programs load or run other code`)];
  }
  if (name === 'NODE_OPTIONS' && /(^|\s)(-r|--require|--import|--loader|--experimental-loader|-e|--eval|-p|--print)\b/.test(value)) {
    return [refuse('NODE_OPTIONS=', 'NODE_OPTIONS loads other code')];
  }
  if (/^GIT_CONFIG_KEY_\d+$/.test(name) && (GIT_EXEC_KEYS.test(value) || GIT_REFUSED_KEYS.test(value) || /^alias\./i.test(value))) {
    return [refuse(`${name}=`, `git config ${value} from the environment`)];
  }
  // LESS / MORE hold options, and a +cmd option with ! or | runs a program
  if ((name === 'LESS' || name === 'MORE') && /(^|\s)\+\S*[!|]/.test(value)) return [refuse(`${name}=`, `${name} starts the pager with a shell escape`)];
  if (/^PS[0124]$/.test(name) && /\$\(|`/.test(value)) return [refuse(`${name}=`, `${name} runs a command substitution`)];
  if (COMMAND_VARS.has(name)) return [cmd(`${name}=`, value.replace(/^[|-]+/, '').replace(/%s/g, 'FILE'))];
  return [];
}
