/**
 * The one signal a process sends when it created a request, for every process sharing the store:
 * its expiry is watched everywhere (./expiry-watch.ts) and a typed reply to it is recognised
 * wherever it arrives (./open-requests.ts).
 *
 * Contract: topic `request.created`, payload `<request id>\n<conversation key>`, or the id alone
 * when the key would not fit a signal. Sent after the request's write resolved and before its card
 * is posted; a failure is logged, never thrown (the request is stored, and every listener reads
 * the store again at its next resync).
 */
import { MAX_SIGNAL_PAYLOAD, type Signals } from '../store/types.js';
import type { Log } from '../log.js';
import { messageOf } from '../log.js';

export const REQUEST_CREATED_TOPIC = 'request.created';

export async function announceRequest(signals: Signals, id: string, conversation: string, log?: Log): Promise<void> {
  const full = `${id}\n${conversation}`;
  const payload = Buffer.byteLength(full, 'utf8') <= MAX_SIGNAL_PAYLOAD ? full : id;
  await signals.publish(REQUEST_CREATED_TOPIC, payload).catch((err: unknown) => {
    log?.('warn', `approvals: could not announce request ${id} (${conversation}) to the other processes: ${messageOf(err)}`);
  });
}

/** What an announcement names (no conversation: its key was too long to send). */
export function announced(payload: string): { id: string; conversation?: string } {
  const nl = payload.indexOf('\n');
  return nl < 0 ? { id: payload } : { id: payload.slice(0, nl), conversation: payload.slice(nl + 1) };
}
