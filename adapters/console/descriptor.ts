/** What the terminal chat's ids look like: names chosen by the operator. No environment, no secrets. */
import type { PlatformDescriptor } from '../types.js';

export const consoleDescriptor: PlatformDescriptor = {
  platform: 'console',
  ids: { re: /^\S+$/, hint: 'a name without spaces, like local' },
  env: [],
  secrets: [],
};
