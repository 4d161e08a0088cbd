/**
 * Shared test helpers for the Telegram adapter tests: a recording AdapterSink (our own seam, not a
 * library mock) and a condition wait. Not a test file itself.
 */
import type { ActionResult, AdapterSink, InboundAction, InboundMessage, MessageResult } from '../../../adapters/types.js';

export const TOKEN = '123456:TEST-token_abcdefghijklmnopqrstuv';

export class TestSink implements AdapterSink {
  readonly messages: InboundMessage[] = [];
  readonly actions: InboundAction[] = [];
  onMessage: (m: InboundMessage) => MessageResult | Promise<MessageResult> = () => ({ accepted: true });
  onAction: (a: InboundAction) => ActionResult | Promise<ActionResult> = () => ({ accepted: true });

  async message(m: InboundMessage): Promise<MessageResult> {
    this.messages.push(m);
    return this.onMessage(m);
  }

  async action(a: InboundAction): Promise<ActionResult> {
    this.actions.push(a);
    return this.onAction(a);
  }
}

/** Resolves once `pred()` holds; fails the test with `what` after `ms`. */
export async function until(pred: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
