/**
 * Where an approval card goes (`approvalDelivery`, issue 24): the conversation (`here`), each bound
 * approver's direct messages (`dm`, on the conversation's platform or another), both, or (Slack) only
 * the requester's eyes (`ephemeral`). The broker (./broker.ts) stores what this returns with the
 * request; the decision then updates every copy.
 *
 * Contract:
 * - `here`: the card in the conversation, as before.
 * - `dm` / `both`: the card goes to the direct messages of each plain id bound under the agent's
 *   approvers for the target platform (`group:` / `role:` entries are not messaged; the requester is
 *   skipped where they may not approve their own request). The card carries a line saying where it
 *   was asked. With `dm` the conversation gets a status line instead of the card ("Waiting for
 *   approval from @alice"), which the decision turns into its outcome; with `both` it gets the card.
 *   People are named as their platform shows them (`userLabel`: @username or name), else by id.
 * - Never lose an approval: a DM that fails (Telegram: the user never started the bot) or no one to
 *   message puts the card itself in the conversation, with a note naming who could not be reached
 *   and why. The requester is never told more than that.
 * - `ephemeral` (Slack): the card is shown only to the requester, in the conversation, when they are
 *   a bound approver who may approve their own request; otherwise (or on another platform, or when
 *   the ephemeral post fails) the card is posted `here`, with a note in its body.
 * - No platform library and no config parsing here: `DirectCards` is the port bot/ builds from the
 *   adapters, `deliveryOf` reads the agent's setting live.
 */
import type { Card } from '../events.js';
import type { OutputResolver } from '../run/output.js';
import type { Log } from '../log.js';
import { messageOf } from '../log.js';

/** An agent's resolved `approvalDelivery`. `platform` unset: the conversation's own. */
export type ApprovalDelivery = { mode: 'here' } | { mode: 'ephemeral' } | { mode: 'dm' | 'both'; platform?: string };

export const DELIVER_HERE: ApprovalDelivery = { mode: 'here' };

/** What bot/ offers: opening a user's direct conversation, and Slack's ephemeral cards. */
export interface DirectCards {
  /** The conversation key of `userId`'s direct messages with the bot on `platform`; rejects with a reason. */
  openDirect(platform: string, userId: string): Promise<string>;
  /** How `platform` shows `userId` (`@alice`); undefined when it cannot tell (the id is shown). Never rejects. */
  userLabel?(platform: string, userId: string): Promise<string | undefined>;
  /** Posts a card only `userId` sees in the conversation; undefined when its platform has no such thing. */
  postEphemeral?(conversationKey: string, userId: string, card: Card): Promise<string> | undefined;
}

/** A copy of the card in a direct conversation: where, for whom, its handle (unset while it is being posted). */
export interface DirectCopy {
  key: string;
  platform: string;
  userId: string;
  handle?: string | undefined;
}

export interface Delivered {
  /** The handle of what the conversation shows (the card, or its status line). */
  handle: string;
  /** What the conversation shows when it is not the card itself (a status line, or the card with a note). */
  hereCard?: Card;
  /** The card as sent to direct messages (with its origin line). */
  directCard?: Card;
  directs?: DirectCopy[];
}

export interface DeliveryOptions {
  outputs: OutputResolver;
  direct?: DirectCards;
  deliveryOf?(agentName: string): ApprovalDelivery;
  approversOf(agentName: string, platform: string): readonly string[];
  /** Whether the run's starter may decide this agent's approvals on this platform. */
  requesterMayApprove(agentName: string, platform: string): boolean;
  /**
   * Records a direct copy with the request as it is posted (first without its handle), so a click on
   * it that comes before the whole delivery is stored is recognised.
   */
  noteDirect?(requestId: string, copy: DirectCopy): Promise<void>;
  log?: Log;
}

export interface DeliveryRequest {
  id: string;
  kind: string;
  conversationKey: string;
  platform: string;
  agentName: string;
  starterId?: string;
}

const NAMES: Record<string, string> = { telegram: 'Telegram', slack: 'Slack', discord: 'Discord', console: 'console', cli: 'the terminal' };
export const platformName = (p: string): string => NAMES[p] ?? p;

/** How long a name lookup may hold up a card before the id is shown instead. */
const LABEL_WAIT_MS = 3_000;

const withNote = (card: Card, note: string): Card => ({ ...card, body: `${card.body}\n\n${note}` });

export class CardDelivery {
  constructor(private readonly opts: DeliveryOptions) {}

  /** How this request's card is delivered; questions always go to the conversation (the asker answers them). */
  private modeOf(req: DeliveryRequest): ApprovalDelivery {
    if (req.kind === 'question') return DELIVER_HERE;
    return this.opts.deliveryOf?.(req.agentName) ?? DELIVER_HERE;
  }

