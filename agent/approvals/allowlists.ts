/**
 * Allowlists grown by "Always approve": command approval keys, tool names and egress hosts
 * (`host:port`, "Always for this host" on an egress card, agent/egress/approvals.ts) per agent, in the
 * store's allowlists repository (a row per grant) so they survive a restart, and merged with the
 * configured ones when the gate reads the policy.
 *
 * Contract:
 * - `load` reads each agent's rows once at start; `commands()` / `tools()` / `egress()` answer synchronously from
 *   that copy (the gate reads them for every tool call). `add` is one statement (an insert that
 *   ignores a grant already there) and counts only once it resolved; the copy is then updated.
 *   Grants added by another process sharing the store are seen after this one's next start.
 * - Watchers: a batch of tool calls waiting on cards watches its agent's allowlist. After an addition
 *   each watcher re-checks its own pending cards through the gate (an "Always" in one conversation
 *   approves a waiting card elsewhere only when the grown allowlist really covers it). `add` resolves
 *   after every watcher has re-checked; a watcher that fails leaves its cards pending (the safe side).
 */
import type { AllowlistRepo, Signals } from '../store/types.js';
import type { Log } from '../log.js';
import { messageOf } from '../log.js';

const ALLOWLIST_TOPIC = 'allowlist';

interface Granted {
  commands: string[];
  tools: string[];
  egress: string[];
}

export type Always = { kind: 'command'; key: string } | { kind: 'tool'; name: string } | { kind: 'egress'; entry: string };

const none = (): Granted => ({ commands: [], tools: [], egress: [] });
const FIELD = { command: 'commands', tool: 'tools', egress: 'egress' } as const;

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
    const granted = none();
    for (const row of await this.repo.list(agent)) {
      const field = FIELD[row.kind] as (typeof FIELD)[keyof typeof FIELD] | undefined;
      if (field) granted[field].push(row.value);
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
        const cur = this.byAgent.get(agent) ?? none();
        const fields = Object.values(FIELD);
        const added = fields.some((f) => next[f].some((v) => !cur[f].includes(v)));
        const same = !added && fields.every((f) => next[f].length === cur[f].length);
        if (same) return;
        this.byAgent.set(agent, next);
        if (added) await this.notify(agent);
        return;
      }
    } catch (err) {
      this.shared.log?.('warn', `could not read the allowlist of agent ${agent} again: ${messageOf(err)}`);
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

  /** `host:port` entries granted by "Always for this host" (the egress proxy adds them to sandboxNetwork.allow). */
  egress(agent: string): readonly string[] {
    return this.byAgent.get(agent)?.egress ?? [];
  }

  async add(agent: string, always: Always): Promise<void> {
    const value = always.kind === 'command' ? always.key : always.kind === 'tool' ? always.name : always.entry;
    await this.repo.add(agent, always.kind, value, this.now());
    this.generation++;
    const cur = this.byAgent.get(agent) ?? none();
    const field = FIELD[always.kind];
    const list = cur[field];
    // A new array: a reader holding the old one keeps a consistent view.
    const next: Granted = { ...cur, [field]: list.includes(value) ? list : [...list, value] };
    this.byAgent.set(agent, next);
    this.shared.signals
      ?.publish(ALLOWLIST_TOPIC, agent)
      .catch((err: unknown) => this.shared.log?.('warn', `could not signal the allowlist grant of agent ${agent} to other processes: ${messageOf(err)}`));
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
