/**
 * A soft spending limit put to the agent's approvers (issue 24), through the approval broker: the
 * same card, buttons, first-click-wins decision, expiry and audit as a tool approval.
 *
 * Contract:
 * - No approver bound for the run's platform (or a headless run without --interactive-stdin, whose
 *   approvers are none): `no_approver`, no card.
 * - Otherwise one card in the run's conversation: "Allow more spending?" with the question
 *   (e.g. "this conversation has spent $4.90 of $5.00; allow $5.00 more?"), Approve / Deny, no
 *   "Always" (a standing raise is a config change, not a click). The wait is a human wait (it does
 *   not count against the run's timeout and frees the run's slot) and ends with the run's signal.
 * - Approve: `approved` (the gate raises the limit); Deny: `denied` by whom; no decision by
 *   `approvalTimeoutMs`: `expired`.
 */
import { newToken, type ApprovalBroker } from '../approvals/index.js';
import type { RunRecord } from '../run/turn.js';
import type { SoftDecision, SoftLimitAsk } from './gate.js';

export interface SoftApprovalDeps {
  broker: ApprovalBroker;
  /** The agent's approvers per platform now (config and run overrides may change them). */
  approvers(): Readonly<Record<string, readonly string[] | undefined>>;
  /** The run: its conversation, platform, agent, id and starter. */
  record: Pick<RunRecord, 'conversationKey' | 'platform' | 'agentName' | 'runId' | 'starter'>;
  timeoutMs: number;
  humanWait<T>(wait: () => Promise<T>): Promise<T>;
  signal: AbortSignal;
}

/** The gate's `approve` and `approvers` for one run (agent/budget/gate.ts BudgetGateOptions). */
export function softLimitApprover(d: SoftApprovalDeps): {
  approve: (ask: SoftLimitAsk) => Promise<SoftDecision>;
  approvers: () => string | undefined;
} {
  const r = d.record;
  const bound = () => d.approvers()[r.platform] ?? [];
  return {
    // Runs whose cards the same people decide share one card.
    approvers: () => (bound().length === 0 ? undefined : `${r.platform}:${[...bound()].sort().join(',')}`),
    approve: async (ask) => {
      if (bound().length === 0) return { outcome: 'no_approver' };
      const requestId = newToken();
      await d.broker.askApproval({
        requestId,
        conversationKey: r.conversationKey,
        platform: r.platform,
        agentName: r.agentName,
        runId: r.runId,
        title: 'Allow more spending?',
        body: `${ask.question[0]!.toUpperCase()}${ask.question.slice(1)}\nThe run waits for this decision; denied, it stops here.`,
        alwaysLabel: null,
        timeoutMs: d.timeoutMs,
        starterId: r.starter.id,
      });
      const decision = await d.humanWait(() => d.broker.wait(requestId, d.signal));
      const by = decision.byName ?? decision.by;
      if (decision.outcome === 'approved' || decision.outcome === 'always') return { outcome: 'approved', ...(by ? { by } : {}) };
      if (decision.outcome === 'expired') return { outcome: 'expired' };
      return { outcome: 'denied', ...(by ? { by } : {}) };
    },
  };
}
