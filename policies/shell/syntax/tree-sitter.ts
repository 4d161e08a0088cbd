/**
 * Parser glue: web-tree-sitter with tree-sitter-bash read into the tree of ./tree.ts.
 *
 * Contract: `parseShell(text)` never throws and is synchronous: `{ ok: true, script }` or
 * `{ ok: false, error }`. Callers MUST treat `ok: false` as "deny". The WASM parser loads once through
 * `initTreeSitter()`; until that promise has resolved every parse is `ok: false` (fail closed).
 * tree-sitter is error-tolerant, so a tree with an ERROR or MISSING node, a node kind this module does not
 * map, or a shape where tree-sitter-bash and bash disagree and the fix is not known here, is `ok: false`.
 * Fixed here: a redirect trailing a list or pipeline (`a | b > f`) belongs to the last command, the
 * destinations after the first (`cmd 2>/dev/null x`) are arguments, and `{a,b}` is split into a brace part
 * as mvdan's SplitBraces does.
 */
import { createRequire } from 'node:module';
import { Language, type Node, Parser } from 'web-tree-sitter';
import type { Assign, Command, ParseResult, Part, Redirect, Script, Stmt, Word } from './tree.js';

let parser: Parser | null = null;
let loading: Promise<void> | null = null;

/** Load the WASM runtime and the bash grammar (once). The gate awaits this before its first analysis. */
export function initTreeSitter(): Promise<void> {
  loading ??= (async () => {
    const require = createRequire(import.meta.url);
    await Parser.init();
    const lang = await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'));
    const p = new Parser();
    p.setLanguage(lang);
    parser = p;
  })();
  return loading;
}

/** tree-sitter's reading is not bash's, or is one this module does not map: the text is refused. */
class Refused extends Error {}

const refuse = (n: Node, why: string): never => {
  throw new Refused(`${n.startPosition.row + 1}:${n.startPosition.column + 1}: ${why}`);
};

const named = (n: Node): Node[] => n.namedChildren.filter((c): c is Node => c !== null && c.type !== 'comment');
const all = (n: Node): Node[] => n.children.filter((c): c is Node => c !== null);
/** web-tree-sitter hands out a new wrapper per access: compare by node id. */
const same = (a: Node, b: Node | null): boolean => b !== null && a.id === b.id;
const lit = (v: string, dq: boolean): Part => ({ t: 'lit', v, dq });
const word = (parts: Part[], src: string): Word => ({ parts, src });

const STMT_SEP = new Set([';', '&', ';;', '\n', '&&', '||', '|', '|&']);
const PARAM_OPS = new Set([':-', '-', ':=', '=', ':+', '+', ':?', '?', '##', '#', '%%', '%', '^^', '^', ',,', ',', '@']);
const REDIR_OPS = new Set(['>', '>>', '<', '<>', '>&', '<&', '>|', '&>', '&>>']);

class Converter {
  constructor(private readonly text: string) {}

  /** Statements of a body (program, do_group, compound_statement, ...): `&` after one sends it to the background. */
  body(nodes: Node[]): Stmt[] {
    const out: Stmt[] = [];
    for (const c of nodes) {
      if (c.type === 'comment') continue;
      if (!c.isNamed) {
        if (c.type === '&' && out.length > 0) out[out.length - 1]!.background = true;
        else if (!STMT_SEP.has(c.type)) refuse(c, `unexpected "${c.type}"`);
        continue;
      }
      out.push(this.stmt(c));
    }
    return out;
  }

  stmt(n: Node): Stmt {
    switch (n.type) {
      case 'redirected_statement': {
        const body = n.childForFieldName('body');
        const s: Stmt = body ? this.stmt(body) : { cmd: null, redirs: [], background: false, negated: false };
        // bash applies a redirect written after a list or pipeline to its last command only.
        let target = s;
        while (target.cmd?.k === 'binary') target = target.cmd.y;
        let at = body ? body.endIndex : n.startIndex;
        for (const r of named(n).filter((c) => !same(c, body))) {
          this.strayWords(n, at, r.startIndex, target);
          this.redirect(r, target);
          at = r.endIndex;
        }
        return s;
      }
      case 'negated_command': {
        const inner = named(n);
        if (inner.length !== 1) refuse(n, 'negation of more than one command');
        const s = this.stmt(inner[0]!);
        s.negated = !s.negated;
        return s;
      }
      case 'command':
        return this.call(n);
      default:
        return { cmd: this.command(n), redirs: [], background: false, negated: false };
    }
  }

