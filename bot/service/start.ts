/**
 * `gatehouse start` / `gatehouse serve`: the bot itself. Loaded only for these commands (bot/cli/index.ts),
 * and it loads the platform libraries only for the platforms configured (bot/service/platforms.ts).
 *
 *   gatehouse [start]      run the bot: chat platforms enabled by their tokens; with none, a terminal chat
 *   gatehouse serve        run as a service: never the terminal chat (no token: /healthz only, a warning)
 *
 * Start order: config (a bad one exits 1 before anything connects) -> store -> model client ->
 * adapters -> HTTP server (/healthz in every mode; in the terminal chat a port in use is only a
 * warning) -> runs waiting from before a restart continue -> pid file in the data folder -> the attach
 * socket and token for `gatehouse run` (bot/headless/attach.ts), closed first at stop.
 * Signals: SIGTERM / SIGINT drain and stop cleanly (exit 0; in the terminal chat on a TTY the first SIGINT, Ctrl-C, cancels the running turn instead and the second stops): /readyz answers 503 "draining", input
 * stops, the held platform connections and their leadership are handed over at once (a standby
 * replica takes them), running turns get the runner's grace to reach a checkpoint; a second signal
 * exits at once (130 / 143). SIGHUP re-reads the config (bot/service/reload.ts): a bad
 * file is logged with the same errors as at start and the old config stays in force.
 * The log (bot/service/log.ts) goes to stdout, or in the terminal chat to stderr, where it shows errors only
 * when stderr is the chat's screen.
 */
import { ConsoleAdapter } from '../../adapters/console/adapter.js';
import type { Adapter } from '../../adapters/types.js';
import { createAnthropicModel, loadModelSdk } from '../../agent/model/anthropic.js';
import { builtinToolNames } from '../../agent/tools/catalog.js';
import { createGatehouse, type Gatehouse } from './app.js';
import type { CliIO } from '../cli/io.js';
import { auditTo, createLogger, levelRank, secretValues, type Log } from './log.js';
import { ConfigError, formatConfigError, loadConfig, type Config } from '../config/index.js';
import { startHttpServer, type HttpServer, type Readiness } from './http.js';
import { CONNECTIONS_ROLE } from './leadership.js';
import { createPlatformAdapters } from './platforms.js';
import { checkWorkspaces, dataDirOf, prepareWorkspaces, reloadConfig, removePidFile, writePidFile, writeReloadStatus, type ReloadResult } from './reload.js';
import { openStore } from './storage.js';
import { startAttachServer, type AttachServer } from '../headless/attach.js';
import { openAuditTrail } from '../audit/trail.js';
import { configEntries, hostDecideRoute, reloadEvent } from '../audit/service.js';
import { gatehouseVersion } from '../cli/io.js';
import { SEMCONV_VERSION } from '../telemetry/semconv.js';
import { requesterApprovalLine } from '../config/requester-approval.js';
import { approvalDeliveryLines } from '../config/approval-delivery.js';
import { messageOf } from '../../agent/log.js';

export interface RunningBot {
  gatehouse: Gatehouse;
  http?: HttpServer;
  /** Resolves when the bot was asked to stop (signal, or the terminal chat closed). */
  stopped: Promise<void>;
  /** `reason` goes into the audit trail's service_stopped (a signal's name, ...). */
  stop(reason?: string): Promise<void>;
  /** Re-reads the configuration (SIGHUP); logs and returns the outcome. */
  reload(): ReloadResult;
  /** The terminal chat's Ctrl-C (adapters/console): "quit" when the bot should stop. */
  interrupt?: () => 'cancelled' | 'hint' | 'quit';
}

/** The start / serve command: runs the bot until it is stopped; 1 when it cannot start. */
export async function runBot(mode: StartMode, io: CliIO): Promise<number> {
  // Listening from the start: a SIGTERM while connecting must still stop cleanly, not kill the
  // process half-way (the default action). SIGHUP's default would kill it too.
  let bot: RunningBot | undefined;
  let stopRequested = false;
  const onSignal = (signal: NodeJS.Signals) => {
    // In the terminal chat Ctrl-C cancels the running turn first; a second one stops the bot.
    if (signal === 'SIGINT' && !stopRequested && bot?.interrupt && bot.interrupt() !== 'quit') return;
    if (stopRequested) {
      // A second signal: the operator will not wait for the drain. What was acknowledged is stored
      // (queued turns, run records); the next start (or another replica) continues it.
      io.stderr.write(`${signal} again: exiting at once without waiting for running turns\n`);
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }
    stopRequested = true;
    void bot?.stop(signal);
  };
  const onHangup = () => {
    bot?.reload();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onHangup);
  try {
    try {
      bot = await startBot(io, undefined, mode);
    } catch (err) {
      io.stderr.write((err instanceof ConfigError ? formatConfigError(err) : `Gatehouse could not start: ${messageOf(err)}`) + '\n');
      return 1;
    }
    if (stopRequested) void bot.stop();
    await bot.stopped;
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onHangup);
  }
}

/** start: the terminal chat when no chat platform is set up. serve: never the terminal chat. */
export type StartMode = 'start' | 'serve';

