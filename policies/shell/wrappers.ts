/**
 * Wrappers: programs that run another command given in their arguments (env, nohup, xargs, sudo, ...).
 *
 * `unwrapCommand(words)` skips leading `VAR=value` words and wrappers together with their own options,
 * and returns the command that really runs, the names assigned on the way and the wrappers passed.
 * `command -v x` is a lookup, not a run: it is returned as is. The denylist judges both the command as
 * written and the unwrapped one; approval keys are taken from the unwrapped one.
 */

/** Options (per wrapper) that consume the next word as their value. */
interface WrapperSpec {
  valueOpts: readonly string[];
  /** positional words that come before the wrapped command (timeout DURATION, flock FILE) */
  positionals?: number;
  /** env: VAR=value words may follow the options */
  assigns?: boolean;
}

const WRAPPERS: Readonly<Record<string, WrapperSpec>> = {
  env: { valueOpts: ['-u', '--unset', '-C', '--chdir', '-S', '--split-string'], assigns: true },
  nohup: { valueOpts: [] },
  nice: { valueOpts: ['-n', '--adjustment'] },
  time: { valueOpts: ['-f', '--format', '-o', '--output'] },
  timeout: { valueOpts: ['-s', '--signal', '-k', '--kill-after'], positionals: 1 },
  stdbuf: { valueOpts: ['-i', '-o', '-e', '--input', '--output', '--error'] },
  ionice: { valueOpts: ['-c', '--class', '-n', '--classdata'] },
  command: { valueOpts: [] },
  builtin: { valueOpts: [] },
  exec: { valueOpts: ['-a'] },
  npx: { valueOpts: ['-p', '--package'] },
  xargs: {
    valueOpts: ['-I', '-n', '-L', '-P', '-s', '-d', '-E', '-a', '--arg-file', '--max-args', '--max-lines', '--max-procs', '--max-chars', '--delimiter', '--eof', '--replace'],
  },
  flock: { valueOpts: ['-w', '--timeout', '-E', '--conflict-exit-code'], positionals: 1 },
  busybox: { valueOpts: [] },
  sudo: { valueOpts: ['-u', '--user', '-g', '--group', '-C', '-D', '--chdir', '-h', '--host', '-p', '--prompt', '-r', '--role', '-t', '--type', '-U', '--other-user', '-T', '--command-timeout'] },
  doas: { valueOpts: ['-u', '-C'] },
  chronic: { valueOpts: [] },
  unbuffer: { valueOpts: [] },
};

const ASSIGN_RE = /^[A-Za-z_][A-Za-z0-9_]*=/;

export interface Unwrapped {
  /** the words of the command that really runs (may be empty: `env` alone, `nohup` alone) */
  words: string[];
  /** variable names assigned on the way (`FOO=1 cmd`, `env FOO=1 cmd`) */
  assigns: string[];
  /** the wrapper words passed, outermost first (e.g. ['sudo', 'nohup']) */
  wrappers: string[];
  /** xargs options met on the way, for the denylist: the -I replacement string, or '' when plain */
  xargs: { replace: string | null } | null;
  /** `env -S STRING` / `env --split-string`: the string was split into words (as env does) */
  splitString: boolean;
}

export function basename(word: string): string {
  const i = word.lastIndexOf('/');
  return i >= 0 ? word.slice(i + 1) : word;
}

/** Skip assignments and wrappers; see the module comment. */
export function unwrapCommand(input: readonly string[], opts: { keepPrivileged?: boolean } = {}): Unwrapped {
  let words = [...input];
  const out: Unwrapped = { words: [], assigns: [], wrappers: [], xargs: null, splitString: false };
  for (let guard = 0; guard < 32; guard++) {
    while (words.length > 0 && ASSIGN_RE.test(words[0]!)) {
      out.assigns.push(words[0]!.slice(0, words[0]!.indexOf('=')));
      words = words.slice(1);
    }
    const name = basename(words[0] ?? '');
    const spec = WRAPPERS[name];
    if (!spec) break;
    if (opts.keepPrivileged && (name === 'sudo' || name === 'doas')) break;
    if (name === 'command' && words.slice(1).some((w) => w === '-v' || w === '-V')) break;
    if (name === 'busybox' && (words[1] ?? '').startsWith('-')) break;
    out.wrappers.push(name);
    let i = 1;
    let replace: string | null = null;
    while (i < words.length) {
      const w = words[i]!;
      if (w === '--') {
        i++;
        break;
      }
      if (!w.startsWith('-') || w === '-') break;
      if (name === 'nice' && /^-\d+$/.test(w)) {
        i++;
        continue;
      }
      const eq = w.indexOf('=');
      const opt = w.startsWith('--') && eq > 0 ? w.slice(0, eq) : w;
      if (name === 'env' && (opt === '-S' || opt === '--split-string' || /^-[a-zA-Z]*S/.test(w))) {
        // env -S 'a b c' runs a with arguments b c.
        const str = eq > 0 ? w.slice(eq + 1) : w.length > 2 && !w.startsWith('--') ? w.slice(w.indexOf('S') + 1) : words[i + 1] ?? '';
        const consumed = eq > 0 || (w.length > 2 && !w.startsWith('--') && w.indexOf('S') < w.length - 1) ? 1 : 2;
        words = [...words.slice(0, i), ...str.split(/[ \t\n]+/).filter(Boolean), ...words.slice(i + consumed)];
        out.splitString = true;
        continue;
      }
      if (name === 'xargs' && (opt === '-I' || opt === '--replace' || opt.startsWith('-i'))) {
        replace = opt === '-I' ? (eq > 0 ? w.slice(eq + 1) : words[i + 1] ?? '{}') : w.startsWith('-i') && w.length > 2 ? w.slice(2) : '{}';
      }
      if (spec.valueOpts.includes(opt) && eq < 0) {
        i += 2;
        continue;
      }
      // -n10 / -I{} style: an option letter that takes a value, glued to it
      if (!w.startsWith('--') && w.length > 2 && spec.valueOpts.includes(w.slice(0, 2))) {
        if (name === 'xargs' && w.startsWith('-I')) replace = w.slice(2);
        i++;
        continue;
      }
      i++;
    }
    if (name === 'xargs') out.xargs = { replace };
    if (spec.assigns) {
      while (i < words.length && ASSIGN_RE.test(words[i]!)) {
        out.assigns.push(words[i]!.slice(0, words[i]!.indexOf('=')));
        i++;
      }
    }
    i += spec.positionals ?? 0;
    words = words.slice(i);
  }
  out.words = words;
  return out;
}

