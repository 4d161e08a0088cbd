/**
 * Reminders: durable, in the store (the `reminders` namespace), one entry per reminder (`r:<id>`).
 * The tools (agent/tools/builtin/reminders.ts) add, list and cancel them; bot/reminder-scheduler.ts
 * fires them.
 *
 * Contract:
 * - A reminder belongs to the conversation that set it (its key) and the agent that served it; it is
 *   listed and cancelled only from that conversation.
 * - Firing exactly once: every stored reminder carries a revision `rev`. A fire is claimed with
 *   `swap(id, rev, next)`, one compare-and-set statement in the store (SQLite UPDATE ... WHERE rev
 *   ... RETURNING): of any number of timers or processes that saw the same revision, exactly one wins
 *   and delivers. A one-shot's claim marks it `firedAt` and it is deleted after delivery; a repeating
 *   one's claim moves `dueAt` to its next occurrence after now (missed occurrences while the bot was
 *   down fire once, not once each). A process that dies between the claim and the delivery loses that
 *   one delivery (at most once, never twice); a claimed one-shot left behind is deleted later.
 * - Caps (per agent, `reminders` in its config): reminders per conversation (`maxPerConversation`,
 *   default 20) and the shortest repeat (`minRepeatIntervalMs`, default 5 minutes). A due time in the
 *   past or more than MAX_AHEAD_MS ahead is refused.
 * - `onChange` listeners (the scheduler) are told after every add and cancel, so the next timer is
 *   re-armed at once; other processes' changes are seen when the scheduler next reads the store.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { KV } from './kv.js';

export interface ReminderSettings {
  /** Fire as a turn of the agent (the model sees the reminder and answers), besides posting it. */
  runAsTurn: boolean;
  maxPerConversation: number;
  minRepeatIntervalMs: number;
}

export const DEFAULT_REMINDER_SETTINGS: ReminderSettings = { runAsTurn: false, maxPerConversation: 20, minRepeatIntervalMs: 5 * 60_000 };

/** A due time more than this far ahead is refused (about a year: the model likely got the year wrong). */
export const MAX_AHEAD_MS = 366 * 24 * 3_600_000;
export const MAX_REMINDER_CHARS = 2_000;

export const Reminder = z.object({
  id: z.string(),
  agentName: z.string(),
  conversationKey: z.string(),
  text: z.string(),
  /** ms since the epoch (UTC). */
  dueAt: z.number(),
  repeatMs: z.number().optional(),
  createdAt: z.number(),
  /** Bumped by every change; the compare-and-set claims on it. */
  rev: z.number(),
  /** A one-shot that was claimed (delivered, or lost with a dying process) and awaits deletion. */
  firedAt: z.number().optional(),
});
export type Reminder = z.infer<typeof Reminder>;

/** The store operations reminders need: a KV plus one atomic compare-and-set on `rev`. */
export interface ReminderBackend {
  kv: KV;
  /** Writes `next` at `r:<id>` only if the stored reminder's rev is `expectedRev`; true when it wrote. */
  swap(id: string, expectedRev: number, next: Reminder): Promise<boolean>;
}

export class ReminderError extends Error {
  override name = 'ReminderError';
}

/** A won claim: what to deliver. */
export interface ClaimedFire {
  reminder: Reminder;
  /** The occurrence being fired. */
  dueAt: number;
  /** How late it fires (now - dueAt). */
  lateMs: number;
  /** A repeating reminder's next occurrence. */
  nextDueAt?: number;
}

