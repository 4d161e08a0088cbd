/**
 * Pure helpers of the evaluator: the bound on alternatives, quote removal, $'...' decoding, the glob
 * patterns of ${x#pat} / ${x/pat/rep}, and brace expansion ({a,b}, {1..3}).
 *
 * Contract: no state; a result with more than `MAX_ALTS` alternatives throws `TooComplex`, which the
 * evaluator turns into `ScriptFacts.tooComplex` (callers deny).
 */
import type { Part, Word } from '../syntax/tree.js';
import { MARK } from './facts.js';

export const MAX_ALTS = 64;
export class TooComplex extends Error {}

export const SPECIAL_PARAM = /^([0-9]+|[@*#?$!-])$/;
export const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const shellQuote = (v: string): string => `'${v.replace(/'/g, `'\\''`)}'`;

export function uniq(xs: string[]): string[] {
  const out = [...new Set(xs)];
  if (out.length > MAX_ALTS) throw new TooComplex();
  return out;
}

export function product<T>(lists: T[][]): T[][] {
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
export function unquoteLit(v: string): string {
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
export function unquoteDq(v: string): string {
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

export function trimPattern(v: string, op: string, pattern: string): string {
  const re = globToRegex(pattern);
  const n = v.length;
  if (op === '#') for (let i = 0; i <= n; i++) if (re.test(v.slice(0, i))) return v.slice(i);
  if (op === '##') for (let i = n; i >= 0; i--) if (re.test(v.slice(0, i))) return v.slice(i);
  if (op === '%') for (let i = n; i >= 0; i--) if (re.test(v.slice(i))) return v.slice(0, i);
  if (op === '%%') for (let i = 0; i <= n; i++) if (re.test(v.slice(i))) return v.slice(0, i);
  return v;
}

export function replacePattern(v: string, orig: string, rep: string, all: boolean): string {
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
export function braceSplit(parts: Part[]): Part[][] {
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
