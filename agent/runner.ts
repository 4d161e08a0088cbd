/** The runner moved to ./run/ (queueing in run/turn-queue.ts, the phases of one run in run/execute-run.ts). */
export * from './run/runner.js';
