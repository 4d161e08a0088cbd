/**
 * Shared bits of the MCP tests: the fixture server (a real SDK McpServer, test/fakes/mcp-server.mjs)
 * run as a child process over stdio or Streamable HTTP, and process checks on real pids.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { McpServerConfig } from '../../../agent/mcp/config.js';
import { assertParentsOpen } from '../../helpers/open-parents.mjs';

export const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fakes', 'mcp-server.mjs');
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/**
 * What a boxed fixture needs to see, as an operator would name it in `readPaths`: the server's folder
 * and the project's node_modules it imports the SDK from (none of them holds the bot's files).
 */
export const FIXTURE_READ_PATHS: readonly string[] = [dirname(FIXTURE), join(ROOT, 'node_modules')];

/**
 * The box runs as uid 65534 when tests run as root, and bwrap opens readPaths with that user's rights:
 * a checkout inside a root-only folder (a clone in `mktemp -d`, mode 0700) could not be bound.
 * globalSetup opens the checkout's parents for the whole run (test/helpers/open-parents.mjs); every
 * file importing these helpers checks that first, so a closed folder fails by name, not as a box error.
 */
beforeAll(() => assertParentsOpen());

/** The fixture over stdio; on the host unless `sandbox` says bubblewrap (box tests pass it, with FIXTURE_READ_PATHS). */
export function stdioServer(env: Record<string, string> = {}, timeoutMs = 20_000, sandbox: 'none' | 'bubblewrap' = 'none', network = false): McpServerConfig {
  return {
    kind: 'stdio',
    command: process.execPath,
    args: [FIXTURE],
    env,
    timeoutMs,
    sandbox,
    network,
    ...(sandbox === 'bubblewrap' ? { readPaths: [...FIXTURE_READ_PATHS] } : {}),
  };
}

/** True while `pid` is a live process (a zombie waiting to be reaped counts as gone). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The pids the fixture wrote at each start (FIXTURE_STARTS_FILE). */
export function starts(file: string): number[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : [];
}

/** Starts the fixture in HTTP mode; resolves with its URL once it listens. */
export async function startHttpServer(env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [FIXTURE, '--http'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`fixture http server exited (${code})`)));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    stop: async () => {
      if (child.exitCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    },
  };
}
