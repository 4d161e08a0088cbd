/**
 * The open waits of one process: a run parked on a request until it is decided or expires.
 *
 * Contract:
 * - A wait subscribes to the DecisionBus before it reads the store, so a decision published in
 *   between is not missed; a stored decision is returned at once.
 * - While open: an expiry timer (the broker then settles the request as expired) and the abort
 *   signal (a /stop: the broker settles it as stopped). No poll: a decision recorded by another
 *   process sharing the store arrives through the bus (SignalDecisionBus, with its re-reads).
 * - `wakeHere` settles this process's waits on a request without the bus (a decision found stored
 *   by a lost decideOnce or at expiry, or a store failure's fallback). A wait settles once.
 * - After `close` a wait parks for good and no timer runs (shutdown: requests stay stored).
 */
import type { DecisionBus } from './decision-bus.js';
import type { LoadedRequest } from './store.js';
import type { Decision } from './wording.js';
import type { Log } from '../log.js';
import { messageOf } from '../log.js';

export interface WaitsOptions {
  bus: DecisionBus;
  read(requestId: string): Promise<LoadedRequest | undefined>;
  /** At expiry: settle the request (as expired, or with what is stored by then). */
  expire(requestId: string): Promise<unknown>;
  /** On abort: settle the request with `decision`. */
  abort(requestId: string, decision: Decision): Promise<unknown>;
  now: () => number;
  log?: Log;
}

interface OpenWait {
  finish(d: Decision): void;
  stop(): void;
}

export class Waits {
  private readonly open = new Map<string, Set<OpenWait>>();
  private closed = false;

  constructor(private readonly opts: WaitsOptions) {}

  wait(requestId: string, signal?: AbortSignal): Promise<Decision> {
    if (this.closed) return new Promise<Decision>(() => undefined);
    return new Promise<Decision>((resolve, reject) => {
      let done = false;
      const timers: NodeJS.Timeout[] = [];
      let onAbort: (() => void) | undefined;
      const stop = () => {
        unsubscribe();
        for (const t of timers) clearTimeout(t);
        if (onAbort) signal?.removeEventListener('abort', onAbort);
        const set = this.open.get(requestId);
        set?.delete(wait);
        if (set?.size === 0) this.open.delete(requestId);
      };
      const finish = (d: Decision) => {
        if (done) return;
        done = true;
        stop();
        resolve(d);
      };
      const wait: OpenWait = { finish, stop };
      const unsubscribe = this.opts.bus.subscribe(requestId, finish);
      const set = this.open.get(requestId) ?? new Set<OpenWait>();
      set.add(wait);
      this.open.set(requestId, set);
      this.opts.read(requestId).then(
        (req) => {
          if (done || this.closed) return;
          if (!req) return finish({ outcome: 'expired', at: this.opts.now(), note: 'the request is no longer stored' });
          if (req.decision) return finish(req.decision);
          const unanswered = req.kind === 'question' ? 'unanswered' : 'expired';
          const remaining = Math.max(0, req.expiresAt - this.opts.now());
          timers.push(setTimeout(() => this.inBackground(requestId, this.opts.expire(requestId), { outcome: unanswered, at: this.opts.now() }), remaining));
          if (signal) {
            onAbort = () => {
              const decision: Decision = { outcome: req.kind === 'question' ? 'unanswered' : 'denied', at: this.opts.now(), note: 'the run was stopped' };
              this.inBackground(requestId, this.opts.abort(requestId, decision), decision);
            };
            if (signal.aborted) onAbort();
            else signal.addEventListener('abort', onAbort, { once: true });
          }
        },
        (err: unknown) => {
          done = true;
          stop();
          reject(err);
        },
      );
    });
  }

  /**
   * Expiry and /stop settle a request outside any caller. If the store fails, that is logged, and
   * the waiting run is released all the same (with `fallback`): it must not hang on a store error.
   */
  private inBackground(requestId: string, work: Promise<unknown>, fallback: Decision): void {
    work.catch((err: unknown) => {
      this.opts.log?.('warn', `could not record that request ${requestId} was ${fallback.outcome}: ${messageOf(err)}`);
      this.wakeHere(requestId, fallback);
    });
  }

  wakeHere(requestId: string, decision: Decision): void {
    for (const w of [...(this.open.get(requestId) ?? [])]) w.finish(decision);
  }

  close(): void {
    this.closed = true;
    for (const set of this.open.values()) for (const w of [...set]) w.stop();
    this.open.clear();
  }
}
