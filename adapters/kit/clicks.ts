/**
 * A click on a card (a button, a select menu) -> the core, the same way on every platform.
 *
 * Contract:
 * - The platform has acked the click before this runs (each wants it within seconds).
 * - No sink (not started, stopping) or no readable click (`event` undefined: a foreign or stale button)
 *   -> the clicker is told NO_LONGER_VALID and the core hears nothing.
 * - Otherwise the core's notice (or `notice(result)`, when the platform adds to it) goes to the
 *   clicker; `notify` gets undefined when there is nothing to say (Telegram still answers the query).
 * - Any failure (building the event, the core) is logged and the clicker hears SOMETHING_WENT_WRONG.
 */
import type { ActionResult, AdapterSink, InboundAction, Log } from '../types.js';

const NO_LONGER_VALID = 'This button is no longer valid.';
export const SOMETHING_WENT_WRONG = 'Something went wrong; please try again.';

export interface Click {
  sink: AdapterSink | undefined;
  event: (() => Promise<InboundAction> | InboundAction) | undefined;
  notify: (text: string | undefined) => Promise<void>;
  log: Log;
  describeError: (err: unknown) => string;
  /** What the log line calls it; default "a click". */
  what?: string;
  notice?: (r: ActionResult) => string | undefined;
}

export async function deliverClick(c: Click): Promise<void> {
  const { sink, event } = c;
  if (!sink || !event) {
    await c.notify(NO_LONGER_VALID);
    return;
  }
  try {
    const r = await sink.action(await event());
    await c.notify(c.notice ? c.notice(r) : r.notice);
  } catch (err) {
    c.log('error', `handling ${c.what ?? 'a click'} failed: ${c.describeError(err)}`);
    await c.notify(SOMETHING_WENT_WRONG);
  }
}
