#!/usr/bin/env node
/** The `gatehouse` executable: everything happens in cli.ts, which tests drive directly. */
import { runCli } from './cli/index.js';

// A stop asked for while a command's modules load (a second or so for the bot) would otherwise take
// the default action and kill the process by signal half-way through start-up.
let stopWhileLoading: NodeJS.Signals | undefined;
const onEarlySignal = (signal: NodeJS.Signals) => {
  // The command listening too (a signal in the hand-over below) handles it itself: handed on again,
  // it would count as a second signal, which exits at once.
  if (process.listenerCount(signal) > 1) return;
  stopWhileLoading ??= signal;
};
process.on('SIGINT', onEarlySignal);
process.on('SIGTERM', onEarlySignal);
// `ps` and /proc show "gatehouse" from here on (and a test knows the signal handling is in place).
process.title = 'gatehouse';
// `gatehouse run`: stdout carries the result alone; a library that logs through console goes to stderr.
if (process.argv[2] === 'run') {
  for (const m of ['log', 'info', 'debug'] as const) console[m] = (...a: unknown[]) => console.error(...a);
}

/**
 * Once the command is loaded and running (a command that handles signals listens from its first
 * line): a signal that came while loading may still be waiting in the event loop, addressed to the
 * early listener, so two loop turns deliver it before that listener goes; then it is sent again, to
 * the command's listener or, for a command without one, the default action.
 */
async function handOver(): Promise<void> {
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  process.off('SIGINT', onEarlySignal);
  process.off('SIGTERM', onEarlySignal);
  if (stopWhileLoading) process.kill(process.pid, stopWhileLoading);
}

const exitCode = runCli(
  process.argv.slice(2),
  { env: process.env, cwd: process.cwd(), stdin: process.stdin, stdout: process.stdout, stderr: process.stderr },
  { running: () => void handOver() },
);
process.exit(await exitCode);
