/**
 * Wrappers: programs that run another command given in their arguments (env, nohup, xargs, sudo, ...).
 *
 * `unwrapCommand(words)` skips leading `VAR=value` words and wrappers together with their own options,
 * and returns the command that really runs, the names assigned on the way and the wrappers passed.
 * `command -v x` is a lookup, not a run: it is returned as is. The denylist judges both the command as
 * written and the unwrapped one; approval keys are taken from the unwrapped one.
 * With `deep` (the denylist) package runners are unwrapped too (`runnerTool`: npx, pnpm dlx/exec, yarn
 * dlx/exec, bunx, bun x, npm exec/x, uvx, uv tool run, uv run, pipx run, deno run npm:...): the tool's
 * name loses its version and registry prefix (`npm:rimraf@5` -> `rimraf`).
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
    valueOpts: [
      '-I',
      '-n',
      '-L',
      '-P',
      '-s',
      '-d',
      '-E',
      '-a',
      '--arg-file',
      '--max-args',
      '--max-lines',
      '--max-procs',
      '--max-chars',
      '--delimiter',
      '--eof',
      '--replace',
    ],
  },
  flock: { valueOpts: ['-w', '--timeout', '-E', '--conflict-exit-code'], positionals: 1 },
  busybox: { valueOpts: [] },
  sudo: {
    valueOpts: [
      '-u',
      '--user',
      '-g',
      '--group',
      '-C',
      '-D',
      '--chdir',
      '-h',
      '--host',
      '-p',
      '--prompt',
      '-r',
      '--role',
      '-t',
      '--type',
      '-U',
      '--other-user',
      '-T',
      '--command-timeout',
    ],
  },
  doas: { valueOpts: ['-u', '-C'] },
  chronic: { valueOpts: [] },
  unbuffer: { valueOpts: [] },
  // Below: wrappers the denylist looks through (`deep`), but approval keys do not: their own
  // options can change what the command does (strace -o FILE, chroot DIR, nsenter -t PID), so an
  // allowlist entry for the inner command must not cover them.
  // process attributes, scheduling and limits
  setsid: { valueOpts: [] },
  taskset: { valueOpts: [], positionals: 1 },
  chrt: { valueOpts: ['-T', '--sched-runtime', '-P', '--sched-period', '-D', '--sched-deadline'], positionals: 1 },
  numactl: { valueOpts: ['-N', '-m', '-C', '-p', '-i', '--cpunodebind', '--membind', '--physcpubind', '--preferred', '--interleave'] },
  prlimit: { valueOpts: ['-p', '--pid'] },
  cgexec: { valueOpts: ['-g'] },
  setarch: { valueOpts: [], positionals: 1 },
  linux32: { valueOpts: [] },
  linux64: { valueOpts: [] },
  faketime: { valueOpts: ['-f'], positionals: 1 },
  eatmydata: { valueOpts: [] },
  nocache: { valueOpts: [] },
  caffeinate: { valueOpts: ['-t', '-w'] },
  tini: { valueOpts: ['-p', '-e'] },
  'dumb-init': { valueOpts: ['-r', '--rewrite'] },
  rlwrap: { valueOpts: ['-f', '-H', '-P', '-S', '-e', '-l', '-o', '-q', '-s', '-t', '-z', '-C', '-D', '-g', '-O', '-w', '-M'] },
  entr: { valueOpts: [] },
  // tracers, debuggers, sandboxes and namespaces
  strace: { valueOpts: ['-o', '-e', '-p', '-s', '-u', '-E', '-a', '-b', '-I', '-O', '-S', '-P', '-X', '--output', '--signal', '--trace', '--user', '--env'] },
  ltrace: { valueOpts: ['-o', '-e', '-p', '-s', '-u', '-a', '-n', '-A', '-D', '-E', '-x', '-l', '-L', '-w', '-F', '--output', '--library'] },
  valgrind: { valueOpts: [] },
  catchsegv: { valueOpts: [] },
  chroot: { valueOpts: ['--userspec', '--groups'], positionals: 1 },
  unshare: {
    valueOpts: ['-S', '--setuid', '-G', '--setgid', '--propagation', '-R', '--root', '-w', '--wd', '--map-user', '--map-group', '--map-users', '--map-groups'],
  },
  nsenter: { valueOpts: ['-t', '--target', '-S', '--setuid', '-G', '--setgid', '-w', '--wd', '-R', '--root', '-W'] },
  firejail: { valueOpts: [] },
  proot: { valueOpts: ['-r', '-b', '-m', '-w', '-q', '-k', '-R', '-S', '--rootfs', '--bind', '--mount', '--cwd', '--qemu', '--kernel-release'] },
  fakeroot: { valueOpts: ['-l', '--lib', '--faked', '-s', '-i'] },
  'xvfb-run': { valueOpts: ['-n', '--server-num', '-f', '--auth-file', '-e', '--error-file', '-s', '--server-args', '-p', '--xauth-protocol', '-w', '--wait'] },
  'dbus-launch': { valueOpts: ['--config-file'] },
  'dbus-run-session': { valueOpts: ['--config-file', '--dbus-daemon'] },
  'systemd-run': {
    valueOpts: [
      '-u',
      '--unit',
      '-p',
      '--property',
      '-M',
      '--machine',
      '-H',
      '--host',
      '--description',
      '--slice',
      '-E',
      '--setenv',
      '--uid',
      '--gid',
      '--working-directory',
      '--on-calendar',
      '--on-active',
      '--on-boot',
      '--on-startup',
      '--on-unit-active',
      '--on-unit-inactive',
      '--timer-property',
      '--path-property',
      '--socket-property',
      '--service-type',
      '--nice',
    ],
  },
  torsocks: { valueOpts: ['-u', '-p', '-a', '-P'] },
  proxychains: { valueOpts: ['-f'] },
  proxychains4: { valueOpts: ['-f'] },
  toybox: { valueOpts: [] },
  // running as another user
  runuser: { valueOpts: ['-u', '--user', '-g', '--group', '-G', '--supp-group', '-s', '--shell', '-w', '--whitelist-environment'] },
  pkexec: { valueOpts: ['--user'] },
  run0: { valueOpts: ['-u', '--user', '-g', '--group', '-D', '--chdir', '--setenv', '--unit', '--property', '--description', '--slice', '--nice'] },
  setpriv: {
    valueOpts: [
      '--reuid',
      '--regid',
      '--ruid',
      '--euid',
      '--rgid',
      '--egid',
      '--groups',
      '--inh-caps',
      '--ambient-caps',
      '--bounding-set',
      '--securebits',
      '--pdeathsig',
      '--selinux-label',
      '--apparmor-profile',
    ],
  },
  // node tooling that runs the command in its arguments
  corepack: { valueOpts: [] },
  shx: { valueOpts: [] },
  'cross-env': { valueOpts: [], assigns: true },
  'env-cmd': { valueOpts: ['-f', '--file', '-e', '--environments', '-r', '--rc-file'] },
  dotenv: { valueOpts: ['-e', '-c', '-v'] },
  bwrap: { valueOpts: [] },
};

/**
 * Package runners: programs that fetch (or find locally) a named tool and run it, so `npx -y rimraf@5 /`
 * runs `rimraf /`. Per runner: the subcommand words that make it run a tool (none: the runner itself),
 * its options that take a value, and `bins`: a bare `yarn rimraf` / `pnpm rimraf` also runs the bin.
 * Only the denylist (`deep`) looks through them; approval keys keep the runner.
 */
