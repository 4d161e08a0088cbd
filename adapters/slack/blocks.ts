/**
 * Card -> Block Kit, from the kit's layout. Pure: no network, no Bolt.
 *
 * Contract:
 * - A section with the bold title and body, the preview (command or diff) as a code block, a context
 *   line with the tier (and a note when the preview was cut), the outcome once decided, then an
 *   actions block: buttons (Approve once primary, Deny danger; label cut to 75 characters), or one
 *   static select when there are more options than `SLACK_CARD_LIMITS.maxButtons`.
 * - Every button or option carries only the opaque token as its value; action_ids start with
 *   `ACTION_PREFIX` (one listener matches them all) and are unique within the message.
 * - Every text stays within Slack's limits (section 3,000, button/option text 75, 50 blocks);
 *   a decided card has no actions block. `text` is the notification fallback (the title).
 */
import type { Card } from '../../agent/events.js';
import { layoutCard } from '../kit/cards.js';
import type { CardLimits } from '../kit/cards.js';
import { escapeMrkdwn } from './mrkdwn.js';
import { AdapterError } from '../kit/errors.js';

export const ACTION_PREFIX = 'gatehouse';
const SECTION_TEXT_MAX = 3000;
const BUTTON_TEXT_MAX = 75;
const BUTTON_VALUE_MAX = 2000;

const SLACK_CARD_LIMITS: CardLimits = {
  text: SECTION_TEXT_MAX - 100,
  buttonLabel: BUTTON_TEXT_MAX,
  maxButtons: 5,
  optionLabel: BUTTON_TEXT_MAX,
};

type Json = Record<string, unknown>;

export interface SlackCardMessage {
  /** Plain mrkdwn messages to post before the card (an over-long body's head). */
  lead: string[];
  text: string;
  blocks: Json[];
}

const section = (text: string): Json => ({ type: 'section', text: { type: 'mrkdwn', text } });
const plain = (text: string): Json => ({ type: 'plain_text', text, emoji: true });

export function renderSlackCard(card: Card): SlackCardMessage {
  const l = layoutCard(card, SLACK_CARD_LIMITS);
  const blocks: Json[] = [];
  const head = `*${escapeMrkdwn(l.title)}*${l.continued ? ' (continued)' : ''}`;
  blocks.push(section(l.body === '' ? head : `${head}\n${escapeMrkdwn(l.body)}`));
  if (l.preview?.text) blocks.push(section('```\n' + escapeMrkdwn(l.preview.text.replace(/```/g, '`\u200b``')) + '\n```'));
  const context = [l.preview?.note, l.tierLine].filter((s): s is string => !!s);
  if (context.length > 0) blocks.push({ type: 'context', elements: context.map((t) => ({ type: 'mrkdwn', text: escapeMrkdwn(t) })) });
  if (l.outcome) blocks.push(section(`*${escapeMrkdwn(l.outcome)}*`));
  if (l.controls.kind === 'buttons') {
    blocks.push({
      type: 'actions',
      block_id: `${ACTION_PREFIX}_actions`,
      elements: l.controls.buttons.map((b, i) => ({
        type: 'button',
        action_id: `${ACTION_PREFIX}:${i}`,
        text: plain(b.label),
        value: tokenValue(b.token),
        ...(b.style === 'default' ? {} : { style: b.style }),
      })),
    });
  } else if (l.controls.kind === 'select') {
    blocks.push({
      type: 'actions',
      block_id: `${ACTION_PREFIX}_actions`,
      elements: [
        {
          type: 'static_select',
          action_id: `${ACTION_PREFIX}:select`,
          placeholder: plain(l.controls.placeholder),
          options: l.controls.options.slice(0, 100).map((o) => ({ text: plain(o.label), value: tokenValue(o.token) })),
        },
      ],
    });
  }
  const lead = l.lead.map((p, i) => (i === 0 ? `*${escapeMrkdwn(l.title)}*\n${escapeMrkdwn(p)}` : escapeMrkdwn(p)));
  return { lead, text: l.outcome ? `${l.title}: ${l.outcome}` : l.title, blocks };
}

function tokenValue(token: string): string {
  if (token === '' || token.length > BUTTON_VALUE_MAX)
    throw new AdapterError('bad_input', `card token of ${token.length} characters: Slack allows 1-${BUTTON_VALUE_MAX}`);
  return token;
}
