/**
 * A fake Discord on 127.0.0.1 for the real discord.js client: the REST API the adapter uses (under
 * /api/v10) and the gateway WebSocket (at the URL GET /gateway/bot hands out).
 *
 * Gateway like Discord's: HELLO (op 10), IDENTIFY (op 2; a wrong token closes 4004, the
 * MessageContent intent without `privilegedIntents` closes 4014), READY then GUILD_CREATE per guild,
 * heartbeats (op 1) answered with ACK (op 11), dispatches with sequence numbers, and RESUME (op 6)
 * after `dropConnection()`: the events sent while the client was away are replayed, then RESUMED.
 * `resendOnResume` also re-sends the last event the client already had (Discord may).
 *
 * REST, enforced like Discord: the bot token on every call (401), content at most 2,000 characters,
 * at most 5 action rows, 5 buttons a row, one select a row, custom_id at most 100, button label 80,
 * select options 1-25 (400, code 50035); an empty message (50006); unknown channel / message (404);
 * a thread from a message that already has one (160004). `rateLimitEdits(n, retryAfterS)` answers
 * the next n message edits 429 with Retry-After and `retry_after`; an edit inside the announced
 * window counts in `retryAfterViolations`. Interactions must be answered once (40060 otherwise) and
 * within 3 s (10062 after that); the callback answers a bare 204. POST /users/@me/channels opens
 * the bot's DM channel with a user (`dms`); after `closeDms(user)` posts there get 403 50007.
 * GET /users/{id} answers the user (their `name` once they wrote or clicked, else a made-up one).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

type Json = Record<string, unknown>;
/** A gateway connection; `ready` once it identified or resumed (dispatches go only to a ready one). */
type GatewaySocket = WebSocket & { ready?: boolean };

export const MESSAGE_CONTENT_INTENT = 1 << 15;

export interface FakeDiscordMessage {
  id: string;
  channelId: string;
  authorId: string;
  content: string;
  components: Json[];
  edits: Array<{ content: string; components: Json[] }>;
  deleted: boolean;
  /** The allowed_mentions the bot sent with it (undefined: Discord's default, every mention pings). */
  allowedMentions: unknown;
}

export interface FakeEphemeral {
  interactionId: string;
  userId: string;
  content: string;
}

export interface FakeChannel {
  id: string;
  guildId: string | undefined;
  type: number;
  parentId?: string;
  ownerId?: string;
  name?: string;
}

export interface FakeCall {
  method: string;
  route: string;
  status: number;
}

export interface FakeDiscordOptions {
  token: string;
  /** Whether the app may use the Message Content intent (the portal switch); default true. */
  privilegedIntents?: boolean;
  guilds?: Array<{ id: string; channels: string[]; roles?: string[] }>;
  /** Users GET /users/{id} knows by name from the start (as Discord knows every user). */
  users?: UserSpec[];
}

export interface UserSpec {
  id: string;
  name?: string;
  roles?: string[];
  bot?: boolean;
}

