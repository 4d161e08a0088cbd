/**
 * A fake Telegram Bot API on 127.0.0.1 that the real grammy talks to (set `apiRoot` to
 * `fake.apiRoot`). It behaves like api.telegram.org where the adapter can notice:
 *
 * - POST (or GET) /bot<token>/<method> with JSON, form or query parameters; replies
 *   `{ok:true,result}` or `{ok:false,error_code,description,parameters?}`. A wrong token gets 401.
 * - getUpdates is a real long poll: `offset` confirms, `timeout` holds the request until an update
 *   arrives or the time is up; a second concurrent poll gets 409 "terminated by other getUpdates
 *   request"; with a webhook set, getUpdates gets 409 too.
 * - Limits as Telegram enforces them: text 1-4096 characters after entity parsing, HTML with only
 *   Telegram's tags, properly nested and escaped ("can't parse entities"), callback_data 1-64 bytes
 *   (BUTTON_DATA_INVALID), answerCallbackQuery text <= 200 and each query answered once, "message
 *   is not modified", unknown chat / thread / message errors; a user's private chat (chat id = user
 *   id) the user never opened (never wrote to the bot) gets 403 "bot can't initiate conversation",
 *   and getChat on it "chat not found" (known, it answers the chat: first_name, username).
 * - setMyCommands / getMyCommands with Telegram's checks (1-32 chars of a-z 0-9 _, description
 *   1-256, at most 100, BOT_COMMAND_INVALID ...); `commands` is the default scope's menu.
 * - `failNext` injects an error; an injected 429 opens a retry_after window for that method and
 *   chat: calls inside it are refused again and counted in `retryAfterViolations`.
 *
 * - Webhook redelivery (opt-in, `webhookRetry`): as Telegram does ("in case of an unsuccessful
 *   request, we will give up after a reasonable amount of attempts"), a delivery answered with a
 *   non-2xx status or that fails on the network (refused, reset mid-request) is sent again after
 *   `delayMs`, up to `attempts` times in all. Every attempt is recorded in `webhookDeliveries`
 *   (status 0: no HTTP answer). Without it, one attempt (the tests that check a 401 see it at once).
 *
 * Deviations, on purpose: setWebhook accepts http://127.0.0.1 URLs; an unescaped "&" that does not
 * start an entity is refused (Telegram's docs require escaping it); multipart uploads are refused.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeUser {
  id: number;
  is_bot?: boolean;
  first_name: string;
  last_name?: string;
  username?: string;
}

export interface FakeChat {
  id: number;
  type: 'private' | 'group' | 'supergroup';
  title?: string;
  first_name?: string;
  username?: string;
  is_forum?: boolean;
}

export interface InlineButton {
  text: string;
  callback_data?: string;
  url?: string;
}
export interface ReplyMarkup {
  inline_keyboard: InlineButton[][];
}

export interface MessageVersion {
  text: string;
  /** What the reader sees (entities parsed). */
  plain: string;
  parseMode: string | undefined;
  replyMarkup: ReplyMarkup | undefined;
}

/** A message the bot sent, with its edit history. */
export interface SentMessage extends MessageVersion {
  chatId: number;
  messageId: number;
  threadId: number | undefined;
  replyTo: number | undefined;
  silent: boolean;
  edits: MessageVersion[];
  deleted: boolean;
}

export interface CallSummary {
  method: string;
  params: Record<string, unknown>;
  ok: boolean;
  errorCode?: number;
  description?: string;
}

export interface InjectedError {
  error_code: number;
  description?: string;
  retry_after?: number;
}

type Json = Record<string, unknown>;

export interface FakeTelegram {
  readonly apiRoot: string;
  readonly token: string;
  readonly bot: FakeUser & { is_bot: true; username: string };
  /** Every message the bot sent (deleted ones flagged), in order. */
  readonly sent: SentMessage[];
  readonly calls: CallSummary[];
  readonly callbackAnswers: Array<{ id: string; text: string | undefined; showAlert: boolean }>;
  readonly chatActions: Array<{ chatId: number; action: string; threadId: number | undefined }>;
  /** One entry per delivery attempt; status 0: the request failed without an HTTP answer. */
  readonly webhookDeliveries: Array<{ updateId: number; status: number }>;
  /** The / menu the bot registered (setMyCommands, default scope, no language). */
  readonly commands: ReadonlyArray<{ command: string; description: string }>;
  /** Calls made inside a retry_after window Telegram announced (should stay 0). */
  retryAfterViolations: number;
  readonly webhook: { url: string; secret: string | undefined } | undefined;
  /** Long polls waiting now (0 or 1: a second concurrent one gets 409). */
  pollsOpen(): number;

