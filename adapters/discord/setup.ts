/**
 * What the Discord adapter needs to set itself up: the invite URL, the slash commands it registers,
 * and start-up errors that say what to do.
 *
 * Contract: `startError` never includes the token (the caller's `described` text is already
 * scrubbed); a disallowed privileged intent (close 4014) names the Message Content Intent switch in
 * the Developer Portal; a rejected token (REST 401, close 4004) says where to get a new one.
 */
import { PermissionsBitField } from 'discord.js';
import { AdapterError } from '../kit/errors.js';

/** View Channels, Send Messages, Send Messages in Threads, Create Public Threads, Read Message History, Embed Links, Attach Files. */
const INVITE_PERMISSIONS = PermissionsBitField.resolve([
  'ViewChannel',
  'SendMessages',
  'SendMessagesInThreads',
  'CreatePublicThreads',
  'ReadMessageHistory',
  'EmbedLinks',
  'AttachFiles',
]).toString();

export function inviteUrl(applicationId: string): string {
  return `https://discord.com/oauth2/authorize?client_id=${applicationId}&scope=bot%20applications.commands&permissions=${INVITE_PERMISSIONS}`;
}

export const SLASH_COMMANDS = [
  { name: 'stop', description: 'Cancel the current run here' },
  { name: 'reset', description: 'Start a new conversation here (forget what was said)' },
  { name: 'help', description: 'What this bot can do, and its commands' },
] as const;

export function startError(err: unknown, closeCode: number | undefined, described: string): Error {
  const e = err as { code?: unknown; status?: number; message?: string };
  if (closeCode === 4014 || e.code === 'DisallowedIntents' || /disallowed intents/i.test(e.message ?? '')) {
    return new AdapterError(
      'start_failed',
      'Discord refused the Message Content Intent (gateway close 4014): open the Discord Developer Portal > your application > Bot > ' +
        'Privileged Gateway Intents, turn on "Message Content Intent", save, and start again',
      { cause: err },
    );
  }
  if (closeCode === 4004 || e.code === 'TokenInvalid' || e.status === 401 || /authentication failed/i.test(e.message ?? '')) {
    return new AdapterError(
      'start_failed',
      'DISCORD_TOKEN was rejected by Discord (invalid token): copy a new one from the Developer Portal > your application > Bot > Reset Token',
      { cause: err },
    );
  }
  if (closeCode === 4013)
    return new AdapterError(
      'start_failed',
      'Discord refused the gateway intents (close 4013): this build asks for Guilds, GuildMessages, MessageContent and DirectMessages',
      { cause: err },
    );
  return new AdapterError('start_failed', `Discord start failed: ${described} (check DISCORD_API_URL and the network)`, { cause: err });
}
