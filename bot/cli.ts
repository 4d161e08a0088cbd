/**
 * The command line: `gatehouse [start]` runs the bot; `gatehouse policy check ...` explains the gate.
 * `runCli` returns an exit code instead of exiting, so tests drive the real start path.
 *
 * Start order: config (a bad one exits 1 before anything connects) -> store -> model client ->
 * adapters (a chat platform per token in the environment; none: the terminal chat) -> HTTP server
 * (only when a chat platform is enabled) -> runs waiting from before a restart continue.
 * The log (bot/log.ts) goes to stdout, or in the terminal chat to stderr, where it shows errors only
 * when stderr is the chat's screen.
 */
import type { Readable, Writable } from 'node:stream';
import { ConsoleAdapter } from '../adapters/console/adapter.js';
import type { Adapter } from '../adapters/types.js';
import { createAnthropicModel } from '../agent/model.js';
import { builtinToolNames } from '../agent/tools/catalog.js';
import { createGatehouse, type Gatehouse } from './app.js';
import { auditTo, createLogger, levelRank, secretValues, type Log } from './log.js';
import { ConfigError, formatConfigError, loadConfig, type Config } from './config.js';
import { startHttpServer, type HttpRoute, type HttpServer } from './http.js';
import { createPlatformAdapters } from './platforms.js';
import { policyCommand } from './policy-command.js';
import { openStorage } from './storage.js';

export interface CliIO {
  env: Record<string, string | undefined>;
  cwd: string;
  stdin?: Readable;
  stdout: Writable;
  stderr: Writable;
}

export interface RunningBot {
  gatehouse: Gatehouse;
  http?: HttpServer;
  /** Resolves when the bot was asked to stop (signal, or the terminal chat closed). */
  stopped: Promise<void>;
  stop(): Promise<void>;
}

const USAGE = `Usage:
  gatehouse [start]                  run the bot (chat platforms enabled by their tokens; none: a terminal chat)
  gatehouse policy check [--agent NAME] [--classify] [--json] -- "<command>"
                                     explain what the gate would do with a shell command, without running it
  gatehouse --help`;

export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') {
    io.stdout.write(USAGE + '\n');
    return 0;
  }
  if (cmd === 'policy') return policyCommand(rest, io);
  if (cmd !== undefined && cmd !== 'start') {
    io.stderr.write(`Unknown command "${cmd}".\n${USAGE}\n`);
    return 2;
  }
  // Listening from the start: a SIGTERM while connecting must still stop cleanly, not kill the
  // process half-way (the default action).
  let bot: RunningBot | undefined;
  let stopRequested = false;
  const onSignal = () => {
    stopRequested = true;
    void bot?.stop();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    try {
      bot = await startBot(io);
    } catch (err) {
      io.stderr.write((err instanceof ConfigError ? formatConfigError(err) : `Gatehouse could not start: ${(err as Error).message}`) + '\n');
      return 1;
    }
    if (stopRequested) void bot.stop();
    await bot.stopped;
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export function readConfig(io: Pick<CliIO, 'env' | 'cwd'>): Config {
  return loadConfig({ env: io.env, cwd: io.cwd, knownTools: builtinToolNames() });
}

/**
 * Starts everything; throws (ConfigError or a start-up failure that says what to do). `log`, when
 * given, replaces the structured log (tests, benches).
 */
export async function startBot(io: CliIO, log?: (level: 'info' | 'warn' | 'error', msg: string) => void): Promise<RunningBot> {
  const config = readConfig(io);
  // In the terminal chat the log shares the screen with the conversation: there it shows errors
  // only. Sent elsewhere (stderr redirected to a file or a pipe), it is the full log.
  const terminalChat = !Object.values(config.platforms).some(Boolean);
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
  const audit = log ? auditTo(out) : logger.audit;
  audit({ event: 'config_loaded', file: config.configFile ?? null, agents: Object.keys(config.agents), platforms: Object.entries(config.platforms).filter(([, v]) => Boolean(v)).map(([k]) => k) });
  const model = createAnthropicModel({
    // A compatible local server may not need a key; config already demanded one when there is no base URL.
    apiKey: config.anthropic.apiKey ?? 'not-needed',
    ...(config.anthropic.baseURL ? { baseURL: config.anthropic.baseURL } : {}),
    onRetry: (r) => out('warn', `model call failed (${r.code}); retry ${r.attempt} in ${Math.round(r.delayMs)} ms`),
  });
  const storage = await openStorage(config.store);
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  let stopping: Promise<void> | undefined;

  const platform = createPlatformAdapters(config, out);
  const adapters: Adapter[] = [...platform.adapters];
  const chat = adapters.length > 0;
  if (!chat) {
    const consoleOpts: ConstructorParameters<typeof ConsoleAdapter>[0] = { output: io.stdout, onClose: () => void stop() };
    if (io.stdin) consoleOpts.input = io.stdin;
    adapters.push(new ConsoleAdapter(consoleOpts));
  }
  const gatehouse = await createGatehouse({ config, storage, model, adapters, log: out, audit });
  let http: HttpServer | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await gatehouse.stop();
      await http?.close();
      await storage.close();
      resolveStopped();
    })());
  try {
    if (chat) {
      const routes: HttpRoute[] = platform.routes();
      http = await startHttpServer({
        host: config.http.host,
        port: config.http.port,
        routes,
        health: () => ({ platforms: adapters.map((a) => a.platform) }),
      });
      out('info', `HTTP server on http://${config.http.host}:${http.port} (/healthz)`);
    }
    await gatehouse.start();
  } catch (err) {
    await stop();
    throw err;
  }
  out('info', `Gatehouse started: ${adapters.map((a) => a.platform).join(', ')}; agents: ${Object.keys(config.agents).join(', ')}`);
  const running: RunningBot = { gatehouse, stopped, stop };
  if (http) running.http = http;
  return running;
}
