/**
 * Repairs for the places where tree-sitter-bash reads bash differently from bash, used by ./tree-sitter.ts.
 * Each one either rebuilds bash's reading from what tree-sitter gave, or says it cannot (the glue refuses).
 *
 * Contract:
 * - `masked(text)`: the text tree-sitter parses. Same length as `text`, with only two kinds of change
 *   that steer tree-sitter's shape to bash's: a `{` that starts a word and is not the group keyword
 *   (`{rm,-rf,/}`) becomes `_`, and `<>` becomes `>>` (its positions are returned, so the glue reads the
 *   operator back as `<>`). The glue reads every word's text from the original, never from the mask.
 * - `buildList(items)`: operands and operators in source order -> bash's tree (pipes bind tighter than
 *   && and ||, all left to right; `time` at the head of a pipeline times the whole pipeline); null when
 *   the sequence is not operand (operator operand)*.
 * - `delimiterParts`, `backquotes`, `splitBraces`: word-level readings; null = not readable (refuse).
 * - `hasLooseExpansion`: true when literal text of an expanding context still holds an expansion (refuse).
 */
import type { Command, Part, Stmt, Word } from './tree.js';

export const lit = (v: string, dq: boolean): Part => ({ t: 'lit', v, dq });
export const word = (parts: Part[], src: string): Word => ({ parts, src });

/** Words bash only accepts as keywords: as a plain command name tree-sitter got the syntax wrong. */
export const RESERVED = new Set([
  '{',
  '}',
  '!',
  '[[',
  ']]',
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'case',
  'esac',
  'while',
  'until',
  'for',
  'in',
  'select',
  'function',
  'time',
  'coproc',
]);

