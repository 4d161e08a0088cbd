/**
 * One egress proxy per agent whose `sandboxNetwork` is an allowlist, each on its own unix socket.
 *
 * Contract:
 * - `start(agent, allow)` starts (once per agent) a proxy (proxy.ts) listening on `<dir>/<agent>.sock`
 *   and returns that path for SandboxPolicy.egress. `allow` is a function, read at each connection, so a
 *   config reload's new list applies to the next connection.
 * - The folder is a fresh mkdtemp folder, mode 0711; each socket is mode 0600 and, when the bot runs as
 *   root, owned by the sandbox user (only the boxes' user and root can connect to it).
 * - Every connection becomes an `egress_connection` audit event.
 * - `close()` stops every proxy and removes the folder.
 */
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Audit } from '../audit.js';
import { sandboxUser } from '../tools/sandbox/index.js';
import { createEgressProxy, type EgressProxy } from './proxy.js';

export class EgressHub {
  private dir: string | undefined;
  private readonly proxies = new Map<string, { proxy: EgressProxy; socket: string }>();

  constructor(private readonly audit: Audit) {}

  async start(agent: string, allow: () => readonly string[]): Promise<string> {
    const have = this.proxies.get(agent);
    if (have) return have.socket;
    if (!this.dir) {
      this.dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-egress-'));
      chmodSync(this.dir, 0o711);
    }
    const socket = path.join(this.dir, `${agent}.sock`);
    const proxy = createEgressProxy({ allow, onConnection: (r) => this.audit({ event: 'egress_connection', agent, ...r }) });
    await proxy.listen(socket);
    chmodSync(socket, 0o600);
    const user = sandboxUser();
    if (user) chownSync(socket, user.uid, user.gid);
    this.proxies.set(agent, { proxy, socket });
    return socket;
  }

  async close(): Promise<void> {
    for (const { proxy } of this.proxies.values()) await proxy.close();
    this.proxies.clear();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}

/** SandboxPolicy's `egress` for an agent with an allowlist whose proxy is running; {} otherwise (no network). */
export function egressPolicy(
  agent: { name: string; sandboxEgress?: readonly string[] },
  sockets: ReadonlyMap<string, string>,
): { egress?: { socket: string } } {
  const socket = agent.sandboxEgress ? sockets.get(agent.name) : undefined;
  return socket ? { egress: { socket } } : {};
}
