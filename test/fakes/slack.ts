/**
 * A fake Slack on 127.0.0.1 for the real @slack/bolt / @slack/web-api clients: the Web API methods
 * the adapter uses, and an Events API sender that signs requests like Slack (HTTP mode).
 *
 * Enforced like Slack: the bot token on every call (invalid_auth), `text` over 40,000 characters
 * (msg_too_long), at most 50 blocks, section text at most 3,000, button text at most 75, button value
 * at most 2,000, action_id at most 255 (invalid_blocks), a message needs text or blocks (no_text),
 * channels the bot is not in (not_in_channel). `failNext(method, {error: 'ratelimited', retryAfter})`
 * answers HTTP 429 with Retry-After; a call to that method inside the announced window is counted in
 * `retryAfterViolations`.
 *
 * Two transports for what Slack sends the app, like Slack: `mode = 'http'` signs each request
 * (v0 HMAC of "v0:<ts>:<body>") and POSTs it to `eventsUrl`; `mode = 'socket'` answers
 * apps.connections.open (app-level token only: an xoxb token gets not_allowed_token_type) with a
 * ws:// URL, sends `hello`, then envelopes {envelope_id, type, payload} that the app must ack with
 * {envelope_id}; a delivery resolves 200 once acked, 408 when not acked within 3 s.
 *
 * Also: the slash command (`slashCommand`, form-encoded over HTTP, a `slash_commands` envelope over
 * the socket) with a response_url whose posts land in `responses`; an envelope sent again with the
 * same envelope_id (`resendLastEnvelope`); AI assistant apps (`assistantThreadStarted` sends
 * assistant_thread_started; assistant.threads.setStatus is recorded in `assistantStatuses`, status at
 * most 50 characters, and refused with `not_allowed` unless `assistantApp` is set, as for an app
 * without the assistant feature). Chat streaming: chat.startStream (needs thread_ts; outside a DM
 * also recipient_user_id and recipient_team_id), appendStream, stopStream; markdown_text at most
 * 12,000 characters a call; appending to a stopped stream is message_not_in_streaming_state.
 * Direct messages: conversations.open {users} gives the bot's DM channel with that user (D…).
 * Users: users.info {user} answers a workspace member (`setUserName` gives a display name; without
 * one, display_name is empty and name is the id in lower case); an id that is not a user id is
 * user_not_found.
 * Ephemeral messages (chat.postEphemeral, blocks checked as for chat.postMessage) can be clicked
 * (`clickEphemeral`: container.is_ephemeral, no `message`, a response_url of its own); no API call
 * edits them, only a post to that response_url with replace_original, as on Slack.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

type Json = Record<string, unknown>;

export interface FakeSlackMessage {
  channel: string;
  ts: string;
  threadTs: string | undefined;
  user: string;
  text: string;
  blocks: Json[] | undefined;
  edits: Array<{ text: string; blocks: Json[] | undefined }>;
  deleted: boolean;
  /** A message made with chat.startStream: its markdown grows with appendStream until stopStream. */
  stream?: { state: 'streaming' | 'stopped'; appends: number };
}

export interface FakeEphemeral {
  channel: string;
  user: string;
  text: string;
  threadTs: string | undefined;
  /** Its message_ts (what a click on it names in container.message_ts). */
  ts: string;
  blocks: Json[] | undefined;
  /** Earlier versions, replaced through a click's response_url (replace_original). */
  edits: Array<{ text: string; blocks: Json[] | undefined }>;
  deleted: boolean;
}

export interface FakeResponse {
  /** What response_url received: response_type ephemeral (only the user sees it) or in_channel. */
  responseType: string;
  text: string;
  channel: string;
  user: string;
}

export interface FakeCall {
  method: string;
  ok: boolean;
  error?: string;
  status: number;
}

