/**
 * Shell parsing for the policy gate: a real bash parser (mvdan/sh) turned into a small, typed syntax
 * tree (`parseShell`), and a static evaluator (`evaluateScript`) that walks it the way bash would run
 * it and reports every simple command with its words expanded (see `ScriptFacts`).
 *
 * Contract:
 * - `parseShell(text)` never throws: `{ ok: true, script }` or `{ ok: false, error }` where `error` is the
 *   parser's own message (line:col included). Callers MUST treat `ok: false` as "deny" (fail closed).
 * - The tree keeps only what a policy needs: statements, commands, words (as parts: literal text with its
 *   quoting, parameter expansions, command/process substitutions, brace expansions), redirections
 *   (operator, fd, target word, heredoc body), assignments, and source offsets for ordering/display.
 * - Constructs whose inner words matter only for the substitutions they may hold ([[ ]], (( )), let,
 *   $(( )), ${a[i]}, ${a:o:l}) are flattened to the words they contain.
 * - A node type this module does not know becomes `{ k: 'unsupported' }`: callers deny it.
 * - `evaluateScript` facts also carry assignment values (`CommandSite.assignValues` for FOO=v cmd,
 *   `ScriptFacts.envAssigns` for standalone X=v / export X=v) so the denylist can judge variables that
 *   programs run (PAGER, GIT_SSH_COMMAND, LD_PRELOAD, ...). A string run later (alias value, trap, watch)
 *   is parsed with its unknown parts kept as markers: an unknown command name stays 'dynamic-command'.
 * - `<&N` (N not 0) on a command's stdin is reported as a file path `&N` (content unknown).
 * - What changes what a name runs is followed, fail-closed: an alias (or `hash -p PATH NAME`) defined
 *   ANYWHERE in the script expands every command whose first word is that plain name (dash expands aliases
 *   in scripts; an alias is not expanded inside its own expansion); a function defined anywhere runs its
 *   body again for each call, with $1.. $@ $# bound to the call's words (after `shift` every shift is
 *   possible; after `set ARGS` they are unknown); `declare/local/typeset -n R=T` makes reads and writes
 *   of R go to T (an unknown T reads as unknown).
 *
 * Why mvdan-sh (GopherJS build of mvdan/sh) and not sh-syntax: sh-syntax 0.7 (the WASM build of the same
 * parser) serialises only Stmt positions (`Cmd` is `{Pos, End}`, word parts carry no type or value), so
 * there is no tree to walk; and it instantiates a fresh Go WASM runtime on every call (~20 ms a parse).
 * mvdan-sh exposes the full syntax tree of the same parser in ~0.1-0.3 ms a parse.
 */
import { basename, unwrapCommand } from './wrappers.js';
import { parseShell } from './syntax/parser.js';
import type { Part, Word, Redirect, Assign, Stmt, Command, Script, ParseResult } from './syntax/tree.js';

export type { Part, Word, Redirect, Assign, Stmt, Command, Script, ParseResult } from './syntax/tree.js';
export { parseShell, SHELL_PARSER, shellParserReady } from './syntax/parser.js';

// ---------------------------------------------------------------------------------------------------
// Static evaluation: run the script "on paper".
//
// Expanded words are strings in which private-use characters stand for what cannot be known statically:
// a value is a list of alternatives (a variable assigned in a branch may hold either value), and every
// alternative is judged. Assignments made inside branches, loops, subshells, pipelines and functions add
// alternatives instead of replacing (conservative: bash may or may not have run them).

/** Markers inside expanded fields. */
export const MARK = {
  /** some text that cannot be known here (an outside variable, a command substitution's output) */
  UNKNOWN: '\uE000',
  /** a directory this command created with mktemp, or $TMPDIR */
  TMP: '\uE001',
  /** unquoted glob characters * ? [ */
  STAR: '\uE002',
  QMARK: '\uE003',
  BRACKET: '\uE004',
  /** a process substitution; the next char is String.fromCharCode(0xE100 + index into `procSubsts`) */
  PSUB: '\uE005',
} as const;
const MARK_RE = /[\uE000-\uE005\uE100-\uE1FF]/;

/** A field with no marker is fully static (its value is known exactly). */
export const isStatic = (field: string): boolean => !MARK_RE.test(field);

/** Human-readable form of a field: globs back to * ? [, unknown parts as `…`, mktemp dirs as $TMP. */
export function displayField(field: string): string {
  return field
    .replace(/\uE000/g, '…')
    .replace(/\uE001/g, '$TMP')
    .replace(/\uE002/g, '*')
    .replace(/\uE003/g, '?')
    .replace(/\uE004/g, '[')
    .replace(/\uE005[\uE100-\uE1FF]/g, '/dev/fd/63');
}

export type Stdin =
  | { kind: 'none' }
  /** fed by a pipe: every simple command upstream in the same pipeline */
  | { kind: 'pipe'; upstream: CommandSite[] }
  /** a here-string or heredoc: its possible texts */
  | { kind: 'here'; heredoc: boolean; texts: string[] }
  | { kind: 'file'; paths: string[] };

export interface RedirectSite {
  op: string;
  fd: string | null;
  /** possible targets (expanded, markers kept) */
  targets: string[];
  /** working directory alternatives at that point ('' = where the command started) */
  cwd: string[];
}

