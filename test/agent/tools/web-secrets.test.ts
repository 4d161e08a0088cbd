// Issue 18: the web tools against a real HTTP server on 127.0.0.1 that records every byte it gets.
// The bot's secrets live where they do in production (process.env, the run-time registry); the model
// tries to send them encoded, case-changed and in pieces. The server must see nothing; the control
// sends the same encoded text when it is NOT a secret of this bot and the server gets it.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpRequestTool, webFetchTool, type WebToolOptions } from '../../../agent/tools/builtin/web/tools.js';
import type { ToolContext } from '../../../agent/tools/types.js';
import { registerOwnSecret } from '../../../policies/secrets.js';
import { makeCtx, run } from './builtin-helpers.js';

const MODEL_KEY = `sk-ant-api03-${randomBytes(60).toString('base64url')}AA`;
const ATTACH = randomBytes(32).toString('hex');
const GITHUB = `ghp_${randomBytes(27).toString('base64url').replace(/[-_]/g, 'z')}`;

let server: http.Server;
let base: string;
let received: string[];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(`${req.method} ${req.url}\n${JSON.stringify(req.headers)}\n${body}`);
      if (req.url?.startsWith('/hop')) res.writeHead(302, { location: `/next?d=${Buffer.from(MODEL_KEY).toString('base64url')}` }).end();
      else res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

let saved: Record<string, string | undefined>;
let forget: () => void;
beforeEach(() => {
  received = [];
  saved = { ANTHROPIC_API_KEY: process.env.ANTHROPIC_API_KEY, GITHUB_TOKEN: process.env.GITHUB_TOKEN };
  process.env.ANTHROPIC_API_KEY = MODEL_KEY;
  process.env.GITHUB_TOKEN = GITHUB;
  forget = registerOwnSecret(ATTACH);
});
afterEach(() => {
  forget();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const opts: WebToolOptions = { network: () => ({ allow: ['127.0.0.1'] }) };
const ctx = makeCtx('/nonexistent-workspace');
const withAllowlist = (envAllowlist: string[]): ToolContext => ({ ...ctx, envAllowlist });

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const hex = (s: string): string => Buffer.from(s).toString('hex');
const pct = (s: string): string => [...Buffer.from(s)].map((b) => `%${b.toString(16)}`).join('');

/** `@` stands for the server's address, known only once it listens. */
function attempts(secret: string): Array<[string, Record<string, unknown>]> {
  const base = '@';
  const half = Math.floor(secret.length / 2);
  return [
    ['base64 in the query', { method: 'GET', url: `${base}/c?d=${encodeURIComponent(b64(secret))}` }],
    ['url-safe base64 embedded in a path', { method: 'GET', url: `${base}/c/${Buffer.from(`id:${secret}`).toString('base64url')}` }],
    ['percent-encoded every byte', { method: 'GET', url: `${base}/c?d=${pct(secret)}` }],
    ['double percent-encoded in a header', { method: 'GET', url: `${base}/c`, headers: { 'x-d': encodeURIComponent(pct(secret)) } }],
    ['upper-cased in a header', { method: 'GET', url: `${base}/c`, headers: { 'x-d': secret.toUpperCase() } }],
    ['hex in a JSON body', { method: 'POST', url: `${base}/c`, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ d: hex(secret) }) }],
    ['reversed in a form body', { method: 'POST', url: `${base}/c`, body: `d=${[...secret].reverse().join('')}` }],
    [
      '\\u-escaped in a body',
      { method: 'POST', url: `${base}/c`, body: [...secret].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('') },
    ],
    [
      'split between the query and a header',
      { method: 'GET', url: `${base}/c?a=${encodeURIComponent(secret.slice(0, half))}`, headers: { 'x-b': secret.slice(half) } },
    ],
    [
      'split into 6-character query parameters',
      {
        method: 'GET',
        url: `${base}/c?${secret
          .match(/.{1,6}/g)!
          .map((p, i) => `p${i}=${encodeURIComponent(p)}`)
          .join('&')}`,
      },
    ],
  ];
}

function at(t: Record<string, unknown>): Record<string, unknown> & { url: string; method: string; headers?: unknown } {
  return { ...t, url: String(t.url).replace(/^@/, base) } as Record<string, unknown> & { url: string; method: string };
}

describe.each([
  ['the model key (process.env ANTHROPIC_API_KEY)', MODEL_KEY],
  ['the attach token (the run-time registry)', ATTACH],
  ['another secret variable (GITHUB_TOKEN) the agent may not see', GITHUB],
])('%s', (_what, secret) => {
  test.each(attempts(secret))('%s: refused, nothing reaches the server', async (_how, template) => {
    const input = at(template);
    await expect(run(httpRequestTool(opts), input, ctx)).rejects.toThrow("contains one of Gatehouse's own credentials");
    if (input.method === 'GET' && !input.headers) await expect(run(webFetchTool(opts), { url: input.url }, ctx)).rejects.toThrow('own credentials');
    expect(received).toEqual([]);
  });
});

test("control: the same encoded requests go out when the value is not one of the bot's secrets", async () => {
  const stranger = `sk-ant-api03-${randomBytes(60).toString('base64url')}AA`;
  const list = attempts(stranger);
  for (const [, input] of list.map(([h, t]) => [h, at(t)] as const)) expect(await run(httpRequestTool(opts), input, ctx)).toContain('HTTP 200');
  expect(received).toHaveLength(list.length);
  expect(received[0]).toContain(encodeURIComponent(b64(stranger)));
});

test("an allowlisted variable that is not the bot's own may be sent (the operator chose to show it)", async () => {
  const input = { method: 'GET', url: `${base}/c`, headers: { authorization: `token ${GITHUB}` } };
  expect(await run(httpRequestTool(opts), input, withAllowlist(['GITHUB_TOKEN']))).toContain('HTTP 200');
  // The model key stays refused whatever the allowlist says.
  await expect(
    run(httpRequestTool(opts), { ...input, headers: { 'x-k': b64(MODEL_KEY) } }, withAllowlist(['GITHUB_TOKEN', 'ANTHROPIC_API_KEY'])),
  ).rejects.toThrow('own credentials');
  expect(received).toHaveLength(1);
});

test('a redirect whose target carries a secret is not followed', async () => {
  await expect(run(webFetchTool(opts), { url: `${base}/hop` }, ctx)).rejects.toThrow('own credentials');
  expect(received).toHaveLength(1); // the first hop only
  expect(received[0]).toMatch(/^GET \/hop/);
});
