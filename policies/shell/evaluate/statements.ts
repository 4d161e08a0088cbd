/**
 * Statements: redirections (and the stdin they give a command), lists and pipelines, and the compound
 * commands (groups, if, while/until, for, case, function definitions, declarations, time, coproc).
 *
 * Contract: every branch, loop body, subshell and pipeline side is walked in a conditional context
 * (bash may or may not run it); a pipeline's right side sees its upstream commands as stdin; an
 * `unsupported` node sets `ScriptFacts.unsupported` (callers deny). Simple commands go to `call`.
 */
import type { Assign, Command, Redirect, Stmt } from '../syntax/tree.js';
import type { RedirectSite, Stdin } from './facts.js';
import { MARK } from './facts.js';
import { CWD, type Ctx } from './state.js';
import { uniq } from './values.js';
import { WordExpander, isMktemp } from './words.js';

function isForever(argv: string[], words: string[]): boolean {
  if (argv.length === 1 && words.includes(argv[0]!)) return true;
  return (argv[0] === '[' && argv.length === 3 && argv[1] === '1') || (argv[0] === 'test' && argv.length === 2 && argv[1] === '1');
}

export abstract class StatementWalker extends WordExpander {
  /** A simple command; the command runner implements it. */
  protected abstract call(c: Extract<Command, { k: 'call' }>, ctx: Ctx, redirs: RedirectSite[]): void;

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

  protected redirect(r: Redirect, ctx: Ctx): RedirectSite {
    let targets: string[] = [];
    if (r.word) targets = this.expandString(r.word, ctx, false);
    const site: RedirectSite = { op: r.op, fd: r.fd, targets, cwd: this.get(CWD) };
    if (r.hdoc) this.expandString(r.hdoc, ctx, true);
    this.facts.redirects.push(site);
    return site;
  }

  protected stdinOf(rs: Redirect[], sites: RedirectSite[], fallback: Stdin): Stdin {
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

  protected command(c: Command, ctx: Ctx, redirs: RedirectSite[]): void {
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
        if (c.cstyle) {
          for (const w of c.cstyle) this.expandString(w, ctx, false);
          this.arithmetic(
            c.cstyle.map((w) => w.src),
            ctx,
          );
        }
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
        if (c.what === 'ArithmCmd')
          this.arithmetic(
            c.words.map((w) => w.src),
            ctx,
          );
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

  protected assign(a: Assign, ctx: Ctx): void {
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
}
