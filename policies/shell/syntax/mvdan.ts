/**
 * Parser glue: mvdan-sh (the GopherJS build of mvdan/sh) read into the tree of ./tree.ts.
 *
 * Contract: `parseShell(text)` never throws: `{ ok: true, script }` or `{ ok: false, error }` where
 * `error` is the parser's own message (line:col included), or says where mvdan and bash disagree (a
 * `#` that mvdan reads as a comment inside a word). Callers MUST treat `ok: false` as "deny".
 */
import { createRequire } from 'node:module';
import { Buffer } from 'node:buffer';
import type { Command, ParseResult, Part, Redirect, Assign, Script, Stmt, Word } from './tree.js';

// ---------------------------------------------------------------------------------------------------
// mvdan-sh access. GopherJS objects: fields are plain properties, Pos()/End() are methods, slices are
// arrays (or null when nil), enums are numbers (mapped to operator text by calibration below).

type G = { readonly [k: string]: unknown };
interface GoPos {
  Offset(): number;
}
interface Syntax {
  NewParser(...opts: unknown[]): { Parse(src: string, name: string): unknown };
  NodeType(node: unknown): string;
  Walk(node: unknown, fn: (node: unknown) => boolean): void;
  SplitBraces(word: unknown): unknown;
  KeepComments(keep: boolean): unknown;
}

const require = createRequire(import.meta.url);
const syntax = (require('mvdan-sh') as { syntax: Syntax }).syntax;
const parser = syntax.NewParser();
// Only to find where mvdan thinks comments start (see misreadComment).
const commentParser = syntax.NewParser(syntax.KeepComments(true));

const obj = (v: unknown): G | null => (v == null ? null : (v as G));
const field = (n: G, k: string): G | null => obj(n[k]);
const list = (n: G, k: string): G[] => (n[k] as G[] | null | undefined) ?? [];
const str = (n: G | null, k: string): string => (n == null ? '' : String(n[k] ?? ''));
const num = (n: G, k: string): number => Number(n[k]);
const bool = (n: G, k: string): boolean => n[k] === true;
const posOf = (n: G): number => (n['Pos'] as () => GoPos).call(n).Offset();
const endOf = (n: G): number => (n['End'] as () => GoPos).call(n).Offset();
// syntax.NodeType goes through Go reflection (~10 µs a call); the wrapper's `$type`
// ('mvdan.cc/sh/v3/syntax.*CallExpr') says the same for free.
const typeOf = (n: unknown): string => {
  const t = (n as G)['$type'];
  if (typeof t === 'string') {
    const i = t.lastIndexOf('*');
    return i >= 0 ? t.slice(i + 1) : t.slice(t.lastIndexOf('.') + 1);
  }
  return syntax.NodeType(n);
};

// Operator enums are numbers whose values changed between mvdan/sh releases: learn them once by
// parsing samples whose operators are known.
const BIN_OPS = new Map<number, string>();
const REDIR_OPS = new Map<number, string>();
const PARAM_OPS = new Map<number, string>();
const PROC_OPS = new Map<number, string>();
function calibrate(): void {
  const raw = (src: string): G => parser.Parse(src, '') as G;
  for (const op of ['&&', '||', '|', '|&']) {
    const cmd = field(list(raw(`a ${op} b`), 'Stmts')[0]!, 'Cmd')!;
    BIN_OPS.set(num(cmd, 'Op'), op);
  }
  for (const op of ['>', '>>', '<', '<>', '>&', '<&', '>|', '&>', '&>>', '<<<']) {
    const r = list(list(raw(`a ${op} b`), 'Stmts')[0]!, 'Redirs')[0]!;
    REDIR_OPS.set(num(r, 'Op'), op);
  }
  for (const op of ['<<', '<<-']) {
    const r = list(list(raw(`a ${op}E\nE\n`), 'Stmts')[0]!, 'Redirs')[0]!;
    REDIR_OPS.set(num(r, 'Op'), op);
  }
  for (const op of [':-', '-', ':=', '=', ':+', '+', ':?', '?', '##', '#', '%%', '%', '^^', '^', ',,', ',', '@']) {
    const cmd = field(list(raw(`echo \${a${op}Q}`), 'Stmts')[0]!, 'Cmd')!;
    const pe = list(list(cmd, 'Args')[1]!, 'Parts')[0]!;
    PARAM_OPS.set(num(field(pe, 'Exp')!, 'Op'), op);
  }
  for (const op of ['<(', '>(']) {
    const cmd = field(list(raw(`echo ${op}a)`), 'Stmts')[0]!, 'Cmd')!;
    PROC_OPS.set(num(list(list(cmd, 'Args')[1]!, 'Parts')[0]!, 'Op'), op);
  }
}
calibrate();