export interface FakeDiscord {
  readonly apiUrl: string;
  readonly botUserId: string;
  readonly applicationId: string;
  readonly messages: FakeDiscordMessage[];
  readonly ephemerals: FakeEphemeral[];
  readonly calls: FakeCall[];
  readonly channels: Map<string, FakeChannel>;
  /** The bot's DM channel with each user it opened one with: user id -> channel id. */
  readonly dms: ReadonlyMap<string, string>;
  /** The user blocks DMs from the bot (or shares no server with it): posts there get 50007. */
  closeDms(userId: string): void;
  /** Slash commands registered, by route ("global" or the guild id). */
  readonly commands: Map<string, Json[]>;
  /** Interaction callbacks received: type and when (ms after the interaction was sent). */
  readonly callbacks: Array<{ id: string; type: number; afterMs: number }>;
  readonly gateway: {
    identifies: number;
    resumes: number;
    open: number;
    heartbeats: number /** events sent again on a resume that the client already had */;
    resent: number;
  };
  retryAfterViolations: number;
  privilegedIntents: boolean;
  resendOnResume: boolean;
  /** Close the gateway with this code on IDENTIFY (e.g. 4004 for a token revoked after GET /gateway/bot). */
  closeOnIdentify: number | undefined;
  /** Called for every message the bot posts (benchmarks stamp answers here). */
  onPost: ((m: FakeDiscordMessage) => void) | undefined;
  visible(channelId: string): FakeDiscordMessage[];
  byId(id: string): FakeDiscordMessage | undefined;
  rateLimitEdits(times: number, retryAfterS?: number): void;
  /** Serves a file at a CDN URL (no auth, like Discord's signed links). */
  addFile(name: string, contentType: string, content: Buffer | string): Json;
  /** A user posts; returns the message id. `mention` puts <@bot> in front; `replyTo` replies to a message. */
  userMessage(a: {
    user: UserSpec;
    channel: string;
    text: string;
    mention?: boolean;
    replyTo?: string;
    attachments?: Json[];
    id?: string;
    type?: number;
  }): string;
  /** A user clicks a component (custom_id; a select also sends `values`) on a bot message. Resolves with the callback type (or 0 when none came within 3 s). */
  click(a: { user: UserSpec; message: FakeDiscordMessage; customId: string; values?: string[]; id?: string }): Promise<number>;
  /** A user runs a slash command; resolves when its (deferred) reply was edited, with that text. */
  slash(a: { user: UserSpec; channel: string; name: string }): Promise<{ content: string; ephemeral: boolean }>;
  /** Closes the gateway connection (code 4000 by default: the client should resume). */
  dropConnection(code?: number): void;
  /** Raw dispatch to the client (for tests of odd events). */
  dispatch(t: string, d: Json): void;
  close(): Promise<void>;
}

const EPOCH = 1420070400000n;
let counter = 0n;
function snowflake(): string {
  counter = (counter + 1n) & 0xfffn;
  return String(((BigInt(Date.now()) - EPOCH) << 22n) | (1n << 17n) | counter);
}

function userObject(u: UserSpec): Json {
  return { id: u.id, username: u.name ?? `user${u.id.slice(-4)}`, global_name: u.name ?? null, discriminator: '0', avatar: null, bot: u.bot ?? false };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Json,
  ) {
    super(String(body['message']));
  }
}

/** Whether a message body asks to be seen only by the interaction's user (flag 64, EPHEMERAL). */
const ephemeral = (body: Json): boolean => (Number(body['flags'] ?? 0) & 64) !== 0;

/** A Discord error answer: `{ code, message }` with the HTTP status. */
const fail = (status: number, code: number, message: string) => ({ status, body: { code, message } });

const formError = (path: string, message: string) =>
  new HttpError(400, { code: 50035, message: 'Invalid Form Body', errors: { [path]: { _errors: [{ code: 'BASE_TYPE_BAD_LENGTH', message }] } } });

function checkComponents(components: unknown): void {
  if (components === undefined) return;
  if (!Array.isArray(components)) throw formError('components', 'must be an array');
  if (components.length > 5) throw formError('components', 'Must be 5 or fewer in length.');
  components.forEach((row: Json, r) => {
    if (row['type'] !== 1 || !Array.isArray(row['components'])) throw formError(`components.${r}`, 'expected an action row');
    const items = row['components'] as Json[];
    if (items.length < 1 || items.length > 5) throw formError(`components.${r}.components`, 'Must be between 1 and 5 in length.');
    if (items.some((c) => c['type'] === 3) && items.length > 1) throw formError(`components.${r}.components`, 'A select menu must be alone in its row.');
    items.forEach((c, i) => {
      const id = c['custom_id'];
      if (typeof id !== 'string' || id.length < 1 || id.length > 100)
        throw formError(`components.${r}.components.${i}.custom_id`, 'Must be between 1 and 100 in length.');
      if (c['type'] === 2) {
        const label = c['label'];
        if (typeof label !== 'string' || label.length > 80) throw formError(`components.${r}.components.${i}.label`, 'Must be 80 or fewer in length.');
        if (![1, 2, 3, 4].includes(Number(c['style']))) throw formError(`components.${r}.components.${i}.style`, 'Invalid style.');
      } else if (c['type'] === 3) {
        const options = c['options'] as Json[] | undefined;
        if (!Array.isArray(options) || options.length < 1 || options.length > 25)
          throw formError(`components.${r}.components.${i}.options`, 'Must be between 1 and 25 in length.');
        for (const o of options) {
          if (String(o['label']).length > 100 || String(o['value']).length > 100)
            throw formError(`components.${r}.components.${i}.options`, 'label/value must be 100 or fewer in length.');
        }
      } else throw formError(`components.${r}.components.${i}.type`, 'Unknown component type.');
    });
  });
}

