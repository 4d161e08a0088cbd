/**
 * Fires reminders (agent/memory/reminders.ts) into the conversations that set them, and wires memory and
 * reminders into the composition root (bot/service/app.ts calls `memoryAndReminders`).
 *
 * Contract:
 * - One timer, armed for the soonest due reminder (never a per-second poll). A single wait is at most
 *   `maxWaitMs` (default 60 s); after it the wall clock is read again, so a clock set forward fires
 *   what became due within that wait, and a clock set back simply waits longer. With no reminders
 *   stored, no timer runs; an add or cancel through the tools re-arms at once.
 * - Each tick reads only what is due within one wait (`Reminders.dueBy`, at most DUE_BATCH at a time),
 *   never every reminder: at start, what came due while the bot was down fires now, once, and its
 *   message says how late it is ("due ..., delivered 2 h 5 min late").
 * - Exactly once: what is due is claimed in the store first, in one call per tick
 *   (Reminders.claimDue: on PostgreSQL the due rows are locked with SKIP LOCKED, so replicas claim
 *   disjoint rows; a compare-and-set each on SQLite), so of two ticks or any number of replicas only
 *   one posts each. A claimed delivery that fails is logged, not retried.
 * - Delivery: the text is posted through the conversation's adapter (postText, in that conversation's
 *   delivery order). With `reminders.runAsTurn` on the agent, the reminder then also runs as a turn of
 *   the agent (sender "reminder", nobody to answer questions), whose answer is posted as usual.
 * - With `signals` (the store's; replicas): an add or cancel anywhere signals `reminders`
 *   (agent/memory/reminders.ts), and that signal or a resync re-reads at once, so another replica arms for a reminder
 *   set elsewhere (and fires it on time if the one that set it is gone); without, other processes'
 *   changes are seen within one wait.
 * - A conversation whose platform is not enabled now is left stored and untouched (logged once).
 * - `stop()` clears the timer and waits for a fire in progress: nothing fires after it resolves.
 */
import type { Config } from '../config/index.js';
import type { Log } from './log.js';
import type { Signals, Store } from '../../agent/store/types.js';
import type { Runner } from '../../agent/run/runner.js';
import { DEFAULT_MEMORY_SETTINGS, MEMORY_TOOL_NAMES, MemoryStore } from '../../agent/memory/memory.js';
import { DEFAULT_REMINDER_SETTINGS, REMINDERS_TOPIC, Reminders, formatDuration, type ClaimedFire, type Reminder } from '../../agent/memory/reminders.js';
import type { AgentSettings } from '../../agent/settings.js';
import { messageOf } from '../../agent/log.js';

/** Lateness below this is timer jitter, not worth saying. */
const LATE_AFTER_MS = 2_000;
/** A one-shot claimed this long ago whose entry is still there: its process died; the entry goes. */
const CLAIMED_SWEEP_MS = 10 * 60_000;
/** Reminders read per tick (more due at once: the next batch is read right after). */
const DUE_BATCH = 100;

export interface ReminderSchedulerOptions {
  reminders: Reminders;
  /** Posts text into a conversation by key (the adapter's normal path). */
  post(conversationKey: string, text: string): Promise<void>;
  /** Whether a conversation can be reached now (its platform's adapter runs). */
  reachable(conversationKey: string): boolean;
  /** Submits the reminder as a turn of its agent. */
  runTurn?(reminder: Reminder, text: string): Promise<void>;
  runAsTurn(agentName: string): boolean;
  log: Log;
  now?: () => number;
  maxWaitMs?: number;
  signals?: Signals;
}