// ---------------------------------------------------------------------------------------------------
// Conversion

class Converter {
  constructor(private readonly text: string) {}

  stmts(ns: G[]): Stmt[] {
    return ns.map((n) => this.stmt(n));
  }

  stmt(n: G): Stmt {
    const cmd = field(n, 'Cmd');
    return {
      cmd: cmd ? this.command(cmd) : null,
      redirs: list(n, 'Redirs').map((r) => this.redirect(r)),
      background: bool(n, 'Background'),
      negated: bool(n, 'Negated'),
    };
  }

  redirect(r: G): Redirect {
    const n = field(r, 'N');
    const w = field(r, 'Word');
    const h = field(r, 'Hdoc');
    return {
      op: REDIR_OPS.get(num(r, 'Op')) ?? '?',
      fd: n ? str(n, 'Value') : null,
      word: w ? this.word(w) : null,
      hdoc: h ? this.word(h, true) : null,
    };
  }

  command(n: G): Command {
    const type = typeOf(n);
    switch (type) {
      case 'CallExpr':
        return { k: 'call', assigns: list(n, 'Assigns').map((a) => this.assign(a)), args: this.words(list(n, 'Args')) };
      case 'BinaryCmd': {
        const op = BIN_OPS.get(num(n, 'Op'));
        if (!op) return { k: 'unsupported', type: 'BinaryCmd' };
        return { k: 'binary', op: op as '&&' | '||' | '|' | '|&', x: this.stmt(field(n, 'X')!), y: this.stmt(field(n, 'Y')!) };
      }
      case 'Subshell':
        return { k: 'group', subshell: true, stmts: this.stmts(list(n, 'Stmts')) };
      case 'Block':
        return { k: 'group', subshell: false, stmts: this.stmts(list(n, 'Stmts')) };
      case 'IfClause': {
        const els = field(n, 'Else');
        // biome-ignore lint/suspicious/noThenProperty: the syntax tree's if-node names its branch `then`, as the shell does; it is never awaited.
        return { k: 'if', cond: this.stmts(list(n, 'Cond')), then: this.stmts(list(n, 'Then')), else: els ? this.command(els) : null };
      }
      case 'WhileClause':
        return { k: 'while', until: bool(n, 'Until'), cond: this.stmts(list(n, 'Cond')), body: this.stmts(list(n, 'Do')) };
      case 'ForClause': {
        const loop = field(n, 'Loop')!;
        const body = this.stmts(list(n, 'Do'));
        if (typeOf(loop) === 'WordIter') {
          const items = loop['Items'] == null ? null : this.words(list(loop, 'Items'));
          return { k: 'for', name: str(field(loop, 'Name'), 'Value'), items, cstyle: null, infinite: false, body };
        }
        return { k: 'for', name: null, items: null, cstyle: this.innerWords(loop), infinite: loop['Cond'] == null, body };
      }
      case 'CaseClause':
        return {
          k: 'case',
          word: this.word(field(n, 'Word')!),
          items: list(n, 'Items').map((it) => ({ patterns: this.words(list(it, 'Patterns')), stmts: this.stmts(list(it, 'Stmts')) })),
        };
      case 'FuncDecl':
        return { k: 'func', name: str(field(n, 'Name'), 'Value'), body: this.stmt(field(n, 'Body')!) };
      case 'DeclClause':
        return { k: 'decl', variant: str(field(n, 'Variant'), 'Value'), args: list(n, 'Args').map((a) => this.assign(a)) };
      case 'TestClause':
      case 'ArithmCmd':
      case 'LetClause':
        return { k: 'words', what: type, words: this.innerWords(n) };
      case 'TimeClause': {
        const s = field(n, 'Stmt');
        return { k: 'time', stmt: s ? this.stmt(s) : null };
      }
      case 'CoprocClause':
        return { k: 'coproc', stmt: this.stmt(field(n, 'Stmt')!) };
      default:
        return { k: 'unsupported', type };
    }
  }

