/**
 * Command strings in everyday tools: editors and pagers (vim -c, less +!), man --pager, make (recipes,
 * $(shell), --eval), package managers (npm exec, --script-shell), gdb -ex, database shell escapes, and
 * programs that take a shell command as an option or as their arguments (flock -c, tmux, parallel,
 * hyperfine, nodemon). Entries of TOOLS in ./embedded.ts.
 */
import { readOptions } from './options.js';
import { cmd, optionValues, refuse, type Embedded, type Extractor } from './embedded-kit.js';

// ---- pagers, editors, make, package managers, debuggers, database shells

const VIM_ESCAPE =
  /!|\b(sh|shell|te|ter|term|terminal|py|pyt|python|python3|py3|pyx|pythonx|pydo|py3do|lua|luado|luafile|perl|perldo|ruby|rubydo|tcl|tcldo|mz|mzscheme|system|systemlist|libcall|call|exe|exec|execute|so|source|redir|cq)\b/i;
export function vimCommands(args: readonly string[]): Embedded[] {
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

export function lessCommands(args: readonly string[]): Embedded[] {
  return args.filter((a) => a.startsWith('+') && /[!|]/.test(a)).map((a) => refuse('less +cmd', `a pager command that runs a program (${a})`));
}

export function manCommands(args: readonly string[]): Embedded[] {
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

export function makeCommands(args: readonly string[]): Embedded[] {
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

export const KNOWN_SHELLS = /^(\/usr)?(\/local)?(\/bin\/)?(sh|bash|dash|zsh|ksh|fish)$/;
function scriptShell(args: readonly string[]): Embedded[] {
  return optionValues(args, ['script-shell'], '', 3)
    .filter((v) => !KNOWN_SHELLS.test(v))
    .map((v) => refuse('--script-shell', `package scripts would run through ${v}`));
}

export function npmCommands(args: readonly string[]): Embedded[] {
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

export function npxCommands(args: readonly string[]): Embedded[] {
  return optionValues(args, ['call'], 'c', 4).map((t) => cmd('npx --call', t));
}

export function nixShellCommands(args: readonly string[]): Embedded[] {
  return optionValues(args, ['run', 'command'], '', 3).map((t) => cmd('nix-shell --run', t));
}

export function gdbCommands(args: readonly string[]): Embedded[] {
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
export function dbShellCommands(args: readonly string[]): Embedded[] {
  return args.filter((a) => DB_ESCAPE.test(a)).map((a) => refuse('database shell escape', `a client command that runs programs (${a.trim().slice(0, 40)})`));
}

/** Text fed to a database shell on stdin must not escape to the system shell either. */
export const DB_SHELLS = new Set(['sqlite3', 'sqlite', 'psql', 'mysql', 'mariadb', 'duckdb']);
export const dbEscapes = (text: string): boolean => DB_ESCAPE.test(text);

// ---- command-string wrappers: the rest of the arguments (or one option) is a shell command

export function optionThenString(short: string, long: readonly string[]): Extractor {
  return (args) => optionValues(args, long, short, 3).map((t) => cmd(`-${short || long[0]}`, t));
}

export function parallelCommands(args: readonly string[]): Embedded[] {
  const sep = args.findIndex((a) => /^:::+$/.test(a) || a === '::::');
  const head = sep < 0 ? args : args.slice(0, sep);
  const o = readOptions(head, { shortValue: 'jPSIadEn', longValue: ['jobs', 'arg-file', 'delimiter', 'sshlogin', 'joblog', 'results', 'replace', 'max-args'] });
  return o.operands.length > 0 ? [cmd('parallel', o.operands.join(' '))] : [];
}

export function hyperfineCommands(args: readonly string[]): Embedded[] {
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
export function tmuxCommands(args: readonly string[]): Embedded[] {
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

export function nodemonCommands(args: readonly string[]): Embedded[] {
  return optionValues(args, ['exec'], 'x', 3).map((t) => cmd('nodemon --exec', t));
}
