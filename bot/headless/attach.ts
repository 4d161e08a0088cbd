/**
 * The local attach endpoint: how `gatehouse run` reaches a running service instead of loading the
 * agent itself (a message then costs milliseconds, not a process start-up).
 *
 * Contract:
 * - The service listens on a UNIX SOCKET, `gatehouse.sock` in its data folder (next to the pid file and
 *   the SQLite store), created owner-only (0600), never on TCP. Why a socket and not 127.0.0.1:PORT:
 *   it cannot be reached from the network whatever GATEHOUSE_HTTP_HOST says (the webhook server may
 *   bind 0.0.0.0), the file mode keeps other local users out before any byte is read, and there is no
 *   port to choose or collide with. A path longer than the OS limit (~107 bytes) disables attach with
 *   a warning; `gatehouse run` then runs in-process.
 * - Every request carries `Authorization: Bearer <token>`; the token is 32 random bytes written at each
 *   start to `gatehouse.token` (0600, in the same folder), so only the service's user can read it. It is
 *   compared in constant time (SHA-256 of both, timingSafeEqual). Missing or wrong: 401, nothing runs.
 *   It is registered as one of the bot's own secrets (policies/secrets.ts registerOwnSecret) while the
 *   server runs.
 * - POST /run, body HeadlessRequest (JSON, at most 1 MB): 200 with NDJSON: first a ServiceInfo line
 *   `{"type":"service","configFile","configSha256"}` (the config file it runs on, as loaded), then one
 *   HeadlessMessage a line, then `{"type":"result","result":{...}}`. A usage problem: 400 `{"error": "..."}`. The caller
 *   closing the connection stops its run.
 * - POST /respond, body HeadlessResponse: 200 `{"accepted": bool, "notice"?: string}`.
 * - Extra POST routes given at start (`routes`, e.g. `/decide` for `gatehouse approvals decide`):
 *   the JSON body in, 200 with the handler's JSON out; `attachCall` is their client.
 * - `findService(dir)` returns the socket and token when both exist and are readable; `attachRun`
 *   throws AttachUnavailable when nothing listens there (stale files after a crash), so the caller
 *   falls back to running in-process.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, rmSync, chmodSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { HeadlessMessage, HeadlessRequest, HeadlessResponse, HeadlessResult, ServiceInfo } from './protocol.js';
import { HeadlessUsageError } from './wire.js';
import type { HeadlessRuns } from './runs.js';
import { registerOwnSecret } from '../../policies/secrets.js';
import type { Log } from '../../agent/log.js';
import { messageOf } from '../../agent/log.js';

const SOCKET_FILE = 'gatehouse.sock';
const TOKEN_FILE = 'gatehouse.token';
const MAX_BODY = 1024 * 1024;
const MAX_SOCKET_PATH = 107;

export interface AttachServer {
  socket: string;
  close(): Promise<void>;
}

function sameToken(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new Error('request body over 1 MB');
    chunks.push(c as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** An extra route of the attach socket: the parsed JSON body in, a JSON answer out. */
export type AttachRoute = (body: unknown) => Promise<unknown>;

export async function startAttachServer(opts: {
  dir: string;
  runs: HeadlessRuns;
  log: Log;
  routes?: Record<string, AttachRoute>;
}): Promise<AttachServer | undefined> {
  const socket = join(opts.dir, SOCKET_FILE);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
    opts.log('warn', `gatehouse run cannot attach to this service: the socket path ${socket} is too long for the OS; runs will load the agent themselves`);
    return undefined;
  }
  const token = randomBytes(32).toString('hex');
  // One of the bot's own secrets: never in a command's environment, never sent by a web tool.
  const forgetToken = registerOwnSecret(token);
  const tokenFile = join(opts.dir, TOKEN_FILE);
  // Removed first: writeFileSync keeps the mode of a file that already exists.
  rmSync(tokenFile, { force: true });
  writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  chmodSync(tokenFile, 0o600);

  const server: Server = createServer((req, res) => {
    const auth = req.headers.authorization ?? '';
    const given = auth.startsWith('Bearer ') ? auth.slice('Bearer '.length).trim() : '';
    if (!given || !sameToken(given, token)) return json(res, 401, { error: 'missing or wrong token (see gatehouse.token in the data folder)' });
    if (req.method !== 'POST') return json(res, 405, { error: 'POST only' });
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) json(res, 400, { error: messageOf(err) });
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/respond') {
      // Imported here: the client half of this module (an attached `gatehouse run`) never loads zod.
      const { HeadlessResponse: ResponseSchema } = await import('./protocol.js');
      const parsed = ResponseSchema.safeParse(await readBody(req));
      if (!parsed.success) return json(res, 400, { error: parsed.error.issues.map((i) => i.message).join('; ') });
      return json(res, 200, await opts.runs.respond(parsed.data));
    }
    const extra = path !== undefined && Object.hasOwn(opts.routes ?? {}, path) ? opts.routes![path] : undefined;
    if (extra) return json(res, 200, await extra(await readBody(req)));
    if (path !== '/run') return json(res, 404, { error: 'not found' });
    const body = (await readBody(req)) as HeadlessRequest;
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const lines: HeadlessMessage[] = [];
    let started = false;
    const send = (m: HeadlessMessage) => {
      if (!started) lines.push(m);
      else res.write(JSON.stringify(m) + '\n');
    };
    let result: HeadlessResult;
    const running = opts.runs.run(body, send, gone.signal);
    // Usage errors are thrown before anything runs: give them a 400 rather than a stream.
    await Promise.race([
      running.then(
        () => undefined,
        () => undefined,
      ),
      new Promise((r) => setImmediate(r)),
    ]);
    try {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(JSON.stringify(opts.runs.serviceInfo()) + '\n');
      started = true;
      for (const m of lines) res.write(JSON.stringify(m) + '\n');
      result = await running;
    } catch (err) {
      if (err instanceof HeadlessUsageError) {
        res.end(JSON.stringify({ type: 'usage_error', error: err.message }) + '\n');
        return;
      }
      throw err;
    }
    res.end(JSON.stringify({ type: 'result', result }) + '\n');
  }

  rmSync(socket, { force: true }); // a stale socket from a crash
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // The socket is bound inside listen(): with this umask it is 0600 from its first moment (a
    // chmod afterwards left a window in which it existed with the default mode).
    const umask = process.umask(0o177);
    try {
      server.listen(socket, () => resolve());
    } finally {
      process.umask(umask);
    }
  });
  chmodSync(socket, 0o600);
  return {
    socket,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          rmSync(tokenFile, { force: true });
          forgetToken();
          resolve();
        });
      }),
  };
}

