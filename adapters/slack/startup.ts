/**
 * Start-up checks and their errors: every one says what to do and none prints a token.
 *
 * Contract:
 * - `checkAppToken` opens one Socket Mode connection URL with the app token before Bolt's socket
 *   client does, because that client keeps retrying a refused token instead of failing the start
 *   (seen with not_allowed_token_type, PLATFORM-NOTES):
 *   a revoked token, a bot token, a token without connections:write, Socket Mode switched off in the
 *   app's settings each become an error naming the fix. A 429 is waited out (Retry-After) a few times.
 * - `startError` turns a failed auth.test / init into such an error: invalid_auth (and revoked,
 *   inactive), a missing scope (named, pointing at deploy/slack-manifest.yaml), ratelimited.
 */
import { ErrorCode, WebClient } from '@slack/web-api';
import { AdapterError, scrubbedCause } from '../kit/errors.js';
import type { SlackContext } from './context.js';

const MANIFEST = 'deploy/slack-manifest.yaml';

function slackCode(err: unknown): { code: string | undefined; needed: string | undefined; rateLimited: boolean } {
  const e = err as { code?: string; message?: string; original?: { message?: string }; data?: { error?: string; needed?: string } };
  // After its retries the SDK gives up on a 429 with a request error wrapping "A rate limit was exceeded".
  const gaveUpOn429 = e.code === ErrorCode.RequestError && /rate limit was exceeded/i.test(`${e.original?.message ?? ''} ${e.message ?? ''}`);
  return { code: e.data?.error, needed: e.data?.needed, rateLimited: e.code === ErrorCode.RateLimitedError || e.data?.error === 'ratelimited' || gaveUpOn429 };
}

export function startError(err: unknown, ctx: Pick<SlackContext, 'describeError'>): Error {
  const { code, needed, rateLimited } = slackCode(err);
  if (code === 'invalid_auth' || code === 'not_authed' || code === 'account_inactive' || code === 'token_revoked' || code === 'token_expired') {
    return new AdapterError(
      'start_failed',
      `SLACK_BOT_TOKEN was rejected by Slack (${code}): copy the Bot User OAuth Token (xoxb-…) from OAuth & Permissions again (reinstall the app if it was revoked)`,
      { cause: scrubbedCause(err, ctx.describeError) },
    );
  }
  if (code === 'missing_scope') {
    return new AdapterError(
      'start_failed',
      `the Slack app lacks the scope ${needed ?? '(not named by Slack)'}: add it (${MANIFEST} lists every scope the bot uses) and reinstall the app to the workspace`,
      { cause: scrubbedCause(err, ctx.describeError) },
    );
  }
  if (rateLimited)
    return new AdapterError(
      'start_failed',
      'Slack rate-limited the start-up calls (ratelimited) even after waiting its Retry-After: wait a minute and start again',
      { cause: scrubbedCause(err, ctx.describeError) },
    );
  return new AdapterError('start_failed', `Slack start failed: ${ctx.describeError(err)} (check SLACK_API_URL and the network)`, {
    cause: scrubbedCause(err, ctx.describeError),
  });
}

/** Throws a start error when the app-level token cannot open a Socket Mode connection. */
export async function checkAppToken(appToken: string, apiUrl: string, ctx: Pick<SlackContext, 'describeError'>, logger: unknown): Promise<void> {
  const client = new WebClient(appToken, {
    slackApiUrl: apiUrl,
    retryConfig: { retries: 3, factor: 1, minTimeout: 200, maxTimeout: 1000 },
    logger: logger as never,
  });
  try {
    await client.apps.connections.open({});
  } catch (err) {
    const { code, needed, rateLimited } = slackCode(err);
    if (code === 'not_allowed_token_type') {
      throw new AdapterError(
        'start_failed',
        'SLACK_APP_TOKEN is not an app-level token: create one under Basic Information > App-Level Tokens with the scope connections:write (xapp-…)',
        { cause: scrubbedCause(err, ctx.describeError) },
      );
    }
    if (code === 'missing_scope' || code === 'no_permission') {
      throw new AdapterError(
        'start_failed',
        `SLACK_APP_TOKEN lacks the scope ${needed ?? 'connections:write'}: generate an app-level token with connections:write under Basic Information > App-Level Tokens`,
        { cause: scrubbedCause(err, ctx.describeError) },
      );
    }
    if (code === 'socket_mode_not_enabled') {
      throw new AdapterError(
        'start_failed',
        `Socket Mode is off for this Slack app (socket_mode_not_enabled): turn it on under Settings > Socket Mode (${MANIFEST} enables it), or leave SLACK_APP_TOKEN unset and use HTTP mode with SLACK_SIGNING_SECRET`,
        { cause: scrubbedCause(err, ctx.describeError) },
      );
    }
    if (code === 'invalid_auth' || code === 'not_authed' || code === 'token_revoked' || code === 'token_expired') {
      throw new AdapterError(
        'start_failed',
        `SLACK_APP_TOKEN was rejected by Slack (${code}): create a new app-level token (connections:write) under Basic Information > App-Level Tokens`,
        { cause: scrubbedCause(err, ctx.describeError) },
      );
    }
    if (rateLimited)
      throw new AdapterError(
        'start_failed',
        'Slack rate-limited apps.connections.open (ratelimited) even after waiting its Retry-After: wait a minute and start again',
        { cause: scrubbedCause(err, ctx.describeError) },
      );
    throw new AdapterError('start_failed', `opening a Socket Mode connection failed: ${ctx.describeError(err)} (check SLACK_API_URL and the network)`, {
      cause: scrubbedCause(err, ctx.describeError),
    });
  }
}
