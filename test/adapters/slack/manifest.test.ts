/**
 * deploy/slack-manifest.yaml creates the app in one paste: every scope and event the adapter relies
 * on is there, the slash command and interactivity point at /slack/events, Socket Mode is the default.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

const text = readFileSync(new URL('../../../deploy/slack-manifest.yaml', import.meta.url), 'utf8');
const manifest = parse(text) as {
  features: { slash_commands: Array<{ command: string; url: string }> };
  oauth_config: { scopes: { bot: string[] } };
  settings: {
    event_subscriptions: { request_url: string; bot_events: string[] };
    interactivity: { is_enabled: boolean; request_url: string };
    socket_mode_enabled: boolean;
  };
};

test('scopes for every Web API method and file the adapter uses', () => {
  // chat.* (answers, status, cards, ephemeral notices, streaming), files via url_private, usergroups.users.list,
  // the slash command, reading mentions, DMs and thread follow-ups, and opening DMs (approvalDelivery: dm)
  expect(manifest.oauth_config.scopes.bot).toEqual(
    expect.arrayContaining([
      'chat:write',
      'files:read',
      'usergroups:read',
      'commands',
      'app_mentions:read',
      'im:history',
      'im:write',
      'channels:history',
      'groups:history',
      'mpim:history',
    ]),
  );
});

test('events, the slash command and interactivity at /slack/events; Socket Mode on', () => {
  expect(manifest.settings.event_subscriptions.bot_events).toEqual(
    expect.arrayContaining(['app_mention', 'message.channels', 'message.groups', 'message.im', 'message.mpim']),
  );
  expect(manifest.features.slash_commands.map((c) => c.command)).toEqual(['/gatehouse']);
  for (const url of [
    manifest.settings.event_subscriptions.request_url,
    manifest.settings.interactivity.request_url,
    manifest.features.slash_commands[0]!.url,
  ]) {
    expect(new URL(url).pathname).toBe('/slack/events');
  }
  expect(manifest.settings.interactivity.is_enabled).toBe(true);
  expect(manifest.settings.socket_mode_enabled).toBe(true);
});

test('the optional AI assistant lines name the feature, its scope and its event', () => {
  expect(text).toMatch(/#\s*assistant_view:/);
  expect(text).toMatch(/#\s*- assistant:write/);
  expect(text).toMatch(/#\s*- assistant_thread_started/);
});