export interface CommandSite {
  /** possible argv lists after expansion (markers kept) */
  argvs: string[][];
  /** the words for display / approval keys: static value, or the source text of a word that is not */
  display: string[];
  /** names assigned in front of the command (FOO=1 cmd) */
  assigns: string[];
  /** the same assignments as NAME=value words, one per possible value (for rules on the values) */
  assignValues: string[];
  redirs: RedirectSite[];
  stdin: Stdin;
  cwd: string[];
  pos: number;
  inPipeline: boolean;
  background: boolean;
  /** names of the functions whose body this is in (innermost last) */
  functions: string[];
  /** 'find-exec': the command of a find -exec; 'nested': from a string run later (trap, watch, alias) */
  origin: 'shell' | 'find-exec' | 'nested';
}

export interface ScriptFacts {
  sites: CommandSite[];
  redirects: RedirectSite[];
  procSubsts: { op: string; sites: CommandSite[] }[];
  /** every variable name assigned anywhere (prefix, standalone, export/declare/local, read, for) */
  assigned: string[];
  /** standalone assignments (X=v, export X=v) as NAME=value words, one per possible value */
  envAssigns: string[];
  hasSubstitution: boolean;
  /** anything beyond one plain simple command: pipes, lists, groups, loops, functions, background... */
  structure: boolean;
  infiniteLoop: boolean;
  forkBomb: string | null;
  /** a construct the evaluator does not know, or a nested string that did not parse */
  unsupported: string | null;
  tooComplex: boolean;
}

const MAX_ALTS = 64;
class TooComplex extends Error {}

interface Ctx {
  stdin: Stdin;
  conditional: boolean;
  inPipeline: boolean;
  background: boolean;
  functions: string[];
  depth: number;
  /** inside a function called with known arguments: $1, $@ ... (args null once `shift`/`set` moved them) */
  positional?: { args: string[] | null; shifted: boolean };
  /** aliases being expanded (bash does not expand an alias inside its own expansion) */
  aliasChain?: string[];
}

interface St {
  fields: string[];
  cur: string | null;
}

const SPECIAL_PARAM = /^([0-9]+|[@*#?$!-])$/;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const shellQuote = (v: string): string => `'${v.replace(/'/g, `'\\''`)}'`;

/** Every function definition in the script, wherever it is (a call may come before it in a loop). */
function collectFuncs(stmts: Stmt[], out: Map<string, Stmt[]>): void {
  const visit = (c: Command | null): void => {
    if (!c) return;
    switch (c.k) {
      case 'func':
        out.set(c.name, [...(out.get(c.name) ?? []), c.body]);
        visit(c.body.cmd);
        return;
      case 'binary':
        visit(c.x.cmd);
        visit(c.y.cmd);
        return;
      case 'group':
        c.stmts.forEach((s) => visit(s.cmd));
        return;
      case 'if':
        [...c.cond, ...c.then].forEach((s) => visit(s.cmd));
        visit(c.else);
        return;
      case 'while':
      case 'for':
        [...(c.k === 'while' ? c.cond : []), ...c.body].forEach((s) => visit(s.cmd));
        return;
      case 'case':
        c.items.forEach((it) => it.stmts.forEach((s) => visit(s.cmd)));
        return;
      case 'time':
        visit(c.stmt?.cmd ?? null);
        return;
      case 'coproc':
        visit(c.stmt.cmd);
        return;
      default:
        return;
    }
  };
  stmts.forEach((s) => visit(s.cmd));
}
const CWD = '\u0000cwd';

function uniq(xs: string[]): string[] {
  const out = [...new Set(xs)];
  if (out.length > MAX_ALTS) throw new TooComplex();
  return out;
}

function product<T>(lists: T[][]): T[][] {
  let acc: T[][] = [[]];
  for (const l of lists) {
    const next: T[][] = [];
    for (const a of acc) for (const x of l) next.push([...a, x]);
    if (next.length > MAX_ALTS) throw new TooComplex();
    acc = next;
  }
  return acc;
}

/** Unquoted literal: backslash removal; glob characters become markers unless escaped. */
function unquoteLit(v: string): string {
  let out = '';
  for (let i = 0; i < v.length; i++) {
    const c = v[i]!;
    if (c === '\\') {
      const n = v[i + 1];
      i++;
      if (n === undefined || n === '\n') continue;
      out += n;
    } else if (c === '*') out += MARK.STAR;
    else if (c === '?') out += MARK.QMARK;
    else if (c === '[' && v.indexOf(']', i + 1) > i + 1) out += MARK.BRACKET;
    else out += c;
  }
  return out;
}

/** Literal inside double quotes / unquoted heredoc: only \$ \` \" \\ \newline are escapes. */
function unquoteDq(v: string): string {
  return v.replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === '\n' ? '' : c));
}

/** $'...' escapes. */
export function decodeAnsiC(v: string): string {
  const simple: Record<string, string> = {
    n: '\n',
    t: '\t',
    r: '\r',
    a: '\x07',
    b: '\b',
    f: '\f',
    v: '\v',
    e: '\x1b',
    E: '\x1b',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '?': '?',
  };
  return v.replace(/\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs, (m, e: string) => {
    if (e[0] === 'x' || e[0] === 'u' || e[0] === 'U') return e.length > 1 ? String.fromCodePoint(parseInt(e.slice(1), 16)) : m;
    if (/^[0-7]+$/.test(e)) return String.fromCharCode(parseInt(e, 8) & 0xff);
    if (e[0] === 'c' && e.length === 2) return String.fromCharCode(e.charCodeAt(1) & 0x1f);
    return simple[e] ?? m;
  });
}

