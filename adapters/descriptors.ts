/**
 * Every platform's descriptor, by platform (ids, environment variables, secrets). A new platform
 * adds its descriptor here: bot/config/env.ts and bot/config/schema.ts take every platform from this table.
 * No platform library is imported here: bot/config/index.ts and bot/config/env.ts read this without loading
 * grammy or Bolt.
 */
import { consoleDescriptor } from './console/descriptor.js';
import { discordDescriptor } from './discord/descriptor.js';
import { slackDescriptor } from './slack/descriptor.js';
import { telegramDescriptor } from './telegram/descriptor.js';
import type { Platform, PlatformDescriptor } from './types.js';

/** `satisfies`, not a type annotation: each entry keeps its environment type (bot/config/env.ts PlatformEnv). */
export const DESCRIPTORS = {
  console: consoleDescriptor,
  telegram: telegramDescriptor,
  slack: slackDescriptor,
  discord: discordDescriptor,
} as const satisfies { readonly [P in Platform]: PlatformDescriptor<unknown> };

/** A platform's descriptor as the common shape (every optional field visible). */
export function descriptorOf(p: Platform): PlatformDescriptor {
  return DESCRIPTORS[p];
}

/** The platforms with an `access` entry in gatehouse.yaml, and their lists. */
export type AccessPlatform = { [P in Platform]: (typeof DESCRIPTORS)[P] extends { accessLists: readonly string[] } ? P : never }[Platform];
export type AccessListOf<P extends AccessPlatform> = (typeof DESCRIPTORS)[P]['accessLists'][number];

/** What a platform's `parseEnv` returns when it is enabled; never for a platform without environment. */
export type EnvOf<P extends Platform> = (typeof DESCRIPTORS)[P] extends PlatformDescriptor<infer E> ? E : never;