  /** A redirect node onto `s` (a command's own redirects, or the trailing ones of a redirected statement). */
  redirect(r: Node, s: Stmt): void {
    const fdNode = r.childForFieldName('descriptor');
    const fd = fdNode ? fdNode.text : null;
    // `>& f 0>&1`: tree-sitter reads the 0 as an argument and the redirect without its fd.
    if (fd === null && /(^|\s)\d+$/.test(this.text.slice(0, r.startIndex))) refuse(r, 'a file descriptor read as a word');
    switch (r.type) {
      case 'file_redirect': {
        const op = all(r).find((c) => !c.isNamed)?.type ?? '';
        if (!REDIR_OPS.has(op)) refuse(r, `redirect operator "${op}"`);
        const dests = r.childrenForFieldName('destination').filter((c): c is Node => c !== null);
        if (dests.length === 0) refuse(r, 'redirect without a target');
        s.redirs.push({ op, fd, word: this.word(dests[0]!), hdoc: null });
        // `cmd 2>/dev/null x`: tree-sitter takes x as a second destination; bash passes it as an argument.
        if (dests.length > 1) {
          const cmd = s.cmd;
          if (cmd?.k !== 'call') refuse(r, 'words after a redirect of a compound command');
          else cmd.args.push(...dests.slice(1).map((d) => this.word(d)));
        }
        return;
      }
      case 'herestring_redirect': {
        const w = named(r).filter((c) => !same(c, fdNode));
        if (w.length !== 1) refuse(r, 'here-string without one word');
        s.redirs.push({ op: '<<<', fd, word: this.word(w[0]!), hdoc: null });
        return;
      }
      case 'heredoc_redirect': {
        const op = all(r).find((c) => c.type === '<<' || c.type === '<<-')?.type ?? refuse(r, 'heredoc operator');
        const start = named(r).find((c) => c.type === 'heredoc_start') ?? refuse(r, 'heredoc without a delimiter');
        const redir: Redirect = { op, fd, word: word([lit(start.text, false)], start.text), hdoc: null };
        const body = named(r).find((c) => c.type === 'heredoc_body');
        const quoted = /['"\\]/.test(start.text);
        const bodyText = body ? body.text : '';
        // tree-sitter leaves `...` in an unquoted heredoc as text; bash runs it.
        if (!quoted && bodyText.includes('`')) refuse(r, 'backquotes in a heredoc');
        redir.hdoc = body && !quoted ? word(this.gaps(body, body.startIndex, body.endIndex, true), bodyText) : word([lit(bodyText, true)], bodyText);
        s.redirs.push(redir);
        for (const c of named(r)) {
          if (c.type === 'heredoc_start' || c.type === 'heredoc_body' || c.type === 'heredoc_end' || same(c, fdNode)) continue;
          // `cat <<E > f`: a redirect of the same command; `cat <<E | grep x` nests the pipeline: refused.
          if (c.type === 'file_redirect' || c.type === 'herestring_redirect') this.redirect(c, s);
          else refuse(c, `"${c.type}" on a heredoc line`);
        }
        return;
      }
      default:
        refuse(r, `redirect kind "${r.type}"`);
    }
  }

  command(n: Node): Command {
    switch (n.type) {
      case 'variable_assignment':
        return { k: 'call', assigns: [this.assign(n)], args: [] };
      case 'variable_assignments':
        return { k: 'call', assigns: named(n).map((a) => this.assign(a)), args: [] };
      case 'list':
      case 'pipeline': {
        // `a | b | c` is one flat node; mvdan (and the evaluator) read binaries nested to the left.
        const kids = all(n).filter((c) => c.type !== 'comment');
        let x: Stmt | null = null;
        let op: string | null = null;
        for (const c of kids) {
          if (!c.isNamed) {
            op = c.type;
            continue;
          }
          const s = this.stmt(c);
          if (x === null) x = s;
          else {
            if (op !== '&&' && op !== '||' && op !== '|' && op !== '|&') refuse(c, `list operator "${op}"`);
            x = { cmd: { k: 'binary', op: op as '&&' | '||' | '|' | '|&', x, y: s }, redirs: [], background: false, negated: false };
          }
        }
        if (x === null || x.cmd?.k !== 'binary') return refuse(n, 'list with one command');
        return x.cmd;
      }
      case 'subshell':
        return { k: 'group', subshell: true, stmts: this.body(this.inner(n, '(', ')')) };
      case 'compound_statement':
        return { k: 'group', subshell: false, stmts: this.body(this.inner(n, '{', '}')) };
      case 'if_statement':
        return this.ifClause(all(n));
      case 'while_statement': {
        const kw = all(n)[0]!.type;
        const bodyNode = n.childForFieldName('body') ?? refuse(n, 'loop without a body');
        const cond = all(n).filter((c) => !same(c, bodyNode) && c.type !== kw);
        return { k: 'while', until: kw === 'until', cond: this.body(cond), body: this.doGroup(bodyNode) };
      }
      case 'for_statement': {
        const name = n.childForFieldName('variable')?.text ?? refuse(n, 'for without a name');
        const hasIn = all(n).some((c) => c.type === 'in');
        const items = n.childrenForFieldName('value').filter((c): c is Node => c !== null);
        const bodyNode = n.childForFieldName('body') ?? refuse(n, 'loop without a body');
        if (all(n)[0]!.type !== 'for') refuse(n, 'select loop');
        return { k: 'for', name, items: hasIn ? items.map((w) => this.word(w)) : null, cstyle: null, infinite: false, body: this.doGroup(bodyNode) };
      }
      case 'c_style_for_statement': {
        const bodyNode = n.childForFieldName('body') ?? refuse(n, 'loop without a body');
        const parts = named(n).filter((c) => !same(c, bodyNode));
        return {
          k: 'for',
          name: null,
          items: null,
          cstyle: parts.flatMap((p) => this.innerWords(p)),
          infinite: n.childForFieldName('condition') === null,
          body: this.doGroup(bodyNode),
        };
      }
      case 'case_statement': {
        const value = n.childForFieldName('value') ?? refuse(n, 'case without a word');
        return {
          k: 'case',
          word: this.word(value),
          items: named(n)
            .filter((c) => c.type === 'case_item')
            .map((it) => {
              const patterns = it.childrenForFieldName('value').filter((c): c is Node => c !== null);
              const rest = all(it).filter((c) => !patterns.some((p) => same(p, c)) && c.type !== ')' && c.type !== '(' && c.type !== '|');
              return {
                patterns: patterns.map((p) => this.word(p)),
                stmts: this.body(rest.filter((c) => c.type !== ';;' && c.type !== ';&' && c.type !== ';;&')),
              };
            }),
        };
      }
      case 'function_definition': {
        const name = n.childForFieldName('name')?.text ?? refuse(n, 'function without a name');
        const body = n.childForFieldName('body') ?? refuse(n, 'function without a body');
        const bodyStmt = this.stmt(body);
        const redirect = n.childForFieldName('redirect');
        if (redirect) this.redirect(redirect, bodyStmt);
        return { k: 'func', name, body: bodyStmt };
      }
      case 'declaration_command': {
        const variant = all(n)[0]!.type;
        return { k: 'decl', variant, args: named(n).map((a) => this.declArg(a)) };
      }
      case 'unset_command': {
        const kw = all(n)[0]!;
        return { k: 'call', assigns: [], args: [word([lit(kw.text, false)], kw.text), ...named(n).map((w) => this.word(w))] };
      }
      case 'test_command': {
        const open = all(n)[0]!.type;
        const words = named(n).flatMap((c) => this.innerWords(c));
        if (open === '[[') return { k: 'words', what: 'TestClause', words };
        if (open === '((') return { k: 'words', what: 'ArithmCmd', words };
        if (open !== '[') refuse(n, `test "${open}"`);
        // `[ ... ]` is the command `[`: its words, operators included, in source order.
        return { k: 'call', assigns: [], args: [word([lit('[', false)], '['), ...this.testWords(n), word([lit(']', false)], ']')] };
      }
      default:
        return refuse(n, `unsupported syntax "${n.type}"`);
    }
  }

  /** The named children of a bracketed node, without its brackets. */
  inner(n: Node, open: string, close: string): Node[] {
    return all(n).filter((c) => c.type !== open && c.type !== close);
  }

  doGroup(n: Node): Stmt[] {
    if (n.type === 'do_group') return this.body(this.inner(n, 'do', 'done'));
    return [this.stmt(n)];
  }

  ifClause(kids: Node[]): Command {
    // if COND then BODY [elif ...]* [else ...] fi: tree-sitter lists the elif/else clauses side by side,
    // the tree chains them (each one the `else` of the one before).
    const cond: Node[] = [];
    const body: Node[] = [];
    const clauses: Node[] = [];
    let at: Node[] = cond;
    for (const c of kids) {
      if (c.type === 'if' || c.type === 'elif' || c.type === 'fi') continue;
      if (c.type === 'then') at = body;
      else if (c.type === 'elif_clause' || c.type === 'else_clause') clauses.push(c);
      else at.push(c);
    }
    let els: Command | null = null;
    for (const c of clauses.reverse()) {
      const next =
        c.type === 'elif_clause'
          ? this.ifClause(all(c))
          : this.branch(
              [],
              all(c).filter((x) => x.type !== 'else'),
            );
      if (next.k === 'if') next.else = els;
      els = next;
    }
    const out = this.branch(cond, body);
    if (out.k === 'if') out.else = els;
    return out;
  }

  branch(cond: Node[], body: Node[]): Command {
    // biome-ignore lint/suspicious/noThenProperty: the syntax tree's if-node names its branch `then`, as the shell does; it is never awaited.
    return { k: 'if', cond: this.body(cond), then: this.body(body), else: null };
  }

  /** A simple command: its own redirects (`>f cmd`, `cmd <in`) stay on its statement. */
  call(n: Node): Stmt {
    const assigns: Assign[] = [];
    const args: Word[] = [];
    const s: Stmt = { cmd: { k: 'call', assigns, args }, redirs: [], background: false, negated: false };
    let at = n.startIndex;
    for (const c of named(n)) {
      this.strayWords(n, at, c.startIndex, s);
      at = c.endIndex;
      if (c.type === 'variable_assignment') assigns.push(this.assign(c));
      else if (c.type === 'command_name') args.push(this.word(named(c)[0] ?? refuse(c, 'empty command name')));
      else if (c.type.endsWith('_redirect')) this.redirect(c, s);
      else args.push(this.word(c));
    }
    return s;
  }

  /**
   * Text between two children that tree-sitter left out of every node (`python3 - <<EOF` loses the `-`):
   * plain words are the command's arguments, anything else is refused.
   */
  strayWords(n: Node, from: number, to: number, s: Stmt): void {
    const gap = this.text.slice(from, to).replace(/\\\n/g, ' ').trim();
    if (gap === '') return;
    const cmd = s.cmd;
    if (cmd?.k !== 'call' || !/^[A-Za-z0-9_.\/+=:,@%-]+(\s+[A-Za-z0-9_.\/+=:,@%-]+)*$/.test(gap)) refuse(n, `text outside the syntax tree: "${gap}"`);
    else cmd.args.push(...gap.split(/\s+/).map((v) => word([lit(v, false)], v)));
  }

  assign(a: Node): Assign {
    const nameNode = a.childForFieldName('name') ?? refuse(a, 'assignment without a name');
    const value = a.childForFieldName('value');
    const append = all(a).some((c) => c.type === '+=');
    let name = nameNode.text;
    let inner: Word[] = [];
    if (nameNode.type === 'subscript') {
      name = nameNode.childForFieldName('name')?.text ?? refuse(a, 'subscript without a name');
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
    if (a.type === 'variable_name') return { name: a.text, append: false, naked: true, value: null, array: null, inner: [] };
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
        out.push(word([lit(c.text, false)], c.text));
        return;
      }
      out.push(this.word(c));
    };
    for (const c of all(n)) visit(c);
    return out;
  }

