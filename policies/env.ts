/**
 * Environment sanitizing for child processes (execute_command, and any tool that spawns).
 *
 * Contract:
 * - A NAME is secret (isSecretName, any case) when it
 *   - contains API, KEY, SECRET, TOKEN, PASS (PASSWORD, PASSWD, PGPASSFILE...), CREDENTIAL, AUTH, COOKIE,
 *     SESSION or PRIVATE; or
 *   - contains PWD anywhere except the two shell bookkeeping names PWD and OLDPWD (DB_PWD, MYSQL_PWD); or
 *   - has PAT as a whole `_`-separated word (GITHUB_PAT, GH_PAT, PAT_GITLAB; never PATH, PATCH_LEVEL); or
 *   - starts with SSH_; or belongs to Gatehouse itself (isOwnName).
 * - A VALUE is secret (isSecretValue) when it holds a URL with a password in its userinfo
 *   (`scheme://user:pass@host`: DATABASE_URL, REDIS_URL, http_proxy with credentials), whatever the name.
 * - Gatehouse's own names (isOwnName): GATEHOUSE_*, ANTHROPIC_*, TELEGRAM_*, SLACK_*, DISCORD_*, and
 *   SSH_*. They are NEVER passed on, whatever the allowlist says (config refuses them too; this is the
 *   second line of defence).
 * - An allowlist entry un-hides exactly that name (any other secret name or value), and only when it
 *   EXISTS in `env` with a value: the allowlist never invents a variable.
 * - Names with an `undefined` value are dropped (process.env's type allows them).
 * - Pure: returns a new object, never mutates its input. The patterns are deliberately broad (MONKEY,
 *   COMPASS are hidden too): a missing harmless variable costs an allowlist entry, a leaked key costs a
 *   rotation.
 */

/** Names containing any of these words (any case) are treated as secrets. */
export const SECRET_NAME_PATTERN = /API|KEY|SECRET|TOKEN|PASS|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE/i;

/** PWD inside a name (DB_PWD) is a password; PWD and OLDPWD alone are the shell's working directories. */
const PWD_PATTERN = /PWD/i;
const SHELL_DIRECTORY_NAMES = /^(OLD)?PWD$/i;

/** PAT as its own word: a personal access token (GITHUB_PAT), never PATH or PATCH. */
const PAT_WORD = /(^|_)PAT(_|$)/i;

/** Gatehouse's own variables and the SSH agent: never passed on, not even when allowlisted. */
const OWN_NAME = /^(GATEHOUSE|ANTHROPIC|TELEGRAM|SLACK|DISCORD|SSH)_/i;

/** `scheme://user:password@` anywhere in a value (the password may be empty only after a colon). */
const URL_WITH_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*:[^\s/?#@]*@/i;

/** True when `name` is Gatehouse's own (or the SSH agent's): no allowlist can un-hide it. */
export function isOwnName(name: string): boolean {
  return OWN_NAME.test(name);
}

/** True when `name` would be removed from a child's environment unless allowlisted. */
export function isSecretName(name: string): boolean {
  return (
    SECRET_NAME_PATTERN.test(name) ||
    (PWD_PATTERN.test(name) && !SHELL_DIRECTORY_NAMES.test(name)) ||
    PAT_WORD.test(name) ||
    isOwnName(name)
  );
}

/** True when `value` carries a URL with a password in it. */
export function isSecretValue(value: string): boolean {
  return URL_WITH_PASSWORD.test(value);
}

/**
 * The environment a child process may see: `env` without secret names or values, except allowlisted
 * names that exist in `env` (never Gatehouse's own or SSH_*), and without undefined values.
 */
export function sanitizeEnv(
  env: Record<string, string | undefined>,
  allowlist: readonly string[],
): Record<string, string> {
  const allowed = new Set(allowlist.filter((name) => !isOwnName(name)));
  const kept: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (isOwnName(name)) continue;
    if ((isSecretName(name) || isSecretValue(value)) && !allowed.has(name)) continue;
    kept.push([name, value]);
  }
  // fromEntries defines own properties, so a hostile name like `__proto__` cannot touch the prototype.
  return Object.fromEntries(kept);
}
