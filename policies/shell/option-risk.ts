/**
 * Options that change what a command may do: run other code, write files, or move the command to
 * another directory or configuration. An allowlist entry ('git status', 'npm test') and an "Always"
 * key never cover a command that carries one of them (./allowlist.ts).
 *
 * `riskyOption(argv)` returns the first such option of one simple command (its words after expansion,
 * markers from ./parse.ts kept), or null. It reads:
 * - the wrappers in front (`env -C dir`, `time -o file`, `npx --node-options=...`): WRAPPER_OPTIONS;
 * - the program's own options: PROGRAM_OPTIONS, one documented table per program, split into global
 *   options (before a subcommand: `git -c`), options valid anywhere, per-subcommand options
 *   (`git clone -u`, `git rebase -x`), whole-word primaries (`find -delete`), and positional words
 *   that change what runs (`make CC=...`, `git config core.pager ...`);
 * - GENERIC rules for every program, known or not: `--exec*`, `--eval*`, `--output*`, `--outfile*`,
 *   `--outdir*`, `--logfile*`, `--config*`, `--*-command`, `--*-program`, `--*-shell`, `--*-script`, `--*-cmd`.
 * Spellings: GNU abbreviations (`--script-sh` is `--script-shell`: any prefix of a risky long option
 * counts), `--opt=value`, glued short options and clusters (`-cfoo`, `-Cdir`, `-sSo file`), and for
 * Go-style programs one-dash long options (`-toolexec=x`). A word whose start is not known before it runs
 * (`$X`, an unquoted glob `*` that may expand to a file named `--output=x`) counts as a possible option
 * for programs that have risky options. After `--` a program's own table stops (the rest are operands),
 * except for package scripts (`npm test -- ...`), whose forwarded words still meet the generic rules.
 *
 * The tables are in ./option-tables.ts; this file reads a command's words against them.
 *
 * Errors lean one way: an option misread as risky only puts the command in front of a human.
 */
import { MARK } from './parse.js';
import { basename, SHALLOW_WRAPPERS, unwrapCommand } from './wrappers.js';
import { CODE, GENERIC, GENERIC_STEMS, type OptionTable, type ProgramRules, type RiskKind, rulesFor, WRAPPER_OPTIONS, WRITES } from './option-tables.js';

export interface OptionRisk {
  /** the word as written (`--script-shell=./x.sh`, `-c`, `-delete`, `CC=x`) */
  word: string;
  kind: RiskKind;
}

function genericLong(name: string): RiskKind | null {
  for (const [re, kind] of GENERIC) if (re.test(name)) return kind;
  for (const [stem, kind] of GENERIC_STEMS) if (name.length > 0 && stem.startsWith(name)) return kind;
  return null;
}

/** A long option name against a table: exact, or a GNU abbreviation (a prefix of a risky name). */
function tableLong(name: string, table: OptionTable | undefined): RiskKind | null {
  if (!table?.long || name === '') return null;
  const exact = table.long[name];
  if (exact) return exact;
  for (const [full, kind] of Object.entries(table.long)) if (full.startsWith(name)) return kind;
  return null;
}

const UNKNOWN_START = new RegExp(`^-{0,2}[${MARK.UNKNOWN}${MARK.STAR}${MARK.QMARK}${MARK.BRACKET}${MARK.TMP}]`);

interface OptionHit {
  kind: RiskKind;
  /** the value glued to it (`-ofile`, `--output=file`), or null when it would take the next word */
  value: string | null;
}

/** One option word against the tables in force (and the generic rules). */
function optionWord(word: string, tables: ReadonlyArray<OptionTable | undefined>): OptionHit | null {
  if (word.startsWith('--')) {
    const eq = word.indexOf('=');
    const name = word.slice(2, eq < 0 ? undefined : eq);
    const value = eq < 0 ? null : word.slice(eq + 1);
    for (const t of tables) {
      const kind = tableLong(name, t);
      if (kind) return { kind, value };
    }
    const kind = genericLong(name);
    return kind ? { kind, value } : null;
  }
  // A cluster: -sSo, -Cdir, -cfoo, -j4k. Each letter is an option until one takes a value.
  for (let i = 1; i < word.length; i++) {
    const ch = word[i]!;
    for (const t of tables) {
      const kind = t?.short?.[ch];
      if (kind) return { kind, value: i + 1 < word.length ? word.slice(i + 1) : null };
    }
    if (tables.some((t) => t?.shortValue?.includes(ch))) return null;
  }
  return null;
}

