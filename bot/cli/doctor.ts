/**
 * `gatehouse doctor [--json]`: checks what a start needs and prints what to fix, without starting
 * anything or changing anything (bot/cli/doctor-checks.ts has the checks).
 *
 *   config     gatehouse.yaml and the environment load (every problem listed by its key)
 *   sandbox    bubblewrap starts the box each command-running agent gets, with its limits in force
 *   store      the SQLite folder (0700) and files (0600) and their owner, or a PostgreSQL server's port
 *   model API, telegram, slack, discord
 *              which tokens are set, and whether each API host resolves (DNS, a short timeout)
 *   http       GATEHOUSE_HTTP_HOST:PORT free, or held by a running Gatehouse
 *
 * Contract: exit 0 when no check fails (notes do not fail), 1 otherwise, 2 for bad usage. The text
 * has one line per check (`ok`, `FAIL`, `note`), a `fix:` line under each failure, and a summary.
 * `--json`: one JSON array of { name, status, detail, fix? } instead. Never prints a secret.
 */
import { builtinToolNames } from '../../agent/tools/catalog.js';
import type { CliIO } from './io.js';
import { ConfigError, loadConfig, type Config } from '../config/index.js';
import { loadDotEnv, readEnv } from '../config/env.js';
import { httpCheck, platformChecks, sandboxChecks, storeCheck, type CheckResult } from './doctor-checks.js';
import { dataDirOf } from '../service/reload.js';
import { messageOf } from '../../agent/log.js';

const USAGE = 'Usage: gatehouse doctor [--json]   (checks the config, sandbox, store, tokens and HTTP port; exit 1 when one fails)';
/** DNS look-ups, TCP connects, the /healthz GET: each gives up after this. */
const NET_TIMEOUT_MS = 3000;

function configCheck(io: CliIO): { result: CheckResult; config?: Config } {
  try {
    const config = loadConfig({ env: { ...io.env }, cwd: io.cwd, knownTools: builtinToolNames() });
    const agents = Object.keys(config.agents).join(', ');
    return {
      result: {
        name: 'config',
        status: 'ok',
        detail: `${config.configFile ?? 'no gatehouse.yaml: built-in defaults'}${config.envFile ? ` and ${config.envFile}` : ''} load; agents: ${agents}; ${config.routes.length} route(s)`,
      },
      config,
    };
  } catch (err) {
    if (!(err instanceof ConfigError))
      return { result: { name: 'config', status: 'fail', detail: `could not be loaded: ${messageOf(err)}`, fix: 'see the error above' } };
    const where = err.configFile ?? 'gatehouse.yaml or .env';
    return {
      result: {
        name: 'config',
        status: 'fail',
        detail: `${err.problems.length} problem${err.problems.length === 1 ? '' : 's'}:\n${err.problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}`,
        fix: `change each key or variable named above in ${where} (gatehouse.example.yaml and docs/configuration.md document every key)`,
      },
    };
  }
}

async function runDoctor(io: CliIO, timeoutMs = NET_TIMEOUT_MS): Promise<CheckResult[]> {
  const { result, config } = configCheck(io);
  // The environment's settings even when the YAML is broken: the other checks need only them.
  const env = { ...io.env };
  loadDotEnv(env, io.cwd);
  const settings = readEnv(env, io.cwd).settings;
  const results: CheckResult[] = [result];
  if (config) results.push(...(await sandboxChecks(config)));
  else results.push({ name: 'sandbox', status: 'note', detail: 'not checked: the config does not load' });
  results.push(await storeCheck(settings.store, timeoutMs));
  results.push(...(await platformChecks(settings, timeoutMs)));
  results.push(await httpCheck(settings.http, dataDirOf({ store: settings.store }, io.cwd), timeoutMs));
  return results;
}

const LABEL: Record<CheckResult['status'], string> = { ok: 'ok  ', fail: 'FAIL', note: 'note' };

export async function doctorCommand(args: string[], io: CliIO): Promise<number> {
  const json = args.includes('--json');
  if (args.some((a) => a !== '--json')) {
    io.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const results = await runDoctor(io);
  const failed = results.filter((r) => r.status === 'fail');
  if (json) {
    io.stdout.write(JSON.stringify(results, null, 2) + '\n');
    return failed.length > 0 ? 1 : 0;
  }
  for (const r of results) {
    const [first, ...more] = r.detail.split('\n');
    io.stdout.write(`${LABEL[r.status]}  ${r.name}: ${first}\n`);
    for (const line of more) io.stdout.write(`        ${line}\n`);
    if (r.fix) io.stdout.write(`        fix: ${r.fix}\n`);
  }
  io.stdout.write(
    failed.length === 0
      ? `\nAll ${results.length} checks passed${results.some((r) => r.status === 'note') ? ' (see the notes)' : ''}.\n`
      : `\n${failed.length} of ${results.length} checks failed: ${[...new Set(failed.map((r) => r.name))].join(', ')}.\n`,
  );
  return failed.length > 0 ? 1 : 0;
}
