/**
 * What Telegram's ids, environment variables and secrets look like (no grammy here).
 *
 * Contract: `telegramDescriptor.parseEnv` returns the settings when TELEGRAM_BOT_TOKEN is set, and
 * a problem per variable otherwise wrong (a setting without the token, a token of the wrong shape,
 * a webhook URL that is not https, a secret Telegram would refuse). Messages never echo a secret.
 */
import { envValue, httpUrl } from '../kit/env.js';
import type { EnvProblem, PlatformDescriptor } from '../types.js';

export interface TelegramEnv {
  token: string;
  /** Bot API root without a trailing slash; undefined means grammy's default (api.telegram.org). */
  apiRoot: string | undefined;
  /** Set: webhook mode (the bot's HTTP server receives updates). Unset: long polling. */
  webhookUrl: string | undefined;
  /** The secret Telegram echoes in X-Telegram-Bot-Api-Secret-Token; undefined: generate one at start. */
  webhookSecret: string | undefined;
}

/** A shorter webhook secret could be guessed; the generated one has 64 hex characters. */
const MIN_WEBHOOK_SECRET_CHARS = 16;

function parseEnv(env: Readonly<Record<string, string | undefined>>, problems: EnvProblem[]): TelegramEnv | undefined {
  const token = envValue(env, 'TELEGRAM_BOT_TOKEN');
  const apiRoot = envValue(env, 'TELEGRAM_API_ROOT');
  const webhookUrl = envValue(env, 'TELEGRAM_WEBHOOK_URL');
  const webhookSecret = envValue(env, 'TELEGRAM_WEBHOOK_SECRET');
  if (token === undefined) {
    // A setting without the token would silently do nothing: say so.
    for (const [name, v] of [
      ['TELEGRAM_API_ROOT', apiRoot],
      ['TELEGRAM_WEBHOOK_URL', webhookUrl],
      ['TELEGRAM_WEBHOOK_SECRET', webhookSecret],
    ] as const) {
      if (v !== undefined)
        problems.push({ path: name, message: 'is set but TELEGRAM_BOT_TOKEN is not; set the token (from @BotFather) or remove this variable' });
    }
    return undefined;
  }
  const before = problems.length;
  if (!/^\d+:[A-Za-z0-9_-]+$/.test(token)) {
    problems.push({
      path: 'TELEGRAM_BOT_TOKEN',
      message: "doesn't look like a bot token (expected <digits>:<letters> as @BotFather gives it); check for stray quotes or spaces",
    });
  }
  let root: string | undefined;
  if (apiRoot !== undefined) {
    const url = httpUrl('TELEGRAM_API_ROOT', apiRoot, problems);
    if (url) root = apiRoot.replace(/\/+$/, '');
  }
  let hook: string | undefined;
  if (webhookUrl !== undefined) {
    const url = httpUrl('TELEGRAM_WEBHOOK_URL', webhookUrl, problems);
    if (url) {
      const loopback = url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
      if (url.protocol !== 'https:' && !loopback) {
        problems.push({ path: 'TELEGRAM_WEBHOOK_URL', message: 'Telegram only delivers webhooks to https:// URLs; use https (or unset it for long polling)' });
      } else hook = webhookUrl;
    }
  }
  if (webhookSecret !== undefined) {
    if (!/^[A-Za-z0-9_-]{1,256}$/.test(webhookSecret)) {
      problems.push({ path: 'TELEGRAM_WEBHOOK_SECRET', message: 'Telegram accepts 1-256 characters of A-Z, a-z, 0-9, _ and -; choose another secret' });
    } else if (webhookSecret.length < MIN_WEBHOOK_SECRET_CHARS) {
      // Anyone who guesses it can post fake updates (fake users, fake approvals) to the webhook.
      problems.push({
        path: 'TELEGRAM_WEBHOOK_SECRET',
        message: `is ${webhookSecret.length} characters; use at least ${MIN_WEBHOOK_SECRET_CHARS} random characters (or unset it and a 64-character one is generated at each start)`,
      });
    }
    if (webhookUrl === undefined) {
      problems.push({
        path: 'TELEGRAM_WEBHOOK_SECRET',
        message: 'is set but TELEGRAM_WEBHOOK_URL is not; set the URL for webhook mode or remove the secret (long polling needs none)',
      });
    }
  }
  if (problems.length > before) return undefined;
  return { token, apiRoot: root, webhookUrl: hook, webhookSecret };
}

/** `satisfies`: the type keeps the literal access lists (bot/config/schema.ts types access from them). */
export const telegramDescriptor = {
  platform: 'telegram',
  ids: { re: /^-?\d+$/, hint: 'Telegram ids are numbers like 123456789 (a @username does not work; the bot tells a stranger their id)' },
  accessLists: ['users', 'chats'] as const,
  envPrefix: 'TELEGRAM_',
  env: ['TELEGRAM_BOT_TOKEN', 'TELEGRAM_API_ROOT', 'TELEGRAM_WEBHOOK_URL', 'TELEGRAM_WEBHOOK_SECRET'],
  secrets: ['TELEGRAM_BOT_TOKEN', 'TELEGRAM_WEBHOOK_SECRET'],
  parseEnv,
  setup: {
    idHelp: 'DM the bot once: it answers with your Telegram user id',
    moreAccess: 'chats: ["-100..."]  # a group: mention the bot there and it answers with the group\'s id',
    envLines: [
      '# --- Telegram: @BotFather -> /newbot gives the token (<digits>:<letters>) ---',
      'TELEGRAM_BOT_TOKEN=',
      '# Webhook mode instead of long polling (an https URL routed to GATEHOUSE_HTTP_PORT):',
      '# TELEGRAM_WEBHOOK_URL=https://bot.example.com/telegram',
    ],
  },
  reachability: (e: TelegramEnv) => ({
    vars: `TELEGRAM_BOT_TOKEN set (${e.webhookUrl ? 'webhook' : 'long polling'})`,
    apiUrl: e.apiRoot ?? 'https://api.telegram.org',
  }),
} satisfies PlatformDescriptor<TelegramEnv>;
