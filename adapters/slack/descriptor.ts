/**
 * What Slack's ids, environment variables and secrets look like (no Bolt here).
 *
 * Contract:
 * - Ids are Slack's upper-case ids (U…, W…, C…, G…, D…, T…); approvers may also be
 *   `group:<usergroup id>` (S…), everyone in that Slack user group.
 * - Env: enabled when SLACK_BOT_TOKEN is set. Socket Mode when SLACK_APP_TOKEN is set (xapp-…);
 *   otherwise HTTP mode, which needs SLACK_SIGNING_SECRET. SLACK_API_URL (default
 *   https://slack.com/api/) must be http(s). A Slack variable without the bot token, a token of the
 *   wrong kind, or neither app token nor signing secret is a problem naming the variable; no
 *   message echoes a secret.
 */
import { envValue, httpUrl } from '../kit/env.js';
import type { EnvProblem, PlatformDescriptor } from '../types.js';

export interface SlackEnv {
  botToken: string;
  /** Set: Socket Mode. */
  appToken: string | undefined;
  /** HTTP mode's request signing secret (unused in Socket Mode). */
  signingSecret: string | undefined;
  /** Web API base URL ending in "/"; undefined: https://slack.com/api/ */
  apiUrl: string | undefined;
}

function parseEnv(env: Readonly<Record<string, string | undefined>>, problems: EnvProblem[]): SlackEnv | undefined {
  const botToken = envValue(env, 'SLACK_BOT_TOKEN');
  const appToken = envValue(env, 'SLACK_APP_TOKEN');
  const signingSecret = envValue(env, 'SLACK_SIGNING_SECRET');
  const apiUrl = envValue(env, 'SLACK_API_URL');
  if (botToken === undefined) {
    for (const [name, v] of [
      ['SLACK_APP_TOKEN', appToken],
      ['SLACK_SIGNING_SECRET', signingSecret],
      ['SLACK_API_URL', apiUrl],
    ] as const) {
      if (v !== undefined)
        problems.push({ path: name, message: 'is set but SLACK_BOT_TOKEN is not; set the Bot User OAuth Token (xoxb-…) or remove this variable' });
    }
    return undefined;
  }
  const before = problems.length;
  if (!/^xoxb-[A-Za-z0-9-]+$/.test(botToken)) {
    problems.push({
      path: 'SLACK_BOT_TOKEN',
      message: "doesn't look like a bot token (expected xoxb-…, the Bot User OAuth Token under OAuth & Permissions); check for stray quotes or spaces",
    });
  }
  if (appToken !== undefined && !/^xapp-[A-Za-z0-9-]+$/.test(appToken)) {
    problems.push({
      path: 'SLACK_APP_TOKEN',
      message: "doesn't look like an app-level token (expected xapp-…, Basic Information > App-Level Tokens, scope connections:write)",
    });
  }
  if (appToken === undefined && signingSecret === undefined) {
    problems.push({
      path: 'SLACK_APP_TOKEN',
      message:
        'is not set and neither is SLACK_SIGNING_SECRET: set SLACK_APP_TOKEN for Socket Mode (no public URL needed), or SLACK_SIGNING_SECRET for HTTP mode at /slack/events',
    });
  }
  let url: string | undefined;
  if (apiUrl !== undefined && httpUrl('SLACK_API_URL', apiUrl, problems)) url = apiUrl.replace(/\/*$/, '/');
  if (problems.length > before) return undefined;
  return { botToken, appToken, signingSecret, apiUrl: url };
}

/** `satisfies`: the type keeps the literal access lists (bot/config/schema.ts types access from them). */
export const slackDescriptor = {
  platform: 'slack',
  ids: { re: /^[A-Z0-9]+$/, hint: 'Slack ids look like U0123ABCD or C0123ABCD (a display name does not work)' },
  approverForms: [{ prefix: 'group:', re: /^group:S[A-Z0-9]+$/, hint: 'group:<user group id>, like group:S0123ABCD' }],
  accessLists: ['users', 'channels'] as const,
  envPrefix: 'SLACK_',
  env: ['SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_API_URL'],
  secrets: ['SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN', 'SLACK_SIGNING_SECRET'],
  parseEnv,
  setup: {
    idHelp: 'your Slack profile -> ... -> Copy member ID (U0123ABCD)',
    moreAccess: 'channels: ["C0123ABCD"]  # everyone in these channels',
    envLines: [
      '# --- Slack: create the app from deploy/slack-manifest.yaml; Bot User OAuth Token (xoxb-...) ---',
      'SLACK_BOT_TOKEN=',
      '# Socket Mode (no public URL): an app-level token with connections:write (xapp-...)',
      'SLACK_APP_TOKEN=',
      '# Or HTTP mode: leave SLACK_APP_TOKEN empty and set the signing secret',
      '# SLACK_SIGNING_SECRET=',
    ],
  },
  reachability: (e: SlackEnv) => ({
    vars: `SLACK_BOT_TOKEN set (${e.appToken ? 'Socket Mode: SLACK_APP_TOKEN' : 'HTTP mode: SLACK_SIGNING_SECRET'})`,
    apiUrl: e.apiUrl ?? 'https://slack.com/api/',
  }),
} satisfies PlatformDescriptor<SlackEnv>;
