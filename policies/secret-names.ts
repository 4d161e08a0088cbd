/**
 * What makes an environment variable secret by its NAME, or by the shape of its VALUE. Pure predicates;
 * policies/env.ts (the scrub) and policies/secrets.ts (the registry of the bot's secret values) use them.
 *
 * Contract:
 * - A NAME is secret (isSecretName, any case) when it
 *   - contains API, KEY, SECRET, TOKEN, PASS (PASSWORD, PASSWD, PGPASSFILE...), CREDENTIAL, AUTH, COOKIE,
 *     SESSION, PRIVATE, DSN (SENTRY_DSN), WEBHOOK (WEBHOOK_URL: the URL is the credential), JWT, BEARER
 *     or HMAC; or
 *   - contains PWD anywhere except the two shell bookkeeping names PWD and OLDPWD (DB_PWD, MYSQL_PWD); or
 *   - has PAT or PW as a whole `_`-separated word, digits allowed after it (GITHUB_PAT, DB_PW, PW2;
 *     never PATH, PATCH_LEVEL, PWA); or
 *   - starts with SSH_; or belongs to Gatehouse itself (isOwnName).
 * - A VALUE is secret (isSecretValue) whatever its name when it holds
 *   - a URL with a password in its userinfo (`scheme://user:pass@host`: DATABASE_URL, REDIS_URL,
 *     http_proxy with credentials) or a key as the user name (`https://<20+ chars>@host`: a Sentry DSN);
 *   - a PEM private key block (`-----BEGIN ... PRIVATE KEY-----`; certificates are public and pass);
 *   - a JWT (`eyJ….eyJ….…`);
 *   - a token of a well-known shape: `sk-…` (Anthropic, OpenAI), Slack `xox?-` / `xapp-`, GitHub
 *     `ghp_` / `github_pat_`, GitLab `glpat-`, npm `npm_`, Hugging Face `hf_`, Stripe `sk_live_`, AWS
 *     access key ids (`AKIA…`), Google API keys (`AIza…`), a Telegram bot token (`<id>:AA…`), a Discord
 *     token, a Slack or Discord webhook URL.
 * - Gatehouse's own names (isOwnName): GATEHOUSE_*, ANTHROPIC_*, TELEGRAM_*, SLACK_*, DISCORD_*, and
 *   SSH_*. They are NEVER passed on, whatever the allowlist says (config refuses them too).
 * - The patterns are deliberately broad (MONKEY, COMPASS are hidden too): a missing harmless variable
 *   costs an allowlist entry, a leaked key costs a rotation.
 */

/** Names containing any of these words (any case) are treated as secrets. */
export const SECRET_NAME_PATTERN = /API|KEY|SECRET|TOKEN|PASS|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|DSN|WEBHOOK|JWT|BEARER|HMAC/i;

/** PWD inside a name (DB_PWD) is a password; PWD and OLDPWD alone are the shell's working directories. */
const PWD_PATTERN = /PWD/i;
const SHELL_DIRECTORY_NAMES = /^(OLD)?PWD$/i;

/** PAT and PW as their own word: a personal access token (GITHUB_PAT), a password (DB_PW); never PATH or PWA. */
const SHORT_WORDS = /(^|_)(PAT|PW)\d*(_|$)/i;

/** Gatehouse's own variables and the SSH agent: never passed on, not even when allowlisted. */
const OWN_NAME = /^(GATEHOUSE|ANTHROPIC|TELEGRAM|SLACK|DISCORD|SSH)_/i;

/**
 * The credentials of a URL, captured: `user:password` (the password may be empty only after a colon),
 * or a user name of 20+ key characters with no password (a Sentry DSN's public key).
 */
export const SECRET_URL_CREDENTIALS = /[a-z][a-z0-9+.-]*:\/\/([^\s/?#@:]*:[^\s/?#@]*|[A-Za-z0-9_-]{20,})@/gi;

const URL_CREDENTIALS_ONE = new RegExp(SECRET_URL_CREDENTIALS.source, 'i');

/** Values that are credentials by their shape. */
const SECRET_VALUE_SHAPES: readonly RegExp[] = [
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----/,
  /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/,
  /\bsk-[A-Za-z0-9_-]{20,}/,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/,
  /\bxapp-\d+-[A-Za-z0-9-]{10,}/,
  /\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/,
  /\bglpat-[A-Za-z0-9_-]{20,}/,
  /\bnpm_[A-Za-z0-9]{30,}/,
  /\bhf_[A-Za-z0-9]{30,}/,
  /\b[sr]k_(live|test)_[A-Za-z0-9]{20,}/,
  /\b(AKIA|ASIA)[0-9A-Z]{16}\b/,
  /\bAIza[0-9A-Za-z_-]{35}/,
  /\b\d{5,}:AA[A-Za-z0-9_-]{30,}/,
  /\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}/,
  /hooks\.slack\.com\/(services|workflows|triggers)\/[A-Za-z0-9/_-]{10,}/i,
  /discord(app)?\.com\/api\/webhooks\/\d+\/[A-Za-z0-9_-]{20,}/i,
];

/** True when `name` is Gatehouse's own (or the SSH agent's): no allowlist can un-hide it. */
export function isOwnName(name: string): boolean {
  return OWN_NAME.test(name);
}

/** True when `name` would be removed from a child's environment unless allowlisted. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME_PATTERN.test(name) || (PWD_PATTERN.test(name) && !SHELL_DIRECTORY_NAMES.test(name)) || SHORT_WORDS.test(name) || isOwnName(name);
}

/** True when `value` carries URL credentials, a private key, a JWT or a token of a known shape. */
export function isSecretValue(value: string): boolean {
  // The URL pattern is costly on long values; most have no `://@` at all.
  return (value.includes('://') && value.includes('@') && URL_CREDENTIALS_ONE.test(value)) || SECRET_VALUE_SHAPES.some((re) => re.test(value));
}
