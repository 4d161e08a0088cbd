/**
 * The running service's side of the audit trail and of `gatehouse approvals decide`: the events
 * bot/cli/index.ts emits at start and reload, and the attach socket's `/decide` route.
 *
 * Contract (`/decide`): body `{ requestId, verdict: "approve" | "deny" }` (zod-checked); answer
 * `{ accepted, notice, reason? }` from the broker's `decideAsHost`, which checks the agent's
 * `approvers.cli`, records the decision (the card on its platform is updated and the waiting run
 * wakes, as after a click) and audits it, or the refusal, as the host operator (`cli` / `local`).
 */
import { z } from 'zod';
import type { AuditEvent } from '../../agent/audit.js';
import type { ApprovalBroker } from '../../agent/approvals/index.js';
import type { Config } from '../config/index.js';
import type { ReloadResult } from '../service/reload.js';
import type { AttachRoute } from '../headless/attach.js';
import { accessEntries, approverEntries } from './config-diff.js';

/** config_loaded's approver and access entries. */
export function configEntries(config: Config): { approvers: string[]; access: string[] } {
  return { approvers: approverEntries(config), access: accessEntries(config) };
}

/** A rejected reload records its first line only (the problems may quote values; the log has them in full). */
export function reloadEvent(result: ReloadResult, config: Config): AuditEvent {
  return result.ok
    ? {
        event: 'config_reloaded',
        ok: true,
        file: config.configFile ?? null,
        ...(result.changes ? { changes: result.changes } : {}),
        needsRestart: result.needsRestart,
      }
    : { event: 'config_reloaded', ok: false, file: config.configFile ?? null, error: (result.message.split('\n')[1] ?? 'rejected').slice(0, 200) };
}

const DecideBody = z.strictObject({ requestId: z.string().min(1).max(100), verdict: z.enum(['approve', 'deny']) });

export function hostDecideRoute(broker: ApprovalBroker): AttachRoute {
  return async (body) => {
    const parsed = DecideBody.safeParse(body);
    if (!parsed.success) return { accepted: false, notice: `bad request: ${parsed.error.issues.map((i) => i.message).join('; ')}` };
    return broker.decideAsHost(parsed.data.requestId, parsed.data.verdict);
  };
}
