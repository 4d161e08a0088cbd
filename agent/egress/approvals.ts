/**
 * A boxed command asks for a host not on its agent's sandboxNetwork.allow: an approval card
 * ("`git clone …` wants github.com:443": Approve once / Always for this host / Deny) through the
 * approval broker, where the run has an approver; an explained decline where it has none.
 *
 * Contract:
 * - `forCommand(who)` is one command's gate (hub.ts `session` holds its proxy's connections on `ask`).
 * - No approver bound for the run's platform (`who.approvers()` empty; headless unattended runs have
 *   none): refused at once, the reason naming both fixes (the allow entry, or an approver).
 * - Otherwise ONE card per run and `host:port` while it is undecided: every connection of the run to
 *   that target (this command's or a parallel one's) waits on it. The card is the broker's
 *   (`askApproval`): its tokens, first click wins, approval_asked/approval_decided audit, expiry at
 *   `who.timeoutMs`.
 * - Approve once: this command's connections to that target go through (this one and later ones, so a
 *   client that reconnects is not asked again). Always: `grant(agent, "host:port")` persists it (the
 *   store's allowlists, kind `egress`; the proxy's list includes it), then as once; other runs' cards
 *   for the same agent and target are settled as approved. Deny, expiry: refused with the reason
 *   (the command sees the proxy's 403), and so are its later connections to that target.
 * - The hold ends with the command: its signal (a /stop, its timeout) refuses at once; when the last
 *   command waiting on a card stopped or ended, the card is settled as denied with that note.
 * - `close()` returns the tool result's notes: each declined target once, with what would allow it.
 */
import type { ApprovalBroker, Decision } from '../approvals/index.js';
import { newToken } from '../approvals/index.js';
import type { Log } from '../log.js';
import { whenAborted } from '../run/abort.js';
import { entryFor, type EgressTarget, type EgressVerdict } from './proxy.js';
import type { SessionGate } from './hub.js';
import { messageOf } from '../log.js';

/** Who asks: one execute_command call of one run. */
export interface EgressRequester {
  agentName: string;
  conversationKey: string;
  platform: string;
  runId: string;
  starterId?: string;
  /** The run's approvers on its platform, read when a host is asked for. */
  approvers(): readonly string[];
  /** What would let an unattended run ask (a headless run's flag), said in the decline. */
  noApproverFix?: string;
  timeoutMs: number;
  /** The call's: aborted by /stop or its timeout. */
  signal: AbortSignal;
  command: string;
}

export interface EgressApprovalsOptions {
  broker: Pick<ApprovalBroker, 'askApproval' | 'wait' | 'settle'>;
  /** Persists "Always for this host" (PersistedAllowlists.add kind `egress`). */
  grant(agent: string, entry: string): Promise<void>;
  now?: () => number;
  log?: Log;
}

interface Pending {
  agent: string;
  entry: string;
  requestId: string;
  /** The card is posted (and stored): `decision` is set. */
  posted: Promise<void>;
  decision: Promise<Decision> | undefined;
  waiters: Set<object>;
}

const TITLE_MAX = 60;

function shortCommand(command: string): string {
  const first = command.trim().split('\n', 1)[0] ?? '';
  return first.length > TITLE_MAX ? `${first.slice(0, TITLE_MAX - 1)}…` : first;
}

export class EgressApprovals {
  private readonly pending = new Map<string, Pending>();
  private readonly now: () => number;

  constructor(private readonly opts: EgressApprovalsOptions) {
    this.now = opts.now ?? Date.now;
  }