interface RunnerSpec {
  subs: readonly (readonly string[])[] | null;
  valueOpts: readonly string[];
  /** the tool word must carry a registry prefix (deno run npm:rimraf); other operands are script files */
  registryOnly?: readonly string[];
  bins?: boolean;
}
const NPM_OPTS = [
  '-p',
  '--package',
  '-w',
  '--workspace',
  '--prefix',
  '--registry',
  '--cache',
  '--userconfig',
  '--node-options',
  '-C',
  '--dir',
  '--filter',
  '-F',
  '--cwd',
];
const UV_OPTS = [
  '--from',
  '--with',
  '--with-editable',
  '--with-requirements',
  '-p',
  '--python',
  '--index',
  '--default-index',
  '--index-url',
  '--extra-index-url',
  '--cache-dir',
  '--directory',
  '--project',
  '--config-file',
  '--package',
  '--extra',
  '--group',
  '--env-file',
  '-c',
  '--constraints',
  '--overrides',
  '-w',
];
const RUNNERS: Readonly<Record<string, RunnerSpec>> = {
  npx: { subs: null, valueOpts: NPM_OPTS },
  pnpx: { subs: null, valueOpts: NPM_OPTS },
  bunx: { subs: null, valueOpts: ['-p', '--package', '--cwd'] },
  uvx: { subs: null, valueOpts: UV_OPTS },
  npm: { subs: [['exec'], ['x']], valueOpts: NPM_OPTS },
  pnpm: { subs: [['dlx'], ['exec'], ['x']], valueOpts: NPM_OPTS, bins: true },
  yarn: { subs: [['dlx'], ['exec'], ['run']], valueOpts: NPM_OPTS, bins: true },
  bun: { subs: [['x'], ['run'], ['exec']], valueOpts: ['--cwd', '-p', '--package', '--filter'], bins: true },
  pipx: { subs: [['run']], valueOpts: ['--spec', '--python', '--pip-args', '--index-url'] },
  uv: { subs: [['tool', 'run'], ['run']], valueOpts: UV_OPTS },
  deno: {
    subs: [['run'], ['x']],
    valueOpts: ['-c', '--config', '--import-map', '--lock', '--cert', '--location', '--seed', '--inspect-wait'],
    registryOnly: ['npm:', 'jsr:'],
  },
};

