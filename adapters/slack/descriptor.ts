/**
 * What Slack's ids, environment variables and secrets look like (no Bolt here).
 *
 * Contract: ids are Slack's upper-case ids (U…, W…, C…, G…, D…, T…); approvers may also be
 * `group:<usergroup id>` (S…), everyone in that Slack user group. Secrets: SLACK_BOT_TOKEN,
 * SLACK_APP_TOKEN, SLACK_SIGNING_SECRET.
 */
import type { PlatformDescriptor } from '../types.js';

export const slackDescriptor: PlatformDescriptor = {
  platform: 'slack',
  ids: { re: /^[A-Z0-9]+$/, hint: 'Slack ids look like U0123ABCD or C0123ABCD (a display name does not work)' },
  approverForms: [{ re: /^group:S[A-Z0-9]+$/, hint: 'group:<user group id>, like group:S0123ABCD' }],
  env: ['SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_API_URL'],
  secrets: ['SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN', 'SLACK_SIGNING_SECRET'],
};
