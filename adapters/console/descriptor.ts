/** What the terminal chat's ids look like: names chosen by the operator. No environment, no secrets. */
import type { PlatformDescriptor } from '../types.js';

/** `never`: no environment, so bot/config/env.ts's PlatformEnv has no console entry. */
export const consoleDescriptor: PlatformDescriptor<never> = {
  platform: 'console',
  ids: { re: /^local$/, hint: 'the terminal chat has one user, "local": write console: [local] (or leave it out)' },
  env: [],
  secrets: [],
};