/** The text tree-sitter parses (see the contract) and where `<>` was. */
export function masked(text: string): { text: string; readWrite: Set<number> } {
  const readWrite = new Set<number>();
  const out = text
    // bash's `{` keyword is a word of its own; `{a,b}` at a word start is a brace expansion
    .replace(/(^|[\s;&|()])\{(?=[^\s;&|()<>])/g, '$1_')
    .replace(/(?<!<)<>/g, (_m, at: number) => {
      readWrite.add(at);
      return '>>';
    });
  return { text: out, readWrite };
}

type ListOp = '&&' | '||' | '|' | '|&';
export type ListItem = Stmt | ListOp;

const stmtOf = (cmd: Command): Stmt => ({ cmd, redirs: [], background: false, negated: false });

/** A statement that is a bare binary (no redirect, negation or `&` of its own) back into its sequence. */
export function listItems(s: Stmt): ListItem[] {
  const c = s.cmd;
  if (c?.k !== 'binary' || s.redirs.length > 0 || s.negated || s.background) return [s];
  return [...listItems(c.x), c.op, ...listItems(c.y)];
}

export function buildList(items: ListItem[]): Stmt | null {
  if (items.length % 2 === 0) return null;
  for (let i = 0; i < items.length; i++) if ((typeof items[i] === 'string') !== (i % 2 === 1)) return null;
  const pipeline = (from: number, to: number): Stmt => {
    let head = items[from] as Stmt;
    // `time a | b` times the pipeline: bash's tree is time { a | b }
    const timed = to > from + 1 && head.cmd?.k === 'time' && head.cmd.stmt !== null && head.redirs.length === 0 && !head.negated;
    if (timed && head.cmd?.k === 'time') head = head.cmd.stmt!;
    let x = head;
    for (let i = from + 1; i < to; i += 2) x = stmtOf({ k: 'binary', op: items[i] as ListOp, x, y: items[i + 1] as Stmt });
    return timed ? stmtOf({ k: 'time', stmt: x }) : x;
  };
  let out: Stmt | null = null;
  let op: ListOp | null = null;
  let start = 0;
  for (let i = 1; i <= items.length; i += 2) {
    const o = items[i] as ListOp | undefined;
    if (o === '|' || o === '|&') continue;
    const p = pipeline(start, i);
    out = out === null ? p : stmtOf({ k: 'binary', op: op!, x: out, y: p });
    op = o ?? null;
    start = i + 1;
  }
  return out;
}

/** The parts of a heredoc delimiter as written (`'EOF'`, `"EOF"`, `E'O'F`, `\EOF`), as the evaluator needs them. */
export function delimiterParts(src: string): Part[] | null {
  const out: Part[] = [];
  let buf = '';
  const flush = (): void => {
    if (buf !== '') out.push(lit(buf, false));
    buf = '';
  };
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === "'" || c === '"') {
      const end = src.indexOf(c, i + 1);
      if (end < 0) return null;
      const inner = src.slice(i + 1, end);
      if (c === '"' && /[\\$`]/.test(inner)) return null;
      flush();
      out.push(c === "'" ? { t: 'sq', v: inner, ansi: false } : { t: 'dq', parts: inner === '' ? [] : [lit(inner, true)] });
      i = end;
    } else if (c === '\\') {
      buf += src.slice(i, i + 2);
      i++;
    } else if (c === '$' || c === '`') return null;
    else buf += c;
  }
  flush();
  return out;
}

/**
 * `...` inside the literal text of an unquoted heredoc (tree-sitter leaves it as text; bash runs it):
 * the text split into literal pieces and the inner command texts (bash's backquote escapes removed).
 * null when a backquote is not closed in the same piece of text.
 */
export function backquotes(v: string): (string | { cmd: string })[] | null {
  const out: (string | { cmd: string })[] = [];
  let buf = '';
  for (let i = 0; i < v.length; i++) {
    const c = v[i]!;
    if (c === '\\') {
      buf += v.slice(i, i + 2);
      i++;
      continue;
    }
    if (c !== '`') {
      buf += c;
      continue;
    }
    let j = i + 1;
    while (j < v.length && v[j] !== '`') j += v[j] === '\\' ? 2 : 1;
    if (j >= v.length) return null;
    if (buf !== '') out.push(buf);
    buf = '';
    out.push({ cmd: v.slice(i + 1, j).replace(/\\([$`\\])/g, '$1') });
    i = j;
  }
  if (buf !== '') out.push(buf);
  return out;
}

/**
 * Literal text that still holds an unescaped expansion (`$x`, `${`, `$(`) or a backquote: one tree-sitter
 * did not parse (its heredoc scanner leaves a body whose first line starts with a blank as plain text).
 */
export function hasLooseExpansion(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v[i]!;
    if (c === '\\') i++;
    else if (c === '`') return true;
    else if (c === '$' && /[A-Za-z_{(0-9@*#?$!-]/.test(v[i + 1] ?? '')) return true;
  }
  return false;
}

/** bash's brace expansion ({a,b}, {a..c}) read from the unquoted literals of a word. */
export function splitBraces(parts: Part[]): Part[] {
  if (!parts.some((p) => p.t === 'lit' && !p.dq && p.v.includes('{'))) return parts;
  // One token per character of unquoted literal text, other parts as they are.
  type Tok = { c: string } | { p: Part };
  const toks: Tok[] = [];
  for (const p of parts) {
    if (p.t === 'lit' && !p.dq) {
      for (let i = 0; i < p.v.length; i++) {
        // a backslash keeps the next character literal
        if (p.v[i] === '\\' && i + 1 < p.v.length) {
          toks.push({ p: lit(p.v.slice(i, i + 2), false) });
          i++;
        } else toks.push({ c: p.v[i]! });
      }
    } else toks.push({ p });
  }
  const toParts = (ts: Tok[]): Part[] => {
    const out: Part[] = [];
    for (const t of ts) {
      const p = 'c' in t ? lit(t.c, false) : t.p;
      const last = out[out.length - 1];
      if (p.t === 'lit' && last?.t === 'lit' && last.dq === p.dq) out[out.length - 1] = lit(last.v + p.v, p.dq);
      else out.push(p);
    }
    return out;
  };
  const src = (ts: Tok[]): string => ts.map((t) => ('c' in t ? t.c : t.p.t === 'lit' ? t.p.v : '')).join('');
  const parse = (ts: Tok[]): Part[] => {
    const out: Part[] = [];
    let i = 0;
    while (i < ts.length) {
      const t = ts[i]!;
      if (!('c' in t) || t.c !== '{') {
        out.push(...toParts([t]));
        i++;
        continue;
      }
      // find the matching } and the top-level commas
      let depth = 0;
      const commas: number[] = [];
      let end = -1;
      for (let j = i; j < ts.length; j++) {
        const u = ts[j]!;
        if (!('c' in u)) continue;
        if (u.c === '{') depth++;
        else if (u.c === '}' && --depth === 0) {
          end = j;
          break;
        } else if (u.c === ',' && depth === 1) commas.push(j);
      }
      const inside = end < 0 ? [] : ts.slice(i + 1, end);
      if (end >= 0 && commas.length > 0) {
        const bounds = [i, ...commas, end];
        const elems = bounds.slice(0, -1).map((b, k) => {
          const e = ts.slice(b + 1, bounds[k + 1]);
          return word(parse(e), src(e));
        });
        out.push({ t: 'brace', seq: false, elems });
        i = end + 1;
        continue;
      }
      const seq = end >= 0 && inside.every((u) => 'c' in u) ? /^([^.{}]+)\.\.([^.{}]+)(?:\.\.([^.{}]+))?$/.exec(src(inside)) : null;
      if (seq) {
        const elems = seq.slice(1).flatMap((v) => (v === undefined ? [] : [word([lit(v, false)], v)]));
        out.push({ t: 'brace', seq: true, elems });
        i = end + 1;
        continue;
      }
      out.push(lit('{', false));
      i++;
    }
    return toParts(out.map((p) => ({ p })));
  };
  return parse(toks);
}