  word(n: Node, dq = false): Word {
    const parts = this.parts(n, dq);
    return word(dq ? parts : splitBraces(parts), n.text);
  }

  parts(n: Node, dq: boolean): Part[] {
    switch (n.type) {
      case 'word':
      case 'number':
      case 'string_content':
      case 'heredoc_content':
      case 'extglob_pattern':
      case 'regex':
      case 'variable_name':
        return [lit(n.text, dq)];
      case 'concatenation':
        return this.gaps(n, n.startIndex, n.endIndex, dq);
      case 'string': {
        if (n.text.startsWith('$"')) refuse(n, 'translated string');
        return [{ t: 'dq', parts: this.gaps(n, n.startIndex + 1, n.endIndex - 1, true) }];
      }
      case 'raw_string':
        return [{ t: 'sq', v: n.text.slice(1, -1), ansi: false }];
      case 'ansi_c_string':
        return [{ t: 'sq', v: n.text.slice(2, -1), ansi: true }];
      case 'simple_expansion': {
        const v = named(n)[0] ?? refuse(n, 'empty expansion');
        return [{ t: 'param', name: v.text, op: null, arg: null, repl: null, opaque: false, index: null, inner: [] }];
      }
      case 'expansion':
        return [this.expansion(n)];
      case 'command_substitution':
        return [{ t: 'cmdsubst', stmts: this.body(all(n).filter((c) => c.type !== '$(' && c.type !== ')' && c.type !== '`')) }];
      case 'process_substitution': {
        const op = all(n)[0]!.type;
        if (op !== '<(' && op !== '>(') refuse(n, `process substitution "${op}"`);
        return [{ t: 'procsubst', op: op as '<(' | '>(', stmts: this.body(this.inner(n, op, ')')) }];
      }
      case 'arithmetic_expansion':
        return [{ t: 'arith', inner: named(n).flatMap((c) => this.innerWords(c)) }];
      case 'brace_expression': {
        const elems = named(n).map((c) => word([lit(c.text, false)], c.text));
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
      const start = c.startIndex + (c.text.length - c.text.trimStart().length);
      if (start > at) out.push(lit(this.text.slice(at, start), dq));
      out.push(...this.parts(c, dq));
      at = c.endIndex;
    }
    if (to > at) out.push(lit(this.text.slice(at, to), dq));
    // adjacent literals are one literal, as in mvdan's tree
    return out.reduce<Part[]>((acc, p) => {
      const last = acc[acc.length - 1];
      if (p.t === 'lit' && last?.t === 'lit' && last.dq === p.dq) acc[acc.length - 1] = lit(last.v + p.v, p.dq);
      else acc.push(p);
      return acc;
    }, []);
  }

  /** ${...}: only the forms whose reading is certain; the rest is refused. */
  expansion(n: Node): Part {
    const kids = all(n).filter((c) => c.type !== '${' && c.type !== '}');
    const param: Part & { t: 'param' } = { t: 'param', name: '', op: null, arg: null, repl: null, opaque: false, index: null, inner: [] };
    let i = 0;
    if (kids[i] && (kids[i]!.type === '#' || kids[i]!.type === '!')) {
      param.opaque = true;
      i++;
    }
    const v = kids[i++] ?? refuse(n, 'empty ${}');
    if (v.type === 'variable_name' || v.type === 'special_variable_name') param.name = v.text;
    else if (v.type === 'subscript') {
      param.name = v.childForFieldName('name')?.text ?? refuse(v, 'subscript without a name');
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
      for (const c of nodes) parts.push(...(c.isNamed ? this.parts(c, false) : [lit(c.text, false)]));
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
        return [n.type === 'variable_name' ? word([lit(n.text, false)], n.text) : this.word(n)];
      default:
        return named(n).flatMap((c) => this.innerWords(c));
    }
  }
}

/** bash's brace expansion ({a,b}, {a..c}) read from the unquoted literals of a word, as mvdan's SplitBraces. */
function splitBraces(parts: Part[]): Part[] {
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

/** Find the first ERROR or MISSING node, if any. */
function firstError(n: Node): Node | null {
  if (n.isError || n.isMissing) return n;
  if (!n.hasError) return null;
  for (const c of n.children) {
    const e = c ? firstError(c) : null;
    if (e) return e;
  }
  return n;
}

/** Parse `text` as bash. Never throws; `ok: false` if the parser is not loaded, or on any doubt. */
export function parseShell(text: string): ParseResult {
  if (parser === null) return { ok: false, error: 'the tree-sitter shell parser is not loaded yet (initTreeSitter)' };
  const tree = parser.parse(text);
  if (tree === null) return { ok: false, error: 'tree-sitter returned no tree' };
  try {
    const root = tree.rootNode;
    const bad = firstError(root);
    if (bad) {
      const at = `${bad.startPosition.row + 1}:${bad.startPosition.column + 1}`;
      return { ok: false, error: bad.isMissing ? `${at}: missing "${bad.type}"` : `${at}: syntax error` };
    }
    const script: Script = { stmts: new Converter(text).body(all(root)), text };
    return { ok: true, script };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, error: err.message };
    return { ok: false, error: `could not read the syntax tree: ${(err as Error).message}` };
  } finally {
    tree.delete();
  }
}