export class AttachUnavailable extends Error {}

export interface ServiceAddress {
  socket: string;
  token: string;
}

/**
 * The running service's socket and token, when its socket is there. The token is '' when this user
 * cannot read it: attachRun then says so (a 401) rather than running beside the service on its store.
 */
export function findService(dir: string): ServiceAddress | undefined {
  const socket = join(dir, SOCKET_FILE);
  if (!existsSync(socket)) return undefined;
  try {
    return { socket, token: readFileSync(join(dir, TOKEN_FILE), 'utf8').trim() };
  } catch {
    return { socket, token: '' };
  }
}

function post(addr: ServiceAddress, path: string, body: unknown): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath: addr.socket, path, method: 'POST', headers: { authorization: `Bearer ${addr.token}`, 'content-type': 'application/json' } },
      resolve,
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? new AttachUnavailable(`no service listens on ${addr.socket}`) : err),
    );
    req.end(JSON.stringify(body));
  });
}

/**
 * Runs a message through the service. `onMessage` gets each event, `onService` what the service says
 * about itself (before any event); `respond` answers a request.
 * Throws AttachUnavailable (nothing listens: run in-process), HeadlessUsageError (400 / usage), or an
 * Error for anything else (a 401 included).
 */
export async function attachRun(
  addr: ServiceAddress,
  body: HeadlessRequest,
  onMessage: (m: HeadlessMessage) => void,
  onService?: (info: ServiceInfo) => void,
): Promise<HeadlessResult> {
  const res = await post(addr, '/run', body);
  if (res.statusCode !== 200) {
    let text = '';
    for await (const c of res) text += (c as Buffer).toString();
    const error = (() => {
      try {
        return (JSON.parse(text) as { error?: string }).error ?? text;
      } catch {
        return text;
      }
    })();
    if (res.statusCode === 400) throw new HeadlessUsageError(error);
    if (res.statusCode === 401 && addr.token === '') {
      throw new HeadlessUsageError(
        `a Gatehouse service runs here (${addr.socket}) but its token file is not readable by this user: run gatehouse run as the service's user`,
      );
    }
    throw new Error(`the running service refused the run (HTTP ${res.statusCode}): ${error}`);
  }
  let buffer = '';
  let result: HeadlessResult | undefined;
  for await (const chunk of res) {
    buffer += (chunk as Buffer).toString('utf8');
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (!line.trim()) continue;
      const m = JSON.parse(line) as HeadlessMessage | ServiceInfo | { type: 'result'; result: HeadlessResult } | { type: 'usage_error'; error: string };
      if (m.type === 'result') result = m.result;
      else if (m.type === 'service') onService?.(m);
      else if (m.type === 'usage_error') throw new HeadlessUsageError(m.error);
      else onMessage(m);
    }
  }
  if (!result) throw new Error('the running service closed the connection before the run finished (was it stopped?)');
  return result;
}

export async function attachRespond(addr: ServiceAddress, r: HeadlessResponse): Promise<{ accepted: boolean; notice?: string }> {
  const res = await post(addr, '/respond', r);
  let text = '';
  for await (const c of res) text += (c as Buffer).toString();
  try {
    const body = JSON.parse(text) as { accepted?: boolean; notice?: string; error?: string };
    if (res.statusCode !== 200) return { accepted: false, notice: body.error ?? `HTTP ${res.statusCode}` };
    return { accepted: body.accepted === true, ...(body.notice ? { notice: body.notice } : {}) };
  } catch {
    return { accepted: false, notice: `HTTP ${res.statusCode}` };
  }
}

/** POSTs `body` to an extra route of the service's socket: its HTTP status and parsed JSON answer. */
export async function attachCall(addr: ServiceAddress, path: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await post(addr, path, body);
  let text = '';
  for await (const c of res) text += (c as Buffer).toString();
  try {
    return { status: res.statusCode ?? 0, body: JSON.parse(text) as unknown };
  } catch {
    return { status: res.statusCode ?? 0, body: text };
  }
}
