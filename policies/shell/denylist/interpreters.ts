/**
 * Interpreters: programs that run code given to them. Inline code (`python3 -c'...'`, `perl -ne'...'`,
 * `node -pe`, `julia -e`, `sbcl --eval`, `emacs --eval`, `pwsh -Command`) is refused as 'inline-code'
 * however the option is spelled: clustered with other letters, its value glued to it or not, a long
 * option abbreviated. With no script operand an interpreter reads its code from stdin (judged by the
 * caller from where stdin comes from).
 */

export interface InterpreterSpec {
  /** short option letters that introduce inline code (the code is the rest of the word or the next word) */
  code: string;
  /** long options (without the leading dash(es)) that introduce inline code; matched as abbreviations */
  longCode?: readonly string[];
  /** single-dash long options that introduce code (`erl -eval`, `emacs -eval`, `pwsh -Command`) */
  dashCode?: readonly string[];
  /** short option letters that take a value (in the same word or the next one) */
  value?: string;
  /** short option letters whose optional value can only be glued (`perl -i.bak`, `-MTest::More`) */
  glued?: string;
  /** long options that take the next word as their value */
  longValue?: readonly string[];
  /**
   * true: option parsing stops at the first operand (the script; later words are its arguments).
   * false: every word is searched (for interpreters whose own option syntax is too loose to follow).
   */
  stopAtOperand: boolean;
  /** reads its program from stdin when there is no script operand */
  stdin: boolean;
  /** subcommands / options that run a module or tool, not code from stdin (python -m, node --test) */
  module?: RegExp;
}

const SHELL: InterpreterSpec = { code: 'c', value: 'oO', longCode: ['command'], stopAtOperand: true, stdin: true };
const NODE: InterpreterSpec = {
  code: 'ep',
  value: 'rC',
  longCode: ['eval', 'print'],
  longValue: ['require', 'import', 'loader', 'input-type', 'env-file', 'conditions', 'experimental-loader'],
  stopAtOperand: true,
  stdin: true,
  module: /^(--test|--version|--help|--check|-[vhc])$/,
};
const LISP_EVAL: InterpreterSpec = { code: '', longCode: ['eval'], dashCode: ['eval'], stopAtOperand: false, stdin: true };

/** Per interpreter (name without a version suffix). */
export const INTERPRETERS: Readonly<Record<string, InterpreterSpec>> = {
  // shells
  sh: SHELL,
  bash: SHELL,
  dash: SHELL,
  zsh: SHELL,
  ksh: SHELL,
  mksh: SHELL,
  ash: SHELL,
  fish: SHELL,
  csh: SHELL,
  tcsh: SHELL,
  yash: SHELL,
  rbash: SHELL,
  posh: SHELL,
  xonsh: SHELL,
  nu: SHELL,
  elvish: SHELL,
  osh: SHELL,
  ysh: SHELL,
  oil: SHELL,
  rc: SHELL,
  es: SHELL,
  // scripting languages
  python: { code: 'c', value: 'WXQ', stopAtOperand: true, stdin: true, module: /^-m/ },
  pypy: { code: 'c', value: 'WXQ', stopAtOperand: true, stdin: true, module: /^-m/ },
  ipython: { code: 'c', stopAtOperand: true, stdin: false, module: /^-m/ },
  node: NODE,
  nodejs: NODE,
  tsx: NODE,
  'ts-node': NODE,
  'ts-node-esm': NODE,
  esno: NODE,
  'babel-node': NODE,
  bun: { code: 'e', longCode: ['eval', 'print'], stopAtOperand: true, stdin: false },
  deno: { code: '', stopAtOperand: true, stdin: false },
  perl: { code: 'eE', glued: 'IMmdDxlCi0F', stopAtOperand: false, stdin: true },
  ruby: { code: 'e', value: 'rICEF', glued: 'i0lKTWx', stopAtOperand: false, stdin: true },
  irb: { code: '', stopAtOperand: true, stdin: true },
  php: { code: 'rRBE', value: 'cdzf', stopAtOperand: false, stdin: true },
  lua: { code: 'e', value: 'l', stopAtOperand: true, stdin: true },
  luajit: { code: 'e', value: 'lbj', stopAtOperand: true, stdin: true },
  Rscript: { code: 'e', longCode: ['expr'], stopAtOperand: false, stdin: false },
  R: { code: 'e', stopAtOperand: false, stdin: true },
  julia: { code: 'eE', longCode: ['eval', 'print'], value: 'LJCtOg', stopAtOperand: true, stdin: true },
  tclsh: { code: '', stopAtOperand: true, stdin: true },
  wish: { code: '', stopAtOperand: true, stdin: true },
  expect: { code: 'c', stopAtOperand: false, stdin: true },
  osascript: { code: 'e', stopAtOperand: false, stdin: true },
  groovy: { code: 'e', stopAtOperand: false, stdin: false },
  jshell: { code: '', stopAtOperand: true, stdin: true },
  // functional / lisp family
  elixir: { code: 'e', longCode: ['eval'], value: 'r', stopAtOperand: false, stdin: false },
  iex: { code: 'e', longCode: ['eval'], stopAtOperand: false, stdin: true },
  erl: { code: '', dashCode: ['eval', 's', 'run'], stopAtOperand: false, stdin: true },
  escript: { code: '', dashCode: ['eval'], stopAtOperand: false, stdin: false },
  guile: { code: 'c', longCode: ['eval'], stopAtOperand: false, stdin: true },
  racket: { code: 'e', longCode: ['eval'], stopAtOperand: false, stdin: true },
  sbcl: LISP_EVAL,
  ccl: { ...LISP_EVAL, code: 'e' },
  ecl: LISP_EVAL,
  clisp: { code: 'x', stopAtOperand: false, stdin: true },
  ghc: { code: 'e', stopAtOperand: false, stdin: false },
  ghci: { code: 'e', stopAtOperand: false, stdin: true },
  runghc: { code: 'e', stopAtOperand: false, stdin: false },
  runhaskell: { code: 'e', stopAtOperand: false, stdin: false },
  scala: { code: 'e', stopAtOperand: false, stdin: true },
  kotlin: { code: 'e', stopAtOperand: false, stdin: false },
  kotlinc: { code: 'e', dashCode: ['script', 'expression'], stopAtOperand: false, stdin: false },
  swift: { code: 'e', stopAtOperand: false, stdin: true },
  emacs: { code: '', longCode: ['eval', 'execute'], dashCode: ['eval', 'execute'], stopAtOperand: false, stdin: false },
  // PowerShell: -Command / -EncodedCommand, any prefix, any case
  pwsh: { code: '', dashCode: ['command', 'encodedcommand', 'ec'], stopAtOperand: false, stdin: true },
  powershell: { code: '', dashCode: ['command', 'encodedcommand', 'ec'], stopAtOperand: false, stdin: true },
};

