/**
 * Where the audit file lives, its key, and the sink that writes every audit event there as well as
 * to the log (bot/service/log.ts `auditTo`).
 *
 * Contract:
 * - GATEHOUSE_AUDIT_DIR: the folder of the chain files (bot/audit/chain.ts), relative to the working
 *   directory. Unset: `audit/` in the data folder (next to the SQLite store, or ./data with
 *   PostgreSQL); with an in-memory store there is no data folder and no file unless it is set.
 *   `off`: no audit file (the only way to turn it off; the log lines stay).
 * - GATEHOUSE_AUDIT_MAX_BYTES: rotate a file at this size (bytes, or with k/M/G; default 16M, at
 *   least 1k).
 * - The key: GATEHOUSE_AUDIT_KEY (at least 32 characters; one of the bot's own variables, so it is
 *   never passed to a command), else the file `audit.key` in the data folder (next to the audit
 *   folder when there is none), made on first use with 32 random bytes, 0600. The sandbox never sees
 *   the data folder (its view is default-deny, and bot/service/app.ts masks these paths too); the key is also
 *   registered as one of the bot's own secrets (scrubbed from command environments and web requests).
 * - Chain name: `audit`; on PostgreSQL, where several replicas write, `audit-<replica id>` (one
 *   chain per process, so appends never interleave).
 * - A failed append is logged at error, never thrown: the event still reached the log.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Audit } from '../../agent/audit.js';
import { registerOwnSecret } from '../../policies/secrets.js';
import { ConfigError, type Config } from '../config/index.js';
import type { Log } from '../service/log.js';
import { dataDirOf } from '../service/reload.js';
import { replicaId } from '../service/replica-id.js';
import { ChainWriter } from './chain.js';
import { claimCliChain } from './chain-lock.js';
import { messageOf } from '../../agent/log.js';

export const KEY_FILE = 'audit.key';
const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;
const MIN_KEY_CHARS = 32;

export interface AuditSettings {
  /** undefined: no audit file (`why` says why). */
  dir: string | undefined;
  why?: string;
  keyFile: string | undefined;
  keyFromEnv: string | undefined;
  maxBytes: number;
  chain: string;
}

type Env = Record<string, string | undefined>;

function parseBytes(v: string): number | undefined {
  const m = /^(\d+)\s*([kmg])?i?b?$/i.exec(v.trim());
  if (!m) return undefined;
  const mult = { k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(m[2] ?? '').toLowerCase() as 'k' | 'm' | 'g'] ?? 1;
  return Number(m[1]) * mult;
}

/** The audit file's settings from the environment; a bad value is a ConfigError naming the variable. */
export function auditSettings(env: Env, cwd: string, config: Pick<Config, 'store'>): AuditSettings {
  const problems: Array<{ path: string; message: string }> = [];
  const rawMax = env.GATEHOUSE_AUDIT_MAX_BYTES?.trim();
  let maxBytes = DEFAULT_MAX_BYTES;
  if (rawMax) {
    const n = parseBytes(rawMax);
    if (n === undefined || n < 1024)
      problems.push({
        path: 'GATEHOUSE_AUDIT_MAX_BYTES',
        message: `expected a size of at least 1k (bytes, or with k/M/G, e.g. 16M), got ${JSON.stringify(rawMax)}`,
      });
    else maxBytes = n;
  }
  const keyFromEnv = env.GATEHOUSE_AUDIT_KEY;
  if (keyFromEnv !== undefined && keyFromEnv.length < MIN_KEY_CHARS) {
    problems.push({
      path: 'GATEHOUSE_AUDIT_KEY',
      message: `must be at least ${MIN_KEY_CHARS} characters (e.g. the output of \`openssl rand -hex 32\`); or unset it to use the key file in the data folder`,
    });
  }
  const rawDir = env.GATEHOUSE_AUDIT_DIR?.trim();
  if (rawDir === '') problems.push({ path: 'GATEHOUSE_AUDIT_DIR', message: 'is empty: give a folder, or "off" for no audit file' });
  if (problems.length > 0) throw new ConfigError(problems, undefined);
  const dataDir = dataDirOf(config, cwd);
  const chain = config.store.kind === 'postgres' ? `audit-${replicaId(env).replace(/[^A-Za-z0-9_.-]/g, '_')}` : 'audit';
  const base = { keyFromEnv, maxBytes, chain };
  if (rawDir?.toLowerCase() === 'off') return { ...base, dir: undefined, keyFile: undefined, why: 'GATEHOUSE_AUDIT_DIR=off' };
  const dir = rawDir ? resolve(cwd, rawDir) : dataDir ? join(dataDir, 'audit') : undefined;
  if (!dir) return { ...base, dir: undefined, keyFile: undefined, why: 'the store is in memory and GATEHOUSE_AUDIT_DIR is not set' };
  return { ...base, dir, keyFile: join(dataDir ?? dirname(dir), KEY_FILE) };
}

