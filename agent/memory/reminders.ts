/**
 * Reminders: durable, in the store's reminders repository, one row per reminder (its id, conversation,
 * due time and revision as columns, the whole Reminder below as its JSON).
 * The tools (agent/tools/builtin/reminders.ts) add, list and cancel them; bot/service/reminder-scheduler.ts
 * fires them.
 *
 * Contract:
 * - A reminder belongs to the conversation that set it (its key) and the agent that served it; it is
 *   listed and cancelled only from that conversation.
 * - Firing exactly once: every stored reminder carries a revision `rev`. A fire is claimed with
 *   `swap(id, rev, next)`, one compare-and-set statement in the store (UPDATE ... WHERE rev ...
 *   RETURNING): of any number of timers or processes that saw the same revision, exactly one wins
 *   and delivers. `claimDue` claims a batch in one call (the store's claimDue: on PostgreSQL the
 *   due rows are locked with SKIP LOCKED, so replicas take disjoint sets; on SQLite a swap each). A one-shot's claim marks it `firedAt` and it is deleted after delivery; a repeating
 *   one's claim moves `dueAt` to its next occurrence after now (missed occurrences while the bot was
 *   down fire once, not once each). A process that dies between the claim and the delivery loses that
 *   one delivery (at most once, never twice); a claimed one-shot left behind is deleted later.
 * - Caps (per agent, `reminders` in its config): reminders per conversation (`maxPerConversation`,
 *   default 20) and the shortest repeat (`minRepeatIntervalMs`, default 5 minutes). A due time in the
 *   past or more than MAX_AHEAD_MS ahead is refused.
 * - `onChange` listeners (the scheduler) are told after every add and cancel, so the next timer is
 *   re-armed at once. With `signals` (the store's), add and cancel also signal `reminders` before
 *   they resolve, so other processes' schedulers re-read at once (a failed signal is ignored: they
 *   read the store within their next wait anyway).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { ReminderRepo, Signals, StoredReminder } from '../store/types.js';

export const REMINDERS_TOPIC = 'reminders';

export interface ReminderSettings {
  /** Fire as a turn of the agent (the model sees the reminder and answers), besides posting it. */
  runAsTurn: boolean;
  maxPerConversation: number;
  minRepeatIntervalMs: number;
}

export const DEFAULT_REMINDER_SETTINGS: ReminderSettings = { runAsTurn: false, maxPerConversation: 20, minRepeatIntervalMs: 5 * 60_000 };