export interface FakeSlack {
  readonly apiUrl: string;
  readonly teamId: string;
  readonly botUserId: string;
  readonly messages: FakeSlackMessage[];
  readonly ephemerals: FakeEphemeral[];
  readonly calls: FakeCall[];
  retryAfterViolations: number;
  /** Called for every message the bot posts (benchmarks stamp answers here). */
  onPost: ((m: FakeSlackMessage) => void) | undefined;
  /** Where signed events go (the bot's /slack/events). */
  eventsUrl: string;
  /** How events reach the app: signed HTTP POSTs or Socket Mode envelopes. */
  mode: 'http' | 'socket';
  /** Socket Mode connections opened (and still open). */
  readonly sockets: { opened: number; open: number };
  signingSecret: string;
  failNext(method: string, err: { error: string; retryAfter?: number; needed?: string }, times?: number): void;
  notInChannel(channel: string): void;
  /** A file a user uploaded: served at the returned url_private to the bot token only. */
  addFile(name: string, mimetype: string, content: Buffer | string): { name: string; mimetype: string; size: number; url_private: string };
  /** Members of a user group (usergroups.users.list). */
  setGroup(id: string, users: string[]): void;
  /** The display name users.info gives for this user. */
  setUserName(id: string, displayName: string): void;
  /** The group is deleted: usergroups.users.list answers no_such_subteam. */
  deleteGroup(id: string): void;
  visible(channel: string, threadTs?: string): FakeSlackMessage[];
  /** A user posts in a channel (or DM); Slack sends `message` (and `app_mention` when the bot is mentioned). */
  userMessage(a: {
    user: string;
    channel: string;
    text: string;
    threadTs?: string;
    im?: boolean;
    retry?: number;
    eventId?: string;
    files?: unknown[];
  }): Promise<{ ts: string; statuses: number[] }>;
  /** A signed POST of any body; override the signature or timestamp to test the checks. */
  post(body: string, opts?: { contentType?: string; timestamp?: number; signature?: string; retryNum?: number }): Promise<{ status: number; body: string }>;
  /** A user clicks the element with `value` (button, or an option of a select) on a bot message. */
  click(a: { user: string; message: FakeSlackMessage; value: string }): Promise<{ status: number }>;
  /** A user clicks the element with `value` on an ephemeral message (as Slack: no `message`, container.is_ephemeral). */
  clickEphemeral(a: { user: string; ephemeral: FakeEphemeral; value: string }): Promise<{ status: number }>;
  /** The bot's DM channel with each user it opened one with (conversations.open): user -> channel. */
  readonly dms: ReadonlyMap<string, string>;
  /** Posts to a slash command's response_url, in order. */
  readonly responses: FakeResponse[];
  /** A user types `/gatehouse <text>` (default command) in a channel or DM. */
  slashCommand(a: { user: string; channel: string; text: string; command?: string }): Promise<{ status: number }>;
  /** Sends the last socket envelope again, same envelope_id (Slack redelivers when unsure of the ack). */
  resendLastEnvelope(): Promise<number>;
  /** The app has Slack's AI assistant feature (assistant.threads.* allowed). */
  assistantApp: boolean;
  readonly assistantStatuses: Array<{ channel: string; threadTs: string; status: string }>;
  /** A user opens an assistant thread in their DM with the app: assistant_thread_started. Returns the thread ts. */
  assistantThreadStarted(a: { user: string; channel: string }): Promise<{ threadTs: string; status: number }>;
  close(): Promise<void>;
}

const TEXT_MAX = 40_000;

