/**
 * The router: the core's side of the adapter seam (AdapterSink). For each inbound message it drops
 * duplicates (platform retries, by event id: one atomic claim in the store's event ledger, so a
 * restart or another process sharing the store sees them too), applies access control and the rate limit, handles the
 * bot's commands (/stop, /reset, /id, /help), lets a typed reply answer an open question, picks the agent
 * for the place, and submits the turn. Clicks go to the approval broker.
 * `/id` answers with the sender's id and the place's (chat, channel, server) and nothing else, to
 * anyone: a stranger's `/id` is a refusal reply like the others (audited, throttled by the same
 * `access.refusals`, under its own once-key so asking for ids is not swallowed by an earlier refusal).
 * The first admitted message from a group that is not on the platform's place list (the admin, just
 * admitted by user id, trying the bot in a new group) logs one info line naming the place's id and the
 * keys to set (once per place per process). In the terminal chat an unknown `/command` is not sent to
 * the model: the reply lists the commands.
 * A turn that queues behind a run waiting on a human is accepted with a reply saying what it waits
 * for ("Queued: waiting for an approval on deploy first; /stop to cancel it."). Refused strangers are
 * audited; message text is logged at debug only.
 * Refusal replies are throttled per platform (policies/access.ts createRefusalThrottle, config
 * `access.refusals`): once per stranger per interval and a global budget per minute; a flood of
 * strangers is logged (and audited) as one line a minute with counts, not one line per stranger.
 * In the terminal chat only, a line starting with "! " runs as an operator command (bot/cli/operator-shell.ts)
 * and its bounded output goes along with the next turn.
 * Policy decisions (who may talk, who may approve) are made in policies/, not here.
 */
import type { ActionResult, AdapterSink, InboundAction, InboundMessage, MessageResult } from '../../adapters/types.js';
import type { ApprovalBroker } from '../../agent/approvals/index.js';
import type { Audit } from '../../agent/audit.js';
import type { EventLedger } from '../../agent/store/types.js';
import type { ContentBlock } from '../../agent/context/messages.js';
import type { Runner } from '../../agent/run/runner.js';
import {
  checkAccess,
  createRateLimiter,
  createRefusalThrottle,
  DEFAULT_REFUSAL_LIMITS,
  floodLine,
  PLACE_LIST_KEY,
  placeLists,
  platformLabel,
  rateLimitReply,
  type AccessInput,
  type RateLimiter,
  type RefusalThrottle,
} from '../../policies/access.js';
import { agentForConversation, type Config } from '../config/index.js';
import type { OperatorShell } from '../cli/operator-shell.js';
import type { RefusalReason, Telemetry } from '../../agent/telemetry/types.js';
import type { Log } from '../../agent/log.js';
import { messageOf } from '../../agent/log.js';

const DEDUPE_TTL_MS = 24 * 3600_000;
/** Places remembered for the "first message from a new group" log line (the oldest forgotten first). */
const MAX_PLACES_SEEN = 10_000;

/** The chat commands and what each does (Telegram's / menu lists the same, adapters/telegram CHAT_COMMANDS). */
const COMMANDS: ReadonlyArray<readonly [string, string]> = [
  ['/stop', 'cancels the current run'],
  ['/reset', 'starts a new conversation'],
  ['/id', "shows this chat's id and yours"],
  ['/help', 'shows what I can do'],
];
const COMMAND_NAMES = new Set([...COMMANDS.map(([c]) => c), '/start']);

export interface RouterOptions {
  config: Config;
  runner: Runner;
  broker: ApprovalBroker;
  /** The store's platform-event ledger: a claim is false when the id was already recorded. */
  events: EventLedger;
  log?: Log;
  /** The audit trail: strangers refused, rate limits hit (clicks are audited by the broker). */
  audit?: Audit;
  /** Messages in and refused, for metrics. */
  telemetry?: Pick<Telemetry, 'messageIn' | 'messageRefused'>;
  /** `! cmd` in the terminal chat (bot/cli/operator-shell.ts); never offered to a chat platform. */
  operatorShell?: OperatorShell;
  /** The clock of the refusal throttle and the event ledger (tests). */
  now?: () => number;
}

export class Router implements AdapterSink {
  private readonly refusals: RefusalThrottle;
  private readonly limiter: RateLimiter;
  /** Operator shell output waiting to go along with the conversation's next turn. */
  private readonly shellContext = new Map<string, string[]>();
  /** Groups already seen by this process (platform:channel), for the new-group log line. */
  private readonly placesSeen = new Set<string>();

