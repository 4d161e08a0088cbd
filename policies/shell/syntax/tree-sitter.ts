/**
 * Parser glue: web-tree-sitter with tree-sitter-bash read into the tree of ./tree.ts (statements here,
 * redirects and heredocs in ./tree-sitter-redirects.ts, words in ./tree-sitter-words.ts, the repairs of
 * tree-sitter's misreadings in ./tree-sitter-repair.ts).
 *
 * Contract: `parseShell(text)` never throws and is synchronous: `{ ok: true, script }` or
 * `{ ok: false, error }`. Callers MUST treat `ok: false` as "deny". The WASM parser loads once through
 * `initTreeSitter()`; until that promise has resolved every parse is `ok: false` (fail closed).
 * tree-sitter is error-tolerant, so a tree with an ERROR or MISSING node, a node kind this module does not
 * map, or a shape where tree-sitter-bash and bash disagree and the fix is not known here, is `ok: false`.
 * Fixed here, read as bash reads them: a redirect trailing a list or pipeline (`a | b > f`) belongs to the
 * last command; the destinations after the first (`cmd 2>/dev/null x`) are arguments, except an fd glued
 * to the next redirect (`> f 0>&1`); `{a,b}` is split into a brace part as bash's brace expansion does, also
 * as the command word; `time`/`coproc` are keywords; a reserved word as a command name is refused; the
 * rest of a heredoc line (`cat <<E | sh`) is the list it starts; a quoted heredoc delimiter is a quoted
 * word; `...` in an unquoted heredoc is a command substitution; `<>` is an operator. Refused: a line
 * continuation with no blank on either side (bash joins what tree-sitter splits); `;;` outside a case.
 */
import { createRequire } from 'node:module';
import { Language, type Node, Parser } from 'web-tree-sitter';
import type { Assign, Command, ParseResult, Script, Stmt, Word } from './tree.js';
import { type ListItem, RESERVED, buildList, listItems, lit, masked, word } from './tree-sitter-repair.js';
import { Refused, all, named, refuse, same } from './tree-sitter-words.js';
import { RedirectReader } from './tree-sitter-redirects.js';

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

/** a plain unquoted word's text (`\time` and `"time"` are not the keyword) */
const bare = (w: Word | undefined): string | null => (w?.parts.length === 1 && w.parts[0]!.t === 'lit' && !w.parts[0]!.dq ? w.parts[0]!.v : null);
const KEYWORD_CALLS = new Set(['time', 'coproc']);

// not `;;`: outside a case bash refuses it (case items drop theirs before `body`)
const STMT_SEP = new Set([';', '&', '\n', '&&', '||', '|', '|&']);

