/**
 * The per-agent `requesterMayApprove` key (issue 24), kept out of bot/config/schema.ts so that file
 * only names it. The rule itself is agent/approvals/requester.ts.
 *
 *   requesterMayApprove: false   # the person whose message started a run cannot approve its cards
 *
 * Unset: false where more than one approver (or a group/role) is bound for the platform, true otherwise.
 */
import { z } from 'zod';
import { effectiveRequesterMayApprove } from '../../agent/approvals/requester.js';

export const requesterMayApproveSchema = z.boolean({ message: 'expected true or false (may the person who started a run approve it?)' });

type AgentLike = { requesterMayApprove?: boolean | undefined; approvers: Partial<Record<string, string[] | undefined>> };

/** The start-log line: the effective value per agent and platform with an approver bound. */
export function requesterApprovalLine(agents: Record<string, AgentLike>, platforms: readonly string[]): string | undefined {
  const parts: string[] = [];
  for (const [name, a] of Object.entries(agents)) {
    const per = [...platforms, 'cli']
      .filter((p) => (a.approvers[p] ?? []).length > 0)
      .map((p) => {
        const list = a.approvers[p] ?? [];
        const may = effectiveRequesterMayApprove(a.requesterMayApprove, list);
        return `${p} ${may ? 'yes' : 'no'}${a.requesterMayApprove === undefined ? ` (default: ${list.length} bound)` : ''}`;
      });
    if (per.length > 0) parts.push(`${name}: ${per.join(', ')}`);
  }
  return parts.length > 0 ? `requester may approve their own request: ${parts.join('; ')}` : undefined;
}
