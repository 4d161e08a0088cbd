/**
 * Environment sanitizing for child processes (execute_command, and any tool that spawns).
 *
 * Contract:
 * - What is secret by NAME or by the shape of a VALUE: policies/secret-names.ts (isSecretName,
 *   isSecretValue, isOwnName; re-exported here).
 * - Gatehouse's own names (GATEHOUSE_*, ANTHROPIC_*, TELEGRAM_*, SLACK_*, DISCORD_*, SSH_*) are NEVER
 *   passed on, whatever the allowlist says (config refuses them too; this is the second line of defence).
 * - By value: a variable is dropped, whatever its name and whatever the allowlist says, when its value
 *   carries one of the bot's OWN secret values (policies/secrets.ts: the model key, platform tokens and
 *   signing secrets, webhook secrets, the store password, the attach token and anything else registered),
 *   as written or encoded (policies/secret-match.ts: case-folded, hex, base64, base32, reversed,
 *   percent-encoded, escaped). A copy of ANTHROPIC_API_KEY under an innocent name does not get through.
 * - Without an allowlist entry, a variable is also dropped when its name is secret, its value looks
 *   secret (URL credentials, PEM private key, JWT, a known token shape), or its value carries the value
 *   of another secret variable (GITHUB_TOKEN's value copied into NOTES).
 * - An allowlist entry un-hides exactly that name (any other secret name or value), and only when it
 *   EXISTS in `env` with a value: the allowlist never invents a variable. An allowlisted variable's value
 *   is no longer treated as secret (the operator chose to show it).
 * - Names with an `undefined` value are dropped (process.env's type allows them).
 * - Pure but for the registry of run-time secrets (the default `ownSecrets`): returns a new object,
 *   never mutates its input. The encoded forms of a secret set are computed once and reused.
 */
import { isOwnName, isSecretName, isSecretValue } from './secret-names.js';
import { matcherFor } from './secret-match.js';
import { collectSecrets, registeredOwnSecrets } from './secrets.js';

export { isOwnName, isSecretName, isSecretValue, SECRET_NAME_PATTERN } from './secret-names.js';

/**
 * The environment a child process may see: `env` without secret names or values, except allowlisted
 * names that exist in `env` (never Gatehouse's own or SSH_*, never a value carrying one of the bot's
 * own secrets), and without undefined values. `ownSecrets`: the bot's secrets held outside `env`.
 */
export function sanitizeEnv(
  env: Record<string, string | undefined>,
  allowlist: readonly string[],
  ownSecrets: readonly string[] = registeredOwnSecrets(),
): Record<string, string> {
  const allowed = new Set(allowlist.filter((name) => !isOwnName(name)));
  const sets = collectSecrets(env, allowlist, ownSecrets);
  const own = matcherFor(sets.own, { chunks: false });
  const other = matcherFor(sets.other, { chunks: false });
  const kept: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (isOwnName(name)) continue;
    if (own.find(value)) continue;
    if (!allowed.has(name) && (isSecretName(name) || isSecretValue(value) || other.find(value))) continue;
    kept.push([name, value]);
  }
  // fromEntries defines own properties, so a hostile name like `__proto__` cannot touch the prototype.
  return Object.fromEntries(kept);
}
