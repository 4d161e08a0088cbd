/**
 * Which conversations may have undecided requests, known in this process when it is the only one
 * that creates requests on its store (an exclusive SQLite serve: Store.exclusive). The router asks
 * on every message whether a typed reply answers an open question; with this index a conversation
 * that has none costs no store read.
 *
 * Contract:
 * - `mayHave(key)` is false only when no request of `key` was pending at start (one `allPending`
 *   read, on first use) and none was created here since (`created`, called before the store write).
 *   It may be true with nothing pending (decided meanwhile, here or by an operator command): the
 *   caller then reads the store as it would without the index.
 * - `nonePending(key, mark)`: a read begun at `mark()` found nothing pending; the key is forgotten
 *   unless a request was created after the mark.
 * - A failed seed read rejects that call and is tried again at the next.
 */
export class OpenRequests {
  private seeded: Promise<void> | undefined;
  /** Conversation -> the stamp of its latest `created` (or of the seed). */
  private readonly keys = new Map<string, number>();
  private stamp = 0;

  constructor(private readonly allPending: () => Promise<Array<{ conversation: string }>>) {}

  created(key: string): void {
    this.keys.set(key, ++this.stamp);
  }

  async mayHave(key: string): Promise<boolean> {
    this.seeded ??= this.seed();
    await this.seeded;
    return this.keys.has(key);
  }

  mark(key: string): number | undefined {
    return this.keys.get(key);
  }

  nonePending(key: string, mark: number | undefined): void {
    if (mark !== undefined && this.keys.get(key) === mark) this.keys.delete(key);
  }

  private async seed(): Promise<void> {
    try {
      const stamp = ++this.stamp;
      for (const r of await this.allPending()) if (!this.keys.has(r.conversation)) this.keys.set(r.conversation, stamp);
    } catch (err) {
      this.seeded = undefined;
      throw err;
    }
  }
}
