/**
 * The one logger interface of the code base. bot/service/log.ts implements it with pino (the only place
 * pino is imported); agent/, adapters/ (through adapters/types.ts) and bot/ are given a `Log`.
 *
 * Contract:
 * - `log(level, msg, fields?)`: one line; `fields` go to the top level of the JSON line.
 * - `child(bindings)` (optional on a Log): a logger whose every line carries `bindings` (a run's
 *   `conversation`, `agent` and `runId`); `childLog` gives one for any Log (pino's own child logger
 *   when the Log has one, else the bindings merged into each line's fields).
 * - Logging never throws into the caller.
 * - `fallbackLog` is what a module uses when it was given no Log (tests, tools): warn and above as
 *   one JSON line on stderr, so a failure is never silent; everything below is dropped.
 */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
export type LogFields = Record<string, unknown>;

export interface Log {
  (level: LogLevel, msg: string, fields?: LogFields): void;
  child?(bindings: LogFields): Log;
}

export function childLog(log: Log, bindings: LogFields): Log {
  if (log.child) return log.child(bindings);
  const child: Log = (level, msg, fields) => log(level, msg, fields ? { ...bindings, ...fields } : bindings);
  child.child = (more) => childLog(log, { ...bindings, ...more });
  return child;
}

const LOUD = new Set<LogLevel>(['warn', 'error', 'fatal']);

export const fallbackLog: Log = (level, msg, fields) => {
  if (!LOUD.has(level)) return;
  try {
    process.stderr.write(JSON.stringify({ level, time: new Date().toISOString(), ...fields, msg }) + '\n');
  } catch {
    // A log line is not worth a crash (a closed stderr, an unserialisable field).
  }
};

/** A Log whose messages start with `prefix` (e.g. "[telegram] "); its children keep the prefix. */
export function prefixedLog(log: Log, prefix: string): Log {
  const out: Log = (level, msg, fields) => log(level, prefix + msg, fields);
  out.child = (bindings) => prefixedLog(childLog(log, bindings), prefix);
  return out;
}

/** The message of anything thrown: an Error's message, or the thrown value as text (never "undefined"). */
export function messageOf(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}
