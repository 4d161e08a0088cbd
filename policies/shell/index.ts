/**
 * Shell command analysis for the policy gate (public API of policies/shell).
 *
 * `analyzeCommand(command)` parses the command with a real bash parser (./syntax/parser.ts), evaluates it
 * statically (quote removal, variables assigned earlier in the same command, brace expansion, pipes,
 * lists, subshells, functions, command and process substitutions, here-strings, heredocs, redirections,
 * xargs, find -exec, wrappers) and returns:
 * - `denied`: the denylist verdict (absolute; no approval overrides it). A command that does not parse
 *   is denied with rule 'unparseable'.
 * - `approvalKeys`, `commandWords`: per simple command found (including inside substitutions and
 *   find -exec), in source order: its approval key and its words after wrappers/assignments.
 * - `compound`, `hasFileRedirect`, `hasSubstitution`, `assignments`, `optionRisks`: what makes
 *   auto-approval unsafe (`optionRisks`: per simple command, an option that runs other code, writes
 *   files or changes its directory or configuration, from ./option-risk.ts).
 * It is async for the gate's sake (the parser may move to a worker); today it does no I/O.
 *
 * `commandApprovalKey(command)` is the key an "Always approve" button adds: null unless that key would
 * cover the command itself (so never for a command that is denied, compound, substitutes, redirects to a
 * file, assigns an unsafe variable or carries a risky option). `isCommandAllowlisted` is in ./allowlist.ts.
 */
import { approvalKeyOf } from './approval-key.js';
import { unwrapCommand } from './wrappers.js';
import { findDenial } from './denylist.js';
import { isCommandAllowlisted } from './allowlist.js';
import { riskyOption, type OptionRisk } from './option-risk.js';
import type { ShellAnalysis } from './analysis.js';
import { analyzeScript, displayField, type ParseResult, type ScriptFacts, shellParserReady } from './parse.js';

export type { ShellAnalysis } from './analysis.js';
export { approvalKeyOf } from './approval-key.js';
export { isCommandAllowlisted, allowlistMiss } from './allowlist.js';
export { riskyOption } from './option-risk.js';

const NOT_A_FILE = /^(\/dev\/(null|stdout|stderr|tty)|\/dev\/fd\/\d+|\d+|-)$/;
const WRITE_OPS = new Set(['>', '>>', '>|', '&>', '&>>', '<>', '>&']);

function hasFileRedirect(facts: ScriptFacts): boolean {
  return facts.redirects.some((r) => WRITE_OPS.has(r.op) && r.targets.some((t) => !NOT_A_FILE.test(t)));
}

/** `parse`: the selected parser unless given (tests run the gate with each glue; it must be loaded). */
export async function analyzeCommand(command: string, parse?: (text: string) => ParseResult): Promise<ShellAnalysis> {
  await shellParserReady();
  const res = analyzeScript(command, parse);
  if (!res.ok) {
    return {
      parsed: false,
      denied: {
        rule: 'unparseable',
        reason: `Blocked by the shell denylist, rule 'unparseable': the command could not be parsed as shell (${res.error}). This rule is absolute: approval cannot override it. Fix the quoting or syntax.`,
      },
      approvalKeys: [],
      commandWords: [],
      compound: false,
      hasFileRedirect: false,
      hasSubstitution: false,
      assignments: [],
      optionRisks: [],
    };
  }
  const facts = res.facts;
  const approvalKeys: string[] = [];
  const commandWords: string[][] = [];
  const assignments = [...facts.assigned];
  const optionRisks: Array<OptionRisk | null> = [];
  for (const site of facts.sites) {
    // Every way the words may expand is judged.
    optionRisks.push(site.argvs.reduce<OptionRisk | null>((found, argv) => found ?? riskyOption(argv), null));
    approvalKeys.push(approvalKeyOf(site.display));
    const u = unwrapCommand(site.display);
    commandWords.push(u.words.map(displayField));
    assignments.push(...u.assigns);
  }
  return {
    parsed: true,
    denied: findDenial(facts),
    approvalKeys,
    commandWords,
    compound: facts.structure || facts.sites.length > 1,
    hasFileRedirect: hasFileRedirect(facts),
    hasSubstitution: facts.hasSubstitution,
    assignments: [...new Set(assignments)],
    optionRisks,
  };
}

export async function commandApprovalKey(command: string): Promise<string | null> {
  const a = await analyzeCommand(command);
  if (!a.parsed || a.denied || a.compound || a.hasSubstitution || a.hasFileRedirect) return null;
  if (a.approvalKeys.length !== 1 || a.approvalKeys[0] === '') return null;
  const key = a.approvalKeys[0]!;
  // Offered only when the key covers this very command: no risky option, no unsafe assignment.
  return isCommandAllowlisted(a, [key]) ? key : null;
}