export function readConfig(io: Pick<CliIO, 'env' | 'cwd'>): Config {
  return loadConfig({ env: io.env, cwd: io.cwd, knownTools: builtinToolNames() });
}

/**
 * Starts everything; throws (ConfigError or a start-up failure that says what to do). `log`, when
 * given, replaces the structured log (tests, benches).
 */
export async function startBot(io: CliIO, log?: Log, mode: StartMode = 'start'): Promise<RunningBot> {
  const config = readConfig(io);
  // Checked now, created once the store is open: a start that fails on its store leaves no folder.
  checkWorkspaces(config);
  // In the terminal chat the log shares the screen with the conversation: there it shows errors
  // only. Sent elsewhere (stderr redirected to a file or a pipe), it is the full log.
  const terminalChat = !Object.values(config.platforms).some(Boolean) && mode === 'start';
  const sharesScreen = terminalChat && ((io.stderr as { isTTY?: boolean }).isTTY === true || io.stderr === io.stdout);
  const logger = createLogger({
    level: sharesScreen && levelRank(config.logLevel) < levelRank('error') ? 'error' : config.logLevel,
    destination: terminalChat ? io.stderr : io.stdout,
    secrets: secretValues(io.env),
  });
  const out: Log = log
    ? (level, msg) => {
        if (level === 'info' || level === 'warn' || level === 'error') log(level, msg);
        else if (level === 'fatal') log('error', msg);
      }
    : logger.log;
  // prom-client (and OpenTelemetry, when configured) load with the bot, not with every CLI command.
  const { createTelemetry } = await import('../telemetry/index.js');
  const telemetry = await createTelemetry({ ...(config.traces ? { traces: config.traces } : {}), version: gatehouseVersion(), log: out });
  if (config.traces) {
    const u = new URL(config.traces.url);
    out(
      'info',
      `traces: OTLP/HTTP to ${u.origin}${u.pathname} (GenAI conventions ${SEMCONV_VERSION}; message content ${config.traces.captureContent ? 'captured' : 'not captured'})`,
    );
  }
  const model = telemetry.measuredModel(
    createAnthropicModel({
      // A compatible local server may not need a key; config already demanded one when there is no base URL.
      apiKey: config.anthropic.apiKey ?? 'not-needed',
      ...(config.anthropic.baseURL ? { baseURL: config.anthropic.baseURL } : {}),
      onRetry: (r) => out('warn', `model call failed (${r.code}); retry ${r.attempt} in ${Math.round(r.delayMs)} ms`),
    }),
  );
  // Exclusive: a second start on this store fails here, before it writes a pid file, socket or token.
  const store = telemetry.measuredStore(await openStore(config.store, { exclusive: true, log: out }));
  try {
    prepareWorkspaces(config);
  } catch (err) {
    await store.close();
    throw err;
  }
  // The audit file (bot/audit/): every audit event is appended there as well as logged. Opened
  // after the store, which creates and checks the data folder it lives in (0700, writable).
  let trail: ReturnType<typeof openAuditTrail>;
  try {
    trail = openAuditTrail({ env: io.env, cwd: io.cwd, config, log: out });
  } catch (err) {
    await store.close();
    throw err;
  }
  const audit = trail.wrap(log ? auditTo(out) : logger.audit);
  audit({
    event: 'config_loaded',
    file: config.configFile ?? null,
    agents: Object.keys(config.agents),
    platforms: Object.entries(config.platforms)
      .filter(([, v]) => Boolean(v))
      .map(([k]) => k),
    ...configEntries(config),
  });
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  let stopping: Promise<void> | undefined;

  const platform = await createPlatformAdapters(config, out);
  const adapters: Adapter[] = [...platform.adapters];
  let terminal: ConsoleAdapter | undefined;
  if (terminalChat) {
    const consoleOpts: ConstructorParameters<typeof ConsoleAdapter>[0] = { output: io.stdout, onClose: () => void stop('the terminal chat closed') };
    if (io.stdin) consoleOpts.input = io.stdin;
    terminal = new ConsoleAdapter(consoleOpts);
    adapters.push(terminal);
  } else if (!Object.values(config.platforms).some(Boolean)) {
    out('warn', 'no chat platform is set up (set TELEGRAM_BOT_TOKEN in .env or the environment); serving /healthz only until then');
  }
  // Replicas on PostgreSQL elect the one that holds the single-holder connections (bot/service/leadership.ts).
  const leadership =
    store.engine === 'postgres' && adapters.some((a) => a.held)
      ? store.leadership(CONNECTIONS_ROLE, {
          ...(config.leaderRetryMs !== undefined ? { retryEveryMs: config.leaderRetryMs } : {}),
          log: out,
        })
      : undefined;
  const gatehouse = await createGatehouse({
    config,
    store,
    model,
    adapters,
    log: out,
    audit,
    ownFiles: trail.hidden,
    telemetry: telemetry.telemetry,
    ...(leadership ? { leadership } : {}),
  });
  telemetry.metrics.setSources({
    pendingApprovals: async () => (await store.approvals.allPending(Date.now())).length,
    queue: () => gatehouse.runner.queueStats(),
  });
  let http: HttpServer | undefined;
  const dataDir = dataDirOf(config, io.cwd);
  let pidFile: string | undefined;
  let attach: AttachServer | undefined;
  let configLoadedAt = new Date().toISOString();
  let starting: Promise<void> | undefined;
  let started = false;
  const ready = async (): Promise<Readiness> => {
    const notReady: string[] = [];
    const draining = stopping !== undefined;
    if (draining) notReady.push('draining: this replica is shutting down');
    else if (!started) notReady.push('starting');
    let storeState = 'ok';
    try {
      await store.ping();
    } catch (err) {
      storeState = 'unreachable';
      notReady.push(`store ${store.description} unreachable: ${messageOf(err)}`);
    }
    const held = gatehouse.connections();
    if (held.role !== 'standby') {
      for (const c of held.connections) if (!c.up) notReady.push(`${c.name} is not connected`);
    }
    return { notReady, draining, store: storeState, role: held.role, connections: held.connections };
  };
  const stop = (stopReason = 'asked to stop'): Promise<void> =>
    (stopping ??= (async () => {
      // A stop asked for while starting (the terminal's input ended at once) lets the start finish
      // first, so nothing it still reads meets a closed store.
      await starting?.catch(() => undefined);
      await attach?.close();
      await gatehouse.stop();
      await http?.close();
      await store.close();
      await telemetry.shutdown();
      audit({ event: 'service_stopped', pid: process.pid, reason: stopReason });
      trail.close();
      if (pidFile) removePidFile(pidFile);
      resolveStopped();
    })());
  try {
    try {
      http = await startHttpServer({
        host: config.http.host,
        port: config.http.port,
        routes: platform.routes(),
        health: () => ({ mode: terminalChat ? 'terminal' : 'service', platforms: adapters.map((a) => a.platform), configLoadedAt }),
        ready,
        ...(config.metrics.enabled
          ? { metrics: { render: () => telemetry.metrics.render(), ...(config.metrics.token !== undefined ? { token: config.metrics.token } : {}) } }
          : {}),
      });
      out(
        'info',
        `HTTP server on http://${config.http.host}:${http.port} (/healthz, /readyz${config.metrics.enabled ? `, /metrics${config.metrics.token !== undefined ? ' with its bearer token' : ''}` : ''})`,
      );
    } catch (err) {
      // A webhook or a health check depends on it in service mode; the terminal chat does not.
      if (!terminalChat) throw err;
      out('warn', `no /healthz: ${messageOf(err)}`);
    }
    starting = gatehouse.start();
    await starting;
    started = true;
  } catch (err) {
    await stop('start-up failed');
    throw err;
  }
  if (dataDir) {
    try {
      pidFile = writePidFile(dataDir);
    } catch (err) {
      out('warn', `could not write the pid file in ${dataDir} (gatehouse reload will not find this process; SIGHUP still works): ${messageOf(err)}`);
    }
    try {
      attach = await startAttachServer({ dir: dataDir, runs: gatehouse.headless, log: out, routes: { '/decide': hostDecideRoute(gatehouse.broker) } });
    } catch (err) {
      out('warn', `gatehouse run cannot attach to this service (runs will load the agent themselves): ${messageOf(err)}`);
    }
  }
  out('info', `Gatehouse started: ${adapters.map((a) => a.platform).join(', ') || 'no chat platform'}; agents: ${Object.keys(config.agents).join(', ')}`);
  const requesterLine = requesterApprovalLine(
    config.agents,
    adapters.map((a) => a.platform),
  );
  if (requesterLine) out('info', requesterLine);
  for (const line of approvalDeliveryLines(
    config.agents,
    adapters.map((a) => a.platform),
  ))
    out('info', line);
  audit({
    event: 'service_started',
    mode,
    platforms: adapters.map((a) => a.platform),
    agents: Object.keys(config.agents),
    pid: process.pid,
    version: gatehouseVersion(),
  });
  // Ready without it; loaded now so the first message does not wait for it (a failure shows there).
  void loadModelSdk().catch(() => undefined);
  const reload = (): ReloadResult => {
    const result = reloadConfig(config, () => readConfig(io));
    if (result.ok) configLoadedAt = new Date().toISOString();
    audit(reloadEvent(result, config));
    out(result.ok ? (result.needsRestart.length > 0 ? 'warn' : 'info') : 'error', result.message);
    if (dataDir) writeReloadStatus(dataDir, { pid: process.pid, at: Date.now(), ok: result.ok, message: result.message });
    return result;
  };
  const running: RunningBot = { gatehouse, stopped, stop, reload };
  if (http) running.http = http;
  // Ctrl-C at a terminal (stdin a TTY) cancels the running turn first; a SIGINT to a chat on pipes
  // (a supervisor, a script, `kill -INT`) stops the bot as it stops a service.
  if (terminal && ((io.stdin ?? process.stdin) as { isTTY?: boolean }).isTTY === true) running.interrupt = () => terminal.interrupt();
  return running;
}
