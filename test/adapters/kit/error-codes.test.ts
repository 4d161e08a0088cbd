/**
 * Adapters throw AdapterError with a code a caller can branch on (adapters/kit/errors.ts), not a
 * bare Error: a conversation key of another platform or form, a button token the platform cannot
 * carry. The message still says what was wrong.
 */
import { AdapterError } from '../../../adapters/kit/errors.js';
import * as discordKeys from '../../../adapters/discord/keys.js';
import * as slackKeys from '../../../adapters/slack/keys.js';
import * as telegramKeys from '../../../adapters/telegram/keys.js';
import { callbackData } from '../../../adapters/telegram/cards.js';

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

test.each([
  ['telegram', () => telegramKeys.decodeKey('slack:T1:C1'), /not a Telegram conversation key/],
  ['slack', () => slackKeys.decodeKey('telegram:42'), /not a Slack conversation key/],
  ['discord', () => discordKeys.decodeKey('discord:nope'), /not a Discord conversation key/],
  ['slack ref', () => slackKeys.refFor('team with spaces', 'C1'), /invalid Slack team\/channel\/thread/],
  ['telegram button', () => callbackData('x'.repeat(100)), /Telegram allows 1-64 bytes/],
])('%s: a key or token the platform cannot take is AdapterError bad_input', (_name, f, message) => {
  const err = thrown(f);
  expect(err).toBeInstanceOf(AdapterError);
  expect(err).toMatchObject({ code: 'bad_input', name: 'AdapterError' });
  expect((err as Error).message).toMatch(message);
});
