/**
 * Real bash as the oracle for the shell parser: does bash accept a text (`bash -n`), and which commands
 * does it run when it runs the text?
 *
 * Contract:
 * - `bashAccepts(texts)`: for each, `bash -n` on it exits 0 (bash reads it and runs nothing).
 * - `bashRuns(texts)`: runs each text once, in its own box, and returns the argv of every command bash
 *   ran: external commands (all of them are recording shims, or bash's command_not_found_handle, which
 *   records too; none does anything) and the builtins in `RECORDED_BUILTINS` (wrapped by functions that
 *   record and then run the builtin). Builtins that change the shell's own state in a way a function
 *   wrapper would break (set, shift, eval, source, local, export, ...) are not recorded: `NOT_RECORDED`.
 * - The box: uid `BOX_UID` (no files of its own), RLIMIT_NPROC 64, 1 MB file size (a loop that keeps
 *   recording dies of SIGXFSZ, or after 1000 records of the shell's own), bwrap with every namespace unshared (no network), / read-only, a fresh
 *   /tmp, only the oracle's folder writable; each text runs in its own folder with `env -i`, PATH = its
 *   shim folder, HOME = `BOX_HOME` (does not exist), stdin /dev/null, killed with its whole process
 *   group after `CASE_SECONDS`. A text that kills its box (`kill -9 -1`) ends there (`killed`); the
 *   texts after it run in a new box.
 * - bash waits for its background jobs before it exits (the EXIT trap), unless the text sets its own.
 * - Records: `$HOME` at the start of a field is given back as `~` (the parser's reading of $HOME).
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BOX_HOME = '/gh-oracle-home';
const CASE_SECONDS = 5;
const BOX_UID = 60000 + (process.pid % 5000);

/** Builtins whose calls are recorded (a function wrapper keeps their meaning). */
export const RECORDED_BUILTINS = [
  'echo',
  'printf',
  'true',
  'false',
  ':',
  'test',
  '[',
  'pwd',
  'cd',
  'read',
  'alias',
  'unalias',
  'trap',
  'exit',
  'unset',
  'wait',
  'kill',
  'umask',
  'hash',
  'type',
  'command',
  'let',
  'ulimit',
  'jobs',
  'disown',
  'shopt',
  'pushd',
  'popd',
  'dirs',
  'mapfile',
  'readarray',
  'enable',
  'compgen',
  'complete',
  'times',
  'help',
] as const;

/** Builtins bash runs without a record here (a wrapper function would change what they do). */
export const NOT_RECORDED = new Set([
  'eval',
  'source',
  '.',
  'set',
  'shift',
  'local',
  'declare',
  'typeset',
  'export',
  'readonly',
  'break',
  'continue',
  'return',
  'getopts',
  'exec',
  // a function named builtin would be called by every wrapper's `builtin X`
  'builtin',
  'fc',
  'history',
  'bind',
  'logout',
  'suspend',
  'fg',
  'bg',
]);