/** Output options pointed at the terminal write no file (`wget -qO- URL`, `curl -o /dev/null`). */
const NOT_A_FILE = new Set(['-', '/dev/null', '/dev/stdout', '/dev/stderr']);

const display = (w: string): string =>
  w
    .replace(new RegExp(MARK.UNKNOWN, 'g'), '…')
    .replace(new RegExp(MARK.STAR, 'g'), '*')
    .replace(new RegExp(MARK.QMARK, 'g'), '?')
    .replace(new RegExp(MARK.BRACKET, 'g'), '[')
    .replace(new RegExp(MARK.TMP, 'g'), '$TMP');

/** The words of one program (argv[0] is the program), judged with its rules. */
function programRisk(argv: readonly string[], rules: ProgramRules | undefined): OptionRisk | null {
  const hit = (word: string, kind: RiskKind): OptionRisk => ({ word: display(word), kind });
  let sub: string | undefined;
  const operands: string[] = [];
  let forwarded = false;
  for (let i = 1; i < argv.length; i++) {
    const w = argv[i]!;
    if (forwarded) {
      // Handed on (to a package script, to a node script): the generic rules still hold there.
      if ((rules?.forwardsArgs || rules?.scriptAfterOperand) && w.startsWith('--')) {
        const eq = w.indexOf('=');
        const k = genericLong(w.slice(2, eq < 0 ? undefined : eq));
        if (k) return hit(w, k);
      }
      continue;
    }
    if (w === '--') {
      forwarded = true;
      continue;
    }
    // Known only when it runs: it may be any option (`$X`, a glob that matches a file named `--output=x`).
    if (rules !== undefined && UNKNOWN_START.test(w)) return hit(w, CODE);
    if (rules?.oneDash && w.startsWith('-') && w.length > 1) {
      const eq = w.indexOf('=');
      const name = (eq < 0 ? w : w.slice(0, eq)).replace(/^--?/, '');
      const k = rules.oneDash[name] ?? genericLong(name);
      if (k) return hit(w, k);
      continue;
    }
    const bundle = rules?.bundleFirst && i === 1 && !w.startsWith('-');
    if (bundle || (w.startsWith('-') && w.length > 1)) {
      const tables = rules?.global && sub === undefined ? [rules.global] : [rules?.options, sub !== undefined ? rules?.sub?.[sub] : undefined];
      const h = optionWord(bundle ? `-${w}` : w, tables);
      if (!h) continue;
      const value = h.value ?? argv[i + 1];
      if (h.kind === WRITES && value !== undefined && NOT_A_FILE.has(value)) {
        if (h.value === null) i++;
        continue;
      }
      return hit(w, h.kind);
    }
    if (rules?.global && sub === undefined) {
      sub = w;
      continue;
    }
    operands.push(w);
    if (rules?.scriptAfterOperand) forwarded = true;
  }
  for (const w of operands) {
    const k = rules?.operand?.(w, sub, operands) ?? null;
    if (k) return hit(w, k);
  }
  return null;
}

/**
 * The first option (or operand) of one simple command that runs other code, writes files or changes the
 * command's directory or configuration; null when there is none. `argv` is the command as it runs:
 * assignments and wrappers in front included.
 */
export function riskyOption(argv: readonly string[]): OptionRisk | null {
  const inner = unwrapCommand(argv).words;
  // The wrapper part: everything in front of the command that really runs (all of it when `env -S`
  // split a string into the command).
  const isSuffix = inner.length <= argv.length && inner.every((w, i) => argv[argv.length - inner.length + i] === w);
  const front = isSuffix ? argv.slice(0, argv.length - inner.length) : argv;
  let table: OptionTable | undefined;
  for (const w of front) {
    if (!w.startsWith('-') && SHALLOW_WRAPPERS.has(basename(w))) {
      table = WRAPPER_OPTIONS[basename(w)] ?? {};
      continue;
    }
    if (table === undefined) continue;
    if (UNKNOWN_START.test(w) && w.startsWith('-')) return { word: display(w), kind: CODE };
    if (w.startsWith('-') && w.length > 1 && w !== '--') {
      const k = optionWord(w, [table]);
      if (k) return { word: display(w), kind: k.kind };
    }
  }
  if (inner.length === 0) return null;
  return programRisk(inner, rulesFor(inner[0]!));
}
