/**
 * One egress proxy per agent whose `sandboxNetwork` is an allowlist, each on its own unix socket, and a
 * proxy of its own for each command a run starts (`session`), which knows who asked.
 *
 * Contract:
 * - `start(agent, allow)` starts (once per agent) a proxy (proxy.ts) listening on `<dir>/<agent>.sock`
 *   and returns that path for SandboxPolicy.egress. `allow` is a function, read at each connection, so a
 *   config reload's new list applies to the next connection.
 * - `session(agent, gate, who)`: a proxy for ONE command, on a socket of its own (`<dir>/c-<random>.sock`),
 *   with the agent's `allow` and `gate.ask` for hosts not on it (./approvals.ts): the socket says who asked,
 *   so attribution needs nothing from the box and cannot be forged from it. Listening before it returns;
 *   `close()` (after the command ended) destroys its tunnels, removes the socket and returns `gate.close()`.
 *   Undefined when the agent's proxy was never started.
 * - The folder is a fresh mkdtemp folder, mode 0711; each socket is mode 0600 and, when the bot runs as
 *   root, owned by the sandbox user (only the boxes' user and root can connect to it).
 * - Every connection becomes an `egress_connection` audit event (a session's with its conversation and run).
 * - `close()` stops every proxy and removes the folder.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Audit } from '../audit.js';
import { sandboxUser } from '../tools/sandbox/index.js';
import type { CommandEgress } from '../tools/types.js';
import { createEgressProxy, type EgressProxy, type EgressProxyOptions } from './proxy.js';

/** A command's side of the approvals (./approvals.ts CommandGate). */
export interface SessionGate {
  ask: NonNullable<EgressProxyOptions['ask']>;
  /** The command ended: what its tool result should add (declined hosts and how to allow them). */
  close(): Promise<string[]>;
}

export class EgressHub {
  private dir: string | undefined;
  private readonly proxies = new Map<string, { proxy: EgressProxy; socket: string; allow: () => readonly string[]; ready: Promise<void> }>();
  private readonly sessions = new Set<EgressProxy>();

  constructor(private readonly audit: Audit) {}

  private folder(): string {
    if (!this.dir) {
      this.dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-egress-'));
      chmodSync(this.dir, 0o711);
    }
    return this.dir;
  }

  private async listen(proxy: EgressProxy, socket: string): Promise<void> {
    await proxy.listen(socket);
    chmodSync(socket, 0o600);
    const user = sandboxUser();
    if (user) chownSync(socket, user.uid, user.gid);
  }

  async start(agent: string, allow: () => readonly string[]): Promise<string> {
    const have = this.proxies.get(agent);
    if (have) {
      await have.ready;
      return have.socket;
    }
    const socket = path.join(this.folder(), `${agent}.sock`);
    const proxy = createEgressProxy({ allow, onConnection: (r) => this.audit({ event: 'egress_connection', agent, ...r }) });
    // Recorded before listening: a second start for the agent meanwhile waits for this one.
    const ready = this.listen(proxy, socket);
    this.proxies.set(agent, { proxy, socket, allow, ready });
    await ready.catch((err: unknown) => {
      this.proxies.delete(agent);
      throw err;
    });
    return socket;
  }

  async session(agent: string, gate: SessionGate, who: { conversation: string; runId: string }): Promise<CommandEgress | undefined> {
    const base = this.proxies.get(agent);
    if (!base) return undefined;
    await base.ready;
    const socket = path.join(this.folder(), `c-${randomBytes(9).toString('base64url')}.sock`);
    const proxy = createEgressProxy({
      allow: base.allow,
      ask: gate.ask,
      onConnection: (r) => this.audit({ event: 'egress_connection', agent, conversation: who.conversation, runId: who.runId, ...r }),
    });
    this.sessions.add(proxy);
    try {
      await this.listen(proxy, socket);
    } catch (err) {
      this.sessions.delete(proxy);
      await proxy.close();
      await gate.close();
      throw err;
    }
    return {
      socket,
      close: async () => {
        this.sessions.delete(proxy);
        await proxy.close();
        rmSync(socket, { force: true });
        return gate.close();
      },
    };
  }

  async close(): Promise<void> {
    for (const proxy of this.sessions) await proxy.close();
    this.sessions.clear();
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
