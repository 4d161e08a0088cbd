/**
 * Which conversations may have undecided requests, known in this process so that the router's
 * question on every message (does a typed reply answer an open question?) costs no store read for
 * a conversation that has none: the common case, and on PostgreSQL one statement in four per turn.
 *
 * Contract:
 * - `mayHave(key)` is false only when no request of `key` was pending when the index was last
 *   seeded (one `allPending` read, on first use and again after a resync) and none was announced
 *   since. It may be true with nothing pending (decided meanwhile, here or elsewhere): the caller
 *   then reads the store as it would without the index.
 * - Exclusive store (only this process creates requests on it: Store.exclusive): `creating(key)`,
 *   called before the store write, is all it needs to hear of.
 * - Shared store (`signals`: processes share it, PostgreSQL replicas): a request created anywhere
 *   is announced after its write and before its card is posted (./announce.ts), so a typed reply
 *   to the card meets the announcement here first; one without its conversation (a key too long
 *   for a signal) means everything is read again. While signals do not
 *   reach this process (`live()` false), and until the re-seed after a resync completes, `mayHave`
 *   is true: missed announcements can only cost reads, never hide an open question. (A listening
 *   connection lost without a word is seen within its ping timeout; until then an announcement
 *   may be missed, and a typed reply then queues as a new turn behind the question.)
 * - `nonePending(key, mark)`: a read begun at `mark()` found nothing pending; the key is forgotten
 *   unless a request was created or announced after the mark.
 * - A failed seed read rejects that call and is tried again at the next.
 */
import type { Signals } from '../store/types.js';
import { announced, REQUEST_CREATED_TOPIC } from './announce.js';

export interface OpenRequestsOptions {
  allPending(): Promise<Array<{ conversation: string }>>;
  /** Processes share the store: requests they create are announced through these signals. */
  signals?: Signals;
}

export class OpenRequests {
  private seeded: Promise<void> | undefined;
  /** Conversation -> the stamp of its latest `creating`/announcement (or of the seed). */
  private readonly keys = new Map<string, number>();
  private stamp = 0;
  /** Bumped by every resync: a seed begun before one may have missed announcements. */
  private generation = 0;

  constructor(private readonly opts: OpenRequestsOptions) {
    const { signals } = opts;
    if (!signals) return;
    signals.subscribe(REQUEST_CREATED_TOPIC, (payload) => {
      const { conversation } = announced(payload);
      if (conversation === undefined) this.forget();
      else this.creating(conversation);
    });
    signals.onResync(() => this.forget());
  }

  /** A request of `key` is about to be stored by this process. */
  creating(key: string): void {
    this.keys.set(key, ++this.stamp);
  }

  async mayHave(key: string): Promise<boolean> {
    if (this.opts.signals && !this.opts.signals.live()) return true;
    const generation = this.generation;
    this.seeded ??= this.seed();
    await this.seeded;
    if (generation !== this.generation) return true;
    return this.keys.has(key);
  }

  mark(key: string): number | undefined {
    return this.keys.get(key);
  }

  nonePending(key: string, mark: number | undefined): void {
    if (mark !== undefined && this.keys.get(key) === mark) this.keys.delete(key);
  }

  /** Announcements may have been missed: seed again before trusting the index. */
  private forget(): void {
    this.generation++;
    this.seeded = undefined;
  }

  private async seed(): Promise<void> {
    const generation = this.generation;
    try {
      const stamp = ++this.stamp;
      for (const r of await this.opts.allPending()) if (!this.keys.has(r.conversation)) this.keys.set(r.conversation, stamp);
    } catch (err) {
      if (this.generation === generation) this.seeded = undefined;
      throw err;
    }
  }
}
