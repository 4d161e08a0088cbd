/**
 * web_fetch (read-only) and http_request (GET/HEAD read-only, other methods high-risk).
 *
 * Both go through guardedRequest (./request.ts): private, loopback, link-local, CGNAT, metadata and
 * other non-public addresses are refused after DNS resolution and on every redirect unless the
 * agent's `network.allow` lists them, read live from the agent's config at each call.
 *
 * Gatehouse's own credentials never leave: the request carries only what the model wrote (no proxy,
 * token or cookie from the environment), and a request that carries one of the bot's secret values
 * (policies/secrets.ts: its own variables' secrets, the store password, the attach token, every other
 * secret variable the agent's envAllowlist does not show, opts.secrets) is refused before anything is
 * sent: in the URL, a header, the body, or split across them; as written, case-changed, hex, base64,
 * base32, reversed, percent-encoded or escaped (policies/secret-match.ts), and again at each redirect's
 * target. Cards mask credential header values.
 *
 * http_request's propose sets the call's tier (Proposal.tier): GET and HEAD are read-only, every other
 * method is high-risk and its card shows the method, the URL, the headers and the body.
 *
 * A fetched page is untrusted input: web_fetch converts HTML in the document worker
 * (../../untrusted/doc-worker.ts, budget DOC_BUDGETS.html), never on the bot's event loop, and a run
 * over the budget is a ToolError naming it. http_request parses nothing (it shows text as it came).
 */
import { z } from 'zod';
import { collectSecrets, MIN_SECRET_CHARS, requestSecretHit, type OutgoingRequest } from '../../../../policies/secrets.js';
import type { Proposal, Tool, ToolResult } from '../../types.js';
import { DocJobError, runDocJob, type DocBudget } from '../../untrusted/doc-worker.js';
import { ToolError } from '../../types.js';
import type { NetworkConfig } from './config.js';
import { guardedRequest, parseUrl, type GuardedResponse, type Resolver } from './request.js';

export const WEB_FETCH_MAX_BYTES = 5 * 1024 * 1024;
const WEB_FETCH_DEFAULT_CHARS = 50_000;
const WEB_FETCH_MAX_CHARS = 200_000;
const HTTP_REQUEST_MAX_BYTES = 1024 * 1024;
const HTTP_REQUEST_SHOWN_CHARS = 50_000;
const WEB_DEFAULT_TIMEOUT_S = 30;
const WEB_MAX_TIMEOUT_S = 120;
/** How much of a request body the approval card shows. */
const CARD_BODY_CHARS = 3000;

export interface WebToolOptions {
  /** The agent's live `network` settings (read at every call). */
  network?: () => NetworkConfig | undefined;
  /** Values that must never be sent, besides Gatehouse's own secret variables in process.env. */
  secrets?: () => readonly string[];
  /** For tests: a DNS resolver other than the system's. */
  resolve?: Resolver;
  /** For tests: a budget for converting a page other than DOC_BUDGETS.html. */
  htmlBudget?: Partial<DocBudget>;
}

/**
 * The credentials in resolved settings (the model key, platform tokens and signing secrets): every
 * string under a key named like a token, key, secret or password, at any depth.
 */
export function settingsSecretValues(settings: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown, key: string): void => {
    if (typeof v === 'string') {
      if (/token|secret|key|pass/i.test(key) && v.length >= MIN_SECRET_CHARS) out.push(v);
    } else if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) walk(child, k);
    }
  };
  walk(settings, '');
  return out;
}

/**
 * Refuses a request that carries one of the bot's secrets (policies/secrets.ts: its own, the other
 * secret variables not in the agent's envAllowlist, opts.secrets), as written, encoded or in pieces.
 */
