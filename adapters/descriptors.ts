/**
 * Every platform's descriptor, by platform (ids, environment variables, secrets). No platform
 * library is imported here: bot/config.ts and bot/env.ts read this without loading grammy or Bolt.
 */
import { consoleDescriptor } from './console/descriptor.js';
import { discordDescriptor } from './discord/descriptor.js';
import { slackDescriptor } from './slack/descriptor.js';
import { telegramDescriptor } from './telegram/descriptor.js';
import type { Platform, PlatformDescriptor } from './types.js';

export const DESCRIPTORS: { readonly [P in Platform]: PlatformDescriptor } = {
  console: consoleDescriptor,
  telegram: telegramDescriptor,
  slack: slackDescriptor,
  discord: discordDescriptor,
};
