/**
 * The bot's secret values: one registry, used by the environment scrub (policies/env.ts) and by the
 * outgoing-request check of the web tools.
 *
 * Contract:
 * - OWN secrets (never handed to a command, never sent by a web tool, whatever any allowlist says):
 *   - the values of Gatehouse's own variables whose name is secret (ANTHROPIC_API_KEY,
 *     TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET, SLACK_BOT_TOKEN / APP_TOKEN / SIGNING_SECRET,
 *     DISCORD_TOKEN, any GATEHOUSE_*TOKEN / *SECRET / *PASSWORD...; policies/env.ts isOwnName);
 *   - the password (and the whole user:password) inside any of Gatehouse's own URL values
 *     (GATEHOUSE_STORE=postgres://u:pw@host/db);
 *   - values registered at run time with registerOwnSecret (the attach token of bot/headless/attach.ts).
 * - OTHER secrets: the values of every other variable that is secret by name (GITHUB_TOKEN, SSH_*,
 *   DB_PW...) and the passwords in any URL value (DATABASE_URL), except those of allowlisted names (the
 *   operator chose to show them) and values that only point at a secret (a file path, a socket).
 * - Neither set holds a plain URL under a name whose only secret word is API (SLACK_API_URL,
 *   DISCORD_API_URL, API_BASE=https://api.example): an address, and the web tools must reach it.
 * - Values shorter than MIN_SECRET_CHARS are left out (they would match ordinary text).
 * - `requestSecretHit` looks at an outgoing HTTP request as a whole: the URL, every header (name and
 *   value), the body, and the concatenations of the request's values (path segments, query values,
 *   header values, form or JSON values) and of its keys, so a secret split across parameters is found.
 */
import { isOwnName, isSecretName, isSecretValue, SECRET_URL_CREDENTIALS } from './secret-names.js';
import { matcherFor, MIN_SECRET_CHARS, type SecretHit, type SecretMatcher } from './secret-match.js';

export { MIN_SECRET_CHARS } from './secret-match.js';

const registered = new Map<string, number>();

/** Registers a secret the bot holds outside its environment; returns the function that forgets it. */
export function registerOwnSecret(value: string): () => void {
  registered.set(value, (registered.get(value) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const n = (registered.get(value) ?? 1) - 1;
    if (n <= 0) registered.delete(value);
    else registered.set(value, n);
  };
}

/** The secrets registered with registerOwnSecret, now. */
export function registeredOwnSecrets(): string[] {
  return [...registered.keys()];
}

/** A value that names where a secret is (a path, a socket) rather than being one. */
const POINTER = /^(\/|~\/|\.\.?\/|unix:|[A-Za-z]:\\)[^\s]*$/;

/** A plain URL (no credentials in it) under a name that says only API (SLACK_API_URL): an address, not a secret. */
const ADDRESS = /^[a-z][a-z0-9+.-]*:\/\/[^\s@]+$/i;
const SECRET_WORD_BESIDES_API = /KEY|SECRET|TOKEN|PASS|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|DSN|WEBHOOK|JWT|BEARER|HMAC/i;

function isAddress(name: string, value: string): boolean {
  return ADDRESS.test(value) && !SECRET_WORD_BESIDES_API.test(name) && !isSecretValue(value);
}

/** `user:password` and the password of every URL with credentials in `value`. */
function urlCredentials(value: string): string[] {
  const out: string[] = [];
  if (!value.includes('://') || !value.includes('@')) return out;
  for (const m of value.matchAll(SECRET_URL_CREDENTIALS)) {
    const userinfo = m[1]!;
    out.push(userinfo);
    const colon = userinfo.indexOf(':');
    if (colon >= 0) out.push(userinfo.slice(colon + 1));
    else out.push(userinfo); // a key as the user name (a Sentry DSN)
  }
  return out;
}

function isSsh(name: string): boolean {
  return /^SSH_/i.test(name);
}

export interface SecretSets {
  own: string[];
  other: string[];
}

/** The bot's secret values in `env`, plus the registered ones, split as the contract says. */
export function collectSecrets(
  env: Record<string, string | undefined>,
  allowlist: readonly string[] = [],
  extraOwn: readonly string[] = registeredOwnSecrets(),
): SecretSets {
  const allowed = new Set(allowlist.filter((n) => !isOwnName(n)));
  const own = new Set<string>(extraOwn);
  const other = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (!value) continue;
    if (isOwnName(name) && !isSsh(name)) {
      if ((isSecretName(name) && !isAddress(name, value)) || isSecretValue(value)) own.add(value);
      for (const c of urlCredentials(value)) own.add(c);
      continue;
    }
    if (allowed.has(name)) continue;
    if ((isSecretName(name) && !POINTER.test(value) && !isAddress(name, value)) || isSecretValue(value)) other.add(value);
    for (const c of urlCredentials(value)) other.add(c);
  }
  const long = (s: Set<string>) => [...s].filter((v) => v.length >= MIN_SECRET_CHARS);
  return { own: long(own), other: long(other).filter((v) => !own.has(v)) };
}

