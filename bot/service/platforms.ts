/**
 * Chat adapters enabled by the environment: one per platform whose token is set. The only place
 * (with the adapter folders themselves) that knows which adapters exist.
 *
 * Contract: an adapter's module (and so its platform library: grammy, Bolt, discord.js) is imported
 * only when its platform is configured; a Telegram-only bot never loads Bolt or discord.js. What
 * config and env need to know about a platform is in its descriptor (adapters/descriptors.ts).
 */
import type { Adapter } from '../../adapters/types.js';
import { prefixedLog } from '../../agent/log.js';
import type { Log } from './app.js';
import { agentForConversation, type Config } from '../config/index.js';
import type { HttpRoute } from './http.js';
import { threadFollowUpsFor } from '../config/thread-follow-ups.js';

export async function createPlatformAdapters(config: Config, log: Log): Promise<{ adapters: Adapter[]; routes(): HttpRoute[] }> {
  const adapters: Adapter[] = [];
  const tg = config.platforms.telegram;
  if (tg) {
    const { createTelegramAdapter } = await import('../../adapters/telegram/adapter.js');
    const adapter = createTelegramAdapter({
      token: tg.token,
      ...(tg.apiRoot ? { apiRoot: tg.apiRoot } : {}),
      ...(tg.webhookUrl ? { webhook: { url: tg.webhookUrl, secret: tg.webhookSecret ?? randomSecret() } } : {}),
      log: prefixedLog(log, '[telegram] '),
    });
    adapters.push(adapter);
  }
  const slack = config.platforms.slack;
  if (slack) {
    const { createSlackAdapter } = await import('../../adapters/slack/adapter.js');
    adapters.push(
      createSlackAdapter({
        botToken: slack.botToken,
        ...(slack.appToken ? { appToken: slack.appToken } : {}),
        ...(slack.signingSecret ? { signingSecret: slack.signingSecret } : {}),
        ...(slack.apiUrl ? { apiUrl: slack.apiUrl } : {}),
        approverGroups: () =>
          Object.values(config.agents).flatMap((a) => (a.approvers.slack ?? []).filter((e) => e.startsWith('group:')).map((e) => e.slice('group:'.length))),
        threadFollowUps: (ref) => threadFollowUpsFor(config, ref.key, agentForConversation(config, ref.key)),
        log: prefixedLog(log, '[slack] '),
      }),
    );
  }
  const discord = config.platforms.discord;
  if (discord) {
    // lazy.ts: discord.js itself loads only when the adapter starts.
    const { createDiscordAdapter } = await import('../../adapters/discord/lazy.js');
    adapters.push(
      createDiscordAdapter({
        token: discord.token,
        ...(discord.apiUrl ? { apiUrl: discord.apiUrl } : {}),
        ...(discord.requestsPerSecond ? { requestsPerSecond: discord.requestsPerSecond } : {}),
        // per agent (and so per route): the agent that serves this channel decides
        replyInThread: (guild, channel) => agentForConversation(config, `discord:${guild}:${channel}`).discordReplyInThread,
        commandGuilds: () => config.access.discord.guilds,
        log: prefixedLog(log, '[discord] '),
      }),
    );
  }
  // Every adapter's routes, read when the server starts (webhook modes add theirs at construction).
  return { adapters, routes: () => adapters.flatMap((a) => a.httpRoutes?.() ?? []) };
}

function randomSecret(): string {
  // Telegram allows 1-256 chars of A-Z a-z 0-9 _ -.
  return globalThis.crypto.randomUUID().replace(/-/g, '') + globalThis.crypto.randomUUID().replace(/-/g, '');
}
