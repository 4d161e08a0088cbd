/**
 * Card layout under a platform's limits, before any platform markup: what goes where, what is cut
 * and how the buttons are offered. The adapter turns the layout into its message (Telegram HTML +
 * inline keyboard, Slack Block Kit).
 *
 * Contract:
 * - The card's text (title, body, preview, tier, outcome) fits `limits.text` characters of plain
 *   text (the adapter adds its markup's overhead to `limits.fixedOverhead`). Room for an outcome
 *   line is always reserved, so the decided card of the same body fits the same message.
 * - Only the preview is ever cut; it then ends with a note saying how many characters were cut.
 *   A body too long for one message is never cut: its head goes out first as `lead` messages
 *   (the first one titled) and the card carries the tail.
 * - Button labels are cut to `limits.buttonLabel` (surrogate-safe, "…"); an empty label shows the
 *   token. More buttons than `limits.maxButtons` are offered as one select menu instead (options
 *   cut to `limits.optionLabel`); a decided card (outcome set, or no buttons) offers nothing.
 */
import type { ButtonStyle, Card } from '../../agent/events.js';
import { cutBefore, cutText } from './attachments.js';
import { chunkText } from './text.js';

export interface CardLimits {
  /** Characters of plain text in the card message. */
  text: number;
  buttonLabel: number;
  /** More buttons than this become a select menu (Infinity: never). */
  maxButtons: number;
  optionLabel: number;
  /** Characters the adapter's markup and separators take. Default 30. */
  fixedOverhead?: number;
}

const OUTCOME_RESERVE = 300;

interface LaidOutButton {
  token: string;
  label: string;
  style: ButtonStyle;
}

type CardControls = { kind: 'none' } | { kind: 'buttons'; buttons: LaidOutButton[] } | { kind: 'select'; placeholder: string; options: LaidOutButton[] };

export interface CardLayout {
  title: string;
  /** Plain-text messages to send before the card (head of an over-long body); usually empty. */
  lead: string[];
  /** True when lead messages carry the body's head. */
  continued: boolean;
  body: string;
  /** The preview to show preformatted (maybe cut), and the note when it was cut or omitted. */
  preview?: { text: string; note?: string };
  tierLine?: string;
  outcome?: string;
  controls: CardControls;
}

function previewCutNote(n: number): string {
  return `(preview cut: ${n} more characters)`;
}

export function layoutCard(card: Card, limits: CardLimits): CardLayout {
  const title = card.title.trim();
  const tierLine = card.tier ? `Rated: ${card.tier}` : undefined;
  const outcome = card.outcome ? cutText(card.outcome.trim(), OUTCOME_RESERVE - 10) : undefined;
  const fixed = title.length + (tierLine?.length ?? 0) + OUTCOME_RESERVE + (limits.fixedOverhead ?? 30);

  const lead: string[] = [];
  let body = card.body.trim();
  const bodyRoom = Math.max(100, limits.text - fixed);
  if (body.length > bodyRoom) {
    const parts = chunkText(body, bodyRoom);
    body = parts.pop() ?? '';
    lead.push(...parts);
  }

  const layout: CardLayout = { title, lead, continued: lead.length > 0, body, controls: { kind: 'none' } };
  if (tierLine) layout.tierLine = tierLine;
  if (outcome) layout.outcome = outcome;

  if (card.preview !== undefined && card.preview.trim() !== '') {
    const preview = card.preview.replace(/\s+$/, '');
    const room = limits.text - fixed - body.length;
    if (preview.length <= room) {
      layout.preview = { text: preview };
    } else {
      const keep = room - previewCutNote(preview.length).length - 1;
      if (keep < 40) {
        layout.preview = { text: '', note: `(preview omitted: ${preview.length} characters do not fit in one message)` };
      } else {
        let head = cutBefore(preview, keep);
        const nl = head.lastIndexOf('\n');
        if (nl >= keep / 2) head = head.slice(0, nl);
        layout.preview = { text: head, note: previewCutNote(preview.length - head.length) };
      }
    }
  }

  const decided = card.outcome !== undefined || card.buttons.length === 0;
  if (!decided) {
    const laid = (max: number) => card.buttons.map((b) => ({ token: b.token, label: cutText(b.label.trim() || b.token, max), style: b.style }));
    layout.controls =
      card.buttons.length > limits.maxButtons
        ? { kind: 'select', placeholder: card.kind === 'question' ? 'Choose an answer' : 'Choose…', options: laid(limits.optionLabel) }
        : { kind: 'buttons', buttons: laid(limits.buttonLabel) };
  }
  return layout;
}
