/**
 * Card -> Telegram message (HTML text + inline keyboard). Pure: no network, no grammy.
 *
 * Contract:
 * - Layout: bold title, body, the preview in <pre>, the tier, and for a decided card the outcome
 *   line; all of it escaped (title, body and preview are plain text, never markup).
 * - The message stays within Telegram's 4,096 visible characters. Only the preview is ever cut (it
 *   then says "(preview cut: N more characters)"); a body too long for one message is never cut:
 *   its head goes out first as `lead` messages and the card carries the tail. Room for the outcome
 *   line is always reserved, so the decided card of the same body fits the same message.
 * - Buttons: one per row (thumb-sized on a phone), label cut to 64 characters, callback_data =
 *   prefix + token, checked against Telegram's 64-byte limit: `callbackData` throws when over.
 * - A decided card (outcome set, no buttons) has no keyboard.
 */
import type { Card } from '../../agent/events.js';
import { chunkPlain, TELEGRAM_TEXT_LIMIT } from './chunk.js';
import { escapeHtml } from './format.js';

export const CALLBACK_PREFIX = 'g:';
export const CALLBACK_DATA_MAX_BYTES = 64;
export const BUTTON_LABEL_MAX = 64;
const OUTCOME_RESERVE = 300;

export interface InlineButton {
  text: string;
  callback_data: string;
}
export interface InlineKeyboard {
  inline_keyboard: InlineButton[][];
}

export interface RenderedCard {
  /** HTML messages to send before the card (head of an over-long body); usually empty. */
  lead: string[];
  /** The card message itself (parse_mode HTML). */
  html: string;
  /** Absent for a decided card. */
  keyboard: InlineKeyboard | undefined;
}

/** prefix + token; throws when Telegram would refuse it (over 64 bytes, or empty). */
export function callbackData(token: string, prefix: string = CALLBACK_PREFIX): string {
  const data = prefix + token;
  const bytes = Buffer.byteLength(data, 'utf8');
  if (token === '' || bytes > CALLBACK_DATA_MAX_BYTES) {
    throw new Error(
      `button token gives callback_data of ${bytes} bytes ("${data.slice(0, 80)}"): Telegram allows 1-${CALLBACK_DATA_MAX_BYTES} bytes; card tokens must be short opaque ids (at most 40 characters)`,
    );
  }
  return data;
}

export function cutText(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = max - 1;
  const code = s.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${s.slice(0, end)}…`;
}

export function renderCard(card: Card, opts: { prefix?: string; limit?: number } = {}): RenderedCard {
  const limit = opts.limit ?? TELEGRAM_TEXT_LIMIT;
  const prefix = opts.prefix ?? CALLBACK_PREFIX;
  const title = card.title.trim();
  const tierLine = card.tier ? `Rated: ${card.tier}` : '';
  const outcome = card.outcome ? cutText(card.outcome.trim(), OUTCOME_RESERVE - 10) : '';

  // Visible characters besides body and preview: title, tier, reserved outcome, separators.
  const fixed = title.length + tierLine.length + OUTCOME_RESERVE + 30;
  const lead: string[] = [];
  let body = card.body.trim();
  const bodyRoom = limit - fixed;
  if (body.length > bodyRoom) {
    const parts = chunkPlain(body, bodyRoom);
    body = parts.pop() ?? '';
    lead.push(...parts.map((p, i) => (i === 0 ? `<b>${escapeHtml(title)}</b>\n${escapeHtml(p)}` : escapeHtml(p))));
  }

  const sections: string[] = [`<b>${escapeHtml(title)}</b>${lead.length > 0 ? ' (continued)' : ''}`];
  if (body !== '') sections[0] += `\n${escapeHtml(body)}`;

  if (card.preview !== undefined && card.preview.trim() !== '') {
    const preview = card.preview.replace(/\s+$/, '');
    const room = limit - fixed - body.length;
    if (preview.length <= room) {
      sections.push(`<pre>${escapeHtml(preview)}</pre>`);
    } else {
      const note = (n: number) => `(preview cut: ${n} more characters)`;
      const keep = room - note(preview.length).length - 1;
      if (keep < 40) {
        sections.push(`<i>(preview omitted: ${preview.length} characters do not fit in one message)</i>`);
      } else {
        let head = preview.slice(0, keep);
        const nl = head.lastIndexOf('\n');
        if (nl >= keep / 2) head = head.slice(0, nl);
        if (/[\ud800-\udbff]$/.test(head)) head = head.slice(0, -1); // no half surrogate pair
        sections.push(`<pre>${escapeHtml(head)}</pre>\n<i>${note(preview.length - head.length)}</i>`);
      }
    }
  }
  if (tierLine) sections.push(`<i>${escapeHtml(tierLine)}</i>`);
  if (outcome) sections.push(`<b>${escapeHtml(outcome)}</b>`);

  const decided = card.outcome !== undefined || card.buttons.length === 0;
  const keyboard: InlineKeyboard | undefined = decided
    ? undefined
    : {
        inline_keyboard: card.buttons.map((b) => [
          { text: cutText(b.label.trim() || b.token, BUTTON_LABEL_MAX), callback_data: callbackData(b.token, prefix) },
        ]),
      };
  return { lead, html: sections.join('\n\n'), keyboard };
}