  addChat(chat: FakeChat): void;
  /** Queues (polling) or POSTs (webhook) an update; resolves with the webhook's HTTP status. */
  pushUpdate(update: Json, opts?: { secret?: string }): Promise<{ updateId: number; status?: number }>;
  sendText(a: {
    chat: FakeChat;
    from: FakeUser;
    text: string;
    replyTo?: number;
    threadId?: number;
    secret?: string;
  }): Promise<{ updateId: number; messageId: number; status?: number }>;
  sendPhoto(a: {
    chat: FakeChat;
    from: FakeUser;
    caption?: string;
    sizes: Array<{ width: number; height: number; bytes: Buffer }>;
    threadId?: number;
  }): Promise<{ updateId: number; messageId: number }>;
  sendDocument(a: {
    chat: FakeChat;
    from: FakeUser;
    fileName: string;
    mimeType?: string;
    content: Buffer | string;
    caption?: string;
    threadId?: number;
  }): Promise<{ updateId: number; messageId: number }>;
  /** A user taps button `index` (row-major) of a message the bot sent; throws if there is none. */
  press(chatId: number, messageId: number, index: number, from: FakeUser): Promise<{ updateId: number; queryId: string }>;
  /** A callback query with arbitrary data on a bot message (forged or stale buttons). */
  pressData(chatId: number, messageId: number, data: string, from: FakeUser): Promise<{ updateId: number; queryId: string }>;
  failNext(method: string, err: InjectedError, opts?: { times?: number; chatId?: number }): void;
  /** Bot messages in a chat that are still there (not deleted). */
  visible(chatId: number): SentMessage[];
  /** Resolves once `pred` holds (checked after every request and update); rejects after `ms`. */
  waitFor(pred: () => boolean, ms?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

const ALLOWED_TAGS = new Set(['b', 'strong', 'i', 'em', 'u', 'ins', 's', 'strike', 'del', 'span', 'tg-spoiler', 'a', 'code', 'pre', 'blockquote', 'tg-emoji']);

/** Telegram's HTML parse mode: the visible text, or the reason it cannot be parsed. */
export function parseTelegramHtml(html: string): { ok: true; plain: string } | { ok: false; error: string } {
  const stack: string[] = [];
  let plain = '';
  let i = 0;
  const byteAt = (k: number) => Buffer.byteLength(html.slice(0, k), 'utf8');
  while (i < html.length) {
    const c = html[i];
    if (c === '<') {
      const close = html.indexOf('>', i);
      if (close < 0) return { ok: false, error: `Can't find end of the tag at byte offset ${byteAt(i)}` };
      const inner = html.slice(i + 1, close);
      if (inner.startsWith('/')) {
        const name = inner.slice(1).trim().toLowerCase();
        const top = stack[stack.length - 1];
        if (top === undefined) return { ok: false, error: `Unexpected end tag at byte offset ${byteAt(i)}` };
        if (top !== name) {
          return { ok: false, error: `Unmatched end tag at byte offset ${byteAt(i)}, expected "</${top}>", found "</${name}>"` };
        }
        stack.pop();
      } else {
        const m = /^([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)\s*$/.exec(inner);
        if (!m) return { ok: false, error: `Unsupported start tag "${inner.split(/\s/)[0] ?? ''}" at byte offset ${byteAt(i)}` };
        const name = (m[1] ?? '').toLowerCase();
        const attrs = m[2] ?? '';
        if (!ALLOWED_TAGS.has(name)) return { ok: false, error: `Unsupported start tag "${name}" at byte offset ${byteAt(i)}` };
        const top = stack[stack.length - 1];
        if ((top === 'code' || top === 'pre') && !(top === 'pre' && name === 'code')) {
          return { ok: false, error: `Entities can't be nested in "${top}" at byte offset ${byteAt(i)}` };
        }
        if (name === 'blockquote' && stack.includes('blockquote')) {
          return { ok: false, error: `Blockquote entities can't be nested at byte offset ${byteAt(i)}` };
        }
        if (name === 'span' && !/class\s*=\s*"tg-spoiler"/.test(attrs)) {
          return { ok: false, error: `Tag "span" must have class "tg-spoiler" at byte offset ${byteAt(i)}` };
        }
        stack.push(name);
      }
      i = close + 1;
      continue;
    }
    if (c === '&') {
      const m = /^&(lt|gt|amp|quot|#(\d{1,7})|#x([0-9a-fA-F]{1,6}));/.exec(html.slice(i, i + 12));
      if (!m) return { ok: false, error: `Unsupported HTML entity or unescaped "&" at byte offset ${byteAt(i)}` };
      const e = m[1] ?? '';
      plain +=
        e === 'lt'
          ? '<'
          : e === 'gt'
            ? '>'
            : e === 'amp'
              ? '&'
              : e === 'quot'
                ? '"'
                : String.fromCodePoint(m[2] !== undefined ? Number(m[2]) : parseInt(m[3] ?? '0', 16));
      i += m[0].length;
      continue;
    }
    plain += c;
    i++;
  }
  const open = stack[stack.length - 1];
  if (open !== undefined) return { ok: false, error: `Can't find end tag corresponding to start tag "${open}"` };
  return { ok: true, plain };
}

class ApiFailure extends Error {
  constructor(
    readonly code: number,
    readonly description: string,
    readonly parameters?: Json,
  ) {
    super(description);
  }
}
const bad = (d: string) => new ApiFailure(400, `Bad Request: ${d}`);

function entitiesFor(text: string): Json[] {
  const out: Json[] = [];
  const re = /(^|[\s(])(\/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?|@[A-Za-z0-9_]{5,32})/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const word = m[2] ?? '';
    const offset = m.index + (m[1]?.length ?? 0);
    out.push({ type: word.startsWith('/') ? 'bot_command' : 'mention', offset, length: word.length });
  }
  return out;
}

/** A media message's caption, with the entities Telegram would mark in it. */
function addCaption(msg: Json, caption: string | undefined): void {
  if (caption === undefined) return;
  msg['caption'] = caption;
  const e = entitiesFor(caption);
  if (e.length > 0) msg['caption_entities'] = e;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

function parseParams(req: IncomingMessage, url: URL, body: Buffer): Json {
  const params: Json = {};
  for (const [k, v] of url.searchParams) params[k] = v;
  const type = req.headers['content-type'] ?? '';
  if (body.length === 0) return params;
  if (type.includes('application/json')) return { ...params, ...(JSON.parse(body.toString('utf8')) as Json) };
  if (type.includes('application/x-www-form-urlencoded')) {
    for (const [k, v] of new URLSearchParams(body.toString('utf8'))) {
      params[k] = /^[[{]/.test(v) ? (JSON.parse(v) as unknown) : v;
    }
    return params;
  }
  throw bad(`unsupported content type "${type}" (the fake speaks JSON and form bodies)`);
}

const num = (v: unknown): number | undefined => (v === undefined || v === null || v === '' ? undefined : Number(v));

export interface FakeTelegramOptions {
  token: string;
  botId?: number;
  botUsername?: string;
  /** Webhook mode: send an update again after a failed delivery (see the header). */
  webhookRetry?: { attempts: number; delayMs: number };
}

export async function startFakeTelegram(opts: FakeTelegramOptions): Promise<FakeTelegram> {
  const token = opts.token;
  const bot = { id: opts.botId ?? 7000001, is_bot: true as const, first_name: 'Gatehouse', username: opts.botUsername ?? 'GatehouseBot' };
  const chats = new Map<number, FakeChat>();
  const threads = new Map<number, Set<number>>();
  const messages = new Map<string, Json>(); // `${chat}:${id}` -> Message object
  const nextMsgId = new Map<number, number>();
  const sent: SentMessage[] = [];
  const calls: CallSummary[] = [];
  const callbackAnswers: FakeTelegram['callbackAnswers'] = [];
  const chatActions: FakeTelegram['chatActions'] = [];
  const webhookDeliveries: FakeTelegram['webhookDeliveries'] = [];
  const files = new Map<string, { path: string; bytes: Buffer; uniqueId: string }>();
  const openQueries = new Set<string>();
  const answeredQueries = new Set<string>();
  const injected = new Map<string, Array<{ err: InjectedError; chatId: number | undefined }>>();
  const windows = new Map<string, number>(); // `${method}:${chat}` -> retry allowed at (ms)
  let pending: Json[] = [];
  let nextUpdateId = 100_000;
  let webhook: { url: string; secret: string | undefined } | undefined;
  let allowedUpdates: string[] | undefined;
  let poll: { res: ServerResponse; finish: () => void } | undefined;
  const waiters = new Set<() => void>();
  let violations = 0;
  /** setMyCommands by scope + language (the / menu). */
  const myCommands = new Map<string, Array<{ command: string; description: string }>>();
  const scopeKey = (p: Json): string => {
    let scope = p['scope'];
    if (typeof scope === 'string') scope = JSON.parse(scope) as unknown;
    const type = (scope as { type?: unknown } | undefined)?.type ?? 'default';
    return `${String(type)}:${typeof p['language_code'] === 'string' ? p['language_code'] : ''}`;
  };

  const notify = () => {
    for (const w of [...waiters]) w();
  };

  const newMessageId = (chatId: number) => {
    const id = nextMsgId.get(chatId) ?? 1;
    nextMsgId.set(chatId, id + 1);
    return id;
  };
  const now = () => Math.floor(Date.now() / 1000);

  const chatOf = (v: unknown): FakeChat => {
    const id = num(v);
    const chat = id === undefined ? undefined : chats.get(id);
    // A private chat (the user's id) exists once the user has written to the bot (/start), as on Telegram.
    if (!chat && id !== undefined && id > 0) throw new ApiFailure(403, "Forbidden: bot can't initiate conversation with a user");
    if (!chat) throw bad('chat not found');
    return chat;
  };

  const textOf = (params: Json): { text: string; plain: string; parseMode: string | undefined } => {
    const text = params['text'];
    if (typeof text !== 'string') throw bad('message text is empty');
    const parseMode = typeof params['parse_mode'] === 'string' ? params['parse_mode'] : undefined;
    let plain = text;
    if (parseMode !== undefined) {
      if (parseMode.toUpperCase() !== 'HTML') throw bad(`parse mode "${parseMode}" is not supported by this fake`);
      const r = parseTelegramHtml(text);
      if (!r.ok) throw bad(`can't parse entities: ${r.error}`);
      plain = r.plain;
    }
    if (plain.trim() === '') throw bad('message text is empty');
    if (plain.length > 4096) throw bad('message is too long');
    return { text, plain, parseMode };
  };

  const markupOf = (v: unknown): ReplyMarkup | undefined => {
    if (v === undefined || v === null) return undefined;
    const kb = (v as { inline_keyboard?: unknown }).inline_keyboard;
    if (!Array.isArray(kb)) throw bad('field "inline_keyboard" of the InlineKeyboardMarkup must be an Array');
    for (const row of kb as unknown[]) {
      if (!Array.isArray(row)) throw bad('field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays');
      for (const b of row as InlineButton[]) {
        if (typeof b.text !== 'string' || b.text === '') throw bad('text buttons are unallowed in the inline keyboard');
        if (b.callback_data !== undefined) {
          const n = Buffer.byteLength(b.callback_data, 'utf8');
          if (n < 1 || n > 64) throw bad('BUTTON_DATA_INVALID');
        } else if (b.url === undefined) throw bad('BUTTON_TYPE_INVALID');
      }
    }
    return (kb as unknown[]).length === 0 ? undefined : (v as ReplyMarkup);
  };

  const storedMessage = (chatId: number, id: number): Json | undefined => messages.get(`${chatId}:${id}`);
  const sentMessage = (chatId: number, id: number) => sent.find((m) => m.chatId === chatId && m.messageId === id);

  const handlers: Record<string, (p: Json) => unknown> = {
    getMe: () => ({
      ...bot,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
      can_connect_to_business: false,
      has_main_web_app: false,
      has_topics_enabled: false,
      allows_users_to_create_topics: false,
      can_manage_bots: false,
      supports_join_request_queries: false,
    }),
    deleteWebhook: (p) => {
      webhook = undefined;
      if (p['drop_pending_updates'] === true || p['drop_pending_updates'] === 'true') pending = [];
      return true;
    },
    setWebhook: (p) => {
      const url = p['url'];
      if (typeof url !== 'string' || url === '') {
        webhook = undefined;
        return true;
      }
      if (!/^https?:\/\//.test(url)) throw bad('bad webhook: An HTTPS URL must be provided for webhook');
      const secret = p['secret_token'];
      if (secret !== undefined && (typeof secret !== 'string' || !/^[A-Za-z0-9_-]{1,256}$/.test(secret))) {
        throw bad('bad webhook: secret token contains unallowed characters');
      }
      webhook = { url, secret: secret as string | undefined };
      if (Array.isArray(p['allowed_updates'])) allowedUpdates = p['allowed_updates'] as string[];
      return true;
    },
    // A private chat is known once its user wrote to the bot; else "chat not found", as on Telegram.
    getChat: (p) => {
      const id = num(p['chat_id']);
      const chat = id === undefined ? undefined : chats.get(id);
      if (!chat) throw bad('chat not found');
      return chat;
    },
    getWebhookInfo: () => ({ url: webhook?.url ?? '', has_custom_certificate: false, pending_update_count: pending.length }),
    sendMessage: (p) => {
      const chat = chatOf(p['chat_id']);
      const { text, plain, parseMode } = textOf(p);
      const replyMarkup = markupOf(p['reply_markup']);
      const threadId = num(p['message_thread_id']);
      if (threadId !== undefined && (!chat.is_forum || !threads.get(chat.id)?.has(threadId))) throw bad('message thread not found');
      const rp = p['reply_parameters'] as { message_id?: unknown; allow_sending_without_reply?: unknown } | undefined;
      const replyTo = num(rp?.message_id ?? p['reply_to_message_id']);
      if (replyTo !== undefined && !storedMessage(chat.id, replyTo) && rp?.allow_sending_without_reply !== true) {
        throw bad('message to be replied not found');
      }
      const messageId = newMessageId(chat.id);
      const msg: Json = { message_id: messageId, date: now(), chat, from: bot, text: plain };
      if (threadId !== undefined) Object.assign(msg, { message_thread_id: threadId, is_topic_message: true });
      if (replyMarkup) msg['reply_markup'] = replyMarkup;
      messages.set(`${chat.id}:${messageId}`, msg);
      sent.push({
        chatId: chat.id,
        messageId,
        threadId,
        replyTo,
        text,
        plain,
        parseMode,
        replyMarkup,
        silent: p['disable_notification'] === true,
        edits: [],
        deleted: false,
      });
      return msg;
    },
    editMessageText: (p) => {
      const chat = chatOf(p['chat_id']);
      const id = num(p['message_id']) ?? -1;
      const m = sentMessage(chat.id, id);
      if (!m || m.deleted) throw bad('message to edit not found');
      const { text, plain, parseMode } = textOf(p);
      const replyMarkup = markupOf(p['reply_markup']);
      if (text === m.text && parseMode === m.parseMode && JSON.stringify(replyMarkup) === JSON.stringify(m.replyMarkup)) {
        throw bad(
          'message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
        );
      }
      m.edits.push({ text: m.text, plain: m.plain, parseMode: m.parseMode, replyMarkup: m.replyMarkup });
      Object.assign(m, { text, plain, parseMode, replyMarkup });
      const stored = storedMessage(chat.id, id) ?? {};
      stored['text'] = plain;
      if (replyMarkup) stored['reply_markup'] = replyMarkup;
      else delete stored['reply_markup'];
      return { ...stored, edit_date: now() };
    },
    editMessageReplyMarkup: (p) => {
      const chat = chatOf(p['chat_id']);
      const id = num(p['message_id']) ?? -1;
      const m = sentMessage(chat.id, id);
      if (!m || m.deleted) throw bad('message to edit not found');
      const replyMarkup = markupOf(p['reply_markup']);
      if (JSON.stringify(replyMarkup) === JSON.stringify(m.replyMarkup)) {
        throw bad(
          'message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
        );
      }
      m.edits.push({ text: m.text, plain: m.plain, parseMode: m.parseMode, replyMarkup: m.replyMarkup });
      m.replyMarkup = replyMarkup;
      const stored = storedMessage(chat.id, id) ?? {};
      if (replyMarkup) stored['reply_markup'] = replyMarkup;
      else delete stored['reply_markup'];
      return { ...stored, edit_date: now() };
    },
    deleteMessage: (p) => {
      const chat = chatOf(p['chat_id']);
      const m = sentMessage(chat.id, num(p['message_id']) ?? -1);
      if (!m || m.deleted) throw bad('message to delete not found');
      m.deleted = true;
      messages.delete(`${chat.id}:${m.messageId}`);
      return true;
    },
    answerCallbackQuery: (p) => {
      const id = String(p['callback_query_id'] ?? '');
      if (!openQueries.has(id) || answeredQueries.has(id)) {
        throw bad('query is too old and response timeout expired or query ID is invalid');
      }
      const text = typeof p['text'] === 'string' ? p['text'] : undefined;
      if (text !== undefined && text.length > 200) throw bad('MESSAGE_TOO_LONG');
      answeredQueries.add(id);
      callbackAnswers.push({ id, text, showAlert: p['show_alert'] === true || p['show_alert'] === 'true' });
      return true;
    },
    sendChatAction: (p) => {
      const chat = chatOf(p['chat_id']);
      const action = String(p['action'] ?? '');
      if (
        ![
          'typing',
          'upload_photo',
          'record_video',
          'upload_video',
          'record_voice',
          'upload_voice',
          'upload_document',
          'choose_sticker',
          'find_location',
          'record_video_note',
          'upload_video_note',
        ].includes(action)
      ) {
        throw bad('wrong parameter action in request');
      }
      const threadId = num(p['message_thread_id']);
      if (threadId !== undefined && (!chat.is_forum || !threads.get(chat.id)?.has(threadId))) throw bad('message thread not found');
      chatActions.push({ chatId: chat.id, action, threadId });
      return true;
    },
    // Telegram's checks: 1-100 commands; each command 1-32 of a-z, 0-9, _; description 1-256 chars.
    setMyCommands: (p) => {
      let list = p['commands'];
      if (typeof list === 'string') {
        try {
          list = JSON.parse(list) as unknown;
        } catch {
          throw bad("can't parse commands JSON object");
        }
      }
      if (!Array.isArray(list)) throw bad('field "commands" must be an Array');
      if (list.length > 100) throw bad('too many commands specified');
      const seen = new Set<string>();
      for (const c of list as Array<{ command?: unknown; description?: unknown }>) {
        if (typeof c?.command !== 'string' || !/^[a-z0-9_]{1,32}$/.test(c.command)) throw bad('BOT_COMMAND_INVALID');
        if (typeof c.description !== 'string' || c.description.trim() === '' || c.description.length > 256) {
          throw bad('BOT_COMMAND_DESCRIPTION_INVALID');
        }
        if (seen.has(c.command)) throw bad('BOT_COMMAND_DUPLICATE');
        seen.add(c.command);
      }
      myCommands.set(
        scopeKey(p),
        (list as Array<{ command: string; description: string }>).map((c) => ({ command: c.command, description: c.description })),
      );
      return true;
    },
    getMyCommands: (p) => myCommands.get(scopeKey(p)) ?? [],
    deleteMyCommands: (p) => {
      myCommands.delete(scopeKey(p));
      return true;
    },
    getFile: (p) => {
      const f = files.get(String(p['file_id'] ?? ''));
      if (!f) throw bad('invalid file_id');
      if (f.bytes.length > 20 * 1024 * 1024) throw bad('file is too big');
      return { file_id: p['file_id'], file_unique_id: f.uniqueId, file_size: f.bytes.length, file_path: f.path };
    },
  };

  function getUpdates(p: Json, res: ServerResponse): void {
    if (webhook) {
      throw new ApiFailure(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
    }
    const offset = num(p['offset']);
    if (offset !== undefined && offset > 0) pending = pending.filter((u) => (u['update_id'] as number) >= offset);
    if (Array.isArray(p['allowed_updates'])) allowedUpdates = p['allowed_updates'] as string[];
    const limit = Math.min(Math.max(num(p['limit']) ?? 100, 1), 100);
    const timeout = Math.min(Math.max(num(p['timeout']) ?? 0, 0), 50);
    const take = () => pending.slice(0, limit);
    const reply = (result: unknown) => {
      if (!res.writableEnded && !res.destroyed) send(res, 200, { ok: true, result });
    };
    const ready = take();
    if (ready.length > 0 || timeout === 0) {
      reply(ready);
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (timer) clearTimeout(timer);
      if (poll?.res === res) poll = undefined;
      reply(take());
    };
    poll = { res, finish };
    timer = setTimeout(finish, timeout * 1000);
    res.on('close', () => {
      if (timer) clearTimeout(timer);
      if (poll?.res === res) poll = undefined;
    });
  }

  function send(res: ServerResponse, status: number, body: unknown): void {
    const data = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
    res.end(data);
  }

  function chatIdOf(p: Json): number | undefined {
    return num(p['chat_id']);
  }

  async function handleApi(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const m = /^\/bot([^/]*)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!m) {
      send(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      return;
    }
    const method = m[2] ?? '';
    const body = await readBody(req);
    if (m[1] !== token) {
      send(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
      return;
    }
    let params: Json = {};
    try {
      params = parseParams(req, url, body);
      const chat = chatIdOf(params);
      const windowKey = `${method}:${chat ?? ''}`;
      const until = windows.get(windowKey);
      if (until !== undefined && Date.now() < until) {
        violations++;
        const left = Math.ceil((until - Date.now()) / 1000);
        throw new ApiFailure(429, `Too Many Requests: retry after ${left}`, { retry_after: left });
      }
      const queue = injected.get(method);
      const idx = queue?.findIndex((q) => q.chatId === undefined || q.chatId === chat) ?? -1;
      if (queue && idx >= 0) {
        const [inj] = queue.splice(idx, 1);
        if (inj) {
          const e = inj.err;
          if (e.error_code === 429) {
            const after = e.retry_after ?? 1;
            windows.set(windowKey, Date.now() + after * 1000);
            throw new ApiFailure(429, e.description ?? `Too Many Requests: retry after ${after}`, { retry_after: after });
          }
          throw new ApiFailure(e.error_code, e.description ?? 'Bad Request: injected error');
        }
      }
      if (method === 'getUpdates') {
        if (poll && !poll.res.destroyed) {
          // The previous poll may just have been aborted by the same client: give its close a moment.
          await new Promise((r) => setTimeout(r, 25));
        }
        if (poll && !poll.res.destroyed && !poll.res.writableEnded) {
          throw new ApiFailure(409, 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running');
        }
        getUpdates(params, res);
        calls.push({ method, params, ok: true });
        return;
      }
      const h = handlers[method];
      if (!h) throw new ApiFailure(404, 'Not Found: method not found');
      const result = h(params);
      calls.push({ method, params, ok: true });
      send(res, 200, { ok: true, result });
    } catch (err) {
      const f = err instanceof ApiFailure ? err : new ApiFailure(500, `Internal Server Error: ${String(err)}`);
      calls.push({ method, params, ok: false, errorCode: f.code, description: f.description });
      send(res, f.code, { ok: false, error_code: f.code, description: f.description, ...(f.parameters ? { parameters: f.parameters } : {}) });
    } finally {
      notify();
    }
  }

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname.startsWith('/file/')) {
      const m = /^\/file\/bot([^/]*)\/(.+)$/.exec(url.pathname);
      if (!m || m[1] !== token) {
        send(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
        return;
      }
      const f = [...files.values()].find((x) => x.path === m[2]);
      if (!f) {
        send(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': f.bytes.length });
      res.end(f.bytes);
      return;
    }
    handleApi(req, res, url).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { ok: false, error_code: 500, description: String(err) });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const apiRoot = `http://127.0.0.1:${port}`;

  function addChat(chat: FakeChat): void {
    chats.set(chat.id, { ...chats.get(chat.id), ...chat });
  }

  async function pushUpdate(update: Json, o: { secret?: string } = {}): Promise<{ updateId: number; status?: number }> {
    const updateId = nextUpdateId++;
    const u = { update_id: updateId, ...update };
    const kind = Object.keys(update)[0] ?? '';
    if (webhook) {
      if (allowedUpdates && allowedUpdates.length > 0 && !allowedUpdates.includes(kind)) return { updateId };
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      const secret = o.secret ?? webhook.secret;
      if (secret !== undefined) headers['X-Telegram-Bot-Api-Secret-Token'] = secret;
      const attempts = Math.max(1, opts.webhookRetry?.attempts ?? 1);
      let status = 0;
      let failure: unknown;
      for (let attempt = 1; attempt <= attempts; attempt++) {
        if (attempt > 1) await new Promise((r) => setTimeout(r, opts.webhookRetry?.delayMs ?? 0));
        try {
          const r = await fetch(webhook.url, { method: 'POST', headers, body: JSON.stringify(u) });
          await r.arrayBuffer();
          status = r.status;
          failure = undefined;
        } catch (err) {
          status = 0;
          failure = err;
        }
        webhookDeliveries.push({ updateId, status });
        notify();
        if (status >= 200 && status < 300) break;
      }
      // One attempt only (no webhookRetry): a network failure is the caller's, as before.
      if (failure !== undefined && opts.webhookRetry === undefined) throw failure;
      return { updateId, status };
    }
    if (!allowedUpdates || allowedUpdates.length === 0 || allowedUpdates.includes(kind)) {
      pending.push(u);
      poll?.finish();
    }
    notify();
    return { updateId };
  }

  function userMessage(chat: FakeChat, from: FakeUser, threadId: number | undefined, replyTo: number | undefined): Json {
    addChat(chat);
    const messageId = newMessageId(chat.id);
    const msg: Json = { message_id: messageId, date: now(), chat: chats.get(chat.id), from: { is_bot: false, ...from } };
    if (threadId !== undefined) {
      if (!chat.is_forum) throw new Error(`fake: chat ${chat.id} is not a forum; it has no topic ${threadId}`);
      let set = threads.get(chat.id);
      if (!set) threads.set(chat.id, (set = new Set()));
      set.add(threadId);
      // In a topic every message replies to the topic's root (the forum_topic_created message).
      Object.assign(msg, {
        message_thread_id: threadId,
        is_topic_message: true,
        reply_to_message: {
          message_id: threadId,
          date: now(),
          chat,
          from: { is_bot: false, ...from },
          forum_topic_created: { name: `topic ${threadId}`, icon_color: 7322096 },
        },
      });
    }
    if (replyTo !== undefined) {
      const target = storedMessage(chat.id, replyTo);
      if (!target) throw new Error(`fake: no message ${replyTo} in chat ${chat.id} to reply to`);
      msg['reply_to_message'] = target;
    }
    messages.set(`${chat.id}:${messageId}`, msg);
    return msg;
  }

  function addFile(bytes: Buffer, dir: string, ext: string): { file_id: string; file_unique_id: string; file_size: number } {
    const n = files.size + 1;
    const fileId = `${dir}-${n}-${randomBytes(6).toString('hex')}`;
    const uniqueId = `u${n}${randomBytes(3).toString('hex')}`;
    files.set(fileId, { path: `${dir}/file_${n}.${ext}`, bytes, uniqueId });
    return { file_id: fileId, file_unique_id: uniqueId, file_size: bytes.length };
  }

  async function pressWith(chatId: number, messageId: number, data: string, from: FakeUser) {
    const msg = storedMessage(chatId, messageId);
    if (!msg) throw new Error(`fake: no message ${messageId} in chat ${chatId}`);
    const queryId = randomBytes(8).readBigUInt64BE().toString();
    openQueries.add(queryId);
    const { updateId } = await pushUpdate({
      callback_query: { id: queryId, from: { is_bot: false, ...from }, message: msg, chat_instance: `ci${chatId}`, data },
    });
    return { updateId, queryId };
  }

  const fake: FakeTelegram = {
    apiRoot,
    token,
    bot,
    sent,
    calls,
    callbackAnswers,
    chatActions,
    webhookDeliveries,
    get commands() {
      return myCommands.get('default:') ?? [];
    },
    get retryAfterViolations() {
      return violations;
    },
    set retryAfterViolations(n: number) {
      violations = n;
    },
    pollsOpen: () => (poll && !poll.res.destroyed && !poll.res.writableEnded ? 1 : 0),
    get webhook() {
      return webhook;
    },
    addChat,
    pushUpdate,
    async sendText(a) {
      const msg = userMessage(a.chat, a.from, a.threadId, a.replyTo);
      msg['text'] = a.text;
      const entities = entitiesFor(a.text);
      if (entities.length > 0) msg['entities'] = entities;
      const r = await pushUpdate({ message: msg }, a.secret !== undefined ? { secret: a.secret } : {});
      return { ...r, messageId: msg['message_id'] as number };
    },
    async sendPhoto(a) {
      const msg = userMessage(a.chat, a.from, a.threadId, undefined);
      msg['photo'] = a.sizes.map((s) => ({ ...addFile(s.bytes, 'photos', 'jpg'), width: s.width, height: s.height }));
      addCaption(msg, a.caption);
      const r = await pushUpdate({ message: msg });
      return { ...r, messageId: msg['message_id'] as number };
    },
    async sendDocument(a) {
      const msg = userMessage(a.chat, a.from, a.threadId, undefined);
      const bytes = typeof a.content === 'string' ? Buffer.from(a.content, 'utf8') : a.content;
      const ext = /\.([A-Za-z0-9]+)$/.exec(a.fileName)?.[1] ?? 'bin';
      msg['document'] = { ...addFile(bytes, 'documents', ext), file_name: a.fileName, ...(a.mimeType ? { mime_type: a.mimeType } : {}) };
      addCaption(msg, a.caption);
      const r = await pushUpdate({ message: msg });
      return { ...r, messageId: msg['message_id'] as number };
    },
    async press(chatId, messageId, index, from) {
      const m = sentMessage(chatId, messageId);
      if (!m || m.deleted) throw new Error(`fake: the bot has no message ${messageId} in chat ${chatId}`);
      const buttons = (m.replyMarkup?.inline_keyboard ?? []).flat();
      const b = buttons[index];
      if (!b || b.callback_data === undefined) {
        throw new Error(`fake: message ${messageId} has ${buttons.length} buttons; there is no button ${index} to press`);
      }
      return pressWith(chatId, messageId, b.callback_data, from);
    },
    pressData: (chatId, messageId, data, from) => pressWith(chatId, messageId, data, from),
    failNext(method, err, o = {}) {
      const q = injected.get(method) ?? [];
      for (let k = 0; k < (o.times ?? 1); k++) q.push({ err, chatId: o.chatId });
      injected.set(method, q);
    },
    visible: (chatId) => sent.filter((m) => m.chatId === chatId && !m.deleted),
    waitFor(pred, ms = 5000, what = 'condition') {
      if (pred()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pred()) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`fake telegram: timed out after ${ms} ms waiting for ${what}`));
        }, ms);
        waiters.add(check);
      });
    },
    async close() {
      poll?.finish();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
