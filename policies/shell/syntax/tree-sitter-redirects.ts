/**
 * The redirect half of the tree-sitter statement reader: file redirects, here-strings and heredocs
 * (their bodies' expansions, and the lines tree-sitter's heredoc scanner leaves as text), with the
 * repairs where tree-sitter-bash and bash disagree: `> f 0>&1` (an fd glued to the next redirect),
 * `cmd 2>/dev/null x` (words after the destination are arguments), `cat <<E | sh` (the rest of the
 * heredoc line is a list, handed to the statement through `tail`), and text tree-sitter left out of
 * every node. ./tree-sitter.ts builds the statements on top of it; anything unexpected throws `Refused`.
 */
import type { Node } from 'web-tree-sitter';
import type { ParseResult, Part, Redirect, Stmt } from './tree.js';
import { type ListItem, backquotes, delimiterParts, hasLooseExpansion, lit, word } from './tree-sitter-repair.js';
import { WordReader, all, named, refuse, same } from './tree-sitter-words.js';

/** a heredoc body being parsed again (`heredocAgain`): no second retry */
let reparsing = false;
/** put between the blanks and the `$` of a heredoc line for tree-sitter's scanner; taken out after */
const MARK = '\uE0FE';
const REDIR_OPS = new Set(['>', '>>', '<', '<>', '>&', '<&', '>|', '&>', '&>>']);

export abstract class RedirectReader extends WordReader {
  /** a heredoc line's `| cmd` / `&& cmd` tail, handed from `redirect` to the statement that owns it */
  protected tail: ListItem[] | null = null;
  /** `> f 0>&1`: the 0 that tree-sitter took as a destination of the redirect before */
  private carryFd: { at: number; fd: string } | null = null;

  constructor(
    text: string,
    private readonly readWrite: Set<number>,
  ) {
    super(text);
  }

  /** Operands and operators of a list or pipeline node (the statement half implements it). */
  abstract listNodes(n: Node): ListItem[];

  /** `text` parsed as a script of its own (a heredoc body read again). */
  abstract parse(text: string): ParseResult;