  constructor(private readonly opts: RouterOptions) {
    this.limiter = createRateLimiter(opts.config.access.rateLimit);
    this.refusals = createRefusalThrottle(this.refusalLimits(), opts.now ?? Date.now);
  }

  private refusalLimits() {
    return this.opts.config.access.refusals ?? DEFAULT_REFUSAL_LIMITS;
  }

  async message(msg: InboundMessage): Promise<MessageResult> {
    this.opts.telemetry?.messageIn(msg.platform);
    const refused = (reason: RefusalReason, r: MessageResult = { accepted: false }): MessageResult => {
      this.opts.telemetry?.messageRefused(msg.platform, reason);
      return r;
    };
    const eventKey = `m:${msg.platform}:${msg.eventId}`;
    // A message that becomes a turn claims its event in the turn's own transaction (a crash between
    // a claim and the turn's write would make a redelivery look handled); anything else claims it
    // before acting. Already taken: a redelivery, dropped.
    const key = msg.conversation.key;
    const command = parseCommand(msg.text);
    const accessInput: AccessInput = {
      platform: msg.platform,
      senderId: msg.sender.id,
      channelId: msg.conversation.channelId,
      ...(msg.conversation.spaceId !== undefined ? { spaceId: msg.conversation.spaceId } : {}),
      isDirect: msg.isDirect,
      addressed: msg.mentionsBot || msg.repliesToBot === true || command !== undefined,
      ...(msg.sender.isBot !== undefined ? { senderIsBot: msg.sender.isBot } : {}),
    };
    const platformAccess = msg.platform === 'console' ? undefined : this.opts.config.access[msg.platform];
    const access = checkAccess(accessInput, platformAccess);
    if (!access.allowed) {
      if (await this.isDuplicate(eventKey)) return refused('duplicate');
      // Silent refusals are the group chatter the bot was not addressed in: not strangers.
      if (access.silent) return refused('not_addressed');
      const onceKey = access.onceKey ?? `${msg.platform}:${msg.sender.id}`;
      // A stranger's /id gets the ids (all a refusal would tell them too), throttled the same way.
      const reply = command === '/id' ? idText(msg) : access.reply;
      const told = this.tellStranger(msg, command === '/id' ? `${onceKey}:id` : onceKey);
      return refused('stranger', told && reply ? { accepted: false, reply } : { accepted: false });
    }
    if (!msg.isDirect && msg.platform !== 'console' && !placeLists(msg.platform, platformAccess ?? {}, accessInput)) this.firstFromGroup(msg);
    // Message text is for debugging only: never above debug.
    this.opts.log?.('debug', 'message received', { conversation: key, sender: msg.sender.id, text: msg.text });
    let claimed = false;
    if (command !== undefined || (msg.platform === 'console' && msg.text.startsWith('! '))) {
      if (await this.isDuplicate(eventKey)) return refused('duplicate');
      claimed = true;
    }
    const rate = this.limiter.take(`${msg.platform}:${msg.sender.id}`);
    if (!rate.ok) {
      this.opts.audit?.({
        event: 'limit_refused',
        limit: 'rate_limit',
        conversation: key,
        platform: msg.platform,
        userId: msg.sender.id,
        retryAfterSec: rate.retryAfterSec,
      });
      return refused('rate_limited', { accepted: false, reply: rateLimitReply(this.opts.config.access.rateLimit, rate.retryAfterSec) });
    }

    const agent = agentForConversation(this.opts.config, key);
    if (command === '/stop') {
      const stopped = this.opts.runner.stop(key);
      return { accepted: true, reply: stopped ? 'Stopping the current run.' : 'Nothing is running here.' };
    }
    if (command === '/reset') {
      await this.opts.runner.reset(key, agent.name);
      return { accepted: true, reply: 'Started a new conversation: I have forgotten what was said here before.' };
    }
    if (command === '/help' || command === '/start') return { accepted: true, reply: helpText(agent.name, agent.tools, agent.tier) };
    if (command === '/id') return { accepted: true, reply: idText(msg) };
    if (msg.platform === 'console' && command === undefined) {
      const unknown = unknownCommand(msg.text);
      if (unknown !== undefined) {
        return {
          accepted: false,
          reply: `${unknown} is not a command (nothing was sent). Commands: ${COMMANDS.map(([c, what]) => `${c} ${what}`).join('; ')}.`,
        };
      }
    }
    // The terminal chat's user is the operator at the keyboard; on a chat platform "! " is just text.
    if (msg.platform === 'console' && this.opts.operatorShell && msg.text.startsWith('! ') && msg.text.slice(2).trim() !== '') {
      const r = await this.opts.operatorShell(key, agent.name, msg.text.slice(2).trim());
      if (r.context) this.shellContext.set(key, [...(this.shellContext.get(key) ?? []), r.context]);
      return { accepted: true, reply: r.reply };
    }

    // One read of the conversation's open requests serves the typed answer and the "Queued" notice.
    let open: Promise<string[]> | undefined;
    const openIds = () => (open ??= this.opts.broker.openIds(key));
    if (msg.text.trim() !== '' && (await this.safeOpenIds(key, openIds)).length > 0) {
      // It may answer an open question: claimed first, so a redelivery cannot answer or run twice.
      if (await this.isDuplicate(eventKey)) return refused('duplicate');
      claimed = true;
      if (await this.answeredTyped(key, msg.sender, msg.text.trim(), openIds)) return { accepted: true };
    }
    if (msg.text.trim() === '' && msg.attachments.length === 0) return refused('empty');

    const shell = this.shellContext.get(key) ?? [];
    this.shellContext.delete(key);
    const attachments: ContentBlock[] = shell.map((text): ContentBlock => ({ type: 'text', text }));
    attachments.push(
      ...msg.attachments.map(
        (a): ContentBlock =>
          a.kind === 'image'
            ? { type: 'image', source: { type: 'base64', media_type: a.mimeType, data: a.data } }
            : { type: 'text', text: `<attachment name="${a.name.replace(/"/g, "'")}">\n${a.data}\n</attachment>` },
      ),
    );
    // Resolves once the turn is stored (not when it has run): a restart after this still runs it.
    // Told before it is queued: a run parked on a human holds the lane until someone decides.
    // (Busy and a card pending: also right after a restart, before the resumed run is parked again.)
    const waiting = this.opts.runner.isBusy(key)
      ? await openIds()
          .then((ids) => this.opts.broker.describeWaiting(key, ids))
          .catch(() => undefined)
      : undefined;
    try {
      const submitted = await this.opts.runner.submit(
        {
          agentName: agent.name,
          conversationKey: key,
          platform: msg.platform,
          sender: { id: msg.sender.id, ...(msg.sender.name !== undefined ? { name: msg.sender.name } : {}) },
          text: msg.text,
          attachments,
          humanAvailable: true,
        },
        claimed ? {} : { claim: { event: eventKey, ttlMs: DEDUPE_TTL_MS } },
      );
      if (submitted.duplicate) return refused('duplicate');
    } catch (err) {
      this.opts.log?.('error', `[${key}] could not store an incoming turn: ${messageOf(err)}`);
      return refused('store_error', {
        accepted: false,
        reply: 'Sorry, I could not take that message (a storage problem on my side). Please send it again in a moment.',
      });
    }
    if (waiting) return { accepted: true, reply: `Queued: waiting for ${waiting} first; /stop to cancel it.` };
    return { accepted: true };
  }