  async deliver(req: DeliveryRequest, card: Card): Promise<Delivered> {
    const mode = this.modeOf(req);
    const postHere = (c: Card) => this.opts.outputs(req.conversationKey).postCard(c, { requestId: req.id });
    if (mode.mode === 'here') return { handle: await postHere(card) };
    if (mode.mode === 'ephemeral') return this.ephemeral(req, card, postHere);

    const target = mode.platform ?? req.platform;
    const skipRequester = target === req.platform && req.starterId !== undefined && !this.opts.requesterMayApprove(req.agentName, req.platform);
    const users = this.opts
      .approversOf(req.agentName, target)
      .filter((a) => !a.startsWith('group:') && !a.startsWith('role:') && a !== '')
      .filter((a) => !(skipRequester && a === req.starterId));
    const directCard = withNote(card, `Asked in ${platformName(req.platform)} conversation ${req.conversationKey}.`);
    const directs: DirectCopy[] = [];
    const failed: string[] = [];
    const labels = new Map(await Promise.all(users.map(async (u) => [u, await this.label(target, u)] as const)));
    for (const userId of users) {
      try {
        if (!this.opts.direct) throw new Error('direct messages are not available here');
        const key = await this.opts.direct.openDirect(target, userId);
        await this.opts.noteDirect?.(req.id, { key, platform: target, userId });
        const handle = await this.opts.outputs(key).postCard(directCard, { requestId: req.id });
        directs.push({ key, platform: target, userId, handle });
        await this.opts.noteDirect?.(req.id, { key, platform: target, userId, handle });
      } catch (err) {
        const why = messageOf(err);
        this.opts.log?.('warn', `approval ${req.id}: could not send the card to ${target} user ${userId}'s direct messages: ${why}`);
        failed.push(`${labels.get(userId) ?? userId} (${oneLine(why)})`);
      }
    }
    const where = `${platformName(target)} direct messages`;
    const sentTo = directs.map((d) => labels.get(d.userId) ?? d.userId).join(', ');
    const notes: string[] = [];
    if (directs.length > 0) notes.push(`Sent to the ${where} of ${sentTo}.`);
    if (failed.length > 0) notes.push(`Could not reach by direct message: ${failed.join('; ')}. The card is posted here instead.`);
    if (users.length === 0) notes.push(`No approver on ${platformName(target)} to message directly: the card is posted here instead.`);
    const cardHere = mode.mode === 'both' || failed.length > 0 || directs.length === 0;
    const hereCard: Card = cardHere
      ? withNote(card, notes.join(' '))
      : { kind: card.kind, title: card.title, body: `Waiting for approval from ${sentTo} (sent to their ${where}).`, buttons: [] };
    const handle = await postHere(hereCard);
    return { handle, hereCard, ...(directs.length > 0 ? { directCard, directs } : {}) };
  }

  /** The person as their platform shows them, else their id; a lookup that fails or hangs costs nothing. */
  private async label(platform: string, userId: string): Promise<string> {
    const lookup = this.opts.direct?.userLabel?.(platform, userId);
    if (!lookup) return userId;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), LABEL_WAIT_MS)));
    try {
      return ((await Promise.race([lookup.catch(() => undefined), late])) ?? userId).replace(/\s+/g, ' ').slice(0, 80);
    } finally {
      clearTimeout(timer);
    }
  }

  private async ephemeral(req: DeliveryRequest, card: Card, postHere: (c: Card) => Promise<string>): Promise<Delivered> {
    const starter = req.starterId;
    let why: string;
    if (starter === undefined) why = 'the run has no requester';
    else if (!this.opts.approversOf(req.agentName, req.platform).includes(starter)) why = 'the requester is not a bound approver';
    else if (!this.opts.requesterMayApprove(req.agentName, req.platform)) why = 'the requester may not approve their own request';
    else {
      const posting = this.opts.direct?.postEphemeral?.(req.conversationKey, starter, card);
      if (!posting) why = `${platformName(req.platform)} has no ephemeral messages`;
      else {
        try {
          return { handle: await posting };
        } catch (err) {
          why = `the ephemeral card failed (${oneLine(messageOf(err))})`;
          this.opts.log?.('warn', `approval ${req.id}: ${why}; posting it in the conversation`);
        }
      }
    }
    const hereCard = withNote(card, `Posted in the conversation: ${why}.`);
    return { handle: await postHere(hereCard), hereCard };
  }
}

function oneLine(s: string): string {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

/** Every posted copy of a request's card with its decided form: the conversation's (earlier ones first), then each direct one. */
export function decidedCopies(
  req: {
    conversationKey: string;
    card: Card;
    cardHandle?: string | undefined;
    earlierHandles?: string[] | undefined;
    hereCard?: Card | undefined;
    directCard?: Card | undefined;
    directs?: DirectCopy[] | undefined;
  },
  decide: (card: Card) => Card,
): Array<{ key: string; handle: string; card: Card }> {
  const here = decide(req.hereCard ?? req.card);
  const out = [...(req.earlierHandles ?? []), ...(req.cardHandle !== undefined ? [req.cardHandle] : [])].map((handle) => ({
    key: req.conversationKey,
    handle,
    card: here,
  }));
  if (req.directs?.length) {
    const direct = decide(req.directCard ?? req.card);
    for (const d of req.directs) if (d.handle !== undefined) out.push({ key: d.key, handle: d.handle, card: direct });
  }
  return out;
}