/**
 * The MAC key: GATEHOUSE_AUDIT_KEY, else the key file (created when `create` and missing; made 0600
 * again, with a warning, when others could read it). Throws with what to do when there is none.
 */
export function loadAuditKey(s: Pick<AuditSettings, 'keyFile' | 'keyFromEnv'>, opts: { create: boolean; warn?: (msg: string) => void }): Buffer {
  if (s.keyFromEnv !== undefined) return Buffer.from(s.keyFromEnv, 'utf8');
  if (!s.keyFile) throw new Error('no audit key: set GATEHOUSE_AUDIT_KEY');
  if (!existsSync(s.keyFile)) {
    if (!opts.create) throw new Error(`no audit key at ${s.keyFile} (nor GATEHOUSE_AUDIT_KEY): run this where the service keeps its data, or pass --key-file`);
    mkdirSync(dirname(s.keyFile), { recursive: true, mode: 0o700 });
    writeFileSync(s.keyFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  }
  if ((statSync(s.keyFile).mode & 0o077) !== 0) {
    chmodSync(s.keyFile, 0o600);
    opts.warn?.(
      `the audit key ${s.keyFile} was readable by other users; made it 0600 (if anyone copied it, records written since could be forged: replace it and start a new audit folder)`,
    );
  }
  const key = readFileSync(s.keyFile, 'utf8').trim();
  if (key.length < MIN_KEY_CHARS) throw new Error(`the audit key in ${s.keyFile} is shorter than ${MIN_KEY_CHARS} characters`);
  return Buffer.from(key, 'utf8');
}

export interface AuditTrail {
  settings: AuditSettings;
  /** The base audit (log lines) with the file appended to as well. */
  wrap(base: Audit): Audit;
  /** Paths the sandbox must never see (the audit folder and the key file). */
  hidden: string[];
  close(): void;
}

/** Opens the audit file for this process (or none, when turned off); throws on a bad setting. */
export function openAuditTrail(opts: {
  env: Env;
  cwd: string;
  config: Pick<Config, 'store'>;
  log: Log;
  now?: () => Date;
  /** Not the service (an in-process `gatehouse run`): writes a chain of its own (chain-lock.ts). */
  cli?: boolean;
}): AuditTrail {
  const settings = auditSettings(opts.env, opts.cwd, opts.config);
  if (!settings.dir) {
    opts.log('info', `no audit file: ${settings.why ?? 'turned off'} (audit events go to the log only)`);
    return { settings, wrap: (base) => base, hidden: [], close: () => undefined };
  }
  const key = loadAuditKey(settings, { create: true, warn: (m) => opts.log('warn', m) });
  const forget = registerOwnSecret(key.toString('utf8'));
  const claim = opts.cli ? claimCliChain(settings.dir, settings.chain) : { chain: settings.chain, release: () => undefined };
  const writer = new ChainWriter({ dir: settings.dir, chain: claim.chain, key, maxBytes: settings.maxBytes, ...(opts.now ? { now: opts.now } : {}) });
  if (writer.warning) opts.log('warn', writer.warning);
  let closed = false;
  return {
    settings,
    hidden: [settings.dir, ...(settings.keyFile ? [settings.keyFile] : [])],
    wrap: (base) => (e) => {
      base(e);
      if (closed) return;
      try {
        writer.append(e);
      } catch (err) {
        opts.log('error', `could not append to the audit file in ${settings.dir}: ${messageOf(err)}`);
      }
    },
    close: () => {
      closed = true;
      writer.close();
      claim.release();
      forget();
    },
  };
}
