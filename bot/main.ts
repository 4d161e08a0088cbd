#!/usr/bin/env node
/** The `gatehouse` executable: everything happens in cli.ts, which tests drive directly. */
import { runCli } from './cli.js';

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
});
process.exit(code);
