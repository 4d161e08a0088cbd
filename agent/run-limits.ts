/**
 * The runner's two limits on runs: how many run at once across conversations (Slots) and how long
 * one may take (Deadline), a budget that stops counting while the run waits on a human.
 */
/** A counting semaphore whose permits a waiting run can hand back. */
export class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(n: number) {
    this.free = n;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((r) => this.waiting.push(r));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** A run's time budget; paused while it waits on a human. */
export class Deadline {
  private timer: NodeJS.Timeout | undefined;
  private remaining: number;
  private startedAt = 0;
  constructor(ms: number, private readonly onExpire: () => void) {
    this.remaining = ms;
    this.resume();
  }
  pause(): void {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.remaining -= Date.now() - this.startedAt;
  }
  resume(): void {
    if (this.timer) return;
    this.startedAt = Date.now();
    this.timer = setTimeout(this.onExpire, Math.max(0, this.remaining));
  }
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
