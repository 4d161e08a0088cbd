/**
 * THE platform seam. Every adapter (console, telegram, slack, discord) implements `Adapter` and
 * talks to the core only through `AdapterSink`. Nothing here depends on a platform library.
 *
 * Contract for adapters:
 * - Inbound: turn each platform event into an InboundMessage or InboundAction and hand it to the
 *   sink. Ack the platform first (Slack and Discord: within 3 s); `sink.message` resolves once the
 *   message is accepted or refused, never waits for the run.
 * - Commands (/stop, /reset, /help) arrive as ordinary message text, normalized: "/stop@bot" -> "/stop".
 * - Outbound: `render` shows run events in order; `postCard` / `updateCard` show a Card and later
 *   replace it with its decided form (buttons gone, `outcome` shown).
 * - A click is reported as InboundAction with the button token exactly as posted; the result's
 *   `notice` (when set) is shown privately to the clicker (callback answer, ephemeral message).
 * - Conversation keys: `telegram:<chatId>[:<topicId>]`, `slack:<teamId>:<channelId>[:<threadTs>]`,
 *   `discord:<guildId|dm>:<channelId>[:<threadId>]`, `console:<name>`. `decodeKey(ref.key)` must
 *   give back an equal ref (used after a restart to reach a conversation again).
 */
import type { AgentEvent, Card } from '../agent/events.js';

export type Platform = 'console' | 'telegram' | 'slack' | 'discord';

export interface ConversationRef {
  platform: Platform;
  /** The conversation key: the runner's lane and the store's key. */
  key: string;
  /** The platform's channel / chat id. */
  channelId: string;
  /** Thread or forum topic inside the channel, when the conversation is one. */
  threadId?: string;
  /** Slack team or Discord guild ("dm" for Discord DMs). */
  spaceId?: string;
}

export interface Sender {
  id: string;
  name?: string;
  isBot?: boolean;
  /** Discord role ids; lets `role:<id>` approvers match. */
  roles?: string[];
}

export interface Attachment {
  kind: 'image' | 'text';
  name: string;
  mimeType: string;
  /** base64 for images, UTF-8 text for text documents. */
  data: string;
}

export interface InboundMessage {
  platform: Platform;
  conversation: ConversationRef;
  sender: Sender;
  text: string;
  attachments: Attachment[];
  isDirect: boolean;
  mentionsBot: boolean;
  /** Also true when the message replies to the bot: both count as addressing it in a group. */
  repliesToBot?: boolean;
  /** The platform's id for this event; duplicates (platform retries) are dropped by it. */
  eventId: string;
}

export interface InboundAction {
  platform: Platform;
  conversation: ConversationRef;
  /** The token carried by the clicked button (adapter prefix removed). */
  token: string;
  user: Sender;
  eventId: string;
}

export interface ActionResult {
  /** Whether the click decided something. */
  accepted: boolean;
  /** A short private notice for the clicker (why nothing changed, or a confirmation). */
  notice?: string;
}

export interface MessageResult {
  accepted: boolean;
  /** A reply the adapter should post (access refusal, rate limit, /help text). */
  reply?: string;
}

/** What the core offers adapters. Implemented by bot/router.ts. */
export interface AdapterSink {
  message(msg: InboundMessage): Promise<MessageResult>;
  action(action: InboundAction): Promise<ActionResult>;
}

export interface Adapter {
  readonly platform: Platform;
  /**
   * Whether `render` shows `text` events (the answer growing as it streams). An adapter that only
   * posts whole answers says false: the model is then asked for whole replies, which is cheaper.
   */
  readonly streamsText: boolean;
  start(sink: AdapterSink): Promise<void>;
  stop(): Promise<void>;
  render(ref: ConversationRef, event: AgentEvent): Promise<void>;
  /** Posts a card; returns a handle (message id) for updateCard. */
  postCard(ref: ConversationRef, card: Card): Promise<string>;
  updateCard(ref: ConversationRef, handle: string, card: Card): Promise<void>;
  /** Posts plain text (access replies, notices to the whole conversation). */
  postText(ref: ConversationRef, text: string): Promise<void>;
  decodeKey(key: string): ConversationRef;
}