/** Tools reachable by a bare `yarn TOOL` / `pnpm TOOL` (bins of the project), judged like the runners. */
const RUNNABLE_BINS: ReadonlySet<string> = new Set(['rimraf', 'del', 'del-cli', 'trash', 'trash-cli', 'trash-put', 'premove', 'rimraf-cli', 'shx']);

/** `rimraf@5`, `npm:rimraf@^5`, `@scope/tool@1.2`, `trash-cli==0.23`, `ruff[extra]`: the tool's name. */
function toolName(spec: string): string {
  let s = spec.replace(/^(npm|jsr|pypi):/, '');
  const at = s.lastIndexOf('@');
  if (at > 0) s = s.slice(0, at);
  s = s.replace(/\[[^\]]*\]$/, '').replace(/(==|>=|<=|~=|!=|>|<).*$/, '');
  return s;
}

/** If `words` is a package runner running a tool, the tool's words (name normalised); else null. */
function runnerTool(words: readonly string[]): string[] | null {
  const name = basename(words[0] ?? '');
  const spec = RUNNERS[name];
  if (!spec) return null;
  let i = 1;
  const skipOptions = (): boolean => {
    while (i < words.length) {
      const w = words[i]!;
      if (w === '--') {
        i++;
        return true;
      }
      if (!w.startsWith('-') || w === '-') return true;
      // npx -c / npm exec --call run a command string: judged as such (./denylist/embedded.ts)
      if (/^(-c|--call)(=|$)/.test(w) && name !== 'uv' && name !== 'uvx' && name !== 'deno') return false;
      i += spec.valueOpts.includes(w) ? 2 : 1;
    }
    return true;
  };
  if (!skipOptions()) return null;
  if (spec.subs) {
    const sub = spec.subs.find((s) => s.every((part, k) => words[i + k] === part));
    if (sub) {
      i += sub.length;
      if (!skipOptions()) return null;
    } else if (!(spec.bins && RUNNABLE_BINS.has(toolName(words[i] ?? '')))) return null;
  }
  const tool = words[i];
  if (tool === undefined) return null;
  if (spec.registryOnly && !spec.registryOnly.some((p) => tool.startsWith(p))) return null;
  return [toolName(tool), ...words.slice(i + 1)];
}

