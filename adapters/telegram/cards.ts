/**
 * Card -> Telegram message (HTML text + inline keyboard), from the kit's layout (adapters/kit/cards.ts).
 * Pure: no network, no grammy.
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
import { layoutCard } from '../kit/cards.js';
import type { CardLimits } from '../kit/cards.js';
import { TELEGRAM_TEXT_LIMIT } from './chunk.js';
import { escapeHtml } from './format.js';
import { AdapterError } from '../kit/errors.js';

export const CALLBACK_PREFIX = 'g:';
const CALLBACK_DATA_MAX_BYTES = 64;
const BUTTON_LABEL_MAX = 64;

interface InlineButton {
  text: string;
  callback_data: string;
}
interface InlineKeyboard {
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
    throw new AdapterError(
      'bad_input',
      `button token gives callback_data of ${bytes} bytes ("${data.slice(0, 80)}"): Telegram allows 1-${CALLBACK_DATA_MAX_BYTES} bytes; card tokens must be short opaque ids (at most 40 characters)`,
    );
  }
  return data;
}

/** Telegram has no select menu on a message: every option is a button, one per row. */
const TELEGRAM_CARD_LIMITS: CardLimits = {
  text: TELEGRAM_TEXT_LIMIT,
  buttonLabel: BUTTON_LABEL_MAX,
  maxButtons: Number.POSITIVE_INFINITY,
  optionLabel: BUTTON_LABEL_MAX,
};

export function renderCard(card: Card, opts: { prefix?: string; limit?: number } = {}): RenderedCard {
  const prefix = opts.prefix ?? CALLBACK_PREFIX;
  const l = layoutCard(card, { ...TELEGRAM_CARD_LIMITS, text: opts.limit ?? TELEGRAM_TEXT_LIMIT });
  const lead = l.lead.map((p, i) => (i === 0 ? `<b>${escapeHtml(l.title)}</b>\n${escapeHtml(p)}` : escapeHtml(p)));
  const sections: string[] = [`<b>${escapeHtml(l.title)}</b>${l.continued ? ' (continued)' : ''}`];
  if (l.body !== '') sections[0] += `\n${escapeHtml(l.body)}`;
  if (l.preview) {
    const parts: string[] = [];
    if (l.preview.text !== '') parts.push(`<pre>${escapeHtml(l.preview.text)}</pre>`);
    if (l.preview.note) parts.push(`<i>${escapeHtml(l.preview.note)}</i>`);
    sections.push(parts.join('\n'));
  }
  if (l.tierLine) sections.push(`<i>${escapeHtml(l.tierLine)}</i>`);
  if (l.outcome) sections.push(`<b>${escapeHtml(l.outcome)}</b>`);
  const buttons = l.controls.kind === 'buttons' ? l.controls.buttons : l.controls.kind === 'select' ? l.controls.options : [];
  const keyboard: InlineKeyboard | undefined =
    buttons.length === 0 ? undefined : { inline_keyboard: buttons.map((b) => [{ text: b.label, callback_data: callbackData(b.token, prefix) }]) };
  return { lead, html: sections.join('\n\n'), keyboard };
}
