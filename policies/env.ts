/**
 * Environment sanitizing for child processes (execute_command, and any tool that spawns).
 *
 * Contract:
 * - A name is secret when it matches SECRET_NAME_PATTERN (API, KEY, SECRET, TOKEN, PASSWORD, CREDENTIAL
 *   or AUTH anywhere in the name, any case) or starts with `SSH_` (any case). Secret names are removed.
 *   The patterns cover Gatehouse's own credentials: ANTHROPIC_API_KEY, TELEGRAM_BOT_TOKEN,
 *   SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_SIGNING_SECRET, DISCORD_TOKEN (tested by name).
 * - An allowlist entry un-hides exactly that name, and only when it EXISTS in `env` with a value: the
 *   allowlist never invents a variable. `SSH_*` names (the agent socket, forwarded connections) can never
 *   be un-hidden: a child that reaches SSH_AUTH_SOCK can sign as the operator.
 * - Names with an `undefined` value are dropped (process.env's type allows them).
 * - Pure: returns a new object, never mutates its input. The pattern is deliberately broad (MONKEY is
 *   hidden too): a missing harmless variable costs an allowlist entry, a leaked key costs a rotation.
 */

/** Names containing any of these words (any case) are treated as secrets. */
export const SECRET_NAME_PATTERN = /API|KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|AUTH/i;

/** SSH agent and connection variables: never passed on, not even when allowlisted. */
const SSH_PREFIX = /^SSH_/i;

/** True when `name` would be removed from a child's environment unless allowlisted. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME_PATTERN.test(name) || SSH_PREFIX.test(name);
}

/**
 * The environment a child process may see: `env` without secret names, except allowlisted names that
 * exist in `env` (never SSH_*), and without undefined values.
 */
export function sanitizeEnv(
  env: Record<string, string | undefined>,
  allowlist: readonly string[],
): Record<string, string> {
  const allowed = new Set(allowlist.filter((name) => !SSH_PREFIX.test(name)));
  const kept: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (isSecretName(name) && !allowed.has(name)) continue;
    kept.push([name, value]);
  }
  // fromEntries defines own properties, so a hostile name like `__proto__` cannot touch the prototype.
  return Object.fromEntries(kept);
}
