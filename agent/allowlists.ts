/**
 * Allowlists grown by "Always approve": command approval keys and tool names per agent, persisted in
 * the `allowlists` namespace so they survive a restart, and merged with the configured ones when the
 * gate reads the policy. Loaded once at start; every addition is written through before it counts.
 */
import { z } from 'zod';
import type { KV } from './kv.js';

const Stored = z.object({ commands: z.array(z.string()), tools: z.array(z.string()) });
type Stored = z.infer<typeof Stored>;

export class PersistedAllowlists {
  private readonly byAgent = new Map<string, Stored>();

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
  }
}
