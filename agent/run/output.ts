/**
 * Where a conversation's output goes. bot/ builds one per conversation from its adapter and ref;
 * the runner and the approval broker only ever see this, never a platform.
 * After a restart the runner asks `OutputResolver` for a conversation by key alone.
 */
import type { AgentEvent, Card } from '../events.js';

export interface ConversationOutput {
  emit(event: AgentEvent): Promise<void>;
  /** Whether `text` events are shown; when not, the runner asks the model for whole replies. */
  readonly streamsText: boolean;
  /** Whether `thinking` events are wanted (headless, ACP); chat surfaces never show reasoning. */
  readonly streamsThinking?: boolean;
  /** Posts a card; returns a handle to replace it later. `meta.requestId`: the broker's request it shows. */
  postCard(card: Card, meta?: { requestId: string }): Promise<string>;
  /** Replaces a posted card (its decided form: no buttons, an outcome line). */
  updateCard(handle: string, card: Card): Promise<void>;
}

export type OutputResolver = (conversationKey: string) => ConversationOutput;
