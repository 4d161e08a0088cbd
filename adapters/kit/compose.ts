/**
 * Builds an adapter's `render`, `postCard` and `updateCard` from its primitive operations, so the
 * composition (progress first, then the answer in pieces or the error as plain text; a card's lead
 * messages before the card; a handle checked before an edit) is written once for every platform.
 *
 * Contract:
 * - `render(ref, event)`: the progress view sees every event first; `beforeEvent` (if any) sees every
 *   event but an answer; an answer's text (`answerText`, default the event's text; undefined sends
 *   nothing) goes out as `answerPieces`, one `sendAnswer` each, in order; an error goes to `postPlain`;
 *   `afterEvent` (if any) runs last for every event that is neither answer nor error.
 * - `postCard(ref, card)`: `renderCard` once, each lead message through `sendLead`, then `sendCard`,
 *   whose handle is returned. Every call goes through `outbound` (logged, rethrown with its cause).
 * - `updateCard(ref, handle, card)`: a handle `isHandle` refuses throws before any call, naming the
 *   platform and what a handle is; otherwise `renderCard` then `editCard`.
 */
import type { AgentEvent, Card } from '../../agent/events.js';
import type { ConversationRef } from '../types.js';
import { AdapterError } from './errors.js';
import type { Outbound } from './outbound.js';

export interface OutputPrimitives<R extends { lead: readonly string[] }> {
  platformName: string;
  outbound: Outbound;
  progress: { handle(ref: ConversationRef, event: AgentEvent): Promise<void> };
  answerPieces(text: string): readonly string[];
  sendAnswer(ref: ConversationRef, piece: string): Promise<unknown>;
  postPlain(ref: ConversationRef, text: string): Promise<void>;
  renderCard(card: Card): R;
  sendLead(ref: ConversationRef, lead: string): Promise<unknown>;
  sendCard(ref: ConversationRef, rendered: R): Promise<string>;
  editCard(ref: ConversationRef, handle: string, rendered: R): Promise<void>;
  /** Whether `handle` can be this platform's card handle, and what one is ("a message id"). */
  isHandle(handle: string): boolean;
  handleKind: string;
  answerText?(ref: ConversationRef, event: Extract<AgentEvent, { type: 'answer' }>): Promise<string | undefined>;
  beforeEvent?(ref: ConversationRef, event: AgentEvent): Promise<void>;
  afterEvent?(ref: ConversationRef, event: AgentEvent): Promise<void>;
}

export interface ComposedOutput {
  render(ref: ConversationRef, event: AgentEvent): Promise<void>;
  postCard(ref: ConversationRef, card: Card): Promise<string>;
  updateCard(ref: ConversationRef, handle: string, card: Card): Promise<void>;
}

export function composeOutput<R extends { lead: readonly string[] }>(p: OutputPrimitives<R>): ComposedOutput {
  const { outbound } = p;
  return {
    async render(ref, event) {
      await p.progress.handle(ref, event);
      if (p.beforeEvent && event.type !== 'answer') await p.beforeEvent(ref, event);
      if (event.type === 'answer') {
        const text = p.answerText ? await p.answerText(ref, event) : event.text;
        if (text === undefined) return;
        for (const piece of p.answerPieces(text)) await outbound('sending the answer', ref, () => p.sendAnswer(ref, piece));
      } else if (event.type === 'error') {
        await p.postPlain(ref, event.message);
      } else if (p.afterEvent) {
        await p.afterEvent(ref, event);
      }
    },
    async postCard(ref, card) {
      const r = p.renderCard(card);
      for (const lead of r.lead) await outbound('sending a card', ref, () => p.sendLead(ref, lead));
      return outbound('sending a card', ref, () => p.sendCard(ref, r));
    },
    async updateCard(ref, handle, card) {
      if (!p.isHandle(handle)) throw new AdapterError('bad_card_handle', `not a ${p.platformName} card handle: "${handle}" (expected ${p.handleKind})`);
      const r = p.renderCard(card);
      await outbound('updating a card', ref, () => p.editCard(ref, handle, r));
    },
  };
}