export interface OutgoingRequest {
  url: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface RequestSecretHit extends SecretHit {
  /** 'the URL', 'the x header', 'the body', or 'the request's values taken together'. */
  where: string;
}

/** Values and keys of a body, when it is a form or JSON; else the body as one value. */
function bodyParts(body: string): { values: string[]; keys: string[] } {
  const t = body.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      const values: string[] = [];
      const keys: string[] = [];
      const walk = (v: unknown): void => {
        if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') values.push(String(v));
        else if (Array.isArray(v)) v.forEach(walk);
        else if (v && typeof v === 'object') {
          for (const [k, child] of Object.entries(v)) {
            keys.push(k);
            walk(child);
          }
        }
      };
      walk(JSON.parse(t) as unknown);
      return { values, keys };
    } catch {
      // not JSON: fall through
    }
  }
  if (/^[^\s=&]*=/.test(t) && !/\s/.test(t)) {
    const p = new URLSearchParams(t);
    return { values: [...p.values()], keys: [...p.keys()] };
  }
  // A plain body is one run of text: the whole-request concatenation already scans it, so only its
  // start is needed here, to join a secret split between the last header and the body.
  return { values: [body.slice(0, 256)], keys: [] };
}

function urlParts(text: string): { values: string[]; keys: string[] } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { values: [text], keys: [] };
  }
  const values = [url.hostname, ...url.pathname.split('/'), ...url.searchParams.values(), url.hash];
  return { values, keys: [...url.searchParams.keys()] };
}

/**
 * Where, if anywhere, a request carries one of `secrets` (in any encoding the matcher knows, or in
 * 12-character pieces). The common case, no secret, costs one pass over each concatenation.
 */
export function requestSecretHit(secrets: readonly string[], req: OutgoingRequest): RequestSecretHit | undefined {
  const m: SecretMatcher = matcherFor(secrets, { chunks: true });
  if (m.size === 0) return undefined;
  const headers = Object.entries(req.headers ?? {});
  const places: Array<[string, string]> = [['the URL', req.url], ...headers.map(([k, v]): [string, string] => [`the ${k} header`, `${k}: ${v}`])];
  if (req.body !== undefined) places.push(['the body', req.body]);
  const u = urlParts(req.url);
  const b = req.body === undefined ? { values: [], keys: [] } : bodyParts(req.body);
  const wholes: string[] = [
    places.map(([, v]) => v).join('\n'),
    [...u.values, ...headers.map(([, v]) => v), ...b.values].join(''),
    [...u.keys, ...headers.map(([k]) => k), ...b.keys].join(''),
  ];
  if (!wholes.some((w) => m.find(w))) return undefined;
  for (const [where, v] of places) {
    const hit = m.find(v);
    if (hit) return { where, ...hit };
  }
  for (const w of wholes) {
    const hit = m.find(w);
    if (hit) return { where: "the request's values taken together", ...hit };
  }
  return undefined;
}
