#!/usr/bin/env node
/** The `gatehouse` executable: everything happens in cli.ts, which tests drive directly. */

// A stop asked for while the modules load (a second or so from source) would otherwise take the
// default action and kill the process by signal half-way through start-up.
let stopWhileLoading: NodeJS.Signals | undefined;
const onEarlySignal = (signal: NodeJS.Signals) => {
  // runCli listening too (a signal in the hand-over below) handles it itself: handed on again, it
  // would count as a second signal, which exits at once.
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
// `gatehouse run` loads only what it needs: attached to a running service it never loads the agent.
const { runCli } = process.argv[2] === 'run' ? { runCli: (argv: string[], io: Parameters<typeof import('./cli.js').runCli>[1]) => import('./headless/command.js').then((c) => c.runCommand(argv.slice(1), io)) } : await import('./cli.js');

const exitCode = runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
});
// runCli listens for signals from its first line. A signal that came while loading may still be
// waiting in the event loop, addressed to the early listener: let two loop turns deliver it
// before that listener goes, then hand it on to runCli's.
await new Promise((r) => setImmediate(r));
await new Promise((r) => setImmediate(r));
process.off('SIGINT', onEarlySignal);
process.off('SIGTERM', onEarlySignal);
if (stopWhileLoading) process.emit(stopWhileLoading, stopWhileLoading);
process.exit(await exitCode);
