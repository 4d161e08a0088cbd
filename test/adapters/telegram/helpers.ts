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
/** The shared wait (test/helpers/wait.ts) in the argument order these tests use. */
export { until } from '../../helpers/wait.js';