  /** One refusal that carries a reply: whether to post it now (throttled); floods are logged and audited. */
  private tellStranger(msg: InboundMessage, onceKey: string): boolean {
    const v = this.refusals.refuse(msg.platform, onceKey, msg.sender.id);
    if (v.flood) {
      this.opts.log?.('warn', floodLine(v.flood, this.refusalLimits()));
      this.opts.audit?.({
        event: 'stranger_flood',
        platform: v.flood.platform,
        refused: v.flood.refused,
        told: v.flood.told,
        senders: v.flood.senders,
        windowMs: v.flood.windowMs,
      });
    }
    // Each stranger told is audited; the untold rest of a flood is in the flood line's counts.
    if (v.reply) this.opts.audit?.({ event: 'stranger_refused', platform: msg.platform, userId: msg.sender.id, channel: msg.conversation.channelId });
    return v.reply;
  }

  /** Logs the first admitted message from a group not on the place list: its id, for the config. */
  private firstFromGroup(msg: InboundMessage): void {
    if (msg.platform === 'console') return;
    const place = `${msg.platform}:${msg.conversation.channelId}`;
    if (this.placesSeen.has(place)) return;
    this.placesSeen.add(place);
    if (this.placesSeen.size > MAX_PLACES_SEEN) this.placesSeen.delete(this.placesSeen.values().next().value as string);
    const label = platformLabel(msg.platform);
    const id = msg.conversation.channelId;
    this.opts.log?.(
      'info',
      `first message from a new ${label} group: chat id ${id} (conversation ${msg.conversation.key}, from user ${msg.sender.id}, admitted by id). ` +
        `To let everyone in it talk, add "${id}" to ${PLACE_LIST_KEY[msg.platform]}; to give it an agent, add a route { match: "${placeMatch(msg)}", agent: <name> }`,
      { platform: msg.platform, chat: id, conversation: msg.conversation.key },
    );
  }

