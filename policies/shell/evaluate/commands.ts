/**
 * Simple commands: the site a command becomes (its argv alternatives, display words, prefix assignments,
 * redirects, stdin), and what running it changes or runs in turn: cd, read, unset, alias, hash -p,
 * shift/set, trap and watch strings, find -exec, calls of functions defined in the script, aliases.
 *
 * Contract: a string the shell will run later is parsed with the evaluator's parser and walked as
 * 'nested' (one that does not parse sets `unsupported`); recursion is bounded (depth 4, `MAX_ALTS`).
 */
import type { Command, ParseResult, Part, Stmt, Word } from '../syntax/tree.js';
import { basename, unwrapCommand } from '../wrappers.js';
import { type CommandSite, MARK, type RedirectSite, displayField, isStatic } from './facts.js';
import { CWD, type Ctx } from './state.js';
import { StatementWalker } from './statements.js';
import { MAX_ALTS, TooComplex, product, shellQuote, uniq } from './values.js';

function isPlainWord(w: Word): boolean {
  const plain = (p: Part): boolean => p.t === 'lit' || p.t === 'sq' || (p.t === 'dq' && p.parts.every(plain));
  return w.parts.every(plain);
}

export abstract class CommandRunner extends StatementWalker {
  /** The parser for strings run later (alias values, trap actions, watch commands). */
  protected abstract readonly parse: (text: string) => ParseResult;
  /** alias NAME=VALUE and hash -p PATH NAME, anywhere in the script: NAME -> texts that replace it */
  protected readonly aliases = new Map<string, string[]>();
  /** functions defined anywhere in the script (found before the walk): a call runs their bodies */
  protected readonly funcs = new Map<string, Stmt[]>();
  /** simple commands whose first word is a plain literal: alias candidates, expanded after the walk */
  protected readonly firstWords: { name: string; rest: string; ctx: Ctx; hashOnly?: boolean }[] = [];
  /** hash -p PATH NAME: also found through `command NAME` / `exec NAME`, which skip aliases */
  protected readonly hashed = new Map<string, string[]>();
  protected bodyWalks = 0;
  /** pre-order counter: a command is numbered before the substitutions in its words = source order */
  protected seq = 0;

  protected call(c: Extract<Command, { k: 'call' }>, ctx: Ctx, redirs: RedirectSite[]): void {
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
  protected callFunctions(argvs: string[][], ctx: Ctx): void {
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
  protected expandAliases(): void {
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
  protected effects(site: CommandSite, ctx: Ctx): void {
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
        // let evaluates each argument as arithmetic (after expansion: the fields are its expressions).
        case 'let':
          this.arithmeticFields(args, cond);
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

  protected findExec(site: CommandSite, argv: string[]): void {
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
  protected nested(text: string, ctx: Ctx): void {
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

  protected addAlias(name: string, value: string): void {
    this.aliases.set(name, uniq([...(this.aliases.get(name) ?? []), value]));
  }
}
