/**
 * Allowlists grown by "Always approve": command approval keys and tool names per agent, persisted in
 * the `allowlists` namespace so they survive a restart, and merged with the configured ones when the
 * gate reads the policy. Loaded once at start; every addition is written through before it counts.
 *
 * Watchers: a batch of tool calls waiting on cards watches its agent's allowlist. After an addition
 * each watcher re-checks its own pending cards through the gate (an "Always" in one conversation
 * approves a waiting card elsewhere only when the grown allowlist really covers it). `add` resolves
 * after every watcher has re-checked; a watcher that fails leaves its cards pending (the safe side).
 */
import { z } from 'zod';
import type { KV } from './kv.js';

const Stored = z.object({ commands: z.array(z.string()), tools: z.array(z.string()) });
type Stored = z.infer<typeof Stored>;

export type AllowlistWatcher = () => Promise<void>;

export class PersistedAllowlists {
  private readonly byAgent = new Map<string, Stored>();
  private readonly watchers = new Map<string, Set<AllowlistWatcher>>();

  constructor(private readonly kv: KV) {}

  async load(agents: readonly string[]): Promise<void> {
    for (const a of agents) {
      const parsed = Stored.safeParse(await this.kv.get(`a:${a}`));
      this.byAgent.set(a, parsed.success ? parsed.data : { commands: [], tools: [] });
    }
  }

  commands(agent: string): readonly string[] {
    return this.byAgent.get(agent)?.commands ?? [];
  }

  tools(agent: string): readonly string[] {
    return this.byAgent.get(agent)?.tools ?? [];
  }

  async add(agent: string, always: { kind: 'command'; key: string } | { kind: 'tool'; name: string }): Promise<void> {
    const cur = this.byAgent.get(agent) ?? { commands: [], tools: [] };
    const next: Stored = { commands: [...cur.commands], tools: [...cur.tools] };
    if (always.kind === 'command' && !next.commands.includes(always.key)) next.commands.push(always.key);
    if (always.kind === 'tool' && !next.tools.includes(always.name)) next.tools.push(always.name);
    await this.kv.set(`a:${agent}`, next);
    this.byAgent.set(agent, next);
    for (const watcher of [...(this.watchers.get(agent) ?? [])]) {
      await watcher().catch(() => undefined);
    }
  }

  /** Calls `watcher` after each addition for `agent`, until the returned function is called. */
  watch(agent: string, watcher: AllowlistWatcher): () => void {
    const set = this.watchers.get(agent) ?? new Set<AllowlistWatcher>();
    set.add(watcher);
    this.watchers.set(agent, set);
    return () => {
      set.delete(watcher);
      if (set.size === 0 && this.watchers.get(agent) === set) this.watchers.delete(agent);
    };
  }
}
