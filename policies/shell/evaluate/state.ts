/**
 * The evaluator's state: the facts collected so far, the variables (each a list of possible values),
 * arrays and namerefs, and the context a statement runs in.
 *
 * Contract: `get(name)` never fails: a variable the script did not set is unknown (`MARK.UNKNOWN`),
 * except HOME (~), HISTFILE (~/.bash_history) and TMPDIR ($TMP). A `set` in a conditional context adds
 * alternatives instead of replacing. Changing IFS marks the script unsupported (splitting is judged with
 * the default IFS only). Every name written in an arithmetic expression (`(( ))`, `$(( ))`, a c-style
 * for) is unknown after it (it may be assigned there).
 */
import { MARK, type ScriptFacts, type Stdin } from './facts.js';
import { VAR_NAME, uniq } from './values.js';

export interface Ctx {
  stdin: Stdin;
  conditional: boolean;
  inPipeline: boolean;
  background: boolean;
  functions: string[];
  depth: number;
  /** inside a function called with known arguments: $1, $@ ... (args null once `shift`/`set` moved them) */
  positional?: { args: string[] | null; shifted: boolean };
  /** aliases being expanded (bash does not expand an alias inside its own expansion) */
  aliasChain?: string[];
}

/** The context of the script's top level. */
export const topCtx = (): Ctx => ({ stdin: { kind: 'none' }, conditional: false, inPipeline: false, background: false, functions: [], depth: 0 });

/** The variable that holds the working directory alternatives ('' = where the command started). */
export const CWD = '\u0000cwd';

export class EvalState {
  readonly facts: ScriptFacts = {
    sites: [],
    redirects: [],
    procSubsts: [],
    assigned: [],
    envAssigns: [],
    hasSubstitution: false,
    structure: false,
    infiniteLoop: false,
    forkBomb: null,
    unsupported: null,
    tooComplex: false,
  };
  protected readonly vars = new Map<string, string[]>();
  protected readonly arrays = new Map<string, string[] | null>();
  /** declare -n NAME=TARGET: reads and writes of NAME go to TARGET */
  protected readonly namerefs = new Map<string, string[]>();

  get(name: string, seen: string[] = []): string[] {
    const ref = this.namerefs.get(name);
    if (ref && !seen.includes(name)) return uniq(ref.flatMap((t) => (VAR_NAME.test(t) ? this.get(t, [...seen, name]) : [MARK.UNKNOWN])));
    const v = this.vars.get(name);
    if (v) return v;
    if (name === 'HOME') return ['~'];
    // where the history goes unless the script says otherwise (`> $HISTFILE` is `> ~/.bash_history`)
    if (name === 'HISTFILE') return ['~/.bash_history'];
    if (name === 'TMPDIR') return [MARK.TMP];
    if (name === CWD) return [''];
    return [MARK.UNKNOWN];
  }

  /** Arithmetic may assign any name it holds (`x++`, `y = 2`, `a[i] += 1`): after it, each is unknown. */
  arithmetic(srcs: readonly string[], ctx: Ctx): void {
    for (const src of srcs) for (const m of src.matchAll(/(?<![A-Za-z0-9_$#])[A-Za-z_][A-Za-z0-9_]*/g)) this.set(m[0], [MARK.UNKNOWN], ctx);
  }

  set(name: string, alts: string[], ctx: Ctx, seen: string[] = []): void {
    const ref = this.namerefs.get(name);
    if (ref && !seen.includes(name)) {
      for (const t of ref) if (VAR_NAME.test(t)) this.set(t, alts, ref.length > 1 ? { ...ctx, conditional: true } : ctx, [...seen, name]);
      return;
    }
    if (name !== CWD) this.facts.assigned.push(name);
    // Field splitting is evaluated with the default IFS; a script that changes it is not judged.
    if (name === 'IFS') this.facts.unsupported = 'IFS is changed, so word splitting cannot be judged';
    this.vars.set(name, ctx.conditional ? uniq([...this.get(name), ...alts]) : uniq(alts));
  }
}
