/**
 * The parser's view of a text set against bash's (./bash-oracle.ts): which commands bash ran that the
 * parser did not report (`missing`: the gate would not have judged them), and which static commands the
 * parser reported that bash did not run (`extra`: the parser over-approximates; harmless for the gate,
 * listed so a change shows).
 *
 * Contract: a parser field with a marker (unknown text, a glob, a process substitution) stands for any
 * number of bash fields (splitting and globbing make 0..n); one bash field must match its pattern (or,
 * for a glob that matched nothing, be the glob as written).
 */
import { analyzeScript } from '../../policies/shell/parse.js';
import { type CommandSite, displayField, isStatic, MARK } from '../../policies/shell/evaluate/facts.js';
import { unwrapCommand } from '../../policies/shell/wrappers.js';
import { type BashRun, NOT_RECORDED, RECORDED_BUILTINS } from './bash-oracle.js';

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A marked field as a pattern: globs as globs (`[...]` a class), anything unknown as any text. */
function fieldRe(f: string): RegExp {
  let re = '';
  for (let i = 0; i < f.length; i++) {
    const c = f[i]!;
    if (c === MARK.STAR || c === MARK.UNKNOWN || c === MARK.TMP) re += '[\\s\\S]*';
    else if (c === MARK.QMARK) re += '[\\s\\S]';
    else if (c === MARK.PSUB) {
      re += '[\\s\\S]*';
      i++;
    } else if (c === MARK.BRACKET) {
      const end = f.indexOf(']', i + 2);
      if (end < 0) re += '[\\s\\S]*';
      else {
        const body = f.slice(i + 1, end);
        re += `[${body.startsWith('!') ? '^' : ''}${(body.startsWith('!') ? body.slice(1) : body).replace(/[\\\]^]/g, '\\$&')}]`;
        i = end;
      }
    } else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`);
}

export function argvMatches(p: readonly string[], b: readonly string[]): boolean {
  const memo = new Map<string, boolean>();
  const go = (i: number, j: number): boolean => {
    const key = `${i},${j}`;
    const hit = memo.get(key);
    if (hit !== undefined) return hit;
    let r: boolean;
    if (i === p.length) r = j === b.length;
    else if (isStatic(p[i]!)) r = j < b.length && p[i] === b[j] && go(i + 1, j + 1);
    else {
      r = false;
      // a glob that matches no file stays as written
      const one = (w: string): boolean => fieldRe(p[i]!).test(w) || displayField(p[i]!) === w;
      for (let k = j; k <= b.length && !r; k++) r = (k - j !== 1 || one(b[j]!)) && go(i + 1, k);
    }
    memo.set(key, r);
    return r;
  };
  return go(0, 0);
}

const PRELUDE_FUNCTIONS = new Set<string>([...RECORDED_BUILTINS, '__gh_rec', 'command_not_found_handle']);

export interface Comparison {
  missing: string[][];
  extra: string[][];
}

/** null when the parser refuses the text */
export function compare(text: string, run: BashRun): Comparison | null {
  const a = analyzeScript(text);
  if (!a.ok) return null;
  const sites: CommandSite[] = a.facts.sites;
  // the gate judges each command as written and as unwrapped (sudo, env, exec, command, time, ...)
  const alts = sites.flatMap((s) => s.argvs.flatMap((p) => [p, unwrapCommand(p, { deep: true }).words]));
  const missing = run.argvs.filter((b) => !alts.some((p) => argvMatches(p, b)));
  const functions = new Set(run.functions.filter((f) => !PRELUDE_FUNCTIONS.has(f)));
  const extra = sites
    .filter((s) => s.origin !== 'find-exec')
    .filter((s) => !s.argvs.some((p) => run.argvs.some((b) => argvMatches(p, b))))
    .flatMap((s) => s.argvs)
    .filter((p) => p.length > 0 && p.every(isStatic) && !NOT_RECORDED.has(p[0]!) && !functions.has(p[0]!));
  return { missing, extra };
}