/** A due time more than this far ahead is refused (about a year: the model likely got the year wrong). */
const MAX_AHEAD_MS = 366 * 24 * 3_600_000;
const MAX_REMINDER_CHARS = 2_000;

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
    private readonly repo: ReminderRepo,
    private readonly settings: (agentName: string) => ReminderSettings = () => DEFAULT_REMINDER_SETTINGS,
    private readonly now: () => number = Date.now,
    private readonly signals?: Signals,
  ) {}

  settingsFor(agentName: string): ReminderSettings {
    return this.settings(agentName);
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async changed(): Promise<void> {
    for (const l of this.listeners) l();
    await this.signals?.publish(REMINDERS_TOPIC, 'changed').catch(() => undefined);
  }

  /** Every stored reminder, soonest first (unreadable entries are skipped). */
  async all(): Promise<Reminder[]> {
    return readable(await this.repo.all());
  }

  /**
   * Stored reminders due at or before `at` (claimed one-shots awaiting deletion included), soonest
   * first, at most `limit`: the scheduler's read, which does not grow with how many are set.
   */
  async dueBy(at: number, limit: number): Promise<Reminder[]> {
    return readable(await this.repo.due(at, limit));
  }

  /** The conversation's reminders that are still to fire, soonest first. */
  async list(conversationKey: string): Promise<Reminder[]> {
    return readable(await this.repo.byConversation(conversationKey)).filter((r) => r.firedAt === undefined);
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
    if (input.dueAt - now > MAX_AHEAD_MS)
      throw new ReminderError(`That time (${new Date(input.dueAt).toISOString()}) is more than a year ahead; check the date.`);
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
    await this.repo.put(rowOf(r));
    await this.changed();
    return r;
  }

  /** Cancels a reminder of this conversation; undefined when it has none with that id. */
  async cancel(conversationKey: string, id: string): Promise<Reminder | undefined> {
    const r = await this.get(id);
    if (!r || r.conversationKey !== conversationKey || r.firedAt !== undefined) return undefined;
    await this.repo.delete(id);
    await this.changed();
    return r;
  }

  async get(id: string): Promise<Reminder | undefined> {
    const row = await this.repo.get(id);
    return row ? readable([row])[0] : undefined;
  }

  /**
   * Claims the occurrence of `r` due at `r.dueAt` (the revision read). Undefined when another timer or
   * process claimed it first, or it changed meanwhile (cancelled, re-read needed).
   */
  async claim(r: Reminder): Promise<ClaimedFire | undefined> {
    const plan = planFire(r, this.now());
    if (!plan) return undefined;
    if (!(await this.repo.swap(r.id, r.rev, rowOf(plan.next)))) return undefined;
    return plan.fire;
  }

  /**
   * Claims what is due now (at most `limit` looked at) for which `take` says yes, in one call:
   * processes sharing the store claim disjoint sets (PostgreSQL: the rows are locked, others skip
   * them), and each occurrence is claimed once. What comes back is to be delivered.
   */
  async claimDue(limit: number, take: (r: Reminder) => boolean): Promise<ClaimedFire[]> {
    const now = this.now();
    const fires = new Map<string, ClaimedFire>();
    const claimed = await this.repo.claimDue(now, limit, (row) => {
      const [r] = readable([row]);
      const plan = r && take(r) ? planFire(r, now) : undefined;
      if (!plan) return undefined;
      fires.set(row.id, plan.fire);
      return rowOf(plan.next);
    });
    return claimed.map((c) => fires.get(c.before.id)).filter((f): f is ClaimedFire => f !== undefined);
  }

  /** Deletes a delivered one-shot. */
  async finish(fire: ClaimedFire): Promise<void> {
    if (fire.nextDueAt === undefined) await this.repo.delete(fire.reminder.id);
  }

  /** Deletes one-shots claimed longer than `olderThanMs` ago (their process died before deleting them). */
  async sweepClaimed(all: readonly Reminder[], olderThanMs: number): Promise<void> {
    const now = this.now();
    for (const r of all) if (r.firedAt !== undefined && now - r.firedAt > olderThanMs) await this.repo.delete(r.id);
  }
}

/** What claiming `r` at `now` writes and delivers; undefined when it is not due or already claimed. */
function planFire(r: Reminder, now: number): { next: Reminder; fire: ClaimedFire } | undefined {
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
  return { next, fire: { reminder: r, dueAt: r.dueAt, lateMs: Math.max(0, now - r.dueAt), ...(nextDueAt !== undefined ? { nextDueAt } : {}) } };
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

/** The row of a reminder: its columns mirror the JSON (the SQLite migration of old stores relies on that). */
function rowOf(r: Reminder): StoredReminder {
  return { id: r.id, conversation: r.conversationKey, dueAt: r.dueAt, rev: r.rev, reminder: r };
}

/** The rows that hold a readable reminder agreeing with its columns; the rest are left out. */
function readable(rows: readonly StoredReminder[]): Reminder[] {
  const out: Reminder[] = [];
  for (const row of rows) {
    const r = Reminder.safeParse(row.reminder);
    // The columns are what swap compares and due() orders by: they win over a stale JSON copy.
    if (r.success && r.data.id === row.id) out.push({ ...r.data, dueAt: row.dueAt, rev: row.rev });
  }
  return out;
}