export class Reminders {
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly backend: ReminderBackend,
    private readonly settings: (agentName: string) => ReminderSettings = () => DEFAULT_REMINDER_SETTINGS,
    private readonly now: () => number = Date.now,
  ) {}

  settingsFor(agentName: string): ReminderSettings {
    return this.settings(agentName);
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }

  /** Every stored reminder (unreadable entries are skipped). */
  async all(): Promise<Reminder[]> {
    const list = this.backend.kv.iterator;
    if (!list) throw new Error('the store cannot list its entries, so reminders cannot be kept');
    const out: Reminder[] = [];
    for await (const [name, value] of list.call(this.backend.kv)) {
      if (!name.startsWith('r:')) continue;
      const r = Reminder.safeParse(value);
      if (r.success) out.push(r.data);
    }
    return out;
  }

  /** The conversation's reminders that are still to fire, soonest first. */
  async list(conversationKey: string): Promise<Reminder[]> {
    return (await this.all()).filter((r) => r.conversationKey === conversationKey && r.firedAt === undefined).sort((a, b) => a.dueAt - b.dueAt);
  }

  async add(input: { agentName: string; conversationKey: string; text: string; dueAt: number; repeatMs?: number }): Promise<Reminder> {
    const limits = this.settings(input.agentName);
    const now = this.now();
    const text = input.text.trim();
    if (text === '') throw new ReminderError('The reminder text is empty; say what to remind of.');
    if (text.length > MAX_REMINDER_CHARS) throw new ReminderError(`A reminder is at most ${MAX_REMINDER_CHARS} characters (this one has ${text.length}).`);
    if (!Number.isFinite(input.dueAt)) throw new ReminderError('The due time is not a valid time.');
    if (input.dueAt < now - 1_000) {
      throw new ReminderError(`That time (${new Date(input.dueAt).toISOString()}) is in the past (now: ${new Date(now).toISOString()}); give a future time.`);
    }
    if (input.dueAt - now > MAX_AHEAD_MS) throw new ReminderError(`That time (${new Date(input.dueAt).toISOString()}) is more than a year ahead; check the date.`);
    if (input.repeatMs !== undefined && input.repeatMs < limits.minRepeatIntervalMs) {
      throw new ReminderError(
        `Repeating every ${formatDuration(input.repeatMs)} is too often: the shortest repeat here is ${formatDuration(limits.minRepeatIntervalMs)} (agents.${input.agentName}.reminders.minRepeatIntervalMs).`,
      );
    }
    const existing = await this.list(input.conversationKey);
    if (existing.length >= limits.maxPerConversation) {
      throw new ReminderError(
        `This conversation already has ${existing.length} reminders, the most allowed (agents.${input.agentName}.reminders.maxPerConversation). Cancel one first (list_reminders shows them).`,
      );
    }
    const r: Reminder = {
      id: randomBytes(5).toString('hex'),
      agentName: input.agentName,
      conversationKey: input.conversationKey,
      text,
      dueAt: Math.max(input.dueAt, now),
      ...(input.repeatMs !== undefined ? { repeatMs: input.repeatMs } : {}),
      createdAt: now,
      rev: 1,
    };
    await this.backend.kv.set(`r:${r.id}`, r);
    this.changed();
    return r;
  }

  /** Cancels a reminder of this conversation; undefined when it has none with that id. */
  async cancel(conversationKey: string, id: string): Promise<Reminder | undefined> {
    const r = await this.get(id);
    if (!r || r.conversationKey !== conversationKey || r.firedAt !== undefined) return undefined;
    await this.backend.kv.delete(`r:${id}`);
    this.changed();
    return r;
  }

  async get(id: string): Promise<Reminder | undefined> {
    const parsed = Reminder.safeParse(await this.backend.kv.get(`r:${id}`));
    return parsed.success ? parsed.data : undefined;
  }

  /**
   * Claims the occurrence of `r` due at `r.dueAt` (the revision read). Undefined when another timer or
   * process claimed it first, or it changed meanwhile (cancelled, re-read needed).
   */
  async claim(r: Reminder): Promise<ClaimedFire | undefined> {
    const now = this.now();
    if (r.firedAt !== undefined || r.dueAt > now) return undefined;
    let next: Reminder;
    let nextDueAt: number | undefined;
    if (r.repeatMs !== undefined && r.repeatMs > 0) {
      // Skip occurrences missed while the bot was down: they fire once, now.
      const missed = Math.floor((now - r.dueAt) / r.repeatMs) + 1;
      nextDueAt = r.dueAt + missed * r.repeatMs;
      next = { ...r, dueAt: nextDueAt, rev: r.rev + 1 };
    } else {
      next = { ...r, firedAt: now, rev: r.rev + 1 };
    }
    if (!(await this.backend.swap(r.id, r.rev, next))) return undefined;
    return { reminder: r, dueAt: r.dueAt, lateMs: Math.max(0, now - r.dueAt), ...(nextDueAt !== undefined ? { nextDueAt } : {}) };
  }

  /** Deletes a delivered one-shot. */
  async finish(fire: ClaimedFire): Promise<void> {
    if (fire.nextDueAt === undefined) await this.backend.kv.delete(`r:${fire.reminder.id}`);
  }

  /** Deletes one-shots claimed longer than `olderThanMs` ago (their process died before deleting them). */
  async sweepClaimed(all: readonly Reminder[], olderThanMs: number): Promise<void> {
    const now = this.now();
    for (const r of all) if (r.firedAt !== undefined && now - r.firedAt > olderThanMs) await this.backend.kv.delete(`r:${r.id}`);
  }
}

/** "2 h 5 min", "45 s", "3 d 4 h": the two largest units. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  const secs = Math.round(ms / 1_000);
  const parts: Array<[number, string]> = [
    [Math.floor(secs / 86_400), 'd'],
    [Math.floor((secs % 86_400) / 3_600), 'h'],
    [Math.floor((secs % 3_600) / 60), 'min'],
    [secs % 60, 's'],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  const shown = [parts[first]!, parts[first + 1]].filter((p): p is [number, string] => p !== undefined && p[0] > 0);
  return shown.map(([n, unit]) => `${n} ${unit}`).join(' ');
}

/** An in-process backend (memory storage, unit tests): one process, so read-then-write cannot be raced. */
export function kvReminderBackend(kv: KV): ReminderBackend {
  // Swaps run one after another, so two claims in this process cannot both read the old revision.
  let chain: Promise<unknown> = Promise.resolve();
  return {
    kv,
    swap(id, expectedRev, next) {
      const run = async () => {
        const cur = Reminder.safeParse(await kv.get(`r:${id}`));
        if (!cur.success || cur.data.rev !== expectedRev) return false;
        await kv.set(`r:${id}`, next);
        return true;
      };
      const result = chain.then(run, run);
      chain = result.catch(() => undefined);
      return result;
    },
  };
}