/** `bash -n` on each text (one bash runs them all: a process per text from node is slow on a busy machine). */
export function bashAccepts(texts: readonly string[]): boolean[] {
  const dir = mkdtempSync(join(tmpdir(), 'gh-bash-n-'));
  try {
    const files = texts.map((t, i) => {
      writeFileSync(join(dir, String(i)), t);
      return join(dir, String(i));
    });
    const script = 'for f in "$@"; do /bin/bash --norc -n "$f" 2>/dev/null; echo $?; done';
    const out = execFileSync('/bin/bash', ['--norc', '-c', script, 'check', ...files], { env: {}, encoding: 'utf8', maxBuffer: 1 << 24 });
    const codes = out.trim().split('\n');
    if (codes.length !== texts.length) throw new Error(`bash -n answered ${codes.length} of ${texts.length}`);
    return codes.map((c) => c === '0');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface BashRun {
  /** every argv bash ran (deduplicated), in no particular order */
  argvs: string[][];
  /** functions defined when the script exited (none known if the script replaced the EXIT trap) */
  functions: string[];
  /** killed after CASE_SECONDS (an endless loop): `argvs` is what ran until then */
  killed: boolean;
}

const prelude = (box: string): string => `
__gh_rec() { (( ++__gh_n > 1000 )) && builtin kill -KILL $$; builtin printf '%s\\0' "$#" "$@" >> ${box}/log/$BASHPID; }
command_not_found_handle() { __gh_rec "$@"; return 0; }
for __gh_b in ${RECORDED_BUILTINS.map((b) => `'${b}'`).join(' ')}; do
  builtin eval "$__gh_b() { __gh_rec '$__gh_b' \\"\\$@\\"; builtin '$__gh_b' \\"\\$@\\"; }"
done
builtin unset __gh_b
builtin trap 'builtin wait; builtin compgen -A function > ${box}/functions' EXIT
`;

// dash, so that BASH_ENV (the prelude) is not read again
const SHIM = (box: string): string => `#!/bin/sh\nprintf '%s\\0' $(($# + 1)) "\${0##*/}" "$@" >> ${box}/log/$$\n`;

/** Every word of the text that could name a command: each gets a shim (so `exec NAME`, `env NAME` find one). */
// Not names with a dot: `. run.sh` looks in PATH first and would source the shim.
const shimNames = (text: string): string[] => [...new Set(text.match(/[A-Za-z0-9_+-]+/g) ?? [])].filter((n) => !n.startsWith('-'));

function readRecords(box: string): string[][] {
  const out = new Map<string, string[]>();
  const dir = join(box, 'log');
  for (const f of readdirSync(dir)) {
    const fields = readFileSync(join(dir, f), 'utf8').split('\0');
    for (let i = 0; i + 1 < fields.length; ) {
      const n = Number(fields[i]);
      const argv = fields.slice(i + 1, i + 1 + n).map((w) => (w.startsWith(BOX_HOME) ? `~${w.slice(BOX_HOME.length)}` : w));
      out.set(JSON.stringify(argv), argv);
      i += 1 + n;
    }
  }
  return [...out.values()];
}

function prepare(root: string, index: number, text: string): string {
  const box = join(root, String(index));
  for (const d of ['bin', 'log', 'work']) mkdirSync(join(box, d), { recursive: true });
  writeFileSync(join(box, 'prelude.sh'), prelude(box));
  writeFileSync(join(box, 'text'), text);
  writeFileSync(join(box, 'rec'), SHIM(box), { mode: 0o755 });
  for (const name of shimNames(text)) if (!existsSync(join(box, 'bin', name))) symlinkSync(join(box, 'rec'), join(box, 'bin', name));
  for (const d of ['', 'log', 'work']) chmodSync(join(box, d), 0o777);
  return box;
}

// Runs in the box, once per batch: each case under `timeout` (its own process group, killed whole after
// the case, so nothing a case left running reaches the next one).
const DRIVER = `
for d in "$@"; do
  : > "$d/started"
  IFS= read -r -d '' text < "$d/text"
  cd "$d/work" || exit 3
  timeout -s KILL ${CASE_SECONDS} env -i PATH="$d/bin" HOME=${BOX_HOME} BASH_ENV="$d/prelude.sh" /bin/bash --norc --noprofile -c -- "$text" </dev/null >/dev/null 2>&1 &
  pid=$!
  wait "$pid"
  echo "$?" > "$d/status"
  kill -KILL -- "-$pid" 2>/dev/null
done
exit 0
`;

function runBox(root: string, boxes: string[]): Promise<void> {
  const bwrap = [
    'bwrap',
    '--ro-bind',
    '/',
    '/',
    '--tmpfs',
    '/tmp',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--bind',
    root,
    root,
    '--unshare-all',
    '--die-with-parent',
  ];
  const args = [
    `--reuid=${BOX_UID}`,
    `--regid=${BOX_UID}`,
    '--clear-groups',
    '--inh-caps=-all',
    '/bin/bash',
    '-c',
    'ulimit -u 64 -f 2048 && exec "$@"',
    'limits',
    ...bwrap,
    '/bin/bash',
    '--norc',
    '-c',
    DRIVER,
    'driver',
    ...boxes,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('setpriv', args, { stdio: ['ignore', 'ignore', process.env.ORACLE_DEBUG ? 'inherit' : 'ignore'], env: { PATH: '/usr/bin:/bin' } });
    child.on('error', reject);
    child.on('close', () => resolve());
  });
}

/**
 * A text may kill the driver too (`kill -9 -1`): the one it was running is done (with what it recorded),
 * and the rest run in a new box.
 */
async function runBatch(root: string, boxes: string[]): Promise<void> {
  let left = boxes;
  while (left.length > 0) {
    await runBox(root, left);
    const stopped = left.find((b) => !existsSync(join(b, 'status')));
    if (stopped === undefined) return;
    if (!existsSync(join(stopped, 'started'))) throw new Error(`the bash oracle box did not start ${stopped}`);
    writeFileSync(join(stopped, 'status'), '137');
    left = left.slice(left.indexOf(stopped) + 1);
  }
}

function result(box: string): BashRun {
  const functionsFile = join(box, 'functions');
  const functions = existsSync(functionsFile) ? readFileSync(functionsFile, 'utf8').split('\n').filter(Boolean) : [];
  const status = existsSync(join(box, 'status')) ? readFileSync(join(box, 'status'), 'utf8').trim() : '';
  if (status === '') throw new Error(`the bash oracle did not run ${box}`);
  return { argvs: readRecords(box), functions, killed: status === '137' };
}

/** Runs every text, each in its own folder, in two boxes at a time (a 2-core machine). */
export async function bashRuns(texts: readonly string[]): Promise<BashRun[]> {
  const root = mkdtempSync(join(tmpdir(), 'gh-bash-oracle-'));
  chmodSync(root, 0o755);
  try {
    const boxes = texts.map((t, i) => prepare(root, i, t));
    await Promise.all(
      [0, 1].map((w) =>
        runBatch(
          root,
          boxes.filter((_, i) => i % 2 === w),
        ),
      ),
    );
    return boxes.map(result);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
