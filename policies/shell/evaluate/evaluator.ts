/**
 * The static evaluator: runs a parsed script "on paper" and assembles its `ScriptFacts`.
 *
 * Contract: `new Evaluator(parse).run(script)` never throws for a script (a blow-up of alternatives is
 * `facts.tooComplex`); functions are collected before the walk (a call may come before the definition
 * in a loop), aliases are expanded after it; sites come out in source order. `parse` reads the strings
 * run later (default: the selected parser).
 */
import { parseShell } from '../syntax/parser.js';
import type { Command, ParseResult, Script, Stmt } from '../syntax/tree.js';
import { CommandRunner } from './commands.js';
import type { ScriptFacts } from './facts.js';
import { topCtx } from './state.js';
import { TooComplex } from './values.js';

/** Every function definition in the script, wherever it is (a call may come before it in a loop). */
function collectFuncs(stmts: Stmt[], out: Map<string, Stmt[]>): void {
  const visit = (c: Command | null): void => {
    if (!c) return;
    switch (c.k) {
      case 'func':
        out.set(c.name, [...(out.get(c.name) ?? []), c.body]);
        visit(c.body.cmd);
        return;
      case 'binary':
        visit(c.x.cmd);
        visit(c.y.cmd);
        return;
      case 'group':
        c.stmts.forEach((s) => visit(s.cmd));
        return;
      case 'if':
        [...c.cond, ...c.then].forEach((s) => visit(s.cmd));
        visit(c.else);
        return;
      case 'while':
      case 'for':
        [...(c.k === 'while' ? c.cond : []), ...c.body].forEach((s) => visit(s.cmd));
        return;
      case 'case':
        c.items.forEach((it) => it.stmts.forEach((s) => visit(s.cmd)));
        return;
      case 'time':
        visit(c.stmt?.cmd ?? null);
        return;
      case 'coproc':
        visit(c.stmt.cmd);
        return;
      default:
        return;
    }
  };
  stmts.forEach((s) => visit(s.cmd));
}

export class Evaluator extends CommandRunner {
  constructor(protected readonly parse: (text: string) => ParseResult = parseShell) {
    super();
  }

  run(script: Script): ScriptFacts {
    const ctx = topCtx();
    try {
      if (script.stmts.length > 1) this.facts.structure = true;
      collectFuncs(script.stmts, this.funcs);
      this.stmts(script.stmts, ctx);
      this.expandAliases();
    } catch (err) {
      if (err instanceof TooComplex) this.facts.tooComplex = true;
      else throw err;
    }
    this.facts.sites.sort((a, b) => a.pos - b.pos);
    this.facts.assigned = [...new Set(this.facts.assigned)];
    return this.facts;
  }
}
