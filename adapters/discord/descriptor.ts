/**
 * What Discord's ids, environment variables and secrets look like (no discord.js here).
 *
 * Contract:
 * - Ids are snowflakes (digits); approvers may also be `role:<role id>`, everyone holding that role
 *   in the server where the card is (in a DM only user ids count).
 * - Env: enabled when DISCORD_TOKEN is set. DISCORD_API_URL (default https://discord.com/api) points
 *   the REST API elsewhere (a proxy, the tests' fake); the gateway URL comes from GET /gateway/bot
 *   there. A DISCORD_API_URL without the token, a token that cannot be a bot token, or a URL that is
 *   not http(s) is a problem naming the variable; no message echoes the token.
 */
import { envValue, httpUrl } from '../kit/env.js';
import type { EnvProblem, PlatformDescriptor } from '../types.js';

export interface DiscordEnv {
  token: string;
  /** REST base without the version ("…/api"); undefined: https://discord.com/api */
  apiUrl: string | undefined;
}

export const DEFAULT_DISCORD_API_URL = 'https://discord.com/api';

function parseEnv(env: Readonly<Record<string, string | undefined>>, problems: EnvProblem[]): DiscordEnv | undefined {
  const token = envValue(env, 'DISCORD_TOKEN');
  const apiUrl = envValue(env, 'DISCORD_API_URL');
  if (token === undefined) {
    if (apiUrl !== undefined) problems.push({ path: 'DISCORD_API_URL', message: 'is set but DISCORD_TOKEN is not; set the bot token (Developer Portal > your app > Bot > Reset Token) or remove this variable' });
    return undefined;
  }
  const before = problems.length;
  const bare = token.trim().replace(/^Bot\s+/i, '');
  // Bot tokens are three base64url parts joined by dots (the first is the bot's id in base64).
  if (!/^[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{3,}\.[A-Za-z0-9_-]{10,}$/.test(bare)) {
    problems.push({ path: 'DISCORD_TOKEN', message: "doesn't look like a Discord bot token (three parts separated by dots, from Developer Portal > your app > Bot > Reset Token); check for stray quotes or spaces" });
  }
  let url: string | undefined;
  if (apiUrl !== undefined && httpUrl('DISCORD_API_URL', apiUrl, problems)) url = apiUrl.replace(/\/+$/, '');
  if (problems.length > before) return undefined;
  return { token: bare, apiUrl: url };
}

export const discordDescriptor: PlatformDescriptor<DiscordEnv> = {
  platform: 'discord',
  ids: { re: /^\d+$/, hint: 'Discord ids are numbers like 123456789012345678 (turn on Developer Mode, then Copy ID)' },
  approverForms: [{ re: /^role:\d+$/, hint: 'role:<role id digits>' }],
  env: ['DISCORD_TOKEN', 'DISCORD_API_URL'],
  secrets: ['DISCORD_TOKEN'],
  parseEnv,
};
