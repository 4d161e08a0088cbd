/**
 * Runs async work one after another per key (store updates of one conversation, one memory list),
 * while different keys run freely. A failed step does not stop the next one; its error goes to its
 * own caller. A key's entry is dropped once its queue is empty, so idle keys cost nothing.
 */
export class KeyedChain {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}
