/**
 * Whether the service a `gatehouse run` attached to runs on the gatehouse.yaml that is on disk now.
 * The service reports the file it loaded and the SHA-256 of its bytes as loaded (or last reloaded);
 * this side hashes the file as it is now. Builtins only (the attached path stays light).
 *
 * Contract: `configDrift` returns one line for stderr when they differ (edited, removed, or created
 * while the service runs on built-in defaults), else undefined. Never throws: a file this user cannot
 * read is reported as such.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ServiceInfo } from './protocol.js';
import { messageOf } from '../../agent/log.js';

const APPLY = 'this run used the configuration the service loaded; `gatehouse reload` applies the file';

/** `env`: the caller's environment with .env loaded (GATEHOUSE_CONFIG may be set there). */
export function configDrift(info: ServiceInfo, env: Record<string, string | undefined>, cwd: string): string | undefined {
  if (info.configFile === null) {
    const set = env['GATEHOUSE_CONFIG'];
    const path = set !== undefined && set !== '' ? resolve(cwd, set) : join(cwd, 'gatehouse.yaml');
    return existsSync(path) ? `gatehouse run: note: the running service runs on built-in defaults, but ${path} exists now; ${APPLY}` : undefined;
  }
  let now: string;
  try {
    now = createHash('sha256').update(readFileSync(info.configFile)).digest('hex');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? `gatehouse run: note: the running service loaded ${info.configFile}, which is gone now; ${APPLY} (or the built-in defaults when there is none)`
      : `gatehouse run: note: cannot read ${info.configFile} to compare it with what the running service loaded (${code ?? messageOf(err)})`;
  }
  return now === info.configSha256 ? undefined : `gatehouse run: note: ${info.configFile} changed since the running service loaded it; ${APPLY}`;
}
