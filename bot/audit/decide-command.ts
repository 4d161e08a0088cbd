/**
 * `gatehouse approvals decide ID approve|deny`: the host operator decides a pending approval.
 *
 * Contract:
 * - Allowed only for requests of agents whose `approvers.cli` holds `local`; otherwise refused with
 *   the reason (exit 1), and the refusal is audited. Decided as `local` ("host operator") on
 *   platform `cli`, which the card and the audit trail show.
 * - With a running service (its attach socket in the data folder, bot/headless/attach.ts), the service
 *   decides (POST /decide): its broker records the decision once, updates the card on the platform and
 *   wakes the waiting run at once, and audits it in its own audit file.
 * - With none, the decision is written to the store here (SQLite: opened exclusively, so only when no
 *   service holds it) and audited to the audit file; the waiting run reads it when the service starts
 *   (PostgreSQL: the replicas waiting on it are woken through the store's signals). The card is then
 *   not updated (no platform connection here); the command says so.
 * - Exit 0 decided; 1 refused or failed (reason on stderr); 2 bad usage.
 */
import { auditTo } from '../service/log.js';
import { ApprovalBroker, ApprovalStore, SignalDecisionBus } from '../../agent/approvals/index.js';
import type { CliIO } from '../cli/io.js';
import type { Config } from '../config/index.js';
import { AttachUnavailable, attachCall, findService } from '../headless/attach.js';
import { loadForCommand } from '../cli/operator.js';
import { dataDirOf } from '../service/reload.js';
import { openStore } from '../service/storage.js';
import { openAuditTrail } from './trail.js';
import { messageOf } from '../../agent/log.js';

const USAGE = 'gatehouse approvals decide ID approve|deny';

interface Answer {
  accepted: boolean;
  notice?: string;
  reason?: string;
}

function report(io: CliIO, id: string, a: Answer, note = ''): number {
  if (a.accepted) io.stdout.write(`${id}: ${a.notice ?? 'Done.'} (decided as the host operator)${note}\n`);
  else io.stderr.write(`Refused: ${a.notice ?? 'not decided'}${a.reason ? ` (${a.reason})` : ''}\n`);
  return a.accepted ? 0 : 1;
}

export async function decideCommand(args: string[], io: CliIO): Promise<number> {
  const [id, verdict, ...extra] = args;
  if (id === undefined || (verdict !== 'approve' && verdict !== 'deny') || extra.length > 0) {
    io.stderr.write(`Usage: ${USAGE}   (ID as listed by \`gatehouse approvals\`)\n`);
    return 2;
  }
  const env = { ...io.env };
  const config = loadForCommand(io, env);
  if (typeof config === 'number') return config;
  const dir = dataDirOf(config, io.cwd);
  const service = dir ? findService(dir) : undefined;
  if (service) {
    try {
      const r = await attachCall(service, '/decide', { requestId: id, verdict });
      if (r.status === 401) {
        io.stderr.write(
          `A Gatehouse service runs here (${service.socket}) but ${service.token === '' ? 'its token file is not readable by this user' : 'it refused the token'}: run this as the service's user.\n`,
        );
        return 1;
      }
      if (r.status !== 200) {
        io.stderr.write(`The running service could not decide (HTTP ${r.status}: ${JSON.stringify(r.body)}); is it an older version? Restart it to update.\n`);
        return 1;
      }
      return report(io, id, r.body as Answer);
    } catch (err) {
      if (!(err instanceof AttachUnavailable)) {
        io.stderr.write(`Could not reach the running service: ${messageOf(err)}\n`);
        return 1;
      }
      // Stale socket from a crash: nobody listens. Decide in the store.
    }
  }
  return decideInStore(io, env, config, id, verdict);
}

async function decideInStore(io: CliIO, env: Record<string, string | undefined>, config: Config, id: string, verdict: 'approve' | 'deny'): Promise<number> {
  let store;
  try {
    store = await openStore(config.store, { mustExist: true, exclusive: config.store.kind === 'sqlite', log: (m) => io.stderr.write(m + '\n') });
  } catch (err) {
    io.stderr.write(`Could not open the store to decide there: ${messageOf(err)}\n`);
    return 1;
  }
  const log = (level: string, msg: string) => {
    if (level === 'warn' || level === 'error') io.stderr.write(msg + '\n');
  };
  let trail;
  try {
    trail = openAuditTrail({ env, cwd: io.cwd, config, log });
  } catch (err) {
    await store.close();
    io.stderr.write(`${messageOf(err)}\n`);
    return 1;
  }
  const decisions = new ApprovalStore(store.approvals);
  const bus = new SignalDecisionBus({ signals: store.signals, read: async (rid) => (await decisions.get(rid))?.decision, safetyReadMs: 0 });
  let cardNotUpdated = false;
  const broker = new ApprovalBroker({
    approvals: store.approvals,
    bus,
    outputs: () => ({
      emit: async () => undefined,
      streamsText: false,
      postCard: () => Promise.reject(new Error('no platform connection from the command line')),
      updateCard: async () => {
        cardNotUpdated = true;
      },
    }),
    approversOf: (agent, platform) => (config.agents[agent]?.approvers as Record<string, string[] | undefined> | undefined)?.[platform] ?? [],
    requesterMayApprove: (agent) => config.agents[agent]?.requesterMayApprove,
    // To the audit file only: this command's output is its answer.
    audit: trail.wrap(auditTo(() => undefined)),
  });
  try {
    const answer = await broker.decideAsHost(id, verdict);
    const note = cardNotUpdated ? '\nNo service is running: the run continues when it starts; the card on the platform was not updated.' : '';
    return report(io, id, answer, note);
  } finally {
    broker.close();
    bus.close();
    trail.close();
    await store.close();
  }
}
