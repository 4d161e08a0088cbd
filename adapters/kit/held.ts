/**
 * The held connection every adapter with one builds the same way (see HeldConnection in ../types.ts).
 *
 * Contract: `heldConnection(name, { open, close, up })` turns an adapter's raw open/close into the
 * seam's: calls run one after another in the order made (a quick lose-win-lose of leadership never
 * interleaves a close with an open), open() when open and close() when closed do nothing, a failed
 * open leaves it closed (and rejects), and `up` is false whenever it is not open.
 */
import type { HeldConnection } from '../types.js';

export interface RawConnection {
  open(): Promise<void>;
  close(): Promise<void>;
  /** Receiving now (while open); default: open means up. */
  up?: () => boolean;
}

export function heldConnection(name: string, raw: RawConnection): HeldConnection {
  let open = false;
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn, fn);
    chain = next.catch(() => undefined);
    return next;
  };
  return {
    name,
    open: () =>
      serial(async () => {
        if (open) return;
        await raw.open();
        open = true;
      }),
    close: () =>
      serial(async () => {
        if (!open) return;
        open = false;
        await raw.close();
      }),
    get up() {
      return open && (raw.up?.() ?? true);
    },
  };
}
