/**
 * Card -> a Discord message (content + message components), from the kit's layout. Pure: no
 * network, no discord.js (components are the API's JSON).
 *
 * Contract:
 * - Content: the bold title and body, the preview (command or diff) as a code block, a line with
 *   the tier (and a note when the preview was cut), the outcome once decided; at most 2,000
 *   characters. An over-long body's head goes first as `lead` messages.
 * - Controls within Discord's limits: buttons (Approve once primary, Deny danger, others secondary;
 *   labels cut to 80) in rows of at most 5; more options than `DISCORD_CARD_LIMITS.maxButtons` become
 *   string selects of at most 25 options each (labels cut to 100), at most 5 rows in all.
 * - Every custom_id is `CUSTOM_ID_PREFIX` + the opaque token (a select's option value is the token),
 *   at most 100 characters. A decided card has no components.
 */
import type { Card } from '../../agent/events.js';
import { layoutCard } from '../kit/cards.js';
import type { CardLimits } from '../kit/cards.js';
import { cutText } from '../kit/attachments.js';
import { DISCORD_TEXT_LIMIT, escapeDiscord, fence } from './markdown.js';
import { AdapterError } from '../kit/errors.js';

const CUSTOM_ID_PREFIX = 'gh:';
const SELECT_ID_PREFIX = 'gh-select:';
const CUSTOM_ID_MAX = 100;
const BUTTON_LABEL_MAX = 80;
const OPTION_LABEL_MAX = 100;
const BUTTONS_PER_ROW = 5;
const MAX_ROWS = 5;
const OPTIONS_PER_SELECT = 25;

/** Buttons beyond this many (one row's worth) are offered as a select instead. */
const DISCORD_CARD_LIMITS: CardLimits = {
  text: DISCORD_TEXT_LIMIT - 200,
  buttonLabel: BUTTON_LABEL_MAX,
  maxButtons: BUTTONS_PER_ROW,
  optionLabel: OPTION_LABEL_MAX,
};

type Json = Record<string, unknown>;

export interface DiscordCardMessage {
  lead: string[];
  content: string;
  components: Json[];
}

const STYLE = { primary: 1, default: 2, danger: 4 } as const;

export function renderDiscordCard(card: Card): DiscordCardMessage {
  const l = layoutCard(card, DISCORD_CARD_LIMITS);
  const parts: string[] = [];
  const head = `**${escapeDiscord(l.title)}**${l.continued ? ' (continued)' : ''}`;
  parts.push(l.body === '' ? head : `${head}\n${escapeDiscord(l.body)}`);
  if (l.preview?.text) parts.push(fence(l.preview.text));
  const context = [l.preview?.note, l.tierLine].filter((s): s is string => !!s);
  if (context.length > 0) parts.push(`-# ${escapeDiscord(context.join(' · '))}`);
  if (l.outcome) parts.push(`**${escapeDiscord(l.outcome)}**`);
  const content = cutText(parts.join('\n'), DISCORD_TEXT_LIMIT);

  const components: Json[] = [];
  if (l.controls.kind === 'buttons') {
    const buttons = l.controls.buttons.map((b) => ({ type: 2, style: STYLE[b.style], label: b.label, custom_id: customId(b.token) }));
    for (let i = 0; i < buttons.length && components.length < MAX_ROWS; i += BUTTONS_PER_ROW) {
      components.push({ type: 1, components: buttons.slice(i, i + BUTTONS_PER_ROW) });
    }
  } else if (l.controls.kind === 'select') {
    const options = l.controls.options;
    for (let i = 0, n = 0; i < options.length && n < MAX_ROWS; i += OPTIONS_PER_SELECT, n++) {
      const page = options.slice(i, i + OPTIONS_PER_SELECT);
      const more = options.length > OPTIONS_PER_SELECT ? ` (${i + 1}-${i + page.length})` : '';
      components.push({
        type: 1,
        components: [
          {
            type: 3,
            custom_id: `${SELECT_ID_PREFIX}${n}`,
            placeholder: cutText(`${l.controls.placeholder}${more}`, 150),
            min_values: 1,
            max_values: 1,
            options: page.map((o) => ({ label: o.label, value: tokenValue(o.token) })),
          },
        ],
      });
    }
  }
  const lead = l.lead.map((p, i) => (i === 0 ? `**${escapeDiscord(l.title)}**\n${escapeDiscord(p)}` : escapeDiscord(p)));
  return { lead, content, components };
}

function tokenValue(token: string): string {
  if (token === '' || token.length > OPTION_LABEL_MAX)
    throw new AdapterError('bad_input', `card token of ${token.length} characters: Discord allows 1-${OPTION_LABEL_MAX}`);
  return token;
}

function customId(token: string): string {
  const id = CUSTOM_ID_PREFIX + token;
  if (token === '' || id.length > CUSTOM_ID_MAX)
    throw new AdapterError(
      'bad_input',
      `card token of ${token.length} characters: a Discord custom_id holds at most ${CUSTOM_ID_MAX - CUSTOM_ID_PREFIX.length}`,
    );
  return id;
}

/** The token a clicked component carries, or undefined when it is not one of ours. */
export function tokenOf(customIdValue: string, values?: readonly string[]): string | undefined {
  if (customIdValue.startsWith(SELECT_ID_PREFIX)) return values?.[0];
  if (customIdValue.startsWith(CUSTOM_ID_PREFIX)) return customIdValue.slice(CUSTOM_ID_PREFIX.length);
  return undefined;
}