  /** A redirect node onto `s` (a command's own redirects, or the trailing ones of a redirected statement). */
  redirect(r: Node, s: Stmt, tailAllowed = false): void {
    const fdNode = r.childForFieldName('descriptor');
    let fd = fdNode ? this.src(fdNode) : null;
    const carry = this.carryFd;
    this.carryFd = null;
    if (carry && (carry.at !== r.startIndex || fd !== null)) refuse(r, 'a file descriptor read as a word');
    if (carry) fd = carry.fd;
    // `>& f 0>&1`: tree-sitter reads the 0 as an argument and the redirect without its fd.
    if (fd === null && /(^|\s)\d+$/.test(this.text.slice(0, r.startIndex))) refuse(r, 'a file descriptor read as a word');
    switch (r.type) {
      case 'file_redirect': {
        const opNode = all(r).find((c) => !c.isNamed);
        // `<>` was masked as `>>` (tree-sitter-bash has no `<>`)
        const op = opNode && this.readWrite.has(opNode.startIndex) ? '<>' : (opNode?.type ?? '');
        if (!REDIR_OPS.has(op)) refuse(r, `redirect operator "${op}"`);
        const dests = r.childrenForFieldName('destination').filter((c): c is Node => c !== null);
        if (dests.length === 0) refuse(r, 'redirect without a target');
        // `> f 0>&1`: tree-sitter takes the 0 as a destination here and the next redirect without its fd
        const last = dests[dests.length - 1]!;
        if (dests.length > 1 && last.type === 'number' && /[<>]/.test(this.text[last.endIndex] ?? '')) {
          dests.pop();
          this.carryFd = { at: last.endIndex, fd: this.src(last) };
        }
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
        const delim = delimiterParts(this.src(start)) ?? refuse(start, 'a heredoc delimiter with an expansion');
        const redir: Redirect = { op, fd, word: word(delim, this.src(start)), hdoc: null };
        const body = named(r).find((c) => c.type === 'heredoc_body');
        const quoted = /['"\\]/.test(this.src(start));
        const bodyText = body ? this.src(body) : '';
        redir.hdoc = body && !quoted ? word(this.heredocParts(body, op), bodyText) : word([lit(bodyText, true)], bodyText);
        s.redirs.push(redir);
        // `cat <<E > f`: a redirect of the same command; `cat <<E | sh` / `&& x`: the rest of the line,
        // which tree-sitter nests here (the redirected statement rebuilds the list)
        const tail: ListItem[] = [];
        for (const c of all(r)) {
          if (['<<', '<<-', 'heredoc_start', 'heredoc_body', 'heredoc_end', 'comment'].includes(c.type) || same(c, fdNode)) continue;
          // bash reads the body from the next line on: anything past it is tree-sitter's guess
          if (this.text.slice(r.startIndex, c.endIndex).includes('\n')) refuse(c, 'a redirect or list after the heredoc line');
          if ((c.type === 'file_redirect' || c.type === 'herestring_redirect') && tail.length === 0) {
            this.redirect(c, s);
            continue;
          }
          if (c.type === '&&' || c.type === '||' || c.type === '|' || c.type === '|&') tail.push(c.type);
          else tail.push(...this.listNodes(c));
        }
        if (tail.length > 0) {
          if (!tailAllowed || this.tail) refuse(r, 'a list on a heredoc line here');
          this.tail = tail;
        }
        return;
      }
      default:
        refuse(r, `redirect kind "${r.type}"`);
    }
  }

  /** A file descriptor carried to a redirect that did not follow: the text is refused. */
  noCarry(n: Node): void {
    if (this.carryFd) refuse(n, 'a file descriptor read as a word');
  }

  /**
   * An unquoted heredoc body: its expansions, and `...` that tree-sitter leaves as text (bash runs it).
   * tree-sitter starts the body after the blanks that open it: the text is read from the line after the
   * heredoc's, so nothing is lost.
   */
  heredocParts(body: Node, op: string): Part[] {
    const lineEnd = this.text.indexOf('\n', body.parent?.startIndex ?? body.startIndex);
    const from = lineEnd + 1;
    if (lineEnd < 0 || from > body.startIndex || this.text.slice(from, body.startIndex).trim() !== '') refuse(body, 'a heredoc body tree-sitter did not place');
    const parts = this.gaps(body, from, body.endIndex, true).flatMap((p): Part[] => {
      if (p.t !== 'lit') return [p];
      const pieces = backquotes(p.v) ?? refuse(body, 'an unclosed backquote in a heredoc');
      return pieces.map((x): Part => {
        if (typeof x === 'string') return lit(x, true);
        return { t: 'cmdsubst', stmts: this.reparse(body, x.cmd) };
      });
    });
    // what tree-sitter left as text in an expanding body is read again, or refused: never harmless text
    if (parts.some((p) => p.t === 'lit' && hasLooseExpansion(p.v))) return this.heredocAgain(body, op, this.text.slice(from, body.endIndex));
    return parts;
  }

  /**
   * tree-sitter's heredoc scanner leaves a line that starts with blanks and then `$` or a backquote as
   * plain text (and the rest of the body with it): the body is parsed again with a mark between the blanks
   * and the expansion, which is then taken out of the text. Once only; anything unexpected is refused.
   */
  heredocAgain(body: Node, op: string, text: string): Part[] {
    const fail = (): never => refuse(body, 'an expansion in a heredoc that tree-sitter did not parse');
    if (reparsing || text.includes(MARK)) return fail();
    let delim = 'GH_HEREDOC_END';
    while (text.includes(delim)) delim += '_';
    reparsing = true;
    let res: ParseResult;
    try {
      res = this.parse(`: ${op}${delim}\n${text.replace(/(^|\n)([ \t]+)(?=[$`])/g, `$1$2${MARK}`)}${delim}\n`);
    } finally {
      reparsing = false;
    }
    const hdoc = res.ok && res.script.stmts.length === 1 ? res.script.stmts[0]!.redirs[0]?.hdoc : null;
    if (!hdoc) return fail();
    const parts = hdoc.parts.map((p) => (p.t === 'lit' ? lit(p.v.split(MARK).join(''), true) : p)).filter((p) => p.t !== 'lit' || p.v !== '');
    if (JSON.stringify(parts).includes(MARK)) return fail();
    return parts;
  }

  /**
   * Text between two children that tree-sitter left out of every node (`python3 - <<EOF` loses the `-`):
   * plain words are the command's arguments, anything else is refused.
   */
  strayWords(n: Node, from: number, to: number, s: Stmt): void {
    const gap = this.text.slice(from, to).replace(/\\\n/g, ' ').trim();
    if (gap === '') return;
    const cmd = s.cmd;
    if (cmd?.k !== 'call' || !/^[A-Za-z0-9_./+=:,@%-]+(\s+[A-Za-z0-9_./+=:,@%-]+)*$/.test(gap)) refuse(n, `text outside the syntax tree: "${gap}"`);
    else cmd.args.push(...gap.split(/\s+/).map((v) => word([lit(v, false)], v)));
  }
}