/** `api` with each key of `state` as a property that reads and writes `state` (settings a test flips). */
function withState<S extends object, A extends object>(state: S, api: A): A & S {
  for (const key of Object.keys(state) as Array<keyof S & string>) {
    Object.defineProperty(api, key, { get: () => state[key], set: (v: S[typeof key]) => (state[key] = v), enumerable: true });
  }
  return api as A & S;
}

export async function startFakeDiscord(opts: FakeDiscordOptions): Promise<FakeDiscord> {
  const botUserId = '900000000000000001';
  const applicationId = '900000000000000002';
  const messages: FakeDiscordMessage[] = [];
  const byId = new Map<string, FakeDiscordMessage>();
  const ephemerals: FakeEphemeral[] = [];
  const calls: FakeCall[] = [];
  const channels = new Map<string, FakeChannel>();
  /** The bot's DM channel with each user (POST /users/@me/channels); users whose DMs refuse the bot. */
  const dms = new Map<string, string>();
  /** Names of the users seen so far (messages, clicks), for GET /users/{id}. */
  const seenNames = new Map<string, string>((opts.users ?? []).flatMap((u) => (u.name !== undefined ? [[u.id, u.name] as const] : [])));
  const seen = (u: UserSpec): UserSpec => (u.name !== undefined && seenNames.set(u.id, u.name), u);
  const dmsClosed = new Set<string>();
  const commands = new Map<string, Json[]>();
  const callbacks: Array<{ id: string; type: number; afterMs: number }> = [];
  const files = new Map<string, { type: string; body: Buffer }>();
  const guilds = opts.guilds ?? [];
  for (const g of guilds) for (const c of g.channels) channels.set(c, { id: c, guildId: g.id, type: 0, name: `chan-${c.slice(-4)}` });
  const gatewayStats = { identifies: 0, resumes: 0, open: 0, heartbeats: 0, resent: 0 };
  let editLimit = { times: 0, retryAfterS: 1 };
  let limitedUntil = 0;
  /** Interactions sent and not yet answered: id -> sent time, and who (for ephemerals). */
  const interactions = new Map<
    string,
    {
      at: number;
      user: string;
      token: string;
      answered: boolean;
      resolve?: (type: number) => void;
      deferredEphemeral?: boolean;
      onEdit?: (content: string) => void;
    }
  >();
  const byToken = new Map<string, string>();

  // ---- gateway --------------------------------------------------------------------------------
  let seq = 0;
  const sessionId = 'fake-session-' + Math.random().toString(36).slice(2);
  /** Every dispatch of this session, for RESUME replays. */
  const history: Array<{ s: number; t: string; d: Json }> = [];
  let live: WebSocket | undefined;
  /** The highest sequence the current connection received. */
  let deliveredUpTo = 0;

  const state = {
    retryAfterViolations: 0,
    privilegedIntents: opts.privilegedIntents ?? true,
    resendOnResume: false,
    closeOnIdentify: undefined as number | undefined,
    onPost: undefined as ((m: FakeDiscordMessage) => void) | undefined,
  };

  function sendDispatch(ws: WebSocket, e: { s: number; t: string; d: Json }): void {
    ws.send(JSON.stringify({ op: 0, s: e.s, t: e.t, d: e.d }));
    deliveredUpTo = Math.max(deliveredUpTo, e.s);
  }

  /** A dispatch for one connection only (READY, RESUMED): in the history, so a later RESUME counts past it. */
  function dispatchTo(ws: WebSocket, t: string, d: Json): void {
    const e = { s: ++seq, t, d };
    history.push(e);
    sendDispatch(ws, e);
  }

  function dispatch(t: string, d: Json): void {
    const e = { s: ++seq, t, d };
    history.push(e);
    if (history.length > 20000) history.splice(0, 10000);
    if (live && live.readyState === 1 && (live as GatewaySocket).ready) sendDispatch(live, e);
  }

  function channelJson(c: FakeChannel): Json {
    const base: Json = { id: c.id, type: c.type, name: c.name ?? null };
    if (c.guildId) base['guild_id'] = c.guildId;
    if (c.type === 11) {
      base['parent_id'] = c.parentId;
      base['owner_id'] = c.ownerId;
      base['thread_metadata'] = { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date().toISOString(), locked: false };
      base['member_count'] = 1;
      base['message_count'] = 0;
    } else if (c.type === 0) {
      base['position'] = 0;
      base['permission_overwrites'] = [];
      base['parent_id'] = null;
    }
    return base;
  }

  function guildCreate(g: { id: string; channels: string[]; roles?: string[] }): Json {
    const role = (id: string, name: string, position: number) => ({
      id,
      name,
      color: 0,
      colors: { primary_color: 0 },
      hoist: false,
      position,
      permissions: '0',
      managed: false,
      mentionable: false,
      flags: 0,
    });
    return {
      id: g.id,
      name: `guild-${g.id.slice(-4)}`,
      icon: null,
      owner_id: '1',
      unavailable: false,
      member_count: 3,
      large: false,
      features: [],
      roles: [role(g.id, '@everyone', 0), ...(g.roles ?? []).map((r, i) => role(r, `role-${r.slice(-4)}`, i + 1))],
      emojis: [],
      stickers: [],
      channels: g.channels.map((c) => channelJson(channels.get(c)!)),
      threads: [],
      members: [],
      voice_states: [],
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
      joined_at: new Date().toISOString(),
      premium_tier: 0,
      system_channel_flags: 0,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      mfa_level: 0,
      nsfw_level: 0,
      preferred_locale: 'en-US',
    };
  }

  function onSocket(ws: WebSocket): void {
    gatewayStats.open++;
    ws.on('close', () => {
      gatewayStats.open--;
      if (live === ws) live = undefined;
    });
    ws.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 41250 } }));
    ws.on('message', (raw) => {
      let p: { op: number; d: Json };
      try {
        p = JSON.parse(String(raw)) as { op: number; d: Json };
      } catch {
        ws.close(4002, 'Error while decoding payload.');
        return;
      }
      if (p.op === 1) {
        gatewayStats.heartbeats++;
        ws.send(JSON.stringify({ op: 11 }));
      } else if (p.op === 2 || p.op === 6) {
        if (p.op === 2) gatewayStats.identifies++;
        else gatewayStats.resumes++;
        if (p.d['token'] !== opts.token) return void ws.close(4004, 'Authentication failed.');
        if (p.op === 2) identify(ws, p.d);
        else resume(ws, p.d);
      }
    });
  }

  /** This connection replaces the live one (Discord closes the old session's socket). */
  function takeOver(ws: WebSocket): void {
    live?.close(4000, 'replaced');
    live = ws;
  }

  function identify(ws: WebSocket, d: Json): void {
    if (state.closeOnIdentify !== undefined) return void ws.close(state.closeOnIdentify, 'closed by the test');
    if ((Number(d['intents']) & MESSAGE_CONTENT_INTENT) !== 0 && !state.privilegedIntents) return void ws.close(4014, 'Disallowed intent(s).');
    takeOver(ws);
    (ws as GatewaySocket).ready = true;
    dispatchTo(ws, 'READY', {
      v: 10,
      user: { ...userObject({ id: botUserId, name: 'Gatehouse', bot: true }), verified: true, flags: 0 },
      guilds: guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: sessionId,
      resume_gateway_url: gatewayUrl,
      application: { id: applicationId, flags: 0 },
      private_channels: [],
      relationships: [],
      user_settings: {},
      shard: [0, 1],
    });
    for (const g of guilds) dispatch('GUILD_CREATE', guildCreate(g));
  }

  function resume(ws: WebSocket, d: Json): void {
    if (d['session_id'] !== sessionId) return void ws.send(JSON.stringify({ op: 9, d: false }));
    const from = Number(d['seq']);
    takeOver(ws);
    for (const e of history) {
      if (e.s > from) sendDispatch(ws, e);
      else if (state.resendOnResume && e.s === from) {
        gatewayStats.resent++;
        sendDispatch(ws, e);
      }
    }
    (ws as GatewaySocket).ready = true;
    dispatchTo(ws, 'RESUMED', {});
  }

  // ---- REST -----------------------------------------------------------------------------------

  function messageJson(m: FakeDiscordMessage): Json {
    const ch = channels.get(m.channelId);
    return {
      id: m.id,
      channel_id: m.channelId,
      ...(ch?.guildId ? { guild_id: ch.guildId } : {}),
      author: userObject({ id: m.authorId, name: 'Gatehouse', bot: m.authorId === botUserId }),
      content: m.content,
      components: m.components,
      timestamp: new Date().toISOString(),
      edited_timestamp: m.edits.length > 0 ? new Date().toISOString() : null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      type: 0,
      flags: 0,
    };
  }

  function checkContent(body: Json, needSome: boolean): void {
    const content = body['content'];
    if (content !== undefined && typeof content !== 'string') throw formError('content', 'must be a string');
    if (typeof content === 'string' && content.length > 2000) throw formError('content', 'Must be 2000 or fewer in length.');
    checkComponents(body['components']);
    const empty = (content === undefined || content === '') && (!Array.isArray(body['components']) || (body['components'] as unknown[]).length === 0);
    if (needSome && empty) throw new HttpError(400, { code: 50006, message: 'Cannot send an empty message' });
  }

  function knownChannel(id: string): FakeChannel {
    const c = channels.get(id);
    if (!c) throw new HttpError(404, { code: 10003, message: 'Unknown Channel' });
    return c;
  }

  function post(channelId: string, body: Json, author = botUserId, id = snowflake()): FakeDiscordMessage {
    const m: FakeDiscordMessage = {
      id,
      channelId,
      authorId: author,
      content: String(body['content'] ?? ''),
      components: (body['components'] as Json[] | undefined) ?? [],
      edits: [],
      deleted: false,
      allowedMentions: body['allowed_mentions'],
    };
    messages.push(m);
    byId.set(m.id, m);
    return m;
  }

  /** A message sent through an interaction's webhook (a follow-up, or the edited deferred reply). */
  function webhookMessage(content: string, flags: number): Json {
    return {
      id: snowflake(),
      channel_id: '0',
      content,
      author: userObject({ id: botUserId, bot: true }),
      timestamp: new Date().toISOString(),
      type: 0,
      flags,
      attachments: [],
      embeds: [],
      mentions: [],
      components: [],
    };
  }

  async function handle(method: string, path: string, body: Json, req: IncomingMessage, res: ServerResponse): Promise<{ status: number; body?: unknown }> {
    if (method === 'GET' && path.startsWith('/cdn/')) {
      const f = files.get(path);
      if (!f) return { status: 404, body: { message: 'Not found' } };
      res.writeHead(200, { 'content-type': f.type, 'content-length': f.body.length }).end(f.body);
      return { status: -1 };
    }
    if (!path.startsWith('/api/v10/')) return fail(404, 0, '404: Not Found');
    const route = path.slice('/api/v10'.length);
    let m: RegExpExecArray | null;
    // interaction callbacks and webhooks use the interaction token, not the bot token
    if ((m = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(route)) && method === 'POST') {
      const it = interactions.get(m[1]!);
      if (!it || it.token !== m[2]) return fail(404, 10062, 'Unknown interaction');
      if (it.answered) return fail(400, 40060, 'Interaction has already been acknowledged.');
      const after = Date.now() - it.at;
      if (after > 3000) return fail(404, 10062, 'Unknown interaction');
      it.answered = true;
      const type = Number(body['type']);
      const data = (body['data'] as Json | undefined) ?? {};
      callbacks.push({ id: m[1]!, type, afterMs: after });
      if (type === 4 && ephemeral(data)) ephemerals.push({ interactionId: m[1]!, userId: it.user, content: String(data['content'] ?? '') });
      if (type === 5) it.deferredEphemeral = ephemeral(data);
      it.resolve?.(type);
      res.writeHead(204).end();
      return { status: -1 };
    }
    if ((m = /^\/webhooks\/(\d+)\/([^/]+)(\/messages\/@original)?$/.exec(route))) {
      const id = byToken.get(m[2]!);
      const it = id ? interactions.get(id) : undefined;
      if (!it || m[1] !== applicationId) return fail(404, 10015, 'Unknown Webhook');
      checkContent(body, method === 'POST');
      const content = String(body['content'] ?? '');
      if (method === 'POST') {
        if (ephemeral(body)) ephemerals.push({ interactionId: id!, userId: it.user, content });
        return { status: 200, body: webhookMessage(content, 64) };
      }
      if (method === 'PATCH' && m[3]) {
        it.onEdit?.(content);
        return { status: 200, body: webhookMessage(content, 0) };
      }
    }
    if (req.headers.authorization !== `Bot ${opts.token}`) return fail(401, 0, '401: Unauthorized');
    if (method === 'GET' && route === '/gateway/bot') {
      return { status: 200, body: { url: gatewayUrl, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } } };
    }
    if ((m = /^\/applications\/(\d+)(?:\/guilds\/(\d+))?\/commands$/.exec(route)) && method === 'PUT') {
      if (m[1] !== applicationId) return fail(403, 50001, 'Missing Access');
      const list = (Array.isArray(body) ? body : []) as Json[];
      commands.set(m[2] ?? 'global', list);
      return { status: 200, body: list.map((c) => ({ ...c, id: snowflake(), application_id: applicationId, version: '1' })) };
    }
    if ((m = /^\/channels\/(\d+)$/.exec(route)) && method === 'GET') return { status: 200, body: channelJson(knownChannel(m[1]!)) };
    if ((m = /^\/users\/(\d+)$/.exec(route)) && method === 'GET') {
      const name = seenNames.get(m[1]!);
      return { status: 200, body: userObject({ id: m[1]!, ...(name !== undefined ? { name } : {}) }) };
    }
    if (route === '/users/@me/channels' && method === 'POST') {
      // Opens (or returns) the bot's DM channel with a user, as Discord does.
      const user = String(body['recipient_id'] ?? '');
      if (!/^\d+$/.test(user)) throw formError('recipient_id', 'Value "' + user + '" is not snowflake.');
      if (!dms.has(user)) {
        const id = snowflake();
        channels.set(id, { id, guildId: undefined, type: 1 });
        dms.set(user, id);
      }
      const id = dms.get(user)!;
      return { status: 200, body: { id, type: 1, last_message_id: null, recipients: [userObject({ id: user })] } };
    }
    if ((m = /^\/channels\/(\d+)\/typing$/.exec(route)) && method === 'POST') {
      knownChannel(m[1]!);
      return { status: 204 };
    }
    if ((m = /^\/channels\/(\d+)\/messages$/.exec(route)) && method === 'POST') {
      knownChannel(m[1]!);
      const to = [...dms].find(([, c]) => c === m![1])?.[0];
      if (to !== undefined && dmsClosed.has(to)) throw new HttpError(403, { code: 50007, message: 'Cannot send messages to this user' });
      checkContent(body, true);
      const msg = post(m[1]!, body);
      state.onPost?.(msg);
      const json = messageJson(msg);
      // Discord echoes the bot's own messages on the gateway too
      dispatch('MESSAGE_CREATE', json);
      return { status: 200, body: json };
    }
    if ((m = /^\/channels\/(\d+)\/messages\/(\d+)\/threads$/.exec(route)) && method === 'POST') {
      const parent = knownChannel(m[1]!);
      if (channels.has(m[2]!)) return fail(400, 160004, 'A thread has already been created for this message');
      const name = String(body['name'] ?? '');
      if (name.length < 1 || name.length > 100) throw formError('name', 'Must be between 1 and 100 in length.');
      const thread: FakeChannel = { id: m[2]!, guildId: parent.guildId, type: 11, parentId: parent.id, ownerId: botUserId, name };
      channels.set(thread.id, thread);
      const json = { ...channelJson(thread), newly_created: true };
      dispatch('THREAD_CREATE', json);
      return { status: 201, body: json };
    }
    if ((m = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(route))) {
      knownChannel(m[1]!);
      const msg = byId.get(m[2]!);
      if (!msg || msg.deleted || msg.channelId !== m[1]) return fail(404, 10008, 'Unknown Message');
      if (method === 'DELETE') {
        msg.deleted = true;
        return { status: 204 };
      }
      if (method === 'PATCH') {
        if (Date.now() < limitedUntil) state.retryAfterViolations++;
        if (editLimit.times > 0) {
          editLimit.times--;
          limitedUntil = Date.now() + editLimit.retryAfterS * 1000;
          res.writeHead(429, {
            'content-type': 'application/json',
            'retry-after': String(editLimit.retryAfterS),
            'x-ratelimit-scope': 'user',
            'x-ratelimit-limit': '5',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset-after': String(editLimit.retryAfterS),
            'x-ratelimit-bucket': 'fake-edit-bucket',
          });
          res.end(JSON.stringify({ message: 'You are being rate limited.', retry_after: editLimit.retryAfterS, global: false }));
          return { status: -429 };
        }
        checkContent(body, false);
        if (body['content'] !== undefined) msg.content = String(body['content']);
        if (body['components'] !== undefined) msg.components = body['components'] as Json[];
        msg.edits.push({ content: msg.content, components: msg.components });
        return { status: 200, body: messageJson(msg) };
      }
    }
    return fail(404, 0, '404: Not Found');
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Json = {};
      if (raw !== '' && (req.headers['content-type'] ?? '').includes('json')) {
        try {
          body = JSON.parse(raw) as Json;
        } catch {
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 50109, message: 'The request body contains invalid JSON.' }));
          return;
        }
      }
      const method = req.method ?? 'GET';
      handle(method, decodeURIComponent(url.pathname), body, req, res)
        .catch((err: unknown) => {
          if (err instanceof HttpError) return { status: err.status, body: err.body };
          return { status: 500, body: { message: String(err), code: 0 } };
        })
        .then((r) => {
          calls.push({
            method,
            route: url.pathname.replace(/^\/api\/v10/, '').replace(/\d{5,}/g, ':id'),
            status: r.status === -429 ? 429 : r.status === -1 ? res.statusCode : r.status,
          });
          if (r.status < 0) return;
          if (r.status === 204) res.writeHead(204).end();
          else res.writeHead(r.status, { 'content-type': 'application/json' }).end(JSON.stringify(r.body));
        });
    });
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (!(req.url ?? '').startsWith('/gateway')) return void socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  const gatewayUrl = `ws://127.0.0.1:${port}/gateway`;

  function channelOf(id: string): FakeChannel {
    const c = channels.get(id);
    if (c) return c;
    // an unknown id is a DM channel (created on first use, as Discord opens DMs)
    const dm: FakeChannel = { id, guildId: undefined, type: 1 };
    channels.set(id, dm);
    return dm;
  }

  function memberJson(u: UserSpec): Json {
    return { roles: u.roles ?? [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0, nick: null, pending: false };
  }

  function interaction(type: number, u: UserSpec, channelId: string, data: Json, message?: Json): { id: string; payload: Json } {
    const ch = channelOf(channelId);
    const id = snowflake();
    const token = `itok-${id}-${Math.random().toString(36).slice(2)}`;
    const payload: Json = {
      id,
      application_id: applicationId,
      type,
      token,
      version: 1,
      channel_id: channelId,
      channel: ch.type === 1 ? { id: channelId, type: 1 } : channelJson(ch),
      data,
      app_permissions: '0',
      locale: 'en-US',
      entitlements: [],
      authorizing_integration_owners: { '0': ch.guildId ?? '0' },
      context: ch.guildId ? 0 : 1,
      attachment_size_limit: 10485760,
      ...(message ? { message } : {}),
    };
    if (ch.guildId) {
      payload['guild_id'] = ch.guildId;
      payload['guild'] = { id: ch.guildId, locale: 'en-US', features: [] };
      payload['member'] = { ...memberJson(u), user: userObject(seen(u)), permissions: '2248473465835073' };
    } else payload['user'] = userObject(seen(u));
    interactions.set(id, { at: Date.now(), user: u.id, token, answered: false });
    byToken.set(token, id);
    return { id, payload };
  }

  return withState<typeof state, Omit<FakeDiscord, keyof typeof state>>(state, {
    apiUrl: `${base}/api`,
    botUserId,
    applicationId,
    messages,
    ephemerals,
    calls,
    channels,
    dms,
    closeDms(userId) {
      dmsClosed.add(userId);
    },
    commands,
    callbacks,
    gateway: gatewayStats,
    visible: (channelId) => messages.filter((m) => m.channelId === channelId && !m.deleted && m.authorId === botUserId),
    byId: (id) => byId.get(id),
    rateLimitEdits(times, retryAfterS = 1) {
      editLimit = { times, retryAfterS };
    },
    addFile(name, contentType, content) {
      const id = snowflake();
      const path = `/cdn/attachments/${id}/${encodeURIComponent(name)}`;
      const buf = Buffer.isBuffer(content) ? content : Buffer.from(content);
      files.set(path, { type: contentType, body: buf });
      return { id, filename: name, content_type: contentType, size: buf.length, url: `${base}${path}?ex=1&is=2&hm=signed`, proxy_url: `${base}${path}` };
    },
    userMessage(a) {
      const ch = channelOf(a.channel);
      const id = a.id ?? snowflake();
      const mentions: Json[] = [];
      let content = a.text;
      if (a.mention) {
        content = `<@${botUserId}> ${content}`;
        mentions.push(userObject({ id: botUserId, name: 'Gatehouse', bot: true }));
      }
      const d: Json = {
        id,
        channel_id: a.channel,
        author: userObject(seen(a.user)),
        content,
        timestamp: new Date().toISOString(),
        edited_timestamp: null,
        tts: false,
        mention_everyone: false,
        mentions,
        mention_roles: [],
        attachments: a.attachments ?? [],
        embeds: [],
        pinned: false,
        type: a.type ?? (a.replyTo ? 19 : 0),
        flags: 0,
      };
      if (ch.guildId) {
        d['guild_id'] = ch.guildId;
        d['member'] = memberJson(a.user);
      } else d['channel_type'] = 1;
      if (a.replyTo) {
        const ref = byId.get(a.replyTo);
        d['message_reference'] = { type: 0, message_id: a.replyTo, channel_id: a.channel, ...(ch.guildId ? { guild_id: ch.guildId } : {}) };
        if (ref) {
          d['referenced_message'] = messageJson(ref);
          mentions.push(userObject({ id: ref.authorId, name: 'Gatehouse', bot: ref.authorId === botUserId }));
        }
      }
      if (!byId.has(id)) post(a.channel, { content }, a.user.id, id);
      dispatch('MESSAGE_CREATE', d);
      return id;
    },
    click(a) {
      const { id, payload } = interaction(
        3,
        a.user,
        a.message.channelId,
        { custom_id: a.customId, component_type: a.values ? 3 : 2, ...(a.values ? { values: a.values } : {}) },
        messageJson(a.message),
      );
      return new Promise<number>((resolve) => {
        const it = interactions.get(id)!;
        const timer = setTimeout(() => resolve(0), 3000);
        it.resolve = (type) => {
          clearTimeout(timer);
          resolve(type);
        };
        dispatch('INTERACTION_CREATE', payload);
      });
    },
    slash(a) {
      const { id, payload } = interaction(2, a.user, a.channel, { id: snowflake(), name: a.name, type: 1 });
      return new Promise((resolve, reject) => {
        const it = interactions.get(id)!;
        const timer = setTimeout(() => reject(new Error(`/${a.name} got no reply in 10 s`)), 10_000);
        it.onEdit = (content) => {
          clearTimeout(timer);
          resolve({ content, ephemeral: it.deferredEphemeral === true });
        };
        dispatch('INTERACTION_CREATE', payload);
      });
    },
    dropConnection(code = 4000) {
      const ws = live;
      live = undefined;
      if (ws) (ws as GatewaySocket).ready = false;
      ws?.close(code, 'dropped by the test');
    },
    dispatch,
    async close() {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  });
}
