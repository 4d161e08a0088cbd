/**
 * get_time: the current time, so the model does not guess it. Read-only (it changes nothing).
 * The clock and the default zone are injected, so tests pin them.
 */
import { z } from 'zod';
import type { Tool } from '../types.js';
import { ToolError } from '../types.js';

export const GetTimeInput = z.strictObject({
  timeZone: z.string().min(1).optional().describe("IANA time zone to show the time in, e.g. 'Europe/Berlin' (default: the server's zone)."),
});
export type GetTimeInput = z.infer<typeof GetTimeInput>;

export interface GetTimeOptions {
  now?: () => Date;
  /** Default zone when the model names none; default: the process's zone. */
  timeZone?: string;
}

/** `2025-06-01T14:03:12+02:00` for `date` in `timeZone`, plus the weekday and the offset. */
function zonedIso(date: Date, timeZone: string): { iso: string; weekday: string; offset: string } {
  let fmt: Intl.DateTimeFormat;
  try {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      weekday: 'long',
      timeZoneName: 'longOffset',
    });
  } catch {
    throw new ToolError(`"${timeZone}" is not a known time zone; use an IANA name such as "Europe/Berlin" or "UTC".`);
  }
  const parts: Record<string, string> = {};
  for (const p of fmt.formatToParts(date)) parts[p.type] = p.value;
  // longOffset is "GMT+02:00", or plain "GMT" for a zero offset.
  const gmt = parts.timeZoneName ?? 'GMT';
  const offset = gmt === 'GMT' ? '+00:00' : gmt.slice(3);
  const iso = `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`;
  return { iso, weekday: parts.weekday ?? '', offset };
}

/** get_time: read-only. */
export function getTimeTool(opts: GetTimeOptions = {}): Tool<GetTimeInput> {
  const now = opts.now ?? (() => new Date());
  const defaultZone = opts.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  return {
    name: 'get_time',
    description: 'Get the current date and time (ISO 8601 with offset, weekday, time zone, and UTC).',
    input: GetTimeInput,
    tier: 'read-only',
    async execute(input) {
      const date = now();
      const zone = input.timeZone ?? defaultZone;
      const { iso, weekday } = zonedIso(date, zone);
      return { content: `${iso} (${weekday}, ${zone})\nUTC: ${date.toISOString()}` };
    },
  };
}