function checkBlocks(blocks: unknown): string | undefined {
  if (!Array.isArray(blocks)) return 'invalid_blocks_format';
  if (blocks.length > 50) return 'invalid_blocks';
  for (const b of blocks as Json[]) {
    const text = (b['text'] as { text?: string } | undefined)?.text;
    if (b['type'] === 'section' && (typeof text !== 'string' || text.length > 3000 || text.length === 0)) return 'invalid_blocks';
    if (b['type'] === 'actions') {
      const els = b['elements'] as Json[];
      if (!Array.isArray(els) || els.length === 0 || els.length > 25) return 'invalid_blocks';
      const ids = new Set<string>();
      for (const e of els) {
        const id = String(e['action_id'] ?? '');
        if (id.length > 255 || ids.has(id)) return 'invalid_blocks';
        ids.add(id);
        if (e['type'] === 'button') {
          const label = (e['text'] as { text?: string }).text ?? '';
          if (label.length === 0 || label.length > 75) return 'invalid_blocks';
          if (String(e['value'] ?? '').length > 2000) return 'invalid_blocks';
        }
        if (e['type'] === 'static_select') {
          const options = e['options'] as Array<{ text: { text: string }; value: string }>;
          if (!Array.isArray(options) || options.length > 100) return 'invalid_blocks';
          for (const o of options) if (o.text.text.length > 75 || o.value.length > 150) return 'invalid_blocks';
        }
      }
    }
  }
  return undefined;
}

