/**
 * Word expansion, as bash does it: quotes, parameters (with their operators), command and process
 * substitutions (whose commands are walked too), arithmetic, globs and brace expansion.
 *
 * Contract: `expandFields` gives every possible field list of a word (split, globs marked);
 * `expandString` every possible string (no splitting: assignment values, redirect targets, heredocs).
 * Whatever cannot be known stays a marker; a substitution sets `hasSubstitution` and `structure`.
 */
import type { Part, Stmt, Word } from '../syntax/tree.js';
import { MARK, isStatic } from './facts.js';
import { type Ctx, EvalState, topCtx } from './state.js';
import { MAX_ALTS, SPECIAL_PARAM, TooComplex, braceSplit, decodeAnsiC, product, replacePattern, trimPattern, uniq, unquoteDq, unquoteLit } from './values.js';

interface St {
  fields: string[];
  cur: string | null;
}

function isMktempStmt(s: Stmt): boolean {
  const c = s.cmd;
  if (c?.k !== 'call' || s.redirs.length > 0 || c.assigns.length > 0) return false;
  const first = c.args[0];
  return first !== undefined && first.parts.length === 1 && first.parts[0]!.t === 'lit' && first.parts[0]!.v === 'mktemp';
}

/** `$(mktemp ...)` or "$(mktemp ...)" as the whole value. */
export function isMktemp(w: Word): boolean {
  let parts = w.parts;
  if (parts.length === 1 && parts[0]!.t === 'dq') parts = parts[0]!.parts;
  return parts.length === 1 && parts[0]!.t === 'cmdsubst' && parts[0]!.stmts.length === 1 && isMktempStmt(parts[0]!.stmts[0]!);
}

export abstract class WordExpander extends EvalState {
  /** Walks statements (a substitution's commands); the statement walker implements it. */
  abstract stmts(stmts: Stmt[], ctx: Ctx): void;

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

  protected expandStringQuiet(w: Word): string[] {
    const ctx: Ctx = { ...topCtx(), conditional: true };
    const before = this.facts.sites.length;
    const out = this.expandString(w, ctx, true);
    // Substitutions in the heredoc were already walked by `redirect`: drop the duplicates.
    this.facts.sites.length = before;
    return out;
  }

  protected expandParts(parts: Part[], ctx: Ctx, quoted: boolean): string[][] {
    const states = this.expandInto([{ fields: [], cur: null }], parts, ctx, quoted);
    return states.map((s) => (s.cur !== null ? [...s.fields, s.cur] : s.fields));
  }

  protected expandInto(initial: St[], parts: Part[], ctx: Ctx, quoted: boolean): St[] {
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
          this.arithmetic(
            p.inner.map((w) => w.src),
            ctx,
          );
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

  protected param(p: Extract<Part, { t: 'param' }>, ctx: Ctx): string[] {
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