function refuseSecrets(opts: WebToolOptions, envAllowlist: readonly string[], parts: OutgoingRequest): void {
  const sets = collectSecrets(process.env, envAllowlist);
  const hit = requestSecretHit([...sets.own, ...sets.other, ...(opts.secrets?.() ?? [])], parts);
  if (hit) throw new ToolError(`${hit.where} contains one of Gatehouse's own credentials; it is never sent anywhere. Nothing was sent.`);
}

const timeoutField = z
  .number()
  .int()
  .min(1)
  .max(WEB_MAX_TIMEOUT_S)
  .optional()
  .describe(`Seconds to wait for the whole exchange, redirects included (default ${WEB_DEFAULT_TIMEOUT_S}, max ${WEB_MAX_TIMEOUT_S}).`);

function truncatedLine(what: string, hint: string): string {
  return `[truncated: true; ${what}; ${hint}]`;
}

function headerOf(res: GuardedResponse, name: string): string {
  return res.headers.find(([k]) => k.toLowerCase() === name)?.[1] ?? '';
}

const TEXTUAL = /^(text\/|application\/([\w.+-]*\+)?(json|xml|javascript|ecmascript|x-www-form-urlencoded|yaml|x-yaml|toml|csv))/i;

function isHtml(type: string, body: Buffer): boolean {
  if (/^(text\/html|application\/xhtml\+xml)/i.test(type)) return true;
  return type === '' && /^\s*(<!doctype html|<html)/i.test(body.subarray(0, 512).toString('utf8'));
}

function isText(type: string, body: Buffer): boolean {
  return TEXTUAL.test(type) || (type === '' && !body.subarray(0, 8000).includes(0));
}

/**
 * HTML to readable markdown: scripts, styles, navigation, forms and other page chrome dropped; the
 * first <main> (else <article>, else the body) converted. The page is parsed by a real HTML parser
 * (domino, turndown's own) in the document worker (../../untrusted/doc-worker.ts), never on the
 * bot's event loop, within a time and memory budget; its end is a ToolError naming the budget.
 */
async function htmlToMarkdown(
  html: string,
  opts: { signal?: AbortSignal; budget?: Partial<DocBudget> } = {},
): Promise<{ title: string | undefined; markdown: string }> {
  const r = await runDocJob<{ title: string; markdown: string }>(
    'html',
    { html },
    {
      what: 'converting the page',
      signal: opts.signal ?? new AbortController().signal,
      ...(opts.budget ? { budget: opts.budget } : {}),
    },
  ).catch((err: unknown) => {
    if (err instanceof DocJobError) throw new ToolError(`the page could not be converted (${err.message}).`);
    throw err;
  });
  return { title: r.title || undefined, markdown: r.markdown };
}

// ---------------------------------------------------------------------------------------------
// web_fetch

export const WebFetchInput = z.strictObject({
  url: z.string().min(1).describe('The http:// or https:// URL to fetch.'),
  offset: z.number().int().min(0).optional().describe('Character offset to start at, to read on after a truncated fetch (default 0).'),
  maxChars: z
    .number()
    .int()
    .min(100)
    .max(WEB_FETCH_MAX_CHARS)
    .optional()
    .describe(`Characters of text to return (default ${WEB_FETCH_DEFAULT_CHARS}, max ${WEB_FETCH_MAX_CHARS}).`),
  timeoutSeconds: timeoutField,
});
export type WebFetchInput = z.infer<typeof WebFetchInput>;

