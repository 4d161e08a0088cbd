/**
 * add_reminder and cancel_reminder (low-risk: they change only this conversation's reminders) and
 * list_reminders (read-only). The reminders live in the store (agent/memory/reminders.ts) and are fired by
 * bot/service/reminder-scheduler.ts into the conversation that set them. Built with the store injected;
 * without one (a registry built only to list names) they refuse with a clear error.
 *
 * Times: `at` is ISO 8601 WITH a zone (`2026-12-01T09:00:00+01:00` or `...Z`): a bare local time is
 * refused, since the server's zone is rarely the user's. Or `delaySeconds` from now.
 */
import { z } from 'zod';
import { ReminderError, formatDuration, type Reminder, type Reminders } from '../../memory/reminders.js';
import type { Tool } from '../types.js';
import { ToolError } from '../types.js';

const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

export const AddReminderInput = z.strictObject({
  text: z.string().min(1).max(2_000).describe('What to remind of, as it should be posted.'),
  at: z
    .string()
    .optional()
    .describe('When, as ISO 8601 with a zone: 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z. Use get_time first if unsure. Give at or delaySeconds.'),
  delaySeconds: z.number().int().positive().optional().describe('Or: fire this many seconds from now.'),
  repeatEverySeconds: z.number().int().positive().optional().describe('Repeat at this interval after the first time (omit for once).'),
});
export type AddReminderInput = z.infer<typeof AddReminderInput>;

const ListRemindersInput = z.strictObject({});
export const CancelReminderInput = z.strictObject({ id: z.string().min(1).max(40).describe('The reminder id (list_reminders shows them).') });
export type CancelReminderInput = z.infer<typeof CancelReminderInput>;

function need(reminders: Reminders | undefined): Reminders {
  if (!reminders) throw new ToolError('reminders are not available here (no store was given to the tool).');
  return reminders;
}

/** The due time an input asks for, in ms since the epoch. Throws ToolError on a bad or missing time. */
function dueTime(input: AddReminderInput, now: number): number {
  if ((input.at === undefined) === (input.delaySeconds === undefined)) throw new ToolError('Give exactly one of at (an ISO time with a zone) or delaySeconds.');
  if (input.delaySeconds !== undefined) return now + input.delaySeconds * 1_000;
  const at = input.at!.trim();
  if (!ISO_WITH_ZONE.test(at)) {
    throw new ToolError(`"${at}" is not an ISO 8601 time with a zone; write it like 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z.`);
  }
  const t = Date.parse(at);
  if (Number.isNaN(t)) throw new ToolError(`"${at}" is not a valid date and time.`);
  return t;
}

function describeReminder(r: Pick<Reminder, 'id' | 'dueAt' | 'repeatMs' | 'text'>, now: number): string {
  const when = r.dueAt > now ? `in ${formatDuration(r.dueAt - now)}` : 'due now';
  const repeat = r.repeatMs !== undefined ? `, then every ${formatDuration(r.repeatMs)}` : '';
  return `${r.id}: ${new Date(r.dueAt).toISOString()} (${when}${repeat}): ${r.text.replace(/\s*\n\s*/g, ' ')}`;
}

/** add_reminder: low-risk. */
export function addReminderTool(reminders?: Reminders, now: () => number = Date.now): Tool<AddReminderInput> {
  return {
    name: 'add_reminder',
    description:
      'Set a reminder that is posted into this conversation at a time (at, ISO 8601 with a zone) or after a delay ' +
      '(delaySeconds), optionally repeating (repeatEverySeconds). Reminders survive restarts; one that came due while ' +
      'the bot was down is posted when it is back, saying how late.',
    input: AddReminderInput,
    tier: 'low-risk',
    async propose(input) {
      const t = now();
      const due = dueTime(input, t);
      const repeat = input.repeatEverySeconds !== undefined ? `, every ${formatDuration(input.repeatEverySeconds * 1_000)}` : '';
      const text = input.text.trim().replace(/\s*\n\s*/g, ' ');
      return {
        summary: `add_reminder at ${new Date(due).toISOString()} (in ${formatDuration(Math.max(0, due - t))}${repeat}): ${text.length > 80 ? `${text.slice(0, 79)}…` : text}`,
      };
    },
    async execute(input, ctx) {
      const store = need(reminders);
      const t = now();
      try {
        const r = await store.add({
          agentName: ctx.agentName,
          conversationKey: ctx.conversationKey,
          text: input.text,
          dueAt: dueTime(input, t),
          ...(input.repeatEverySeconds !== undefined ? { repeatMs: input.repeatEverySeconds * 1_000 } : {}),
        });
        return { content: `Reminder set. ${describeReminder(r, t)}` };
      } catch (err) {
        if (err instanceof ReminderError) throw new ToolError(err.message);
        throw err;
      }
    },
  };
}

/** list_reminders: read-only. */
export function listRemindersTool(reminders?: Reminders, now: () => number = Date.now): Tool<Record<string, never>> {
  return {
    name: 'list_reminders',
    description: "List this conversation's reminders that are still to come, soonest first, with their ids.",
    input: ListRemindersInput,
    tier: 'read-only',
    async execute(_input, ctx) {
      const list = await need(reminders).list(ctx.conversationKey);
      const t = now();
      return { content: list.length === 0 ? 'No reminders in this conversation.' : list.map((r) => describeReminder(r, t)).join('\n') };
    },
  };
}

/** cancel_reminder: low-risk. */
export function cancelReminderTool(reminders?: Reminders): Tool<CancelReminderInput> {
  return {
    name: 'cancel_reminder',
    description: "Cancel one of this conversation's reminders by its id (a repeating one stops for good).",
    input: CancelReminderInput,
    tier: 'low-risk',
    async execute(input, ctx) {
      const r = await need(reminders).cancel(ctx.conversationKey, input.id);
      if (!r) throw new ToolError(`No reminder ${input.id} in this conversation (list_reminders shows them).`);
      return { content: `Cancelled reminder ${r.id}: ${r.text}` };
    },
  };
}