class Converter extends RedirectReader {
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
        let s: Stmt = body ? this.stmt(body) : { cmd: null, redirs: [], background: false, negated: false };
        // bash applies a redirect written after a list or pipeline to its last command only (after
        // `time`/`coproc`, to the command they run).
        let target = s;
        for (let c = target.cmd; c?.k === 'binary' || (c?.k === 'time' && c.stmt !== null) || c?.k === 'coproc'; c = target.cmd) {
          target = c.k === 'binary' ? c.y : c.stmt!;
        }
        let at = body ? body.endIndex : n.startIndex;
        for (const r of named(n).filter((c) => !same(c, body))) {
          if (this.tail) refuse(r, 'a redirect after the list on a heredoc line');
          this.strayWords(n, at, r.startIndex, target);
          this.redirect(r, target, true);
          at = r.endIndex;
        }
        this.noCarry(n);
        // `cat <<EOF | sh`: tree-sitter put the rest of the line inside the heredoc redirect
        if (this.tail) {
          const items = [...listItems(s), ...this.tail];
          this.tail = null;
          s = buildList(items) ?? refuse(n, 'the rest of a heredoc line is not a list');
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

  command(n: Node): Command {
    switch (n.type) {
      case 'variable_assignment':
        return { k: 'call', assigns: [this.assign(n)], args: [] };
      case 'variable_assignments':
        return { k: 'call', assigns: named(n).map((a) => this.assign(a)), args: [] };
      case 'list':
      case 'pipeline': {
        // `a | b | c` is one flat node and `a | b && c` may nest either way: rebuilt as bash groups it.
        const x = buildList(this.listNodes(n));
        if (x === null || (x.cmd?.k !== 'binary' && x.cmd?.k !== 'time')) return refuse(n, 'list with one command');
        return x.cmd;
      }
      case 'subshell':
        return { k: 'group', subshell: true, stmts: this.body(this.inner(n, '(', ')')) };
      case 'compound_statement': {
        // `(( expr ))` as a command: tree-sitter-bash reads it as a compound statement opened by `((`
        const kids = all(n);
        if (kids[0]?.type === '((') {
          if (kids[kids.length - 1]?.type !== '))') refuse(n, 'an unclosed (( ))');
          return { k: 'words', what: 'ArithmCmd', words: named(n).flatMap((c) => this.innerWords(c)) };
        }
        return { k: 'group', subshell: false, stmts: this.body(this.inner(n, '{', '}')) };
      }
      case 'if_statement':
        return this.ifClause(all(n));
      case 'while_statement': {
        const kw = all(n)[0]!.type;
        const bodyNode = n.childForFieldName('body') ?? refuse(n, 'loop without a body');
        const cond = all(n).filter((c) => !same(c, bodyNode) && c.type !== kw);
        return { k: 'while', until: kw === 'until', cond: this.body(cond), body: this.doGroup(bodyNode) };
      }
      case 'for_statement': {
        const name = this.srcOpt(n.childForFieldName('variable')) ?? refuse(n, 'for without a name');
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
        const name = this.srcOpt(n.childForFieldName('name')) ?? refuse(n, 'function without a name');
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
        return { k: 'call', assigns: [], args: [word([lit(this.src(kw), false)], this.src(kw)), ...named(n).map((w) => this.word(w))] };
      }
      case 'test_command': {
        const open = all(n)[0]!.type;
        const words = named(n).flatMap((c) => this.innerWords(c));
        // [[ a -eq b ]] reads its sides as arithmetic: the evaluator checks every word of such a clause.
        if (open === '[[') return { k: 'words', what: /\s-(eq|ne|lt|le|gt|ge)\s/.test(this.src(n)) ? 'ArithTestClause' : 'TestClause', words };
        if (open === '((') return { k: 'words', what: 'ArithmCmd', words };
        if (open !== '[') refuse(n, `test "${open}"`);
        // `[ ... ]` is the command `[`: its words, operators included, in source order.
        return { k: 'call', assigns: [], args: [word([lit('[', false)], '['), ...this.testWords(n), word([lit(']', false)], ']')] };
      }
      default:
        return refuse(n, `unsupported syntax "${n.type}"`);
    }
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
      else if (c.type === 'command_name') {
        const w = named(c)[0] ?? refuse(c, 'empty command name');
        // `done`, `fi`, `}` ... as a command: bash's syntax error, tree-sitter's command name
        if (w.type === 'word' && RESERVED.has(this.src(w)) && !KEYWORD_CALLS.has(this.src(w))) refuse(w, `"${this.src(w)}" where a command starts`);
        args.push(this.word(w));
      } else if (c.type.endsWith('_redirect')) this.redirect(c, s);
      else args.push(this.word(c));
    }
    this.noCarry(n);
    return named(n)[0]?.type === 'command_name' ? this.keyword(s, n) : s;
  }

  parse(text: string): ParseResult {
    return parseShell(text);
  }

  reparse(at: Node, text: string): Stmt[] {
    const inner = parseShell(text);
    return inner.ok ? inner.script.stmts : refuse(at, `a nested command: ${inner.error}`);
  }

