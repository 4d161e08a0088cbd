/**
 * Per-tool policy and per-command rules: the operator's "never", "always ask" and "just do it", on top
 * of tiers. Pure matching here; policies/gate.ts applies the precedence.
 *
 * Contract:
 * - `toolPolicy: { <tool name or glob>: allow | ask | deny }`. A glob uses `*` (any run of characters)
 *   and `?` (one character) over the whole tool name (`mcp_github_*`). When several entries match, the
 *   exact name wins, then the glob with the most literal characters (the most specific); on a tie the
 *   strictest value (deny > ask > allow), so an ambiguous policy never loosens anything.
 * - `commandRules: [{ match, policy, reason }]` judge shell commands simple command by simple command
 *   (`a && b` is two). `match` without `*`/`?` is an approval-key prefix, word by word, like an
 *   autoApprovedCommands entry (`git push` matches `git push origin main`); with them it is a glob over
 *   the simple command's words joined by one space (`git push *--force*`, `rm *`), anchored at both ends.
 *   deny: one matching simple command blocks the whole command, absolutely. ask: one matching simple
 *   command forces an approval. allow: an entry of the command allowlist (policies/shell/allowlist.ts),
 *   so a chain, pipe, substitution or redirect is admitted only when EVERY simple command is covered and
 *   none carries a risky option, never as a whole.
 */
import { entryMatches } from './shell/allowlist.js';
import type { ShellAnalysis } from './shell/index.js';

export const POLICY_VALUES = ['allow', 'ask', 'deny'] as const;
export type PolicyValue = (typeof POLICY_VALUES)[number];
export type ToolPolicy = Readonly<Record<string, PolicyValue>>;

export interface CommandRule {
  match: string;
  policy: PolicyValue;
  /** Shown on the approval card and to the model. */
  reason?: string;
}

const STRICTNESS: Record<PolicyValue, number> = { allow: 0, ask: 1, deny: 2 };

export function isGlob(pattern: string): boolean {
  return /[*?]/.test(pattern);
}

/** A whole-string match for a `*` / `?` glob; every other character is literal. */
export function globToRegExp(pattern: string): RegExp {
  const body = [...pattern].map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\/-]/g, '\\$&'))).join('');
  return new RegExp(`^${body}$`, 's');
}

export interface ToolPolicyMatch {
  /** The toolPolicy key that decided (a name or a glob). */
  pattern: string;
  value: PolicyValue;
}

/** The toolPolicy entry that applies to `toolName`, or null. */
export function matchToolPolicy(policy: ToolPolicy | undefined, toolName: string): ToolPolicyMatch | null {
  if (!policy) return null;
  if (Object.hasOwn(policy, toolName)) return { pattern: toolName, value: policy[toolName]! };
  let best: ToolPolicyMatch | null = null;
  let bestLiteral = -1;
  for (const [pattern, value] of Object.entries(policy)) {
    if (!isGlob(pattern) || !globToRegExp(pattern).test(toolName)) continue;
    const literal = pattern.replace(/[*?]/g, '').length;
    if (literal > bestLiteral || (literal === bestLiteral && best && STRICTNESS[value] > STRICTNESS[best.value])) {
      best = { pattern, value };
      bestLiteral = literal;
    }
  }
  return best;
}

/**
 * A tool the model service runs itself (server-side web search) cannot be asked about or declined
 * call by call: it is offered only where every call would be allowed (no `deny` or `ask` for it).
 */
export function serverToolOffered(policy: ToolPolicy | undefined, toolName: string): boolean {
  const value = matchToolPolicy(policy, toolName)?.value;
  return value !== 'deny' && value !== 'ask';
}

/** Does a rule's `match` cover one simple command (its approval key and its unwrapped words)? */
function ruleMatchesSimple(match: string, key: string, words: readonly string[]): boolean {
  if (isGlob(match)) return globToRegExp(match.trim()).test(words.join(' '));
  return entryMatches(match, key, words);
}

export interface CommandRuleMatch {
  index: number;
  rule: CommandRule;
  /** The simple command it matched, as words joined. */
  simple: string;
}

/** The first rule with `policy` that matches any simple command of the analysed command. */
export function findCommandRule(rules: readonly CommandRule[] | undefined, analysis: ShellAnalysis, policy: PolicyValue): CommandRuleMatch | null {
  if (!rules) return null;
  for (let index = 0; index < rules.length; index++) {
    const rule = rules[index]!;
    if (rule.policy !== policy) continue;
    for (let i = 0; i < analysis.approvalKeys.length; i++) {
      const key = analysis.approvalKeys[i]!;
      const words = analysis.commandWords[i] ?? key.split(/\s+/);
      if (ruleMatchesSimple(rule.match, key, words)) return { index, rule, simple: words.join(' ') };
    }
  }
  return null;
}

/** A matcher for the allowlist check: a simple command covered by some `allow` rule. */
export function allowRuleMatcher(rules: readonly CommandRule[] | undefined): ((key: string, words: readonly string[]) => boolean) | undefined {
  const allow = (rules ?? []).filter((r) => r.policy === 'allow');
  if (allow.length === 0) return undefined;
  return (key, words) => allow.some((r) => ruleMatchesSimple(r.match, key, words));
}
