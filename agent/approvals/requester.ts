/**
 * Whether the person who started a run may decide its approvals (`requesterMayApprove`, issue 24).
 *
 * Contract:
 * - An explicit per-agent value wins. Unset: false where more than one approver is bound for the
 *   platform, true otherwise (a lone approver must be able to approve their own request, or nothing
 *   they ask for could ever run). A `group:` or `role:` entry may hold several people, so it counts
 *   as more than one.
 * - Applies to approvals, pickers and "Approve all" only; a question's asker may always answer it.
 * - The host operator (`local` at `gatehouse approvals decide`) is the requester only of runs started
 *   at the terminal (`console`) or headless (`cli`).
 */
export function defaultRequesterMayApprove(approvers: readonly string[]): boolean {
  const many = approvers.length > 1 || approvers.some((a) => a.startsWith('group:') || a.startsWith('role:'));
  return !many;
}

export function effectiveRequesterMayApprove(explicit: boolean | undefined, approvers: readonly string[]): boolean {
  return explicit ?? defaultRequesterMayApprove(approvers);
}

/** Platforms whose runs the host operator starts (so counts as their requester). */
export const HOST_STARTED_PLATFORMS: readonly string[] = ['console', 'cli'];
