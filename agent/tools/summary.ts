/**
 * Readable one-line summaries of a tool call, for status lines and approval cards of tools whose
 * propose() gives none: `read_file path: notes/todo.txt, offset: 20`, never raw JSON.
 *
 * Contract: one line, at most `max` characters; strings shown as they are (newlines folded, cut
 * with …), numbers and booleans as written, lists as their size, nested objects by their keys.
 * No backticks or JSON punctuation, which chat surfaces would show literally. A duration argument
 * (a key ending in Seconds or Ms, a minute or more) also shows as people say it: `(1 h 30 min)`.
 */
import { formatDuration } from '../memory/reminders.js';

export function summarizeCall(tool: string, input: unknown, max = 120): string {
  const args = describeInput(input);
  const line = args === '' ? tool : `${tool} ${args}`;
  return cut(line, max);
}

export function describeInput(input: unknown): string {
  if (input === null || input === undefined) return '';
  if (typeof input !== 'object' || Array.isArray(input)) return describeValue(input);
  return Object.entries(input as Record<string, unknown>)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${k}: ${describeValue(v)}${durationNote(k, v)}`)
    .join(', ');
}

/** `delaySeconds: 5400 (1 h 30 min)`: a count of seconds or milliseconds, also as people say it. */
function durationNote(key: string, v: unknown): string {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return '';
  if (/Seconds$/.test(key) && v >= 60) return ` (${formatDuration(v * 1_000)})`;
  if (/Ms$/.test(key) && v >= 60_000) return ` (${formatDuration(v)})`;
  return '';
}

function describeValue(v: unknown): string {
  if (typeof v === 'string') return cut(v.replace(/\s*\n\s*/g, ' ⏎ ').replace(/`/g, "'"), 60);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) return `${v.length} item${v.length === 1 ? '' : 's'}`;
  if (typeof v === 'object' && v !== null) {
    const keys = Object.keys(v);
    return keys.length === 0 ? '(empty)' : `(${cut(keys.join(', '), 40)})`;
  }
  return String(v);
}

function cut(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}