  assign(a: G): Assign {
    const value = field(a, 'Value');
    const arr = field(a, 'Array');
    const index = field(a, 'Index');
    return {
      name: str(field(a, 'Name'), 'Value'),
      append: bool(a, 'Append'),
      naked: bool(a, 'Naked'),
      value: value ? this.word(value) : null,
      array: arr ? list(arr, 'Elems').flatMap((e) => (field(e, 'Value') ? [this.word(field(e, 'Value')!)] : [])) : null,
      inner: index ? this.innerWords(index) : [],
    };
  }

  words(ns: G[]): Word[] {
    return ns.map((w) => this.word(w));
  }

  word(w: G, hdoc = false): Word {
    let node = w;
    // Positions cost a Go->JS wrapper each: the source text is read only when asked for.
    const text = this.text;
    let src: string | undefined;
    // Brace expansion ({a,b}, {1..3}) is bash's, done by the evaluator on the split form.
    if (!hdoc && list(w, 'Parts').some((p) => typeOf(p) === 'Lit' && str(p, 'Value').includes('{'))) {
      node = obj(syntax.SplitBraces(w)) ?? w;
    }
    return {
      parts: this.parts(list(node, 'Parts'), hdoc),
      get src(): string {
        src ??= text.slice(posOf(w), endOf(w));
        return src;
      },
    };
  }

  parts(ps: G[], dq: boolean): Part[] {
    return ps.map((p) => this.part(p, dq));
  }

  part(p: G, dq: boolean): Part {
    const type = typeOf(p);
    switch (type) {
      case 'Lit':
        return { t: 'lit', v: str(p, 'Value'), dq };
      case 'SglQuoted':
        return { t: 'sq', v: str(p, 'Value'), ansi: bool(p, 'Dollar') };
      case 'DblQuoted':
        return { t: 'dq', parts: this.parts(list(p, 'Parts'), true) };
      case 'ParamExp': {
        const exp = field(p, 'Exp');
        const repl = field(p, 'Repl');
        const index = field(p, 'Index');
        const slice = field(p, 'Slice');
        const inner = [...(index ? this.innerWords(index) : []), ...(slice ? this.innerWords(slice) : [])];
        let indexWord: Word | null = null;
        if (index && typeOf(index) === 'Word') indexWord = this.word(index);
        const opaque = bool(p, 'Length') || bool(p, 'Excl') || bool(p, 'Width') || (p['Names'] !== 0 && p['Names'] != null) || slice != null;
        return {
          t: 'param',
          name: str(field(p, 'Param'), 'Value'),
          op: exp ? (PARAM_OPS.get(num(exp, 'Op')) ?? '?') : null,
          arg: exp && field(exp, 'Word') ? this.word(field(exp, 'Word')!) : null,
          repl: repl
            ? { all: bool(repl, 'All'), orig: this.word(field(repl, 'Orig')!), with: field(repl, 'With') ? this.word(field(repl, 'With')!) : null }
            : null,
          opaque: opaque || (index != null && indexWord == null),
          index: indexWord,
          inner,
        };
      }
      case 'CmdSubst':
        return { t: 'cmdsubst', stmts: this.stmts(list(p, 'Stmts')) };
      case 'ProcSubst':
        return { t: 'procsubst', op: (PROC_OPS.get(num(p, 'Op')) ?? '<(') as '<(' | '>(', stmts: this.stmts(list(p, 'Stmts')) };
      case 'ArithmExp':
        return { t: 'arith', inner: this.innerWords(p) };
      case 'ExtGlob':
        return { t: 'extglob', src: this.text.slice(posOf(p), endOf(p)) };
      case 'BraceExp':
        return { t: 'brace', seq: bool(p, 'Sequence'), elems: this.words(list(p, 'Elems')) };
      default:
        // Unknown word part: keep it as an unknowable substitution-free value.
        return { t: 'extglob', src: this.text.slice(posOf(p), endOf(p)) };
    }
  }