  /**
   * `time` and `coproc` are bash keywords; tree-sitter-bash reads them as command names. Read as bash
   * reads them before a simple command (time CMD, coproc CMD); a compound command after them is refused.
   */
  keyword(s: Stmt, n: Node): Stmt {
    const c = s.cmd;
    if (c?.k !== 'call' || c.assigns.length > 0) return s;
    const kw = bare(c.args[0]);
    if (kw === null || !KEYWORD_CALLS.has(kw)) return s;
    let rest = c.args.slice(1);
    if (kw === 'time' && bare(rest[0]) === '-p') rest = rest.slice(1);
    const next = bare(rest[0]);
    if (next !== null && RESERVED.has(next)) refuse(n, `"${next}" after "${kw}"`);
    if (kw === 'coproc' && (rest.length === 0 || bare(rest[1]) === '{')) refuse(n, 'coproc without a simple command');
    const inner: Stmt = { cmd: rest.length > 0 ? { k: 'call', assigns: [], args: rest } : null, redirs: s.redirs, background: false, negated: false };
    const cmd: Command = kw === 'coproc' ? { k: 'coproc', stmt: inner } : { k: 'time', stmt: rest.length > 0 || s.redirs.length > 0 ? inner : null };
    return { cmd, redirs: [], background: s.background, negated: s.negated };
  }

  /** Operands and operators of a list or pipeline node (nested ones flattened), in source order. */
  listNodes(n: Node): ListItem[] {
    if (n.type !== 'list' && n.type !== 'pipeline') return [this.stmt(n)];
    const out: ListItem[] = [];
    for (const c of all(n)) {
      if (c.type === 'comment') continue;
      if (c.isNamed) out.push(...this.listNodes(c));
      else if (c.type === '&&' || c.type === '||' || c.type === '|' || c.type === '|&') out.push(c.type);
      else refuse(c, `list operator "${c.type}"`);
    }
    return out;
  }
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

/** Where a backslash-newline is text, not a line continuation. */
const NO_CONTINUATION = new Set(['raw_string', 'ansi_c_string', 'comment']);

/**
 * bash removes a backslash-newline before it reads words (`r\<newline>m` is `rm`); tree-sitter-bash takes
 * it for a blank and splits the word there. So one with no blank on either side is refused (it may join
 * two words, an operator, or a `$` and its name), except in '...', $'...' and comments, where it is text.
 */
function joiningContinuation(root: Node, text: string): string | null {
  for (const m of text.matchAll(/(\\+)\n/g)) {
    if (m[1]!.length % 2 === 0) continue; // `\\<newline>`: an escaped backslash, then a newline
    const at = m.index + m[1]!.length - 1;
    const before = text[at - 1];
    const after = text[at + 2];
    if (before === undefined || after === undefined || /\s/.test(before) || /\s/.test(after)) continue;
    const n = root.descendantForIndex(at, at + 1);
    if (n && NO_CONTINUATION.has(n.type)) continue;
    const line = text.slice(0, at).split('\n').length;
    return `${line}:${at - text.lastIndexOf('\n', at - 1)}: a line continuation inside a word (tree-sitter splits it, bash joins it)`;
  }
  return null;
}

/** Parse `text` as bash. Never throws; `ok: false` if the parser is not loaded, or on any doubt. */
export function parseShell(text: string): ParseResult {
  if (parser === null) return { ok: false, error: 'the tree-sitter shell parser is not loaded yet (initTreeSitter)' };
  const { text: mask, readWrite } = masked(text);
  const tree = parser.parse(mask);
  if (tree === null) return { ok: false, error: 'tree-sitter returned no tree' };
  try {
    const root = tree.rootNode;
    const bad = firstError(root);
    if (bad) {
      const at = `${bad.startPosition.row + 1}:${bad.startPosition.column + 1}`;
      return { ok: false, error: bad.isMissing ? `${at}: missing "${bad.type}"` : `${at}: syntax error` };
    }
    const joined = joiningContinuation(root, text);
    if (joined) return { ok: false, error: joined };
    const script: Script = { stmts: new Converter(text, readWrite).body(all(root)), text };
    return { ok: true, script };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, error: err.message };
    return { ok: false, error: `could not read the syntax tree: ${err instanceof Error ? err.message : String(err)}` };
  } finally {
    tree.delete();
  }
}