/** python3.12 -> python, perl5.36 -> perl, guile3.0 -> guile; `pwsh` and `R` stay. */
export function interpreterName(name: string): string | null {
  if (INTERPRETERS[name]) return name;
  const base = name.replace(/[0-9][0-9.]*$/, '').replace(/-$/, '');
  return INTERPRETERS[base] ? base : null;
}

/** The option that introduces inline code, as written, or null. */
export function inlineCodeOption(name: string, args: readonly string[]): string | null {
  const key = interpreterName(name);
  if (!key) return null;
  if (key === 'deno') return args[0] === 'eval' ? 'deno eval' : null;
  const spec = INTERPRETERS[key]!;
  const shell = spec === SHELL;
  // `bash -s -- --yes`: with -s the words after the separator are arguments for code read from stdin
  let readsStdin = false;
  for (let i = 0; i < args.length; i++) {
    if (shell && /^-[a-zA-Z]*s[a-zA-Z]*$/.test(args[i]!)) readsStdin = true;
    const a = args[i]!;
    // `sh -- -c CODE`, `dash - -c CODE`: after the separator a shell takes `-c` as a script name, but
    // some shells and wrappers read it as the option again: an operand that looks like one fails closed.
    if (shell && (a === '--' || a === '-')) return !readsStdin && /^-/.test(args[i + 1] ?? '') ? `${a} ${args[i + 1]}` : null;
    if (a === '--') break;
    // shells take options with + too (`bash +x -c`, `bash +O extglob -c`)
    if (shell && /^\+[a-zA-Z]+$/.test(a)) {
      if (/[oO]$/.test(a)) i++;
      continue;
    }
    if (a.startsWith('--') && a.length > 2) {
      const name = a.slice(2).split('=')[0]!;
      if ((spec.longCode ?? []).some((l) => l.startsWith(name))) return a;
      if ((spec.longValue ?? []).some((l) => l === name) && !a.includes('=')) i++;
      continue;
    }
    if (a.startsWith('-') && a.length > 1) {
      const word = a.slice(1).toLowerCase();
      if ((spec.dashCode ?? []).some((d) => d.startsWith(word) && (word.length > 1 || d.length === 1 || key === 'pwsh' || key === 'powershell'))) return a;
      for (let k = 1; k < a.length; k++) {
        const c = a[k]!;
        if (spec.code.includes(c)) return a;
        if ((spec.glued ?? '').includes(c)) break;
        if ((spec.value ?? '').includes(c)) {
          if (k === a.length - 1) i++;
          break;
        }
        if (spec.module?.test(`-${c}`)) break;
      }
      continue;
    }
    if (spec.stopAtOperand) break;
  }
  return null;
}

/**
 * The script operand of an interpreter: a string, '-' for stdin, null when there is none (then it reads
 * code from stdin), or 'module' for python -m / node --test style runs that read no code from stdin.
 */
export function scriptOperand(name: string, args: readonly string[]): string | null {
  const key = interpreterName(name) ?? name;
  const spec = INTERPRETERS[key];
  const isShellName = spec === SHELL;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return args[i + 1] ?? null;
    if (a === '-') return '-';
    if (isShellName && a === '-s') return '-';
    if (spec?.module?.test(a)) return 'module';
    if (/^--?(version|help|V|h)$/.test(a) || a === '-v') return 'module';
    if (a.startsWith('--')) {
      if ((spec?.longValue ?? []).includes(a.slice(2))) i++;
      continue;
    }
    if (a.startsWith('-') || a.startsWith('+')) {
      const last = a[a.length - 1]!;
      if ((a.length === 2 && (spec?.value ?? '').includes(last)) || (isShellName && /^[-+][a-zA-Z]*[oO]$/.test(a))) i++;
      continue;
    }
    if ((key === 'deno' || key === 'bun') && (a === 'run' || a === 'x')) continue;
    if ((key === 'deno' || key === 'bun') && !/[./]/.test(a)) return 'module';
    return a;
  }
  return spec && !spec.stdin ? 'module' : null;
}