  /** Every Word directly inside an opaque construct (test, arithmetic, index), not descending into it. */
  innerWords(n: G): Word[] {
    const out: Word[] = [];
    syntax.Walk(n, (child) => {
      if (child == null || child === n) return true;
      if (typeOf(child) === 'Word') {
        out.push(this.word(child as G));
        return false;
      }
      return true;
    });
    return out;
  }
}

// Bytes after which bash starts a new word (its metacharacters), so a `#` there opens a comment. Not `)`:
// after `$(x)` or `$((1))` the word goes on; `(a)#c` is refused too (fail closed, nobody writes it).
const WORD_START_AFTER = new Set([...' \t\n;&|(<>'].map((c) => c.charCodeAt(0)));

/**
 * mvdan/sh opens a comment at a `#` that follows a closing quote, an expansion or a substitution
 * (`echo "x"#; rm -rf /`, `$v#`, `$(x)#`, `` `x`# ``), where bash reads the `#` as part of the word and
 * runs what follows. Any comment mvdan reports whose `#` is not at the start of a word (start of text or
 * after a metacharacter) is a disagreement with bash: the text is refused as unparseable.
 * Offsets are UTF-8 byte offsets.
 */
function misreadComment(text: string): string | null {
  if (!text.includes('#')) return null;
  let file: unknown;
  try {
    file = commentParser.Parse(text, '');
  } catch {
    return null; // the main parse reports the error
  }
  const bytes = Buffer.from(text, 'utf8');
  let bad: number | null = null;
  syntax.Walk(file, (node) => {
    if (bad !== null || node == null || typeOf(node) !== 'Comment') return bad === null;
    const at = ((node as G)['Hash'] as GoPos).Offset();
    const before = at > 0 ? bytes[at - 1] : undefined;
    if (bytes[at] !== 0x23 || (before !== undefined && !WORD_START_AFTER.has(before))) bad = at;
    return bad === null;
  });
  if (bad === null) return null;
  const upto = bytes.subarray(0, bad).toString('utf8');
  const line = upto.split('\n').length;
  const col = upto.length - upto.lastIndexOf('\n');
  return `${line}:${col}: "#" inside a word is not a comment in bash (bash runs what follows it)`;
}

/** Parse `text` as bash. Never throws; `ok: false` carries the parser's message. */
export function parseShell(text: string): ParseResult {
  let file: G;
  try {
    file = parser.Parse(text, '') as G;
  } catch (err) {
    const e = err as { Error?: () => string; message?: string };
    const msg = typeof e?.Error === 'function' ? e.Error() : String(e?.message ?? err);
    return { ok: false, error: msg };
  }
  const misread = misreadComment(text);
  if (misread !== null) return { ok: false, error: misread };
  try {
    return { ok: true, script: { stmts: new Converter(text).stmts(list(file, 'Stmts')), text } };
  } catch (err) {
    return { ok: false, error: `could not read the syntax tree: ${(err as Error).message}` };
  }
}