  async action(action: InboundAction): Promise<ActionResult> {
    if (await this.isDuplicate(`a:${action.platform}:${action.eventId}`)) return { accepted: false };
    return this.opts.broker.click({ token: action.token, conversationKey: action.conversation.key, platform: action.platform, user: action.user });
  }

  /** The conversation's open requests; a store that cannot say counts as none (the turn's write says so). */
  private async safeOpenIds(key: string, openIds: () => Promise<string[]>): Promise<string[]> {
    try {
      return await openIds();
    } catch (err) {
      this.opts.log?.('warn', `[${key}] could not check for an open question: ${messageOf(err)}`);
      return [];
    }
  }

  /** A store that cannot say whether a question is open: the message goes on as a turn, whose own write says so. */
  private async answeredTyped(key: string, sender: InboundMessage['sender'], text: string, openIds: () => Promise<string[]>): Promise<boolean> {
    try {
      return await this.opts.broker.answerTyped(key, sender, text, await openIds());
    } catch (err) {
      this.opts.log?.('warn', `[${key}] could not check for an open question: ${messageOf(err)}`);
      return false;
    }
  }

  private async isDuplicate(id: string): Promise<boolean> {
    try {
      // One atomic statement: of two deliveries at once, here or in another process, one is new.
      return !(await this.opts.events.claim(id, DEDUPE_TTL_MS, (this.opts.now ?? Date.now)()));
    } catch (err) {
      // Better to risk handling a platform retry twice than to drop a message: the turn's own
      // write still has to succeed, and says so to the user when it does not.
      this.opts.log?.('warn', `dedupe lookup failed, treating ${id} as new: ${messageOf(err)}`);
      return false;
    }
  }
}

const COMMAND_RE = /^\/([a-z]+)(?:@\S+)?(?:\s|$)/i;

/** "/stop", "/stop@MyBot now" -> "/stop"; anything else -> undefined. */
function parseCommand(text: string): string | undefined {
  const m = COMMAND_RE.exec(text.trim());
  if (!m) return undefined;
  const cmd = `/${m[1]!.toLowerCase()}`;
  return COMMAND_NAMES.has(cmd) ? cmd : undefined;
}

/** "/stpo" -> "/stpo" when it reads as a command but is none of ours; else undefined. */
function unknownCommand(text: string): string | undefined {
  const m = COMMAND_RE.exec(text.trim());
  if (!m) return undefined;
  const cmd = `/${m[1]!.toLowerCase()}`;
  return COMMAND_NAMES.has(cmd) ? undefined : cmd;
}

/** The route match for the whole place (a chat with its topics, a channel with its threads). */
function placeMatch(msg: InboundMessage): string {
  const c = msg.conversation;
  return [msg.platform, ...(c.spaceId !== undefined ? [c.spaceId] : []), c.channelId].join(':');
}

/** The sender's id and the place's, nothing else (what access and routes are written with). */
function idText(msg: InboundMessage): string {
  const label = platformLabel(msg.platform);
  const c = msg.conversation;
  const lines = [`Your ${label} user id is ${msg.sender.id}.`];
  if (!msg.isDirect) {
    const space = c.spaceId !== undefined && c.spaceId !== 'dm' ? ` (${msg.platform === 'slack' ? 'workspace' : 'server'} id ${c.spaceId})` : '';
    lines.push(`This ${msg.platform === 'telegram' ? 'chat' : 'channel'}'s id is ${c.channelId}${space}; a route for it matches "${placeMatch(msg)}".`);
  } else {
    lines.push(`This direct chat's id is ${c.channelId}; its conversation key is ${c.key}.`);
  }
  return lines.join('\n');
}

function helpText(agent: string, tools: readonly string[], tier: string): string {
  return [
    `I am Gatehouse's "${agent}" agent. Write to me and I will answer, using my tools when useful.`,
    `Tools here: ${tools.join(', ') || 'none'}. I run ${tier} actions on my own; anything riskier waits for an approver's button.`,
    `Commands: ${COMMANDS.map(([c, what]) => `${c} ${what}`).join(', ')}.`,
  ].join('\n');
}