export async function startFakeSlack(opts: {
  botToken: string;
  appToken?: string;
  signingSecret?: string;
  teamId?: string;
  botUserId?: string;
}): Promise<FakeSlack> {
  const teamId = opts.teamId ?? 'T0TEAM';
  const botUserId = opts.botUserId ?? 'U0BOT';
  const messages: FakeSlackMessage[] = [];
  const ephemerals: FakeEphemeral[] = [];
  const calls: FakeCall[] = [];
  const failures = new Map<string, Array<{ error: string; retryAfter?: number; needed?: string }>>();
  const limitedUntil = new Map<string, number>();
  const notIn = new Set<string>();
  const groups = new Map<string, string[]>();
  const displayNames = new Map<string, string>();
  const files = new Map<string, Buffer>();
  const responses: FakeResponse[] = [];
  const responseUrls = new Map<string, { channel: string; user: string; ephemeral?: FakeEphemeral }>();
  const dms = new Map<string, string>();
  const assistantStatuses: Array<{ channel: string; threadTs: string; status: string }> = [];
  let clock = 1_700_000_000_000;
  const tsOfEvent = new Map<string, string>();
  const nextTs = () => {
    clock = Math.max(clock + 1, Date.now() * 1000);
    const s = String(clock);
    return `${s.slice(0, 10)}.${s.slice(10, 16).padEnd(6, '0')}`;
  };
  let eventSeq = 0;

  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
      req.on('error', reject);
    });

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      res.writeHead(500).end(String(err));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const raw = await readBody(req);
    const reply = (status: number, body: Json, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    };
    if (url.pathname.startsWith('/files/')) {
      const file = files.get(url.pathname.slice('/files/'.length));
      if (!file) return reply(404, { ok: false });
      // like Slack: without the bot token you get an HTML login page, not the file
      if (req.headers.authorization !== `Bearer ${opts.botToken}`) {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(file);
      return;
    }
    if (url.pathname.startsWith('/response/')) {
      const target = responseUrls.get(url.pathname.slice('/response/'.length));
      if (!target) return reply(404, { ok: false, error: 'expired_url' });
      const body = JSON.parse(raw || '{}') as { text?: string; response_type?: string; replace_original?: boolean; blocks?: unknown };
      if (typeof body.text !== 'string' || body.text === '' || body.text.length > TEXT_MAX) return reply(400, { ok: false, error: 'no_text' });
      // A click's response_url with replace_original replaces the message clicked (the only edit an ephemeral gets).
      if (body.replace_original === true && target.ephemeral) {
        const blocks = body.blocks === undefined ? undefined : (checkBlocks(body.blocks) ?? (body.blocks as Json[]));
        if (typeof blocks === 'string') return reply(400, { ok: false, error: blocks });
        const e = target.ephemeral;
        e.edits.push({ text: e.text, blocks: e.blocks });
        e.text = body.text;
        e.blocks = blocks;
        return reply(200, { ok: true });
      }
      responses.push({ responseType: body.response_type ?? 'ephemeral', text: body.text, channel: target.channel, user: target.user });
      return reply(200, { ok: true });
    }
    if (!url.pathname.startsWith('/api/')) return reply(404, { ok: false, error: 'unknown_path' });
    const method = url.pathname.slice('/api/'.length);
    const ctype = req.headers['content-type'] ?? '';
    const p: Json = ctype.includes('json') ? (JSON.parse(raw || '{}') as Json) : Object.fromEntries(new URLSearchParams(raw));
    const auth = req.headers.authorization?.replace(/^Bearer /, '') ?? (p['token'] as string | undefined);
    const record = (ok: boolean, status: number, error?: string) => calls.push({ method, ok, status, ...(error ? { error } : {}) });
    const fail = (error: string, extra: Json = {}) => {
      record(false, 200, error);
      reply(200, { ok: false, error, ...extra });
    };
    const until = limitedUntil.get(method);
    if (until !== undefined && Date.now() < until) fakeState.retryAfterViolations++;
    const queued = failures.get(method);
    const injected = queued?.shift();
    if (injected) {
      if (injected.error === 'ratelimited') {
        const after = injected.retryAfter ?? 1;
        limitedUntil.set(method, Date.now() + after * 1000 - 50);
        record(false, 429, 'ratelimited');
        return reply(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(after) });
      }
      return fail(injected.error, injected.needed ? { needed: injected.needed } : {});
    }
    if (method === 'apps.connections.open') {
      if (auth?.startsWith('xoxb-')) return fail('not_allowed_token_type');
      if (auth !== opts.appToken) return fail('invalid_auth');
      record(true, 200);
      return reply(200, { ok: true, url: `ws://127.0.0.1:${port}/link/?ticket=${randomBytes(8).toString('hex')}` });
    }
    if (auth !== opts.botToken) return fail('invalid_auth');
    const blocksOf = (): Json[] | undefined | string => {
      const b = p['blocks'];
      if (b === undefined) return undefined;
      try {
        const parsed = typeof b === 'string' ? (JSON.parse(b) as unknown) : b;
        return checkBlocks(parsed) ?? (parsed as Json[]);
      } catch {
        return 'invalid_blocks_format';
      }
    };
    switch (method) {
      case 'auth.test':
        record(true, 200);
        return reply(200, { ok: true, team_id: teamId, user_id: botUserId, bot_id: 'B0BOT', team: 'Fake Team', url: 'https://fake.slack.com/' });
      case 'chat.postMessage':
      case 'chat.update': {
        const channel = String(p['channel'] ?? '');
        if (notIn.has(channel)) return fail('not_in_channel');
        const text = String(p['text'] ?? '');
        if (text.length > TEXT_MAX) return fail('msg_too_long');
        const blocks = blocksOf();
        if (typeof blocks === 'string') return fail(blocks);
        if (text === '' && blocks === undefined) return fail('no_text');
        if (method === 'chat.update') {
          const m = messages.find((x) => x.channel === channel && x.ts === p['ts'] && !x.deleted);
          if (!m) return fail('message_not_found');
          m.edits.push({ text: m.text, blocks: m.blocks });
          m.text = text;
          m.blocks = blocks;
          record(true, 200);
          return reply(200, { ok: true, channel, ts: m.ts, text });
        }
        const ts = nextTs();
        const threadTs = typeof p['thread_ts'] === 'string' && p['thread_ts'] !== '' ? p['thread_ts'] : undefined;
        const posted: FakeSlackMessage = { channel, ts, threadTs, user: botUserId, text, blocks, edits: [], deleted: false };
        messages.push(posted);
        fakeState.onPost?.(posted);
        record(true, 200);
        return reply(200, { ok: true, channel, ts, message: { text, ts } });
      }
      case 'chat.startStream':
      case 'chat.appendStream':
      case 'chat.stopStream': {
        const channel = String(p['channel'] ?? '');
        if (notIn.has(channel)) return fail('not_in_channel');
        const md = p['markdown_text'];
        if (md !== undefined && (typeof md !== 'string' || md.length > 12_000)) return fail('msg_too_long');
        if (method === 'chat.startStream') {
          const threadTs = p['thread_ts'];
          if (typeof threadTs !== 'string' || threadTs === '') return fail('invalid_arguments');
          if (!channel.startsWith('D') && (!p['recipient_user_id'] || !p['recipient_team_id'])) return fail('invalid_arguments');
          const ts = nextTs();
          const posted: FakeSlackMessage = {
            channel,
            ts,
            threadTs,
            user: botUserId,
            text: String(md ?? ''),
            blocks: undefined,
            edits: [],
            deleted: false,
            stream: { state: 'streaming', appends: 0 },
          };
          messages.push(posted);
          record(true, 200);
          return reply(200, { ok: true, channel, ts });
        }
        const m = messages.find((x) => x.channel === channel && x.ts === p['ts'] && !x.deleted);
        if (!m || !m.stream) return fail('message_not_found');
        if (m.stream.state !== 'streaming') return fail('message_not_in_streaming_state');
        if (typeof md === 'string') {
          m.text += md;
          m.stream.appends++;
        } else if (method === 'chat.appendStream') return fail('invalid_arguments');
        if (method === 'chat.stopStream') {
          m.stream.state = 'stopped';
          fakeState.onPost?.(m);
        }
        record(true, 200);
        return reply(200, { ok: true, channel, ts: m.ts });
      }
      case 'chat.delete': {
        const m = messages.find((x) => x.channel === p['channel'] && x.ts === p['ts'] && !x.deleted);
        if (!m) return fail('message_not_found');
        m.deleted = true;
        record(true, 200);
        return reply(200, { ok: true, channel: m.channel, ts: m.ts });
      }
      case 'chat.postEphemeral': {
        const text = String(p['text'] ?? '');
        if (text === '' || text.length > TEXT_MAX) return fail(text === '' ? 'no_text' : 'msg_too_long');
        const blocks = blocksOf();
        if (typeof blocks === 'string') return fail(blocks);
        const ts = nextTs();
        ephemerals.push({
          channel: String(p['channel']),
          user: String(p['user']),
          text,
          threadTs: p['thread_ts'] as string | undefined,
          ts,
          blocks,
          edits: [],
          deleted: false,
        });
        record(true, 200);
        return reply(200, { ok: true, message_ts: ts });
      }
      case 'users.info': {
        const user = String(p['user'] ?? '');
        if (!/^[UW][A-Z0-9]+$/.test(user)) return fail('user_not_found');
        record(true, 200);
        return reply(200, { ok: true, user: { id: user, name: user.toLowerCase(), profile: { display_name: displayNames.get(user) ?? '' } } });
      }
      case 'conversations.open': {
        // The bot's DM with one user (a multi-person DM is not faked).
        const users = String(p['users'] ?? '');
        if (!/^[UW][A-Z0-9]+$/.test(users)) return fail(users === '' ? 'users_list_not_supplied' : 'user_not_found');
        const channel = dms.get(users) ?? `D${users.slice(1)}`;
        dms.set(users, channel);
        record(true, 200);
        return reply(200, { ok: true, channel: { id: channel } });
      }
      case 'assistant.threads.setStatus': {
        if (!fakeState.assistantApp) return fail('not_allowed');
        const channel = String(p['channel_id'] ?? '');
        const threadTs = String(p['thread_ts'] ?? '');
        const status = p['status'];
        if (channel === '' || threadTs === '' || typeof status !== 'string') return fail('invalid_arguments');
        if (status.length > 50) return fail('invalid_arguments');
        assistantStatuses.push({ channel, threadTs, status });
        record(true, 200);
        return reply(200, { ok: true });
      }
      case 'usergroups.users.list': {
        const users = groups.get(String(p['usergroup'] ?? ''));
        if (!users) return fail('no_such_subteam');
        record(true, 200);
        return reply(200, { ok: true, users });
      }
      default:
        return fail('unknown_method');
    }
  }

  const wss = new WebSocketServer({ noServer: true });
  const sockets = { opened: 0, open: 0 };
  let socket: WebSocket | undefined;
  const pendingAcks = new Map<string, () => void>();
  let lastEnvelope: string | undefined;
  server.on('upgrade', (req, sock, head) => {
    if (!(req.url ?? '').startsWith('/link')) {
      sock.destroy();
      return;
    }
    wss.handleUpgrade(req, sock, head, (ws) => {
      socket = ws;
      sockets.opened++;
      sockets.open++;
      ws.on('close', () => {
        sockets.open--;
        if (socket === ws) socket = undefined;
      });
      ws.on('message', (data) => {
        try {
          const msg = JSON.parse(String(data)) as { envelope_id?: string };
          if (msg.envelope_id) pendingAcks.get(msg.envelope_id)?.();
        } catch {
          // not JSON: Slack ignores it too
        }
      });
      ws.send(
        JSON.stringify({
          type: 'hello',
          num_connections: 1,
          debug_info: { host: 'fake', approximate_connection_time: 3600 },
          connection_info: { app_id: 'A0APP' },
        }),
      );
    });
  });

  /** Sends an envelope over the socket; 200 once acked, 408 when not acked in 3 s, 503 without a socket. */
  async function envelope(type: string, payload: unknown, retryAttempt = 0): Promise<number> {
    const id = randomBytes(8).toString('hex');
    return deliver(
      id,
      JSON.stringify({
        envelope_id: id,
        type,
        payload,
        accepts_response_payload: type !== 'events_api',
        retry_attempt: retryAttempt,
        retry_reason: retryAttempt ? 'timeout' : '',
      }),
    );
  }

  async function deliver(id: string, raw: string): Promise<number> {
    const ws = socket;
    if (!ws) return 503;
    lastEnvelope = raw;
    const acked = new Promise<number>((resolve) => {
      const timer = setTimeout(() => {
        pendingAcks.delete(id);
        resolve(408);
      }, 3000);
      pendingAcks.set(id, () => {
        clearTimeout(timer);
        pendingAcks.delete(id);
        resolve(200);
      });
    });
    ws.send(raw);
    return acked;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;

  const sign = (body: string, ts: number) => `v0=${createHmac('sha256', fakeState.signingSecret).update(`v0:${ts}:${body}`).digest('hex')}`;

  const fakeState: FakeSlack = {
    apiUrl: `http://127.0.0.1:${port}/api/`,
    teamId,
    botUserId,
    messages,
    ephemerals,
    calls,
    retryAfterViolations: 0,
    onPost: undefined,
    responses,
    dms,
    assistantApp: false,
    assistantStatuses,
    eventsUrl: '',
    mode: 'http',
    sockets,
    signingSecret: opts.signingSecret ?? randomBytes(16).toString('hex'),
    failNext(method, err, times = 1) {
      const q = failures.get(method) ?? [];
      for (let i = 0; i < times; i++) q.push(err);
      failures.set(method, q);
    },
    notInChannel(channel) {
      notIn.add(channel);
    },
    addFile(name, mimetype, content) {
      const id = randomBytes(6).toString('hex');
      const buf = Buffer.isBuffer(content) ? content : Buffer.from(content);
      files.set(id, buf);
      return { name, mimetype, size: buf.length, url_private: `http://127.0.0.1:${port}/files/${id}` };
    },
    setGroup(id, users) {
      groups.set(id, users);
    },
    setUserName(id, displayName) {
      displayNames.set(id, displayName);
    },
    deleteGroup(id) {
      groups.delete(id);
    },
    visible(channel, threadTs) {
      return messages.filter((m) => m.channel === channel && !m.deleted && (threadTs === undefined || m.threadTs === threadTs));
    },
    async post(body, o = {}) {
      const ts = o.timestamp ?? Math.floor(Date.now() / 1000);
      const res = await fetch(fakeState.eventsUrl, {
        method: 'POST',
        headers: {
          'content-type': o.contentType ?? 'application/json',
          'x-slack-request-timestamp': String(ts),
          'x-slack-signature': o.signature ?? sign(body, ts),
          ...(o.retryNum !== undefined ? { 'x-slack-retry-num': String(o.retryNum), 'x-slack-retry-reason': 'http_timeout' } : {}),
        },
        body,
      });
      return { status: res.status, body: await res.text() };
    },
    async userMessage(a) {
      // A redelivery (the same event_id again) is the same post, as Slack sends it: the same ts.
      const known = a.eventId !== undefined ? tsOfEvent.get(a.eventId) : undefined;
      const ts = known ?? nextTs();
      if (a.eventId !== undefined && known === undefined) tsOfEvent.set(a.eventId, ts);
      const base = {
        user: a.user,
        text: a.text,
        ts,
        channel: a.channel,
        team: teamId,
        event_ts: ts,
        ...(a.threadTs ? { thread_ts: a.threadTs } : {}),
        ...(a.files ? { files: a.files, subtype: 'file_share' } : {}),
      };
      const statuses: number[] = [];
      const send = async (event: Json) => {
        const body = JSON.stringify({
          token: 'legacy',
          team_id: teamId,
          api_app_id: 'A0APP',
          type: 'event_callback',
          event_id: a.eventId ?? `Ev${++eventSeq}`,
          event_time: Math.floor(Date.now() / 1000),
          authorizations: [{ team_id: teamId, user_id: botUserId, is_bot: true }],
          event,
        });
        if (fakeState.mode === 'socket') {
          statuses.push(await envelope('events_api', JSON.parse(body), a.retry ?? 0));
          return;
        }
        const r = await fakeState.post(body, a.retry !== undefined ? { retryNum: a.retry } : {});
        statuses.push(r.status);
      };
      await send({ type: 'message', channel_type: a.im ? 'im' : 'channel', ...base });
      if (!a.im && a.text.includes(`<@${botUserId}>`)) await send({ type: 'app_mention', ...base });
      return { ts, statuses };
    },
    async slashCommand(a) {
      const id = randomBytes(6).toString('hex');
      responseUrls.set(id, { channel: a.channel, user: a.user });
      const payload: Record<string, string> = {
        token: 'legacy',
        team_id: teamId,
        team_domain: 'fake',
        channel_id: a.channel,
        channel_name: a.channel.startsWith('D') ? 'directmessage' : 'chan',
        user_id: a.user,
        user_name: a.user.toLowerCase(),
        command: a.command ?? '/gatehouse',
        text: a.text,
        api_app_id: 'A0APP',
        is_enterprise_install: 'false',
        response_url: `http://127.0.0.1:${port}/response/${id}`,
        trigger_id: `trig${++eventSeq}`,
      };
      if (fakeState.mode === 'socket') return { status: await envelope('slash_commands', payload) };
      const r = await fakeState.post(new URLSearchParams(payload).toString(), { contentType: 'application/x-www-form-urlencoded' });
      return { status: r.status };
    },
    async resendLastEnvelope() {
      if (!lastEnvelope) throw new Error('no envelope sent yet');
      const raw = lastEnvelope;
      return deliver((JSON.parse(raw) as { envelope_id: string }).envelope_id, raw);
    },
    async assistantThreadStarted(a) {
      const threadTs = nextTs();
      const body = JSON.stringify({
        token: 'legacy',
        team_id: teamId,
        api_app_id: 'A0APP',
        type: 'event_callback',
        event_id: `Ev${++eventSeq}`,
        event_time: Math.floor(Date.now() / 1000),
        authorizations: [{ team_id: teamId, user_id: botUserId, is_bot: true }],
        event: {
          type: 'assistant_thread_started',
          assistant_thread: { user_id: a.user, context: {}, channel_id: a.channel, thread_ts: threadTs },
          event_ts: threadTs,
        },
      });
      if (fakeState.mode === 'socket') return { threadTs, status: await envelope('events_api', JSON.parse(body)) };
      return { threadTs, status: (await fakeState.post(body)).status };
    },
    async click(a) {
      const actionsBlock = (a.message.blocks ?? []).find((b) => b['type'] === 'actions') as { block_id: string; elements: Json[] } | undefined;
      if (!actionsBlock) throw new Error('the message has no actions');
      let action: Json | undefined;
      for (const e of actionsBlock.elements) {
        if (e['type'] === 'button' && e['value'] === a.value) {
          action = { type: 'button', action_id: e['action_id'], block_id: actionsBlock.block_id, value: a.value, text: e['text'], action_ts: nextTs() };
        }
        if (e['type'] === 'static_select') {
          const o = (e['options'] as Array<{ text: Json; value: string }>).find((x) => x.value === a.value);
          if (o) action = { type: 'static_select', action_id: e['action_id'], block_id: actionsBlock.block_id, selected_option: o, action_ts: nextTs() };
        }
      }
      if (!action) throw new Error(`no element with value ${a.value}`);
      const payload = {
        type: 'block_actions',
        user: { id: a.user, username: a.user.toLowerCase(), name: a.user.toLowerCase(), team_id: teamId },
        api_app_id: 'A0APP',
        token: 'legacy',
        container: {
          type: 'message',
          message_ts: a.message.ts,
          channel_id: a.message.channel,
          is_ephemeral: false,
          ...(a.message.threadTs ? { thread_ts: a.message.threadTs } : {}),
        },
        trigger_id: `trig${++eventSeq}`,
        team: { id: teamId, domain: 'fake' },
        channel: { id: a.message.channel, name: 'chan' },
        message: {
          type: 'message',
          ts: a.message.ts,
          text: a.message.text,
          user: botUserId,
          ...(a.message.threadTs ? { thread_ts: a.message.threadTs } : {}),
          blocks: a.message.blocks,
        },
        response_url: `http://127.0.0.1:${port}/response`,
        actions: [action],
      };
      if (fakeState.mode === 'socket') return { status: await envelope('interactive', payload) };
      const r = await fakeState.post(`payload=${encodeURIComponent(JSON.stringify(payload))}`, { contentType: 'application/x-www-form-urlencoded' });
      return { status: r.status };
    },
    async clickEphemeral(a) {
      const e = a.ephemeral;
      const actionsBlock = (e.blocks ?? []).find((b) => b['type'] === 'actions') as { block_id: string; elements: Json[] } | undefined;
      const el = actionsBlock?.elements.find((x) => x['type'] === 'button' && x['value'] === a.value);
      if (!actionsBlock || !el) throw new Error(`no button with value ${a.value} on the ephemeral message`);
      const id = randomBytes(6).toString('hex');
      responseUrls.set(id, { channel: e.channel, user: a.user, ephemeral: e });
      const payload = {
        type: 'block_actions',
        user: { id: a.user, username: a.user.toLowerCase(), name: a.user.toLowerCase(), team_id: teamId },
        api_app_id: 'A0APP',
        token: 'legacy',
        container: { type: 'message', message_ts: e.ts, channel_id: e.channel, is_ephemeral: true, ...(e.threadTs ? { thread_ts: e.threadTs } : {}) },
        trigger_id: `trig${++eventSeq}`,
        team: { id: teamId, domain: 'fake' },
        channel: { id: e.channel, name: 'chan' },
        response_url: `http://127.0.0.1:${port}/response/${id}`,
        actions: [{ type: 'button', action_id: el['action_id'], block_id: actionsBlock.block_id, value: a.value, text: el['text'], action_ts: nextTs() }],
      };
      if (fakeState.mode === 'socket') return { status: await envelope('interactive', payload) };
      const r = await fakeState.post(`payload=${encodeURIComponent(JSON.stringify(payload))}`, { contentType: 'application/x-www-form-urlencoded' });
      return { status: r.status };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fakeState;
}
