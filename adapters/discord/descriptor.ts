/** What Discord's ids and secrets look like (the adapter itself is not written yet). */
import type { PlatformDescriptor } from '../types.js';

export const discordDescriptor: PlatformDescriptor = {
  platform: 'discord',
  ids: { re: /^\d+$/, hint: 'Discord ids are numbers like 123456789012345678 (turn on Developer Mode, then Copy ID)' },
  approverForms: [{ re: /^role:\d+$/, hint: 'role:<role id digits>' }],
  env: ['DISCORD_TOKEN'],
  secrets: ['DISCORD_TOKEN'],
};
