/**
 * The one status message of a run: created on first need, then edited in place, throttled.
 *
 * Contract:
 * - `set(text)` records the state to show and returns at once. The first state is sent at once;
 *   later states are edits at most one per `intervalMs`; states set while waiting are coalesced
 *   (the last one wins, intermediate ones are never sent). One call in flight at a time.
 * - A failure classified as `retry` (Telegram 429) pushes the next call back by its retry_after
 *   and the latest state is sent then; `not_modified` counts as shown; any other failure stops the
 *   status (logged): the run's answer does not depend on it.
 * - `finish()` stops updating, waits for a call in flight (so no message is left behind), and
 *   deletes the status message if one was created.
 * - No platform library here: the adapter supplies the transport (message ids are strings: Telegram's
 *   numbers, Slack's ts) and the error classifier (Telegram 429 retry_after, Slack Retry-After).
 */
import type { Log } from '../types.js';

export interface StatusTransport {
  send(text: string): Promise<string>;
  edit(messageId: string, text: string): Promise<void>;
  remove(messageId: string): Promise<void>;
}

export type StatusFailure = { kind: 'retry'; afterMs: number } | { kind: 'not_modified' } | { kind: 'fatal' };

export interface StatusOptions {
  intervalMs: number;
  classify: (err: unknown) => StatusFailure;
  log?: Log;
  describeError?: (err: unknown) => string;
  /** For log lines: "Telegram", "Slack". */
  platformName?: string;
}

export class StatusMessage {
  private desired: string | undefined;
  private shown: string | undefined;
  private id: string | undefined;
  private nextAt = 0;
  private closed = false;
  private broken = false;
  private pumping: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly transport: StatusTransport,
    private readonly opts: StatusOptions,
  ) {}

  /** The message id once created. */
  get messageId(): string | undefined {
    return this.id;
  }

  set(text: string): void {
    if (this.closed || this.broken) return;
    this.desired = text;
    this.pumping ??= this.runPump();
  }

  private runPump(): Promise<void> {
    return this.pump().finally(() => {
      this.pumping = undefined;
      // a set() may have landed between the loop's last check and here
      if (!this.closed && !this.broken && this.desired !== this.shown) this.pumping = this.runPump();
    });
  }

  async finish(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.pumping;
    const id = this.id;
    this.id = undefined;
    if (id === undefined) return;
    try {
      await this.transport.remove(id);
    } catch (err) {
      this.opts.log?.('warn', `could not delete the status message ${id}: ${this.opts.describeError?.(err) ?? String(err)}`);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        if (this.timer) clearTimeout(this.timer);
        this.timer = undefined;
        this.wake = undefined;
        resolve();
      };
      this.timer = setTimeout(() => this.wake?.(), ms);
    });
  }

  private async pump(): Promise<void> {
    while (!this.closed && !this.broken && this.desired !== undefined && this.desired !== this.shown) {
      const wait = this.nextAt - Date.now();
      if (wait > 0) {
        await this.sleep(wait);
        continue;
      }
      const text = this.desired;
      try {
        if (this.id === undefined) this.id = await this.transport.send(text);
        else await this.transport.edit(this.id, text);
        this.shown = text;
        this.nextAt = Date.now() + this.opts.intervalMs;
      } catch (err) {
        const f = this.opts.classify(err);
        if (f.kind === 'retry') {
          this.nextAt = Date.now() + f.afterMs;
          this.opts.log?.('warn', `status message rate-limited by ${this.opts.platformName ?? 'the platform'}: next update in ${f.afterMs} ms`);
        } else if (f.kind === 'not_modified') {
          this.shown = text;
        } else {
          this.broken = true;
          this.opts.log?.('warn', `status message stopped: ${this.opts.describeError?.(err) ?? String(err)}`);
        }
      }
    }
  }
}

export interface StatusItem {
  icon: string;
  text: string;
}

const MAX_LINES = 12;
const MAX_LINE = 200;

/** The status text for a run's items (plain text, at most 13 lines of at most 200 characters). */
export function statusText(items: StatusItem[]): string {
  const lines = items.map((it) => {
    const line = `${it.icon} ${it.text.replace(/\s+/g, ' ').trim()}`;
    return line.length > MAX_LINE ? `${line.slice(0, MAX_LINE - 1)}…` : line;
  });
  const hidden = lines.length - MAX_LINES;
  const shown = hidden > 0 ? [`… ${hidden} earlier`, ...lines.slice(hidden)] : lines;
  return ['Working…', ...shown].join('\n');
}