function globToRegex(pattern: string): RegExp {
  let re = '';
  for (const c of pattern) {
    if (c === '*' || c === MARK.STAR) re += '[^]*?';
    else if (c === '?' || c === MARK.QMARK) re += '[^]';
    else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

function trimPattern(v: string, op: string, pattern: string): string {
  const re = globToRegex(pattern);
  const n = v.length;
  if (op === '#') for (let i = 0; i <= n; i++) if (re.test(v.slice(0, i))) return v.slice(i);
  if (op === '##') for (let i = n; i >= 0; i--) if (re.test(v.slice(0, i))) return v.slice(i);
  if (op === '%') for (let i = n; i >= 0; i--) if (re.test(v.slice(i))) return v.slice(0, i);
  if (op === '%%') for (let i = 0; i <= n; i++) if (re.test(v.slice(i))) return v.slice(0, i);
  return v;
}

function replacePattern(v: string, orig: string, rep: string, all: boolean): string {
  const body = globToRegex(orig).source.slice(1, -1).replace(/\*\?/g, '*');
  if (body === '') return v;
  const re = new RegExp(body, all ? 'g' : '');
  return v.replace(re, () => rep);
}

function seqValues(elems: Word[]): string[] | null {
  const lits = elems.map((e) => (e.parts.length === 1 && e.parts[0]!.t === 'lit' ? e.parts[0]!.v : null));
  const [from, to, step] = lits;
  if (from == null || to == null) return null;
  const inc = Math.abs(Number(step ?? '1')) || 1;
  const out: string[] = [];
  if (/^-?\d+$/.test(from) && /^-?\d+$/.test(to)) {
    const a = Number(from);
    const b = Number(to);
    for (let x = a; a <= b ? x <= b : x >= b; x += a <= b ? inc : -inc) {
      out.push(String(x));
      if (out.length > MAX_ALTS) throw new TooComplex();
    }
    return out;
  }
  if (from.length === 1 && to.length === 1) {
    const a = from.charCodeAt(0);
    const b = to.charCodeAt(0);
    for (let x = a; a <= b ? x <= b : x >= b; x += a <= b ? inc : -inc) out.push(String.fromCharCode(x));
    return out;
  }
  return null;
}

/** Brace expansion: one word becomes several part lists (bash expands {a,b} into separate words). */
function braceSplit(parts: Part[]): Part[][] {
  const lists: Part[][][] = [];
  for (const p of parts) {
    if (p.t !== 'brace') {
      lists.push([[p]]);
      continue;
    }
    if (p.seq) {
      const vals = seqValues(p.elems);
      lists.push(vals ? vals.map((v) => [{ t: 'sq', v, ansi: false } as Part]) : [[{ t: 'extglob', src: '{..}' }]]);
    } else {
      lists.push(p.elems.flatMap((e) => braceSplit(e.parts)));
    }
  }
  return product(lists).map((seq) => seq.flat());
}

export class Evaluator {
  readonly facts: ScriptFacts = {
    sites: [],
    redirects: [],
    procSubsts: [],
    assigned: [],
    envAssigns: [],
    hasSubstitution: false,
    structure: false,
    infiniteLoop: false,
    forkBomb: null,
    unsupported: null,
    tooComplex: false,
  };
  private readonly vars = new Map<string, string[]>();
  private readonly arrays = new Map<string, string[] | null>();
  /** declare -n NAME=TARGET: reads and writes of NAME go to TARGET */
  private readonly namerefs = new Map<string, string[]>();
  /** alias NAME=VALUE and hash -p PATH NAME, anywhere in the script: NAME -> texts that replace it */
  private readonly aliases = new Map<string, string[]>();
  /** functions defined anywhere in the script (found before the walk): a call runs their bodies */
  private readonly funcs = new Map<string, Stmt[]>();
  /** simple commands whose first word is a plain literal: alias candidates, expanded after the walk */
  private readonly firstWords: { name: string; rest: string; ctx: Ctx; hashOnly?: boolean }[] = [];
  /** hash -p PATH NAME: also found through `command NAME` / `exec NAME`, which skip aliases */
  private readonly hashed = new Map<string, string[]>();
  private bodyWalks = 0;
  /** pre-order counter: a command is numbered before the substitutions in its words = source order */
  private seq = 0;

  constructor(private readonly parse: (text: string) => ParseResult = parseShell) {}

  run(script: Script): ScriptFacts {
    const ctx: Ctx = { stdin: { kind: 'none' }, conditional: false, inPipeline: false, background: false, functions: [], depth: 0 };
    try {
      if (script.stmts.length > 1) this.facts.structure = true;
      collectFuncs(script.stmts, this.funcs);
      this.stmts(script.stmts, ctx);
      this.expandAliases();
    } catch (err) {
      if (err instanceof TooComplex) this.facts.tooComplex = true;
      else throw err;
    }
    this.facts.sites.sort((a, b) => a.pos - b.pos);
    this.facts.assigned = [...new Set(this.facts.assigned)];
    return this.facts;
  }

  // ---- variables

  get(name: string, seen: string[] = []): string[] {
    const ref = this.namerefs.get(name);
    if (ref && !seen.includes(name)) return uniq(ref.flatMap((t) => (VAR_NAME.test(t) ? this.get(t, [...seen, name]) : [MARK.UNKNOWN])));
    const v = this.vars.get(name);
    if (v) return v;
    if (name === 'HOME') return ['~'];
    // where the history goes unless the script says otherwise (`> $HISTFILE` is `> ~/.bash_history`)
    if (name === 'HISTFILE') return ['~/.bash_history'];
    if (name === 'TMPDIR') return [MARK.TMP];
    if (name === CWD) return [''];
    return [MARK.UNKNOWN];
  }

  set(name: string, alts: string[], ctx: Ctx, seen: string[] = []): void {
    const ref = this.namerefs.get(name);
    if (ref && !seen.includes(name)) {
      for (const t of ref) if (VAR_NAME.test(t)) this.set(t, alts, ref.length > 1 ? { ...ctx, conditional: true } : ctx, [...seen, name]);
      return;
    }
    if (name !== CWD) this.facts.assigned.push(name);
    // Field splitting is evaluated with the default IFS; a script that changes it is not judged.
    if (name === 'IFS') this.facts.unsupported = 'IFS is changed, so word splitting cannot be judged';
    this.vars.set(name, ctx.conditional ? uniq([...this.get(name), ...alts]) : uniq(alts));
  }

  // ---- statements

  stmts(stmts: Stmt[], ctx: Ctx): void {
    for (const s of stmts) this.stmt(s, ctx);
  }

  stmt(s: Stmt, ctx: Ctx): void {
    let inner = ctx;
    if (s.background) {
      this.facts.structure = true;
      inner = { ...ctx, background: true, conditional: true };
    }
    const redirs = s.redirs.map((r) => this.redirect(r, ctx));
    const stdin = this.stdinOf(s.redirs, redirs, inner.stdin);
    if (stdin !== inner.stdin) inner = { ...inner, stdin };
    if (!s.cmd) return;
    this.command(s.cmd, inner, redirs);
  }

  private redirect(r: Redirect, ctx: Ctx): RedirectSite {
    let targets: string[] = [];
    if (r.word) targets = this.expandString(r.word, ctx, false);
    const site: RedirectSite = { op: r.op, fd: r.fd, targets, cwd: this.get(CWD) };
    if (r.hdoc) this.expandString(r.hdoc, ctx, true);
    this.facts.redirects.push(site);
    return site;
  }

  private stdinOf(rs: Redirect[], sites: RedirectSite[], fallback: Stdin): Stdin {
    let stdin = fallback;
    rs.forEach((r, i) => {
      const site = sites[i]!;
      if (r.fd !== null && r.fd !== '0') return;
      if (r.op === '<<<') stdin = { kind: 'here', heredoc: false, texts: site.targets };
      else if (r.op === '<<' || r.op === '<<-') {
        stdin = { kind: 'here', heredoc: true, texts: r.hdoc ? this.expandStringQuiet(r.hdoc) : [''] };
      } else if (r.op === '<' || r.op === '<>') stdin = { kind: 'file', paths: site.targets };
      // <&3: another descriptor, whose content is not known here ('&' marks it for the denylist)
      else if (r.op === '<&' && !site.targets.every((t) => t === '0' || t === '-')) stdin = { kind: 'file', paths: site.targets.map((t) => `&${t}`) };
    });
    return stdin;
  }

  private command(c: Command, ctx: Ctx, redirs: RedirectSite[]): void {
    const cond: Ctx = { ...ctx, conditional: true };
    switch (c.k) {
      case 'call':
        this.call(c, ctx, redirs);
        return;
      case 'binary': {
        this.facts.structure = true;
        if (c.op === '&&' || c.op === '||') {
          this.stmt(c.x, ctx);
          this.stmt(c.y, cond);
          return;
        }
        const start = this.facts.sites.length;
        const up = ctx.stdin.kind === 'pipe' ? ctx.stdin.upstream : [];
        this.stmt(c.x, { ...cond, inPipeline: true });
        const upstream = [...up, ...this.facts.sites.slice(start)];
        this.stmt(c.y, { ...cond, inPipeline: true, stdin: { kind: 'pipe', upstream } });
        return;
      }
      case 'group':
        this.facts.structure = true;
        this.stmts(c.stmts, c.subshell ? cond : ctx);
        return;
      case 'if':
        this.facts.structure = true;
        this.stmts(c.cond, cond);
        this.stmts(c.then, cond);
        if (c.else) this.command(c.else, cond, []);
        return;
      case 'while': {
        this.facts.structure = true;
        const start = this.facts.sites.length;
        this.stmts(c.cond, cond);
        const condSites = this.facts.sites.slice(start);
        const forever = c.until ? ['false'] : ['true', ':'];
        if (c.cond.length > 0 && condSites.length === c.cond.length && condSites.every((s) => s.argvs.every((a) => isForever(a, forever)))) {
          this.facts.infiniteLoop = true;
        }
        if (c.cond.length === 1 && c.cond[0]!.cmd?.k === 'words' && c.cond[0]!.cmd.what === 'ArithmCmd' && !c.until) {
          const w = c.cond[0]!.cmd.words;
          if (w.length === 1 && w[0]!.src.trim() !== '0' && /^[1-9]\d*$/.test(w[0]!.src.trim())) this.facts.infiniteLoop = true;
        }
        this.stmts(c.body, cond);
        return;
      }
      case 'for':
        this.facts.structure = true;
        if (c.infinite) this.facts.infiniteLoop = true;
        if (c.cstyle) for (const w of c.cstyle) this.expandString(w, ctx, false);
        if (c.name) {
          const items = c.items ? c.items.flatMap((w) => this.expandFields(w, ctx).flat()) : [MARK.UNKNOWN];
          // Inside the body the variable holds one of the items, whatever it held before.
          this.set(c.name, items.length ? items : [''], ctx);
        }
        this.stmts(c.body, cond);
        return;
      case 'case':
        this.facts.structure = true;
        this.expandString(c.word, ctx, false);
        for (const it of c.items) {
          for (const p of it.patterns) this.expandString(p, ctx, false);
          this.stmts(it.stmts, cond);
        }
        return;
      case 'func':
        this.facts.structure = true;
        this.stmt(c.body, { ...cond, functions: [...ctx.functions, c.name] });
        return;
      case 'decl': {
        let nameref = false;
        for (const a of c.args) {
          if (!a.name) {
            if (a.value && this.expandString(a.value, ctx, false).some((f) => /^-[a-zA-Z]*n/.test(f))) nameref = true;
            continue;
          }
          this.facts.assigned.push(a.name);
          if (nameref) {
            // declare -n r=target: r stands for the variable named by the value (unknown name: unknown value)
            const targets = a.value ? this.expandString(a.value, ctx, true) : [MARK.UNKNOWN];
            this.namerefs.set(a.name, uniq([...(ctx.conditional ? (this.namerefs.get(a.name) ?? []) : []), ...targets]));
          } else if (!a.naked) this.assign(a, ctx);
        }
        return;
      }
      case 'words':
        this.facts.structure = true;
        for (const w of c.words) this.expandString(w, ctx, false);
        return;
      case 'time':
        if (c.stmt) this.stmt(c.stmt, ctx);
        return;
      case 'coproc':
        this.facts.structure = true;
        this.stmt(c.stmt, { ...cond, background: true });
        return;
      case 'unsupported':
        this.facts.unsupported = c.type;
        return;
    }
  }

  private assign(a: Assign, ctx: Ctx): void {
    for (const w of a.inner) this.expandString(w, ctx, false);
    if (a.array) {
      const elems = a.array.map((w) => this.expandFields(w, ctx));
      const single = elems.every((e) => e.length === 1) ? elems.flatMap((e) => e[0]!) : null;
      this.arrays.set(a.name, single);
      this.set(a.name, [single?.[0] ?? MARK.UNKNOWN], ctx);
      return;
    }
    if (a.inner.length > 0) {
      this.arrays.set(a.name, null);
      this.set(a.name, [MARK.UNKNOWN], ctx);
      return;
    }
    let vals = a.value ? this.expandString(a.value, ctx, true) : [''];
    if (a.value && isMktemp(a.value)) vals = [MARK.TMP];
    if (a.append) vals = uniq(this.get(a.name).flatMap((p) => vals.map((v) => p + v)));
    this.arrays.delete(a.name);
    for (const v of vals) this.facts.envAssigns.push(`${a.name}=${v}`);
    this.set(a.name, vals, ctx);
  }

  private call(c: Extract<Command, { k: 'call' }>, ctx: Ctx, redirs: RedirectSite[]): void {
    if (c.args.length === 0) {
      for (const a of c.assigns) this.assign(a, ctx);
      return;
    }
    const pos = this.seq++;
    // Prefix assignments apply to the command only; their values may still hold substitutions.
    const assignValues: string[] = [];
    for (const a of c.assigns) {
      this.facts.assigned.push(a.name);
      if (a.value) for (const v of this.expandString(a.value, ctx, true)) assignValues.push(`${a.name}=${v}`);
    }
    const perWord = c.args.map((w) => this.expandFields(w, ctx));
    const argvs = product(perWord).map((alt) => alt.flat());
    const display = c.args.flatMap((w, i) => {
      const alts = perWord[i]!;
      // Quote removal only: a word with an expansion is shown as written ($HOME, not its value).
      if (isPlainWord(w) && alts.length === 1 && alts[0]!.length <= 1) {
        const f = alts[0]![0];
        if (f === undefined) return [];
        if (isStatic(f)) return [f];
      }
      return [w.src];
    });
    const site: CommandSite = {
      argvs,
      display,
      assigns: c.assigns.map((a) => a.name),
      assignValues,
      redirs,
      stdin: ctx.stdin,
      cwd: this.get(CWD),
      pos,
      inPipeline: ctx.inPipeline,
      background: ctx.background,
      functions: ctx.functions,
      origin: ctx.depth > 0 ? 'nested' : 'shell',
    };
    this.facts.sites.push(site);
    this.effects(site, ctx);
    const first = c.args[0]!;
    const lit = first.parts.length === 1 && first.parts[0]!.t === 'lit' ? first.parts[0]!.v : null;
    const plain = (w: Word | undefined): string | null =>
      w && w.parts.length === 1 && w.parts[0]!.t === 'lit' && /^[^\\/$`'"=\s]+$/.test(w.parts[0]!.v) ? w.parts[0]!.v : null;
    if (plain(first) !== null)
      this.firstWords.push({
        name: lit!,
        rest: c.args
          .slice(1)
          .map((w) => w.src)
          .join(' '),
        ctx,
      });
    if (lit === 'command' || lit === 'exec') {
      const k = c.args.findIndex((w, i) => i > 0 && !w.src.startsWith('-'));
      const n = plain(c.args[k]);
      if (k > 0 && n !== null)
        this.firstWords.push({
          name: n,
          rest: c.args
            .slice(k + 1)
            .map((w) => w.src)
            .join(' '),
          ctx,
          hashOnly: true,
        });
    }
    this.callFunctions(argvs, ctx);
  }

  /** A call of a function defined in the script runs its body with these arguments as $1, $@ ... */
  private callFunctions(argvs: string[][], ctx: Ctx): void {
    for (const argv of argvs.slice(0, 8)) {
      const name = argv[0] ?? '';
      const bodies = this.funcs.get(name);
      if (!bodies || ctx.functions.includes(name)) continue;
      if (ctx.depth > 4) {
        this.facts.unsupported = 'functions nested too deep';
        return;
      }
      for (const body of bodies) {
        if (++this.bodyWalks > MAX_ALTS * 4) throw new TooComplex();
        this.stmt(body, {
          ...ctx,
          conditional: true,
          functions: [...ctx.functions, name],
          depth: ctx.depth + 1,
          positional: { args: argv.slice(1), shifted: false },
        });
      }
    }
  }

  /** After the walk: every command whose first word names an alias (defined anywhere) runs the alias text. */
  private expandAliases(): void {
    let expansions = 0;
    for (let i = 0; i < this.firstWords.length; i++) {
      const { name, rest, ctx, hashOnly } = this.firstWords[i]!;
      const values = (hashOnly ? this.hashed : this.aliases).get(name);
      if (!values || (ctx.aliasChain ?? []).includes(name)) continue;
      for (const v of values) {
        if (++expansions > MAX_ALTS) throw new TooComplex();
        this.nested(`${v} ${rest}`, { ...ctx, aliasChain: [...(ctx.aliasChain ?? []), name] });
      }
    }
  }

  /** What a command does to the evaluator's state, and commands it runs from its arguments. */
  private effects(site: CommandSite, ctx: Ctx): void {
    const cond: Ctx = { ...ctx, conditional: ctx.conditional || site.argvs.length > 1 };
    for (const full of site.argvs) {
      if (ctx.functions.includes(full[0] ?? '') && (site.inPipeline || site.background)) this.facts.forkBomb = full[0]!;
      const argv = unwrapCommand(full, { deep: true }).words;
      const name = basename(argv[0] ?? '');
      const args = argv.slice(1);
      switch (name) {
        case 'cd':
        case 'pushd': {
          const target = args.find((a) => !a.startsWith('-')) ?? '~';
          const base = this.get(CWD);
          const next =
            target.startsWith('/') || target.startsWith('~') || target.startsWith(MARK.TMP)
              ? [target]
              : base.map((b) => (b === '' ? (target === '.' ? '' : MARK.UNKNOWN + '/' + target) : `${b}/${target}`));
          this.set(CWD, args[0] === '-' ? [MARK.UNKNOWN] : next, cond);
          break;
        }
        case 'popd':
          this.set(CWD, [MARK.UNKNOWN], cond);
          break;
        case 'read':
        case 'mapfile':
        case 'readarray':
        case 'getopts':
          for (const a of args) if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(a)) this.set(a, [MARK.UNKNOWN], cond);
          break;
        case 'printf': {
          const i = args.indexOf('-v');
          if (i >= 0 && args[i + 1]) this.set(args[i + 1]!, [MARK.UNKNOWN], cond);
          break;
        }
        case 'unset':
          for (const a of args) if (!a.startsWith('-')) this.set(a, [''], cond);
          break;
        case 'alias':
          for (const a of args) {
            const eq = a.indexOf('=');
            if (eq <= 0) continue;
            this.addAlias(a.slice(0, eq), a.slice(eq + 1));
            this.nested(a.slice(eq + 1), ctx);
          }
          break;
        case 'hash': {
          // hash -p PATH NAME...: NAME now runs PATH, as an alias would
          const i = args.findIndex((a) => /^-[a-zA-Z]*p$/.test(a));
          if (i >= 0 && args[i + 1] !== undefined) {
            for (const n of args.slice(i + 2)) {
              this.addAlias(n, shellQuote(args[i + 1]!));
              this.hashed.set(n, uniq([...(this.hashed.get(n) ?? []), shellQuote(args[i + 1]!)]));
            }
          }
          break;
        }
        case 'shift':
          // how far it shifted is not followed: every shift is possible
          if (ctx.positional) ctx.positional.shifted = true;
          break;
        case 'set':
          if (ctx.positional && args.some((a) => !/^[-+][a-zA-Z]+$/.test(a))) ctx.positional.args = null;
          break;
        case 'trap': {
          const action = args[0] === '--' ? args[1] : args[0];
          if (action !== undefined && action !== '-' && !action.startsWith('-')) this.nested(action, ctx);
          break;
        }
        case 'watch': {
          let i = 0;
          while (i < args.length && args[i]!.startsWith('-'))
            i += ['-n', '--interval', '-d'].includes(args[i]!) && !/^\d/.test(args[i]!) && args[i] !== '-d' ? 2 : 1;
          if (i < args.length) this.nested(args.slice(i).join(' '), ctx);
          break;
        }
        case 'find':
          this.findExec(site, argv);
          break;
      }
    }
  }

  private findExec(site: CommandSite, argv: string[]): void {
    for (let i = 1; i < argv.length; i++) {
      if (!['-exec', '-execdir', '-ok', '-okdir'].includes(argv[i]!)) continue;
      let j = i + 1;
      while (j < argv.length && argv[j] !== ';' && argv[j] !== '+') j++;
      const inner = argv.slice(i + 1, j).map((w) => w.replace(/\{\}/g, MARK.UNKNOWN));
      if (inner.length > 0) {
        this.facts.structure = true;
        this.facts.sites.push({
          ...site,
          argvs: [inner],
          display: inner.map(displayField),
          assigns: [],
          assignValues: [],
          pos: site.pos + 0.5,
          origin: 'find-exec',
        });
      }
      i = j;
    }
  }

  /** A string that the shell will run later (trap action, watch command, alias value). */
  private nested(text: string, ctx: Ctx): void {
    this.facts.structure = true;
    if (ctx.depth > 4) {
      this.facts.unsupported = 'nesting too deep';
      return;
    }
    // Unknown parts stay markers inside the text: as a command name they are 'dynamic-command'.
    const res = this.parse(text);
    if (!res.ok) {
      this.facts.unsupported = `a nested command string that does not parse (${res.error})`;
      return;
    }
    this.stmts(res.script.stmts, { ...ctx, conditional: true, depth: ctx.depth + 1 });
  }

  private addAlias(name: string, value: string): void {
    this.aliases.set(name, uniq([...(this.aliases.get(name) ?? []), value]));
  }

  // ---- words

  /** Expand a word to its possible field lists (split, globs marked). */
  expandFields(w: Word, ctx: Ctx): string[][] {
    const variants = braceSplit(w.parts);
    const perVariant = variants.map((parts) => this.expandParts(parts, ctx, false));
    return product(perVariant).map((alts) => alts.flat());
  }

  /** Expand a word without field splitting (assignment values, redirect targets, heredocs). */
  expandString(w: Word, ctx: Ctx, quoted: boolean): string[] {
    return uniq(this.expandParts(w.parts, ctx, quoted).map((f) => f.join(' ')));
  }

  private expandStringQuiet(w: Word): string[] {
    const ctx: Ctx = { stdin: { kind: 'none' }, conditional: true, inPipeline: false, background: false, functions: [], depth: 0 };
    const before = this.facts.sites.length;
    const out = this.expandString(w, ctx, true);
    // Substitutions in the heredoc were already walked by `redirect`: drop the duplicates.
    this.facts.sites.length = before;
    return out;
  }

  private expandParts(parts: Part[], ctx: Ctx, quoted: boolean): string[][] {
    const states = this.expandInto([{ fields: [], cur: null }], parts, ctx, quoted);
    return states.map((s) => (s.cur !== null ? [...s.fields, s.cur] : s.fields));
  }

  private expandInto(initial: St[], parts: Part[], ctx: Ctx, quoted: boolean): St[] {
    let states = initial;
    const appendQuoted = (s: St, text: string): St => ({ fields: s.fields, cur: (s.cur ?? '') + text });
    const appendSplit = (s: St, v: string): St => {
      const fields = [...s.fields];
      let cur = s.cur;
      const pieces = v.split(/[ \t\n]+/);
      pieces.forEach((p, i) => {
        if (i > 0) {
          if (cur !== null) fields.push(cur);
          cur = null;
        }
        if (p !== '') cur = (cur ?? '') + p.replace(/\*/g, MARK.STAR).replace(/\?/g, MARK.QMARK);
      });
      return { fields, cur };
    };
    const addAll = (vals: string[], split: boolean): void => {
      const next: St[] = [];
      for (const s of states) for (const v of vals) next.push(split ? appendSplit(s, v) : appendQuoted(s, v));
      if (next.length > MAX_ALTS) throw new TooComplex();
      states = next;
    };
    for (const p of parts) {
      switch (p.t) {
        case 'lit':
          addAll([p.dq || quoted ? unquoteDq(p.v) : unquoteLit(p.v)], false);
          break;
        case 'sq':
          addAll([p.ansi ? decodeAnsiC(p.v) : p.v], false);
          break;
        case 'dq':
          addAll([''], false);
          states = this.expandInto(states, p.parts, ctx, true);
          break;
        case 'param':
          // "${a[@]}" expands to one field per element even inside quotes.
          addAll(this.param(p, ctx), !quoted || p.index?.src === '@' || (p.name === '@' && ctx.positional?.args != null));
          break;
        case 'cmdsubst': {
          this.facts.hasSubstitution = true;
          this.facts.structure = true;
          const mk = p.stmts.length === 1 && isMktempStmt(p.stmts[0]!);
          this.stmts(p.stmts, { ...ctx, conditional: true, stdin: { kind: 'none' }, inPipeline: false });
          addAll([mk ? MARK.TMP : MARK.UNKNOWN], false);
          break;
        }
        case 'procsubst': {
          this.facts.hasSubstitution = true;
          this.facts.structure = true;
          const start = this.facts.sites.length;
          this.stmts(p.stmts, { ...ctx, conditional: true, stdin: { kind: 'none' }, inPipeline: true });
          const idx = this.facts.procSubsts.length;
          if (idx > 0xff) throw new TooComplex();
          this.facts.procSubsts.push({ op: p.op, sites: this.facts.sites.slice(start) });
          addAll([MARK.PSUB + String.fromCharCode(0xe100 + idx)], false);
          break;
        }
        case 'arith':
          for (const w of p.inner) this.expandString(w, ctx, false);
          addAll([MARK.UNKNOWN], false);
          break;
        case 'extglob':
          addAll([MARK.STAR], false);
          break;
        case 'brace':
          // Only reachable inside a quoted context, where braces are literal.
          addAll(['{' + p.elems.map((e) => e.src).join(',') + '}'], false);
          break;
      }
    }
    return states;
  }

  private param(p: Extract<Part, { t: 'param' }>, ctx: Ctx): string[] {
    for (const w of p.inner) this.expandString(w, ctx, false);
    const arg = p.arg ? this.expandString(p.arg, ctx, true) : [''];
    const pos = ctx.positional?.args;
    const positional = pos != null && !p.opaque && !p.index && /^([1-9][0-9]*|[@*#])$/.test(p.name);
    if (!positional && (p.opaque || SPECIAL_PARAM.test(p.name))) return [MARK.UNKNOWN];
    let base: string[];
    if (positional) {
      const shifts = ctx.positional!.shifted ? pos.map((_, k) => k).concat(pos.length) : [0];
      base = uniq(
        shifts.map((k) => {
          const rest = pos.slice(k);
          return p.name === '#' ? String(rest.length) : p.name === '@' || p.name === '*' ? rest.join(' ') : (rest[Number(p.name) - 1] ?? '');
        }),
      );
    } else if (p.index) {
      const arr = this.arrays.get(p.name);
      const idx = p.index.src;
      if (arr === undefined || arr === null) base = [MARK.UNKNOWN];
      else if (idx === '@' || idx === '*') base = [arr.join(' ')];
      else if (/^\d+$/.test(idx)) base = [arr[Number(idx)] ?? ''];
      else base = [MARK.UNKNOWN];
    } else base = this.get(p.name);
    const known = (v: string): boolean => v !== MARK.UNKNOWN;
    if (p.repl) {
      const orig = this.expandString(p.repl.orig, ctx, true);
      const rep = p.repl.with ? this.expandString(p.repl.with, ctx, true) : [''];
      if (orig.length !== 1 || rep.length !== 1 || !isStatic(orig[0]!) || /^[#%]/.test(p.repl.orig.src)) return [MARK.UNKNOWN];
      return uniq(base.map((v) => (known(v) ? replacePattern(v, orig[0]!, rep[0]!, p.repl!.all) : MARK.UNKNOWN)));
    }
    switch (p.op) {
      case null:
        return base;
      case ':-':
      case '-':
      case ':=':
      case '=': {
        const out = uniq(base.flatMap((v) => (!known(v) ? [v, ...arg] : v === '' && p.op!.startsWith(':') ? arg : [v])));
        if (p.op.endsWith('=')) this.set(p.name, out, { ...ctx, conditional: true });
        return out;
      }
      case ':+':
      case '+':
        return uniq(base.flatMap((v) => (!known(v) ? ['', ...arg] : v !== '' ? arg : [''])));
      case ':?':
      case '?':
        return base;
      case '#':
      case '##':
      case '%':
      case '%%':
        if (arg.length !== 1 || !isStatic(arg[0]!.replace(/[*?]/g, ''))) return [MARK.UNKNOWN];
        return uniq(base.map((v) => (known(v) ? trimPattern(v, p.op!, arg[0]!) : MARK.UNKNOWN)));
      case '^^':
        return base.map((v) => (known(v) ? v.toUpperCase() : v));
      case ',,':
        return base.map((v) => (known(v) ? v.toLowerCase() : v));
      case '^':
        return base.map((v) => (known(v) ? v.slice(0, 1).toUpperCase() + v.slice(1) : v));
      case ',':
        return base.map((v) => (known(v) ? v.slice(0, 1).toLowerCase() + v.slice(1) : v));
      default:
        return [MARK.UNKNOWN];
    }
  }
}

function isPlainWord(w: Word): boolean {
  const plain = (p: Part): boolean => p.t === 'lit' || p.t === 'sq' || (p.t === 'dq' && p.parts.every(plain));
  return w.parts.every(plain);
}

function isForever(argv: string[], words: string[]): boolean {
  if (argv.length === 1 && words.includes(argv[0]!)) return true;
  return (argv[0] === '[' && argv.length === 3 && argv[1] === '1') || (argv[0] === 'test' && argv.length === 2 && argv[1] === '1');
}

function isMktempStmt(s: Stmt): boolean {
  const c = s.cmd;
  if (!c || c.k !== 'call' || s.redirs.length > 0 || c.assigns.length > 0) return false;
  const first = c.args[0];
  return first !== undefined && first.parts.length === 1 && first.parts[0]!.t === 'lit' && first.parts[0]!.v === 'mktemp';
}

/** `$(mktemp ...)` or "$(mktemp ...)" as the whole value. */
function isMktemp(w: Word): boolean {
  let parts = w.parts;
  if (parts.length === 1 && parts[0]!.t === 'dq') parts = parts[0]!.parts;
  return parts.length === 1 && parts[0]!.t === 'cmdsubst' && parts[0]!.stmts.length === 1 && isMktempStmt(parts[0]!.stmts[0]!);
}

/** Parse and evaluate. `null` facts when it does not parse. */
export function analyzeScript(text: string): { ok: true; facts: ScriptFacts } | { ok: false; error: string } {
  const res = parseShell(text);
  if (!res.ok) return res;
  return { ok: true, facts: new Evaluator().run(res.script) };
}