  forCommand(who: EgressRequester): SessionGate {
    const decided = new Map<string, EgressVerdict>();
    const notes = new Map<string, string>();
    const joined = new Set<Pending>();
    const me = {};
    let closed = false;
    const decline = (entry: string, reason: string, note: string, requestId?: string): EgressVerdict => {
      const v: EgressVerdict = { refused: reason, ...(requestId ? { requestId } : {}) };
      decided.set(entry, v);
      notes.set(entry, note);
      return v;
    };
    // A command that ends because its run was stopped says so on the card, whichever of the stop
    // and the command's end this session hears of first (a busy machine can reverse them).
    const ended = () => (who.signal.aborted ? 'the command was stopped' : 'the command ended before a decision');
    const leave = (p: Pending, note: string) => {
      if (!p.waiters.delete(me)) return;
      joined.delete(p);
      if (p.waiters.size === 0) {
        void this.opts.broker
          .settle(p.requestId, { outcome: 'denied', at: this.now(), note })
          .catch((err: unknown) => this.opts.log?.('warn', `could not close egress card ${p.requestId}: ${messageOf(err)}`));
      }
    };

    const ask = async (t: EgressTarget, refusal: string): Promise<EgressVerdict> => {
      const entry = entryFor(t.host, t.port);
      const known = decided.get(entry);
      if (known) return known;
      if (closed || who.signal.aborted) return { refused: `${refusal}, and the command is ending` };
      const allowKey = `agents.${who.agentName}.sandboxNetwork.allow`;
      if (who.approvers().length === 0) {
        const fix = who.noApproverFix ?? `bind an approver for ${who.platform} (agents.${who.agentName}.approvers.${who.platform}) so it is asked on a card`;
        return decline(
          entry,
          `${refusal}, and no approver is bound for ${who.platform} to approve it: add "${entry}" to ${allowKey}, or ${fix}`,
          `The egress proxy declined ${entry} (${t.method}): it is not on ${allowKey} and nobody here can approve it. ` +
            `Do not retry it; an operator could add "${entry}" to ${allowKey} in gatehouse.yaml, or ${fix}.`,
        );
      }
      let p: Pending;
      try {
        p = await this.card(who, entry, t);
      } catch (err) {
        return { refused: `${refusal}, and the approval card could not be posted (${messageOf(err)})` };
      }
      p.waiters.add(me);
      joined.add(p);
      // The command may have ended while the card was being posted: nobody would wait on it.
      if (closed) {
        leave(p, ended());
        return { refused: `${refusal}, and the command is ending`, requestId: p.requestId };
      }
      let unlink: () => void = () => undefined;
      // whenAborted: a stop that came while the card was being posted counts at once.
      const stopped = new Promise<'stopped'>((resolve) => (unlink = whenAborted(who.signal, () => resolve('stopped'))));
      let d: Decision | 'stopped';
      try {
        d = await Promise.race([p.decision!, stopped]);
      } catch (err) {
        leave(p, 'the decision could not be read');
        return { refused: `${refusal}; its approval could not be read (${messageOf(err)})`, requestId: p.requestId };
      } finally {
        unlink();
      }
      if (d === 'stopped') {
        leave(p, 'the command was stopped');
        return { refused: `${refusal}; the command was stopped while its approval waited`, requestId: p.requestId };
      }
      joined.delete(p);
      p.waiters.delete(me);
      if (d.outcome === 'approved' || d.outcome === 'always') {
        const v: EgressVerdict = { allowed: true, requestId: p.requestId };
        decided.set(entry, v);
        return v;
      }
      const why =
        d.outcome === 'expired'
          ? 'nobody approved it before the approval expired'
          : `denied${d.by ? ` by ${d.byName ?? d.by}` : ''}${d.note ? ` (${d.note})` : ''}`;
      return decline(
        entry,
        d.outcome === 'expired' ? `${refusal}; nobody approved the connection before its approval expired` : `${refusal}; the connection was ${why}`,
        `The egress proxy declined ${entry} (${t.method}): ${why}. Do not retry it; ask the user what to do instead.`,
        p.requestId,
      );
    };

    return {
      ask,
      close: async () => {
        closed = true;
        for (const p of [...joined]) leave(p, ended());
        return [...notes.values()];
      },
    };
  }

  /** The run's undecided card for `entry`, or a new one (posted and stored before any wait). */
  private async card(who: EgressRequester, entry: string, t: EgressTarget): Promise<Pending> {
    const key = `${who.conversationKey}\u0000${who.runId}\u0000${entry}`;
    const have = this.pending.get(key);
    if (have) {
      await have.posted;
      return have;
    }
    const requestId = newToken();
    const p: Pending = { agent: who.agentName, entry, requestId, posted: Promise.resolve(), decision: undefined, waiters: new Set() };
    p.posted = (async () => {
      await this.opts.broker.askApproval({
        requestId,
        conversationKey: who.conversationKey,
        platform: who.platform,
        agentName: who.agentName,
        runId: who.runId,
        title: `\`${shortCommand(who.command)}\` wants ${entry}`,
        body:
          `A command in the sandbox asks to connect to ${entry} (${t.method === 'CONNECT' ? 'a tunnel, usually HTTPS' : 'plain HTTP'}), ` +
          `which is not on agents.${who.agentName}.sandboxNetwork.allow.\n` +
          `Approve once: this command may connect to ${entry}. Always for this host: ${entry} is added to the agent's allowlist for good.`,
        preview: who.command,
        alwaysLabel: 'Always for this host',
        timeoutMs: who.timeoutMs,
        ...(who.starterId !== undefined ? { starterId: who.starterId } : {}),
      });
      p.decision = this.opts.broker.wait(requestId).then(async (d) => {
        this.pending.delete(key);
        if (d.outcome === 'always') await this.always(p);
        return d;
      });
    })();
    // Coalesced from here on: a second connection meanwhile waits for this card, not a card of its own.
    this.pending.set(key, p);
    try {
      await p.posted;
    } catch (err) {
      this.pending.delete(key);
      throw err;
    }
    return p;
  }

  /** Persisted first, so a later connection finds it listed; then other runs' cards for it are settled. */
  private async always(p: Pending): Promise<void> {
    try {
      await this.opts.grant(p.agent, p.entry);
    } catch (err) {
      this.opts.log?.('warn', `could not keep "Always for this host" ${p.entry} of agent ${p.agent}: ${messageOf(err)}`);
    }
    for (const other of this.pending.values()) {
      if (other.agent !== p.agent || other.entry !== p.entry) continue;
      await this.opts.broker
        .settle(other.requestId, { outcome: 'approved', at: this.now(), by: 'policy', note: `covered by an Always for ${p.entry} given meanwhile` })
        .catch(() => undefined);
    }
  }
}
