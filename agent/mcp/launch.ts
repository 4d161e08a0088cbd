/**
 * How a stdio MCP server is started: in the sandbox by default, on the host only when its config says
 * `sandbox: none`.
 *
 * Contract:
 * - Environment: the SDK's minimal inherited set (HOME, LOGNAME, PATH, SHELL, TERM, USER) plus the
 *   server's configured `env`; none of Gatehouse's own variables. In the box HOME is the server's
 *   folder (caches such as ~/.npm land there, and the bot's home holds nothing for it).
 * - `sandbox: bubblewrap` (the default): the server runs through the sandbox's `boxCommand`, the same
 *   box as execute_command: read-only root, the bot's config, .env, store and credential files hidden,
 *   own PID/IPC/network namespaces (network only with `network: true`), the sandbox user when the bot
 *   is root, process limits, the seccomp filter (fd 4). Its one writable place is its own folder,
 *   `<stateRoot>/<agent>/<server>` (mode 0700, owned by the sandbox user when the bot is root),
 *   created on first start and kept across restarts; the working directory is `cwd` when configured
 *   (bound read-only), else that folder.
 * - What else of the host it sees (visibility.ts): its `readPaths` (read-only), and automatically its
 *   resolved command binary and the argv elements that are existing files, each as one read-only file
 *   (never a folder). The agent's `sandboxReadPaths` are not added: each server sees what its own
 *   config names. A `cwd` or readPath holding one of `botFiles` is refused here too (LaunchError),
 *   besides being a config error; the masks of the bot's and credential files apply inside.
 * - `sandbox: none`: the program itself on the host with the bot's rights; the caller logs a warning
 *   at every start.
 * - A box that cannot be built (bwrap missing, folder unreachable) is a `LaunchError` whose message
 *   names the cause and both fixes.
 */
import { chownSync, chmodSync, lstatSync, mkdirSync, realpathSync } from 'node:fs';
import { join, relative, isAbsolute } from 'node:path';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { boxCommand, sandboxUser, SandboxUnavailableError, type SandboxPolicy } from '../tools/sandbox/index.js';
import type { McpServerConfig } from './config.js';
import type { ProcessTransportOptions } from './process-transport.js';
import { autoReadPaths } from './visibility.js';
import { messageOf } from '../log.js';

export interface BoxSettings {
  /** Where each server's own folder is made: `<stateRoot>/<agent>/<server>`. */
  stateRoot: string;
  /** The bot's own files to hide in the box (config file, .env, store). */
  botFiles: readonly string[];
  /** Home directories whose credential files are hidden (default: the sandbox module's). */
  homes?: readonly string[];
}

export class LaunchError extends Error {
  override name = 'LaunchError';
}

type StdioConfig = Extract<McpServerConfig, { kind: 'stdio' }>;

/** The spawn of one stdio server (see the contract). */
export function launchSpec(agent: string, server: string, config: StdioConfig, box: BoxSettings): ProcessTransportOptions & { stateDir?: string } {
  const env: Record<string, string> = { ...(getDefaultEnvironment() as Record<string, string>), ...config.env };
  if (config.sandbox === 'none') {
    return { file: config.command, args: config.args, env, ...(config.cwd !== undefined ? { cwd: config.cwd } : {}) };
  }
  const stateDir = serverFolder(box.stateRoot, agent, server);
  if (config.env.HOME === undefined) env.HOME = stateDir;
  const cwd = config.cwd ?? stateDir;
  const named = [...(config.readPaths ?? []), ...(config.cwd !== undefined ? [config.cwd] : [])];
  for (const p of named) {
    const held = box.botFiles.find((f) => holds(p, f));
    if (held !== undefined) {
      throw new LaunchError(
        `${p} (its ${p === config.cwd ? 'cwd' : 'readPaths entry'}) holds the bot's own file ${held}; the box would show the files next to it. Name a folder that holds none of the bot's files`,
      );
    }
  }
  const auto = autoReadPaths({ command: config.command, args: config.args, cwd, searchPath: env.PATH, visible: [stateDir, ...named], botFiles: box.botFiles });
  const readPaths = [...named, ...auto];
  const policy: SandboxPolicy = {
    mode: 'bubblewrap',
    network: config.network,
    botFiles: box.botFiles,
    ...(box.homes ? { homes: box.homes } : {}),
    ...(readPaths.length > 0 ? { readPaths } : {}),
  };
  try {
    const boxed = boxCommand(policy, { workspace: stateDir, cwd, env, argv: [config.command, ...config.args] });
    return {
      file: boxed.file,
      args: boxed.args,
      env: boxed.env,
      cwd: boxed.cwd,
      ...(boxed.optionsData ? { fd3: boxed.optionsData } : {}),
      ...(boxed.seccompData ? { fd4: boxed.seccompData } : {}),
      ...(boxed.uid !== undefined ? { uid: boxed.uid, gid: boxed.gid ?? boxed.uid } : {}),
      stateDir,
    };
  } catch (err) {
    if (err instanceof SandboxUnavailableError) {
      throw new LaunchError(
        `it cannot run in the sandbox here: ${err.message.replace(/set `sandbox: none` for the agent/, `set sandbox: none on this server (agents.${agent}.mcpServers.${server}.sandbox)`)}`,
      );
    }
    throw err;
  }
}

/** True when `dir` is `file` or holds it (compared by real path as far as each exists). */
function holds(dir: string, file: string): boolean {
  const rel = relative(realish(dir), realish(file));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function realish(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** Makes (or checks) the server's own folder; returns its real path. */
function serverFolder(stateRoot: string, agent: string, server: string): string {
  const user = sandboxUser();
  try {
    // The levels above are passable (0711) so the sandbox user can reach its own folder, not list others.
    for (const dir of [stateRoot, join(stateRoot, agent)]) {
      mkdirSync(dir, { recursive: true, mode: 0o711 });
      const st = lstatSync(dir);
      if (!st.isDirectory()) throw new LaunchError(`its state folder's parent ${dir} is not a directory`);
      if ((st.mode & 0o111) !== 0o111 && st.uid === process.getuid?.()) chmodSync(dir, (st.mode & 0o777) | 0o711);
    }
    const dir = join(stateRoot, agent, server);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    if (!st.isDirectory()) throw new LaunchError(`its state folder ${dir} is not a directory`);
    if (user && st.uid !== user.uid) chownSync(dir, user.uid, user.gid);
    if ((st.mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
    return realpathSync(dir);
  } catch (err) {
    if (err instanceof LaunchError) throw err;
    throw new LaunchError(`its state folder under ${stateRoot} could not be made: ${messageOf(err)}`);
  }
}
