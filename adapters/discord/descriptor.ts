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
 * - DISCORD_REQUESTS_PER_SECOND (default 50, Discord's global limit per bot) caps REST requests a
 *   second on the client; raise it only when Discord raised your bot's limit, or behind a proxy
 *   that does its own limiting. A whole number from 1 to 10,000.
 */
import { envValue, httpUrl } from '../kit/env.js';
import type { EnvProblem, PlatformDescriptor } from '../types.js';

export interface DiscordEnv {
  token: string;
  /** REST base without the version ("…/api"); undefined: https://discord.com/api */
  apiUrl: string | undefined;
  /** REST requests a second (discord.js's global limiter); undefined: 50. */
  requestsPerSecond: number | undefined;
}

export const DEFAULT_DISCORD_API_URL = 'https://discord.com/api';

function parseEnv(env: Readonly<Record<string, string | undefined>>, problems: EnvProblem[]): DiscordEnv | undefined {
  const token = envValue(env, 'DISCORD_TOKEN');
  const apiUrl = envValue(env, 'DISCORD_API_URL');
  const rps = envValue(env, 'DISCORD_REQUESTS_PER_SECOND');
  if (token === undefined) {
    for (const [name, v] of [
      ['DISCORD_API_URL', apiUrl],
      ['DISCORD_REQUESTS_PER_SECOND', rps],
    ] as const) {
      if (v !== undefined)
        problems.push({
          path: name,
          message: 'is set but DISCORD_TOKEN is not; set the bot token (Developer Portal > your app > Bot > Reset Token) or remove this variable',
        });
    }
    return undefined;
  }
  const before = problems.length;
  const bare = token.trim().replace(/^Bot\s+/i, '');
  // Bot tokens are three base64url parts joined by dots (the first is the bot's id in base64).
  if (!/^[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{3,}\.[A-Za-z0-9_-]{10,}$/.test(bare)) {
    problems.push({
      path: 'DISCORD_TOKEN',
      message:
        "doesn't look like a Discord bot token (three parts separated by dots, from Developer Portal > your app > Bot > Reset Token); check for stray quotes or spaces",
    });
  }
  let url: string | undefined;
  if (apiUrl !== undefined && httpUrl('DISCORD_API_URL', apiUrl, problems)) url = apiUrl.replace(/\/+$/, '');
  let requestsPerSecond: number | undefined;
  if (rps !== undefined) {
    const n = /^\d+$/.test(rps.trim()) ? Number(rps.trim()) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > 10_000)
      problems.push({
        path: 'DISCORD_REQUESTS_PER_SECOND',
        message: `expected a whole number from 1 to 10000 (Discord's default limit is 50), got ${JSON.stringify(rps)}`,
      });
    else requestsPerSecond = n;
  }
  if (problems.length > before) return undefined;
  return { token: bare, apiUrl: url, requestsPerSecond };
}

/** `satisfies`: the type keeps the literal access lists (bot/config/schema.ts types access from them). */
export const discordDescriptor = {
  platform: 'discord',
  ids: { re: /^\d+$/, hint: 'Discord ids are numbers like 123456789012345678 (turn on Developer Mode, then Copy ID)' },
  approverForms: [{ prefix: 'role:', re: /^role:\d+$/, hint: 'role:<role id digits>' }],
  accessLists: ['users', 'channels', 'guilds'] as const,
  envPrefix: 'DISCORD_',
  env: ['DISCORD_TOKEN', 'DISCORD_API_URL', 'DISCORD_REQUESTS_PER_SECOND'],
  secrets: ['DISCORD_TOKEN'],
  parseEnv,
  setup: {
    idHelp: 'Discord settings -> Advanced -> Developer Mode, then right-click yourself -> Copy User ID',
    moreAccess: 'guilds: ["123..."]  # everyone in these servers (channels: [...] for single channels)',
    envLines: ['# --- Discord: Developer Portal -> your application -> Bot -> Reset Token; turn on Message Content Intent ---', 'DISCORD_TOKEN='],
  },
  reachability: (e: DiscordEnv) => ({ vars: 'DISCORD_TOKEN set', apiUrl: e.apiUrl ?? DEFAULT_DISCORD_API_URL }),
} satisfies PlatformDescriptor<DiscordEnv>;
