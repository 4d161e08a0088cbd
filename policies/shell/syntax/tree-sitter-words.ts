/**
 * The word half of the tree-sitter glue: tree-sitter-bash's word nodes (literals, quotes, expansions,
 * substitutions, brace expressions), assignments and the words inside [ ], [[ ]], (( )) and indexes, read
 * into the parts of ./tree.ts. ./tree-sitter.ts builds the statements on top of it.
 *
 * Contract: every text is read from the original command (`src`), never from tree-sitter's mask; a node
 * kind or an expansion form not mapped here throws `Refused` (the glue turns it into `ok: false`).
 */
import type { Node } from 'web-tree-sitter';
import { backquotes, hasLooseExpansion, lit, splitBraces, word } from './tree-sitter-repair.js';
import type { Assign, Part, Stmt, Word } from './tree.js';

/** tree-sitter's reading is not bash's, or is one this glue does not map: the text is refused. */
export class Refused extends Error {}

export const refuse = (n: Node, why: string): never => {
  throw new Refused(`${n.startPosition.row + 1}:${n.startPosition.column + 1}: ${why}`);
};

export const named = (n: Node): Node[] => n.namedChildren.filter((c): c is Node => c !== null && c.type !== 'comment');
export const all = (n: Node): Node[] => n.children.filter((c): c is Node => c !== null);
/** web-tree-sitter hands out a new wrapper per access: compare by node id. */
export const same = (a: Node, b: Node | null): boolean => b !== null && a.id === b.id;

const PARAM_OPS = new Set([':-', '-', ':=', '=', ':+', '+', ':?', '?', '##', '#', '%%', '%', '^^', '^', ',,', ',', '@']);

export abstract class WordReader {
  /** `text` is what the user wrote; tree-sitter parsed its mask (same length; see ./tree-sitter-repair.ts). */
  constructor(protected readonly text: string) {}

  /** Statements of a body (a command or process substitution's); the statement half implements it. */
  abstract body(nodes: Node[]): Stmt[];

  /** The statements of `text` parsed on its own (a nested substitution's inner text); refused if it does not parse. */
  abstract reparse(at: Node, text: string): Stmt[];

  /** A node's text, from the original (never the mask). */
  src(n: Node): string {
    return this.text.slice(n.startIndex, n.endIndex);
  }

  srcOpt(n: Node | null): string | undefined {
    return n ? this.src(n) : undefined;
  }

  /** The named children of a bracketed node, without its brackets. */
  inner(n: Node, open: string, close: string): Node[] {
    return all(n).filter((c) => c.type !== open && c.type !== close);
  }

  assign(a: Node): Assign {
    const nameNode = a.childForFieldName('name') ?? refuse(a, 'assignment without a name');
    const value = a.childForFieldName('value');
    const append = all(a).some((c) => c.type === '+=');
    let name = this.src(nameNode);
    let inner: Word[] = [];
    if (nameNode.type === 'subscript') {
      name = this.srcOpt(nameNode.childForFieldName('name')) ?? refuse(a, 'subscript without a name');
      const index = nameNode.childForFieldName('index');
      inner = index ? this.innerWords(index) : [];
    } else if (nameNode.type !== 'variable_name') refuse(a, `assignment to "${nameNode.type}"`);
    if (value?.type === 'array') {
      return { name, append, naked: false, value: null, array: named(value).map((e) => this.word(e)), inner };
    }
    return { name, append, naked: false, value: value ? this.word(value) : null, array: null, inner };
  }

  declArg(a: Node): Assign {
    if (a.type === 'variable_assignment') return this.assign(a);
    if (a.type === 'variable_name') return { name: this.src(a), append: false, naked: true, value: null, array: null, inner: [] };
    return { name: '', append: false, naked: true, value: this.word(a), array: null, inner: [] };
  }

  /** The words of `[ ... ]` in source order: operands, and operators as literal words. */
  testWords(n: Node): Word[] {
    const out: Word[] = [];
    const visit = (c: Node): void => {
      if (c.type === 'binary_expression' || c.type === 'unary_expression' || c.type === 'parenthesized_expression') {
        for (const k of all(c)) visit(k);
        return;
      }
      if (c.type === '[' || c.type === ']') return;
      if (!c.isNamed || c.type === 'test_operator') {
        out.push(word([lit(this.src(c), false)], this.src(c)));
        return;
      }
      out.push(this.word(c));
    };
    for (const c of all(n)) visit(c);
    return out;
  }