export class ReminderScheduler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private readonly unreachable = new Set<string>();
  private unsubscribe: Array<() => void> = [];
  /** When the armed timer is meant to fire (tests and logs). */
  nextWakeAt: number | undefined;

  constructor(private readonly opts: ReminderSchedulerOptions) {}

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** Reads the store, fires what is due (also what came due while the bot was down), arms the timer. */
  async start(): Promise<void> {
    this.stopped = false;
    const { signals } = this.opts;
    this.unsubscribe = [this.opts.reminders.onChange(() => this.poke())];
    if (signals)
      this.unsubscribe.push(
        signals.subscribe(REMINDERS_TOPIC, () => this.poke()),
        signals.onResync(() => this.poke()),
      );
    this.poke();
    await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const off of this.unsubscribe.splice(0)) off();
    this.clearTimer();
    await this.running;
    this.clearTimer();
  }

  /** Runs a tick now, or right after the one in progress. */
  poke(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.clearTimer();
    this.running = this.tick()
      .catch((err: unknown) => {
        this.opts.log('error', `reminders: ${messageOf(err)}; trying again in a minute`);
        this.arm(this.now() + (this.opts.maxWaitMs ?? 60_000));
      })
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.poke();
        }
      });
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.nextWakeAt = undefined;
  }

  private arm(at: number): void {
    if (this.stopped) return;
    this.clearTimer();
    const wait = Math.min(Math.max(0, at - this.now()), this.opts.maxWaitMs ?? 60_000);
    this.nextWakeAt = this.now() + wait;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.poke();
    }, wait);
    // Stopping is stop()'s job; the timer alone must not keep a finished process alive.
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const maxWait = this.opts.maxWaitMs ?? 60_000;
    const now = this.now();
    // What is due now or within one wait: the rest cannot matter before the next read.
    const window = await this.opts.reminders.dueBy(now + maxWait, DUE_BATCH);
    const dueNow = window.filter((r) => r.dueAt <= now);
    await this.opts.reminders.sweepClaimed(dueNow, CLAIMED_SWEEP_MS);
    let soonest: number | undefined;
    let dueHere = 0;
    for (const r of window) {
      if (r.firedAt !== undefined) continue;
      if (!this.opts.reachable(r.conversationKey)) {
        if (!this.unreachable.has(r.id)) {
          this.unreachable.add(r.id);
          this.opts.log('warn', `reminder ${r.id} is for ${r.conversationKey}, whose platform is not enabled: kept for a start that enables it`);
        }
        continue;
      }
      if (r.dueAt > now) soonest = Math.min(soonest ?? Infinity, r.dueAt);
      else dueHere++;
    }
    if (this.stopped) return;
    // One claim for the batch: another process claiming at the same moment takes other rows.
    const fires = dueHere > 0 ? await this.opts.reminders.claimDue(DUE_BATCH, (r) => this.opts.reachable(r.conversationKey)) : [];
    const fired = fires.length;
    if (fired < dueHere) {
      // Another process fired some (or they changed): read the store again later, in case that
      // process stops before their next occurrence.
      soonest = Math.min(soonest ?? Infinity, this.now() + maxWait);
    }
    // Claimed ones are delivered even when stop() came meanwhile: stop() waits for them.
    for (const fire of fires) {
      await this.deliver(fire);
      if (fire.nextDueAt !== undefined) soonest = Math.min(soonest ?? Infinity, fire.nextDueAt);
    }
    if (window.length === DUE_BATCH && fired > 0) {
      // A full batch: read the next one at once.
      this.again = true;
      return;
    }
    // Nothing within the wait: a timer only if something is stored beyond it (one row is enough to know).
    if (soonest === undefined && (await this.opts.reminders.dueBy(Number.MAX_SAFE_INTEGER, window.length + 1)).length > window.length) {
      soonest = now + maxWait;
    }
    if (soonest !== undefined) this.arm(soonest);
  }

  private async deliver(fire: ClaimedFire): Promise<void> {
    const r = fire.reminder;
    const late = fire.lateMs >= LATE_AFTER_MS ? `, delivered ${formatDuration(fire.lateMs)} late` : '';
    const next = fire.nextDueAt !== undefined ? `; repeats every ${formatDuration(r.repeatMs!)}, next ${new Date(fire.nextDueAt).toISOString()}` : '';
    const message = `⏰ Reminder: ${r.text}\n(due ${new Date(fire.dueAt).toISOString()}${late}${next}; id ${r.id})`;
    try {
      await this.opts.post(r.conversationKey, message);
      this.opts.log('info', `reminder ${r.id} fired in ${r.conversationKey}`, { reminder: r.id, lateMs: fire.lateMs });
    } catch (err) {
      this.opts.log('error', `reminder ${r.id} could not be posted in ${r.conversationKey}: ${messageOf(err)}`);
    }
    await this.opts.reminders.finish(fire);
    if (this.opts.runTurn && this.opts.runAsTurn(r.agentName)) {
      const lateNote = late ? ` It fires ${formatDuration(fire.lateMs)} late (the bot was not running or was busy when it came due).` : '';
      const text = `[Reminder ${r.id}, set in this conversation on ${new Date(r.createdAt).toISOString()}, due ${new Date(fire.dueAt).toISOString()}.${lateNote}] ${r.text}`;
      await this.opts.runTurn(r, text).catch((err: unknown) => this.opts.log('error', `reminder ${r.id} could not start a turn: ${messageOf(err)}`));
    }
  }
}

/** The memory store, the reminders, and what the composition root needs from them. */
export function memoryAndReminders(config: Config, store: Pick<Store, 'memory' | 'reminders'> & Partial<Pick<Store, 'signals'>>) {
  const memory = new MemoryStore(store.memory, (a) => config.agents[a]?.memory ?? DEFAULT_MEMORY_SETTINGS);
  const reminders = new Reminders(store.reminders, (a) => config.agents[a]?.reminders ?? DEFAULT_REMINDER_SETTINGS, Date.now, store.signals);
  return {
    stores: { memory, reminders },
    /** The system prompt's memory section, for agents that have a memory tool. */
    systemExtra: async (agent: AgentSettings, key: string): Promise<string> =>
      agent.tools.some((t) => (MEMORY_TOOL_NAMES as readonly string[]).includes(t)) ? memory.promptSection(agent.name, key) : '',
    scheduler: (o: { runner: Runner; post(key: string, text: string): Promise<void>; reachable(key: string): boolean; log: Log }) =>
      new ReminderScheduler({
        reminders,
        post: o.post,
        reachable: o.reachable,
        log: o.log,
        ...(store.signals ? { signals: store.signals } : {}),
        runAsTurn: (a) => (config.agents[a]?.reminders ?? DEFAULT_REMINDER_SETTINGS).runAsTurn,
        runTurn: async (r, text) => {
          await o.runner.submit({
            agentName: r.agentName,
            conversationKey: r.conversationKey,
            platform: r.conversationKey.slice(0, r.conversationKey.indexOf(':')),
            sender: { id: 'reminder', name: 'reminder' },
            text,
            humanAvailable: false,
          });
        },
      }),
  };
}
