/**
 * Delivery in order, one conversation at a time.
 *
 * Contract: `run(key, fn)` starts `fn` only after every earlier `run` for the same key has settled
 * (resolved or failed), in the order `run` was called; different keys never wait for each other.
 * The returned promise is `fn`'s own (a failure reaches the caller and does not stop later calls).
 * Memory: a key is forgotten once its last call settles.
 */
export class OrderedDelivery {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const result = prev.then(fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with deliveries in flight (for tests and health). */
  get busy(): number {
    return this.tails.size;
  }
}