export function webFetchTool(opts: WebToolOptions = {}): Tool<WebFetchInput> {
  return {
    name: 'web_fetch',
    description:
      'Fetch a web page (GET) and return it as readable markdown (HTML converted; scripts, navigation and styling ' +
      'dropped) or as text for text and JSON. Reports the final URL after redirects. Private and internal addresses ' +
      `are refused. At most ${WEB_FETCH_MAX_BYTES / 1024 / 1024} MB are downloaded; when the text is cut, the last line ` +
      'says which offset to pass to read on.',
    input: WebFetchInput,
    tier: 'read-only',
    timeoutMs: (WEB_MAX_TIMEOUT_S + 10) * 1000,
    async execute(input, ctx) {
      const url = parseUrl(input.url).href;
      refuseSecrets(opts, ctx.envAllowlist, { url });
      const res = await guardedRequest({
        onRedirect: (next) => refuseSecrets(opts, ctx.envAllowlist, { url: next }),
        url,
        method: 'GET',
        headers: { accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5' },
        followRedirects: true,
        maxBytes: WEB_FETCH_MAX_BYTES,
        timeoutMs: (input.timeoutSeconds ?? WEB_DEFAULT_TIMEOUT_S) * 1000,
        allow: opts.network?.()?.allow ?? [],
        signal: ctx.signal,
        ...(opts.resolve ? { resolve: opts.resolve } : {}),
      });
      const type = headerOf(res, 'content-type').split(';')[0]!.trim().toLowerCase();
      const head = [`URL: ${res.finalUrl}`, `Status: ${res.status} ${res.statusText}`.trim()];
      if (res.redirects.length) head.push(`Redirected from: ${res.redirects.join(' -> ')}`);
      if (type) head.push(`Content-Type: ${type}`);
      let body: string;
      if (isHtml(type, res.body)) {
        const page = await htmlToMarkdown(res.body.toString('utf8'), { signal: ctx.signal, ...(opts.htmlBudget ? { budget: opts.htmlBudget } : {}) });
        if (page.title) head.push(`Title: ${page.title}`);
        body = page.markdown;
      } else if (isText(type, res.body)) {
        body = res.body.toString('utf8');
      } else {
        head.push('', `(${type || 'binary'} content of ${res.body.length}${res.truncated ? '+' : ''} bytes; not shown as text)`);
        return { content: head.join('\n') };
      }
      const offset = input.offset ?? 0;
      const max = input.maxChars ?? WEB_FETCH_DEFAULT_CHARS;
      if (offset > 0 && offset >= body.length) throw new ToolError(`offset ${offset} is past the end of the text (${body.length} characters).`);
      const shown = body.slice(offset, offset + max);
      const lines = [...head, '', shown === '' ? '(empty)' : shown];
      if (offset + max < body.length) {
        lines.push(
          truncatedLine(
            `showing characters ${offset}-${offset + shown.length} of ${body.length}`,
            `call web_fetch with offset=${offset + shown.length} to read on`,
          ),
        );
      } else if (res.truncated) {
        lines.push(
          truncatedLine(
            `the page is larger than ${WEB_FETCH_MAX_BYTES / 1024 / 1024} MB and only its start was read`,
            'the rest cannot be fetched with web_fetch',
          ),
        );
      }
      return { content: lines.join('\n') };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// http_request

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

export const HttpRequestInput = z.strictObject({
  method: z.enum(HTTP_METHODS).describe('HTTP method. GET and HEAD are read-only; the others change things and need approval.'),
  url: z.string().min(1).describe('The http:// or https:// URL.'),
  headers: z.record(z.string(), z.string()).optional().describe('Request headers, e.g. {"content-type": "application/json"}.'),
  body: z.string().optional().describe('Request body (not for GET or HEAD).'),
  timeoutSeconds: timeoutField,
});
export type HttpRequestInput = z.infer<typeof HttpRequestInput>;

const MASKED = /^(authorization|proxy-authorization|cookie|x-api-key|api-key|x-auth-token)$|token|secret|key/i;

function cardOf(input: HttpRequestInput, url: string): Proposal {
  const tier = READ_METHODS.has(input.method) ? 'read-only' : 'high-risk';
  const size = input.body === undefined ? '' : ` (body ${Buffer.byteLength(input.body)} bytes)`;
  const lines = [`${input.method} ${url}`];
  for (const [k, v] of Object.entries(input.headers ?? {})) lines.push(`${k}: ${MASKED.test(k) ? `(hidden, ${v.length} characters)` : v}`);
  if (input.body !== undefined) {
    const cut = input.body.length > CARD_BODY_CHARS;
    lines.push('', cut ? `${input.body.slice(0, CARD_BODY_CHARS)}\n[body cut at ${CARD_BODY_CHARS} of ${input.body.length} characters]` : input.body);
  }
  return { summary: `http_request ${input.method} ${url}${size}`, preview: lines.join('\n'), tier };
}

export function httpRequestTool(opts: WebToolOptions = {}): Tool<HttpRequestInput> {
  return {
    name: 'http_request',
    description:
      'Send one HTTP request and return the status, response headers and body (text shown, binary summarized). GET ' +
      'and HEAD follow redirects and run without approval where reads do; other methods need approval, show method, ' +
      'URL, headers and body on the card, and do not follow redirects. Private and internal addresses are refused.',
    input: HttpRequestInput,
    tier: 'high-risk', // the highest it can be; propose rates each call (GET/HEAD: read-only)
    timeoutMs: (WEB_MAX_TIMEOUT_S + 10) * 1000,
    async propose(input, ctx) {
      const url = parseUrl(input.url).href;
      if (input.body !== undefined && READ_METHODS.has(input.method))
        throw new ToolError(`${input.method} requests carry no body; use POST, PUT or PATCH to send one.`);
      refuseSecrets(opts, ctx.envAllowlist, {
        url,
        ...(input.headers ? { headers: input.headers } : {}),
        ...(input.body !== undefined ? { body: input.body } : {}),
      });
      return cardOf(input, url);
    },
    async execute(input, ctx): Promise<ToolResult> {
      const url = parseUrl(input.url).href;
      const headers = input.headers;
      refuseSecrets(opts, ctx.envAllowlist, { url, ...(headers ? { headers } : {}), ...(input.body !== undefined ? { body: input.body } : {}) });
      const res = await guardedRequest({
        onRedirect: (next) => refuseSecrets(opts, ctx.envAllowlist, { url: next, ...(headers ? { headers } : {}) }),
        url,
        method: input.method,
        ...(input.headers ? { headers: input.headers } : {}),
        ...(input.body !== undefined && !READ_METHODS.has(input.method) ? { body: input.body } : {}),
        followRedirects: READ_METHODS.has(input.method),
        maxBytes: HTTP_REQUEST_MAX_BYTES,
        timeoutMs: (input.timeoutSeconds ?? WEB_DEFAULT_TIMEOUT_S) * 1000,
        allow: opts.network?.()?.allow ?? [],
        signal: ctx.signal,
        ...(opts.resolve ? { resolve: opts.resolve } : {}),
      });
      const lines = [`HTTP ${res.status} ${res.statusText}`.trim(), `URL: ${res.finalUrl}`];
      if (res.redirects.length) lines.push(`Redirected from: ${res.redirects.join(' -> ')}`);
      for (const [k, v] of res.headers) lines.push(`${k}: ${v}`);
      lines.push('');
      const type = headerOf(res, 'content-type');
      if (input.method === 'HEAD' || res.body.length === 0) lines.push('(no body)');
      else if (isText(type.split(';')[0]!.trim(), res.body)) {
        const text = res.body.toString('utf8');
        lines.push(text.slice(0, HTTP_REQUEST_SHOWN_CHARS));
        if (text.length > HTTP_REQUEST_SHOWN_CHARS || res.truncated) {
          lines.push(
            truncatedLine(
              `showing ${Math.min(text.length, HTTP_REQUEST_SHOWN_CHARS)} characters of a ${res.truncated ? `body over ${HTTP_REQUEST_MAX_BYTES / 1024 / 1024} MB` : `${text.length}-character body`}`,
              'use web_fetch with offset to page through a long text',
            ),
          );
        }
      } else lines.push(`(${type || 'binary'} body of ${res.body.length}${res.truncated ? '+' : ''} bytes; not shown)`);
      return { content: lines.join('\n') };
    },
  };
}