/** The wrappers every caller looks through (approval keys too); the rest only with `deep` (the denylist). */
export const SHALLOW_WRAPPERS: ReadonlySet<string> = new Set([
  'env',
  'nohup',
  'nice',
  'time',
  'timeout',
  'stdbuf',
  'ionice',
  'command',
  'builtin',
  'exec',
  'npx',
  'xargs',
  'flock',
  'busybox',
  'chronic',
  'unbuffer',
  'sudo',
  'doas',
]);

/** Wrappers that run their command as another user (privilege escalation whatever the command). */
export const PRIVILEGED_WRAPPERS: ReadonlySet<string> = new Set(['sudo', 'doas', 'runuser', 'pkexec', 'run0', 'setpriv']);

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
  /** the NAME=value words met on the way (prefix words and env's), for rules that judge the values */
  assignWords: string[];
}

export function basename(word: string): string {
  const i = word.lastIndexOf('/');
  return i >= 0 ? word.slice(i + 1) : word;
}

/**
 * Skip assignments and wrappers; see the module comment. `keepPrivileged` (approval keys): stop at a
 * wrapper that runs as another user. `deep` (the denylist): look through the whole table; without it
 * only the small SHALLOW_WRAPPERS set is skipped, so approval keys and allowlist words keep `strace`, `chroot`,
 * `nsenter`... whose options change what the inner command may do.
 */
export function unwrapCommand(input: readonly string[], opts: { keepPrivileged?: boolean; deep?: boolean } = {}): Unwrapped {
  let words = [...input];
  const out: Unwrapped = { words: [], assigns: [], wrappers: [], xargs: null, splitString: false, assignWords: [] };
  for (let guard = 0; guard < 32; guard++) {
    while (words.length > 0 && ASSIGN_RE.test(words[0]!)) {
      out.assigns.push(words[0]!.slice(0, words[0]!.indexOf('=')));
      out.assignWords.push(words[0]!);
      words = words.slice(1);
    }
    const name = basename(words[0] ?? '');
    const tool = opts.deep ? runnerTool(words) : null;
    if (tool) {
      out.wrappers.push(name);
      words = tool;
      continue;
    }
    const spec = WRAPPERS[name];
    if (!spec) break;
    if (!opts.deep && !SHALLOW_WRAPPERS.has(name)) break;
    if (opts.keepPrivileged && PRIVILEGED_WRAPPERS.has(name)) break;
    if (name === 'command' && words.slice(1).some((w) => w === '-v' || w === '-V')) break;
    if ((name === 'busybox' || name === 'toybox') && (words[1] ?? '').startsWith('-')) break;
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
      if (name === 'env' && (opt === '-S' || (opt.length >= 4 && '--split-string'.startsWith(opt)) || /^-[a-zA-Z]*S/.test(w))) {
        // env -S 'a b c' runs a with arguments b c.
        const glued = eq > 0 || (!w.startsWith('--') && w.indexOf('S') < w.length - 1);
        const str = eq > 0 ? w.slice(eq + 1) : glued ? w.slice(w.indexOf('S') + 1) : (words[i + 1] ?? '');
        const consumed = glued ? 1 : 2;
        words = [...words.slice(0, i), ...str.split(/[ \t\n]+/).filter(Boolean), ...words.slice(i + consumed)];
        out.splitString = true;
        continue;
      }
      if (name === 'xargs' && (opt === '-I' || opt === '--replace' || opt.startsWith('-i'))) {
        replace = opt === '-I' ? (eq > 0 ? w.slice(eq + 1) : (words[i + 1] ?? '{}')) : w.startsWith('-i') && w.length > 2 ? w.slice(2) : '{}';
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
        out.assignWords.push(words[i]!);
        i++;
      }
    }
    i += spec.positionals ?? 0;
    words = words.slice(i);
  }
  out.words = words;
  return out;
}
