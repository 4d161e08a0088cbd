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
 *   give back an equal ref (used after a restart to reach a conversation again). `cli:<KEY>` keys
 *   belong to headless runs (`gatehouse run`, bot/headless/), which need no adapter.
 * - Held connections: what only one process may keep open per bot (Telegram long polling, Slack
 *   Socket Mode, the Discord gateway) is the adapter's `held`. `start(sink, { holdConnection: false })`
 *   readies everything else (outbound calls, webhook ingress) and leaves it closed; `held.open()` /
 *   `held.close()` then follow the replica's leadership (bot/service/leadership.ts). Outbound calls work
 *   whether it is open or not: a turn of any conversation may run on any replica.
 * - HTTP: an adapter that receives platform requests (Telegram webhook, Slack Events API) returns
 *   its routes from `httpRoutes()`; bot/service/http.ts mounts them on the bot's one HTTP server. The
 *   handler owns the response (status, body) and checks the platform's signature or secret itself.
 * - Optional capabilities (`openDirect`, `userLabel`, `postEphemeralCard`): absent means the platform (or this
 *   adapter) has no such thing; the core then posts in the conversation instead.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AgentEvent, Card } from '../agent/events.js';

/** The one logger interface (agent/log.ts), for the adapters. */
export { fallbackLog, prefixedLog, type Log } from '../agent/log.js';

/** Every platform, declared once (policies/access.ts keeps its own copy: policies import nothing). */
export const PLATFORMS = ['console', 'telegram', 'slack', 'discord'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** One problem with a platform's environment: the variable and what to do. */
export interface EnvProblem {
  path: string;
  message: string;
}

/**
 * What a platform's ids, environment variables and secrets look like. Lives with the adapter
 * (adapters/<platform>/descriptor.ts, no platform library); bot/config/index.ts and bot/config/env.ts read it.
 */
export interface PlatformDescriptor<E = unknown> {
  platform: Platform;
  /** A user / chat / channel id as written in gatehouse.yaml (approvers, access lists). */
  ids: { re: RegExp; hint: string };
  /**
   * Approver entries beyond plain ids (Slack `group:<id>`, Discord `role:<id>`). `prefix` marks the
   * form: such an entry elsewhere is refused naming the platform it works for.
   */
  approverForms?: ReadonlyArray<{ prefix: string; re: RegExp; hint: string }>;
  /**
   * The platform's lists under gatehouse.yaml's `access.<platform>` (`users`, `chats`): the ids the bot
   * answers. Absent: no `access` entry (the terminal chat).
   */
  accessLists?: readonly string[];
  /**
   * The prefix the platform's variables share (`TELEGRAM_`): any other set variable under it is a
   * typo (bot/config/env.ts unknownVars). Absent: the platform reads no environment.
   */
  envPrefix?: string;
  /** Every environment variable the platform reads. */
  env: readonly string[];
  /** Those that are secrets: never handed to the agent's commands, never logged. */
  secrets: readonly string[];
  /**
   * The platform's settings from the environment, or undefined when it is not enabled. Never
   * throws; every problem names its variable and never echoes a secret.
   */
  parseEnv?(env: Readonly<Record<string, string | undefined>>, problems: EnvProblem[]): E | undefined;
  /**
   * What `gatehouse init` writes for the platform (bot/cli/init.ts): where users find their id, one more
   * access example (a group, a channel), and the .env lines. Absent: init has no flag for it.
   */
  setup?: { idHelp: string; moreAccess: string; envLines: readonly string[] };
  /**
   * What `gatehouse doctor` reports for the enabled platform (bot/cli/doctor-checks.ts): how it is
   * configured, and the API's URL, whose host must resolve.
   */
  reachability?(env: E): { vars: string; apiUrl: string };
}

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
  /** Discord role ids / Slack user group ids; let `role:<id>` / `group:<id>` approvers match. */
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

/** What the core offers adapters. Implemented by bot/service/router.ts. */
export interface AdapterSink {
  message(msg: InboundMessage): Promise<MessageResult>;
  action(action: InboundAction): Promise<ActionResult>;
}

/** A route on the bot's HTTP server, contributed by an adapter. */
export interface HttpRoute {
  method: 'POST' | 'GET';
  /** Exact path, e.g. "/slack/events". */
  path: string;
  handler: (req: IncomingMessage, res: ServerResponse) => void;
}

/**
 * A connection only one process may hold at a time for one bot (long polling, Socket Mode, gateway).
 * open() and close() are serialized and idempotent; close() leaves outbound calls working.
 */
export interface HeldConnection {
  /** What it is, for logs and /readyz ("Telegram long polling"). */
  readonly name: string;
  /** Resolves once it receives; rejects with what to fix (and stays closed). */
  open(): Promise<void>;
  close(): Promise<void>;
  /** Open and receiving now. */
  readonly up: boolean;
}

export interface AdapterStartOptions {
  /** Open the held connection as part of start (default true); false: leave it to `held.open()`. */
  holdConnection?: boolean;
}

export interface Adapter {
  readonly platform: Platform;
  /**
   * Whether `render` shows `text` events (the answer growing as it streams). An adapter that only
   * posts whole answers says false: the model is then asked for whole replies, which is cheaper.
   */
  readonly streamsText: boolean;
  start(sink: AdapterSink, opts?: AdapterStartOptions): Promise<void>;
  /** Closes the held connection and stops input; output calls still work (runs finishing during shutdown). */
  stop(): Promise<void>;
  /** The connection only one process may hold, when this adapter keeps one in its mode. */
  readonly held?: HeldConnection;
  render(ref: ConversationRef, event: AgentEvent): Promise<void>;
  /** Posts a card; returns a handle (message id) for updateCard. */
  postCard(ref: ConversationRef, card: Card): Promise<string>;
  updateCard(ref: ConversationRef, handle: string, card: Card): Promise<void>;
  /** Posts plain text (access replies, notices to the whole conversation). */
  postText(ref: ConversationRef, text: string): Promise<void>;
  decodeKey(key: string): ConversationRef;
  /** Routes for the bot's HTTP server (webhook modes); none when absent or empty. */
  httpRoutes?(): HttpRoute[];
  /**
   * The conversation of `userId`'s direct messages with the bot (`approvalDelivery: dm`); cards go
   * there through postCard / updateCard like anywhere else, and clicks come back with its key. Rejects
   * with the platform's reason when it cannot be opened (a failed post there rejects postCard).
   */
  openDirect?(userId: string): Promise<ConversationRef>;
  /**
   * How the platform shows `userId` to others (`@username`, else their name), for lines such as
   * "Waiting for approval from @alice". Never rejects: undefined when it cannot tell (the caller then
   * shows the id).
   */
  userLabel?(userId: string): Promise<string | undefined>;
  /**
   * Posts a card in the conversation that only `userId` sees (Slack ephemeral). Its handle works with
   * updateCard while a click on that card is being handled (the platform lets only the click's reply
   * replace it); later updates reject.
   */
  postEphemeralCard?(ref: ConversationRef, userId: string, card: Card): Promise<string>;
}
