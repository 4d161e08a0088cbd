/**
 * The log: one structured line per event (pino). JSON when the destination is not a terminal (files,
 * journald, Docker), a readable line per event when it is (pino-pretty). The level comes from
 * GATEHOUSE_LOG_LEVEL (bot/config/env.ts checks it).
 *
 * Contract:
 * - `Log` (agent/log.ts, the one logger interface) keeps the call shape the whole code base uses:
 *   `log(level, msg, fields?)`; `log.child(bindings)` is a pino child logger, every line of it carrying
 *   the bindings (a run's conversation, agent and runId).
 * - The audit trail (agent/audit.ts) is written at `info`, one line per event, its fields at the top
 *   level (`event`, `conversation`, `tool`, ...), so `jq 'select(.event)'` reads it back.
 * - No secret reaches the destination: every secret value of the environment (tokens, keys,
 *   passwords: see `secretValues`) is replaced by [redacted] in each line before it is written, and
 *   fields named like secrets are redacted by pino. Message text is logged at `debug` only.
 */
import type { Writable } from 'node:stream';
import { pino, type Logger as Pino } from 'pino';
import { createRequire } from 'node:module';
import type { prettyFactory as PrettyFactory } from 'pino-pretty';
import { auditMessage, type Audit } from '../../agent/audit.js';
import type { Log } from '../../agent/log.js';

import { LOG_LEVELS, type LogLevelSetting } from './log-levels.js';

export type { LogLevelSetting } from './log-levels.js';
export type { Log };

/** trace 0 ... silent 6: a lower rank logs more. */
export function levelRank(level: LogLevelSetting): number {
  return LOG_LEVELS.indexOf(level);
}

export interface Logger {
  log: Log;
  audit: Audit;
}

export interface LoggerOptions {
  level: LogLevelSetting;
  destination: Writable;
  /** Readable lines instead of JSON (default: when the destination is a terminal). */
  pretty?: boolean;
  /** Values that must never be written (see secretValues). */
  secrets?: readonly string[];
}

/** Field names whose values are never logged, at any level. */
const REDACT_PATHS = ['token', 'apiKey', 'password', 'secret', 'authorization', '*.token', '*.apiKey', '*.password', '*.secret', '*.authorization'];

export function createLogger(opts: LoggerOptions): Logger {
  const pretty = opts.pretty ?? (opts.destination as { isTTY?: boolean }).isTTY === true;
  const secrets = [...new Set(opts.secrets ?? [])].filter((s) => s.length >= 6).sort((a, b) => b.length - a.length);
  const scrub = (line: string): string => {
    let out = line;
    for (const s of secrets) if (out.includes(s)) out = out.split(s).join('[redacted]');
    return out;
  };
  const format = pretty
    ? loadPretty()({ colorize: (opts.destination as { isTTY?: boolean }).isTTY === true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' })
    : undefined;
  const destination = {
    write(line: string): void {
      const clean = scrub(line);
      opts.destination.write(format ? format(clean) : clean);
    },
  };
  const p: Pino = pino(
    {
      level: opts.level,
      base: undefined, // pid and hostname are the service manager's business
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  const log = wrap(p);
  return { log, audit: auditTo(log) };
}

function wrap(p: Pino): Log {
  const log: Log = (level, msg, fields) => {
    if (fields) p[level](fields, msg);
    else p[level](msg);
  };
  log.child = (bindings) => wrap(p.child(bindings));
  return log;
}

/** The audit trail on top of any Log: one info line per event, its fields kept structured. */
export function auditTo(log: Log): Audit {
  return (e) => log('info', auditMessage(e), { ...e });
}

/**
 * The environment's secret values: variables whose name says token, key, secret or password, and
 * the credentials inside URLs (user:password@). Scrubbed from every log line.
 */
export function secretValues(env: Record<string, string | undefined>): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!value) continue;
    if (/TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL/i.test(name)) out.push(value);
    const m = /^[a-z][a-z0-9+.-]*:\/\/([^/@\s]+)@/i.exec(value);
    if (m?.[1]) {
      out.push(m[1]);
      const pass = m[1].split(':')[1];
      if (pass) out.push(pass);
    }
  }
  return out;
}

/** pino-pretty, loaded only for a terminal (a service's log is JSON lines and never needs it). */
function loadPretty(): typeof PrettyFactory {
  return (createRequire(import.meta.url)('pino-pretty') as { prettyFactory: typeof PrettyFactory }).prettyFactory;
}