  word(n: Node, dq = false): Word {
    const parts = this.parts(n, dq);
    return word(dq ? parts : splitBraces(parts), this.src(n));
  }

  parts(n: Node, dq: boolean): Part[] {
    switch (n.type) {
      case 'extglob_pattern':
      case 'regex':
        // `${x#$(cmd)}`: tree-sitter reads the pattern as a regex and leaves the substitution in it
        if (hasLooseExpansion(this.src(n))) refuse(n, 'an expansion that tree-sitter left in a pattern');
        return [lit(this.src(n), dq)];
      case 'word': {
        // `${x:-`cmd`}`: tree-sitter leaves the backquotes in a word; bash runs them
        const text = this.src(n);
        if (!hasLooseExpansion(text)) return [lit(text, dq)];
        const pieces = backquotes(text) ?? refuse(n, 'an unclosed backquote');
        const parts = pieces.map((x): Part => (typeof x === 'string' ? lit(x, dq) : { t: 'cmdsubst', stmts: this.reparse(n, x.cmd) }));
        if (parts.some((p) => p.t === 'lit' && hasLooseExpansion(p.v))) refuse(n, 'an expansion that tree-sitter left in a word');
        return parts;
      }
      case 'number':
      case 'string_content':
      case 'heredoc_content':
      case 'variable_name':
        return [lit(this.src(n), dq)];
      case 'concatenation':
        return this.gaps(n, n.startIndex, n.endIndex, dq);
      case 'string': {
        if (this.src(n).startsWith('$"')) refuse(n, 'translated string');
        const parts = this.gaps(n, n.startIndex + 1, n.endIndex - 1, true);
        if (parts.some((p) => p.t === 'lit' && hasLooseExpansion(p.v))) refuse(n, 'an expansion in a string that tree-sitter did not parse');
        return [{ t: 'dq', parts }];
      }
      case 'raw_string':
        return [{ t: 'sq', v: this.src(n).slice(1, -1), ansi: false }];
      case 'ansi_c_string':
        return [{ t: 'sq', v: this.src(n).slice(2, -1), ansi: true }];
      case 'simple_expansion': {
        const v = named(n)[0] ?? refuse(n, 'empty expansion');
        return [{ t: 'param', name: this.src(v), op: null, arg: null, repl: null, opaque: false, index: null, inner: [] }];
      }
      case 'expansion':
        return [this.expansion(n, dq)];
      case 'command_substitution': {
        // inside `...`, \` \$ \\ are bash's escapes (a nested substitution): tree-sitter keeps them in the
        // words, so the inner text is read again with them taken out
        const inner = this.src(n).slice(1, -1);
        if (all(n)[0]?.type === '`' && /\\[`$\\]/.test(inner)) return [{ t: 'cmdsubst', stmts: this.reparse(n, inner.replace(/\\([$`\\])/g, '$1')) }];
        return [{ t: 'cmdsubst', stmts: this.body(all(n).filter((c) => c.type !== '$(' && c.type !== ')' && c.type !== '`')) }];
      }
      case 'process_substitution': {
        const op = all(n)[0]!.type;
        if (op !== '<(' && op !== '>(') refuse(n, `process substitution "${op}"`);
        return [{ t: 'procsubst', op: op as '<(' | '>(', stmts: this.body(this.inner(n, op, ')')) }];
      }
      case 'arithmetic_expansion':
        return [{ t: 'arith', inner: named(n).flatMap((c) => this.innerWords(c)) }];
      case 'brace_expression': {
        const elems = named(n).map((c) => word([lit(this.src(c), false)], this.src(c)));
        return [{ t: 'brace', seq: true, elems }];
      }
      default:
        return refuse(n, `unsupported word "${n.type}"`);
    }
  }

  /** Parts of the named children inside [from, to), the text between them as literals. */
  gaps(n: Node, from: number, to: number, dq: boolean): Part[] {
    const out: Part[] = [];
    let at = from;
    for (const c of named(n)) {
      // inside "...", tree-sitter starts a `${` or `$(` token at the blank before it: the blank is text
      // (a text node keeps its own blanks)
      const text = c.type === 'string_content' || c.type === 'heredoc_content';
      const start = c.startIndex + (text ? 0 : this.src(c).length - this.src(c).trimStart().length);
      if (start > at) out.push(lit(this.text.slice(at, start), dq));
      out.push(...this.parts(c, dq));
      at = c.endIndex;
    }
    if (to > at) out.push(lit(this.text.slice(at, to), dq));
    // adjacent literals are one literal
    return out.reduce<Part[]>((acc, p) => {
      const last = acc[acc.length - 1];
      if (p.t === 'lit' && last?.t === 'lit' && last.dq === p.dq) acc[acc.length - 1] = lit(last.v + p.v, p.dq);
      else acc.push(p);
      return acc;
    }, []);
  }

  /** ${...}: only the forms whose reading is certain; the rest is refused. */
  expansion(n: Node, dq: boolean): Part {
    const kids = all(n).filter((c) => c.type !== '${' && c.type !== '}');
    const param: Part & { t: 'param' } = { t: 'param', name: '', op: null, arg: null, repl: null, opaque: false, index: null, inner: [] };
    let i = 0;
    if (kids[i] && (kids[i]!.type === '#' || kids[i]!.type === '!')) {
      param.opaque = true;
      i++;
    }
    const v = kids[i++] ?? refuse(n, 'empty ${}');
    if (v.type === 'variable_name' || v.type === 'special_variable_name') param.name = this.src(v);
    else if (v.type === 'subscript') {
      param.name = this.srcOpt(v.childForFieldName('name')) ?? refuse(v, 'subscript without a name');
      const index = v.childForFieldName('index');
      if (index) {
        param.inner = this.innerWords(index);
        if (index.type === 'word' || index.type === 'number') param.index = this.word(index);
        else param.opaque = true;
      }
    } else refuse(v, `\${} of "${v.type}"`);
    if (i >= kids.length) return param;
    const op = kids[i]!;
    const rest = kids.slice(i + 1);
    const restWord = (nodes: Node[]): Word => {
      if (nodes.length === 0) return word([], '');
      const from = nodes[0]!.startIndex;
      const to = nodes[nodes.length - 1]!.endIndex;
      const parts: Part[] = [];
      for (const c of nodes) {
        // in "${x:-'$(cmd)'}" the quotes are text and bash runs the substitution: not read here
        if (dq && c.type === 'raw_string' && hasLooseExpansion(this.src(c))) refuse(c, 'a \'...\' inside "${...}"');
        parts.push(...(c.isNamed ? this.parts(c, false) : [lit(this.src(c), false)]));
      }
      return word(parts, this.text.slice(from, to));
    };
    if (param.opaque) refuse(op, '${#x...} / ${!x...} with an operator');
    if (op.type === '/' || op.type === '//' || op.type === '/#' || op.type === '/%') {
      const sep = rest.findIndex((c) => c.type === '/');
      const orig = sep < 0 ? rest : rest.slice(0, sep);
      const withNodes = sep < 0 ? null : rest.slice(sep + 1);
      param.repl = { all: op.type === '//', orig: restWord(orig), with: withNodes ? restWord(withNodes) : null };
      return param;
    }
    if (op.type === ':') {
      param.opaque = true;
      param.inner.push(...rest.filter((c) => c.isNamed).flatMap((c) => this.innerWords(c)));
      return param;
    }
    if (!PARAM_OPS.has(op.type)) refuse(op, `\${} operator "${op.type}"`);
    param.op = op.type;
    param.arg = restWord(rest);
    return param;
  }

  /** Every word inside an opaque construct (test, arithmetic, index), not descending into it. */
  innerWords(n: Node): Word[] {
    switch (n.type) {
      case 'word':
      case 'number':
      case 'string':
      case 'raw_string':
      case 'ansi_c_string':
      case 'concatenation':
      case 'simple_expansion':
      case 'expansion':
      case 'command_substitution':
      case 'process_substitution':
      case 'arithmetic_expansion':
      case 'variable_name':
      case 'extglob_pattern':
      case 'regex':
        return [n.type === 'variable_name' ? word([lit(this.src(n), false)], this.src(n)) : this.word(n)];
      default:
        return named(n).flatMap((c) => this.innerWords(c));
    }
  }
}
