/**
 * `gatehouse run` without a running service: the agent is loaded in this process, on the same store
 * (SQLite file) the service uses, with no adapter started and no waiting chat run resumed. The log
 * goes to stderr only (stdout is the result's): at warn and above, as `{"type":"log"}` event lines
 * when --events is on so the stream stays NDJSON.
 */
import type { Writable } from 'node:stream';
import { createAnthropicModel } from '../../agent/model/anthropic.js';
import { createGatehouse } from '../service/app.js';
import type { CliIO } from '../cli/io.js';
import type { Config } from '../config/index.js';
import { auditTo, createLogger, levelRank, secretValues, type Log } from '../service/log.js';
import { openStore } from '../service/storage.js';
import { openAuditTrail, type AuditTrail } from '../audit/trail.js';
import type { HeadlessMessage, HeadlessRequest, HeadlessResponse, HeadlessResult } from './runs.js';

export async function runInProcess(
  io: CliIO,
  config: Config,
  request: HeadlessRequest,
  onMessage: (m: HeadlessMessage) => void,
  setRespond: (r: (x: HeadlessResponse) => Promise<{ accepted: boolean; notice?: string }>) => void,
  eventsOn: boolean,
): Promise<HeadlessResult> {
  const log = stderrLog(io.stderr, config, io.env, eventsOn);
  const model = createAnthropicModel({
    apiKey: config.anthropic.apiKey ?? 'not-needed',
    ...(config.anthropic.baseURL ? { baseURL: config.anthropic.baseURL } : {}),
    onRetry: (r) => log('warn', `model call failed (${r.code}); retry ${r.attempt} in ${Math.round(r.delayMs)} ms`),
  });
  const store = await openStore(config.store, { log });
  let trail: AuditTrail | undefined;
  try {
    // Its audit events go to the audit file too, in a chain of its own (bot/audit/chain-lock.ts).
    trail = openAuditTrail({ env: io.env, cwd: io.cwd, config, log, cli: true });
    const gatehouse = await createGatehouse({
      config,
      store,
      model,
      adapters: [],
      log,
      audit: trail.wrap(auditTo(log)),
      ownFiles: trail.hidden,
      replica: false,
    });
    try {
      setRespond((r) => gatehouse.headless.respond(r));
      return await gatehouse.headless.run(request, onMessage);
    } finally {
      await gatehouse.stop({ graceMs: 0 });
    }
  } finally {
    trail?.close();
    await store.close();
  }
}

function stderrLog(stderr: Writable, config: Config, env: Record<string, string | undefined>, eventsOn: boolean): Log {
  const level = levelRank(config.logLevel) < levelRank('warn') ? 'warn' : config.logLevel;
  if (!eventsOn) return createLogger({ level, destination: stderr, secrets: secretValues(env) }).log;
  const secrets = secretValues(env).filter((s) => s.length >= 6);
  return (lvl, msg) => {
    if (levelRank(lvl) < levelRank(level)) return;
    let message = msg;
    for (const s of secrets) message = message.split(s).join('[redacted]');
    stderr.write(JSON.stringify({ type: 'log', level: lvl, message }) + '\n');
  };
}
