/**
 * `gatehouse acp`: an Agent Client Protocol server on stdio, so an editor (Zed, JetBrains, Neovim
 * clients) drives a Gatehouse agent.
 *
 *   gatehouse acp [--agent NAME] [--approval-policy read-only|low-risk|high-risk]
 *
 * Contract:
 * - stdout carries ACP frames (newline-delimited JSON-RPC) and nothing else; logs go to stderr.
 * - The agent runs in this process on the configured store (like `gatehouse run` without a
 *   service); sessions, prompts, approvals and cancel are ./sessions.ts.
 * - Exit 0 when the client closes stdin; 2 on a usage or config error (before any frame).
 */
import { Readable, Writable } from 'node:stream';
import { TIERS, type Tier } from '../../policies/tiers.js';
import type { CliIO } from '../cli/io.js';
import { messageOf } from '../../agent/log.js';

const ACP_USAGE = 'gatehouse acp [--agent NAME] [--approval-policy read-only|low-risk|high-risk]';

class UsageError extends Error {}

function parseAcpArgs(argv: string[]): { agent?: string; approvalPolicy?: Tier } {
  const out: { agent?: string; approvalPolicy?: Tier } = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const [flag, inline] = a.startsWith('--') && eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    const take = (): string => {
      if (inline !== undefined) return inline;
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${flag} needs a value`);
      return v;
    };
    if (flag === '--agent') out.agent = take();
    else if (flag === '--approval-policy') {
      const v = take();
      if (!(TIERS as readonly string[]).includes(v)) throw new UsageError(`--approval-policy must be one of ${TIERS.join(', ')}; got "${v}"`);
      out.approvalPolicy = v as Tier;
    } else throw new UsageError(`unknown argument ${a}`);
  }
  return out;
}

export async function acpCommand(argv: string[], io: CliIO): Promise<number> {
  const err = (line: string) => io.stderr.write(line + '\n');
  let args: ReturnType<typeof parseAcpArgs>;
  try {
    args = parseAcpArgs(argv);
  } catch (e) {
    err(`gatehouse acp: ${messageOf(e)}\nUsage: ${ACP_USAGE}`);
    return 2;
  }
  const { readConfig } = await import('../service/start.js');
  const { ConfigError, formatConfigError } = await import('../config/index.js');
  let config;
  try {
    config = readConfig(io);
  } catch (e) {
    if (e instanceof ConfigError) {
      err(formatConfigError(e));
      return 2;
    }
    throw e;
  }
  let agentName: string;
  if (args.agent !== undefined) {
    if (!Object.hasOwn(config.agents, args.agent)) {
      err(`gatehouse acp: no agent named "${args.agent}" (configured: ${Object.keys(config.agents).join(', ')})`);
      return 2;
    }
    agentName = args.agent;
  } else agentName = config.defaultAgent;
  if (!io.stdin) {
    err('gatehouse acp: needs stdin (the client speaks ACP on it)');
    return 2;
  }
  const { serveAcp } = await import('./server.js');
  return serveAcp(
    io,
    config,
    { agentName, ...(args.approvalPolicy ? { approvalPolicy: args.approvalPolicy } : {}) },
    {
      input: Readable.toWeb(io.stdin) as ReadableStream<Uint8Array>,
      output: Writable.toWeb(io.stdout) as WritableStream<Uint8Array>,
    },
  );
}
