/**
 * Questions and pickers for an ACP editor that can show forms (`clientCapabilities.elicitation.form`):
 * an ask_user_question or picker card becomes one `elicitation/create` form, and the editor's answer
 * decides the card as a tap on its button (or a typed answer) would.
 *
 * Contract:
 * - `questionForm(kind, card, buttons, allowCustom)` is the form: a single-select `choice` (each
 *   button's choice as the value, its label as the title; Deny is not a choice: declining the form
 *   is), and for a question that allows typed answers, a free-text `answer`. Required: `choice` when
 *   there is nothing to type.
 * - `pickFromForm(response, buttons, allowCustom)` is what to decide: a chosen button's token, a typed
 *   answer (typed text wins over a choice), or `{ answer: null }` (declined, cancelled, empty, or a value
 *   the form did not offer): never a choice the form did not show.
 */
import type { CreateElicitationResponse, ElicitationSchema } from '@agentclientprotocol/sdk';
import type { Card } from '../../agent/events.js';

export interface FormButton {
  token: string;
  label: string;
  choice: string;
}

export function questionForm(
  card: Pick<Card, 'title' | 'body'>,
  buttons: readonly FormButton[],
  allowCustom: boolean,
): { message: string; requestedSchema: ElicitationSchema } {
  const choices = buttons.filter((b) => b.choice !== 'deny');
  const properties: NonNullable<ElicitationSchema['properties']> = {};
  if (choices.length > 0) properties['choice'] = { type: 'string', title: 'Choose one', oneOf: choices.map((b) => ({ const: b.choice, title: b.label })) };
  if (allowCustom) properties['answer'] = { type: 'string', title: choices.length > 0 ? 'Or type your answer' : 'Your answer' };
  const required = choices.length > 0 && !allowCustom ? ['choice'] : [];
  return {
    message: [card.title, card.body].filter(Boolean).join('\n'),
    requestedSchema: { type: 'object', properties, ...(required.length ? { required } : {}) },
  };
}

export function pickFromForm(
  r: CreateElicitationResponse,
  buttons: readonly FormButton[],
  allowCustom: boolean,
): { token: string } | { answer: string | null } {
  if (r.action !== 'accept') return { answer: null };
  const content = (r as { content?: Record<string, unknown> | null }).content ?? {};
  const typed = content['answer'];
  if (allowCustom && typeof typed === 'string' && typed.trim() !== '') return { answer: typed };
  const chosen = buttons.find((b) => b.choice !== 'deny' && b.choice === content['choice']);
  return chosen ? { token: chosen.token } : { answer: null };
}
