/**
 * Allowlists grown by "Always approve": command approval keys and tool names per agent, in the
 * store's allowlists repository (a row per grant) so they survive a restart, and merged with the
 * configured ones when the gate reads the policy.
 *
 * Contract:
 * - `load` reads each agent's rows once at start; `commands()` / `tools()` answer synchronously from
 *   that copy (the gate reads them for every tool call). `add` is one statement (an insert that
 *   ignores a grant already there) and counts only once it resolved; the copy is then updated.
 *   Grants added by another process sharing the store are seen after this one's next start.
 * - Watchers: a batch of tool calls waiting on cards watches its agent's allowlist. After an addition
 *   each watcher re-checks its own pending cards through the gate (an "Always" in one conversation
 *   approves a waiting card elsewhere only when the grown allowlist really covers it). `add` resolves
 *   after every watcher has re-checked; a watcher that fails leaves its cards pending (the safe side).
 */
import type { AllowlistRepo, Signals } from './store/types.js';
import type { Log } from './log.js';

export const ALLOWLIST_TOPIC = 'allowlist';

interface Granted {
  commands: string[];
  tools: string[];
}

export type AllowlistWatcher = () => Promise<void>;

export class PersistedAllowlists {
  private readonly byAgent = new Map<string, Granted>();
  private readonly watchers = new Map<string, Set<AllowlistWatcher>>();
  /** Bumped by each local change: a re-read that began before one is read again. */
  private generation = 0;
  private readonly offs: Array<() => void> = [];

  constructor(
    private readonly repo: AllowlistRepo,
    private readonly now: () => number = Date.now,
    private readonly shared: { signals?: Signals; log?: Log } = {},
  ) {
    const { signals } = shared;
    if (signals) {
      this.offs.push(
        signals.subscribe(ALLOWLIST_TOPIC, (agent) => void (this.byAgent.has(agent) && this.refresh(agent))),
        signals.onResync(() => {
          for (const agent of this.byAgent.keys()) void this.refresh(agent);
        }),
      );
    }
  }

  /** Ends the signal subscriptions (shutdown). */
  close(): void {
    for (const off of this.offs.splice(0)) off();
  }

  private async read(agent: string): Promise<Granted> {
    const granted: Granted = { commands: [], tools: [] };
    for (const row of await this.repo.list(agent)) {
      if (row.kind === 'command') granted.commands.push(row.value);
      else if (row.kind === 'tool') granted.tools.push(row.value);
    }
    return granted;
  }

  /** Reads an agent's rows again (another process changed them); watchers run when some were added. */
  private async refresh(agent: string): Promise<void> {
    try {
      for (;;) {
        const gen = this.generation;
        const next = await this.read(agent);
        if (gen !== this.generation) continue;
        const cur = this.byAgent.get(agent) ?? { commands: [], tools: [] };
        const added = next.commands.some((c) => !cur.commands.includes(c)) || next.tools.some((t) => !cur.tools.includes(t));
        const same = !added && next.commands.length === cur.commands.length && next.tools.length === cur.tools.length;
        if (same) return;
        this.byAgent.set(agent, next);
        if (added) await this.notify(agent);
        return;
      }
    } catch (err) {
      this.shared.log?.('warn', `could not read the allowlist of agent ${agent} again: ${(err as Error).message}`);
    }
  }

  private async notify(agent: string): Promise<void> {
    for (const watcher of [...(this.watchers.get(agent) ?? [])]) {
      await watcher().catch(() => undefined);
    }
  }

  async load(agents: readonly string[]): Promise<void> {
    for (const a of agents) this.byAgent.set(a, await this.read(a));
  }

  commands(agent: string): readonly string[] {
    return this.byAgent.get(agent)?.commands ?? [];
  }

  tools(agent: string): readonly string[] {
    return this.byAgent.get(agent)?.tools ?? [];
  }

  async add(agent: string, always: { kind: 'command'; key: string } | { kind: 'tool'; name: string }): Promise<void> {
    const value = always.kind === 'command' ? always.key : always.name;
    await this.repo.add(agent, always.kind, value, this.now());
    this.generation++;
    const cur = this.byAgent.get(agent) ?? { commands: [], tools: [] };
    const list = always.kind === 'command' ? cur.commands : cur.tools;
    // A new array: a reader holding the old one keeps a consistent view.
    const next: Granted =
      always.kind === 'command'
        ? { ...cur, commands: list.includes(value) ? list : [...list, value] }
        : { ...cur, tools: list.includes(value) ? list : [...list, value] };
    this.byAgent.set(agent, next);
    this.shared.signals
      ?.publish(ALLOWLIST_TOPIC, agent)
      .catch((err: unknown) =>
        this.shared.log?.('warn', `could not signal the allowlist grant of agent ${agent} to other processes: ${(err as Error).message}`),
      );
    await this.notify(agent);
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
