/**
 * What the parts of the Slack adapter (inbound events, interactivity, output, start-up) share: the
 * Web API clients, the bot's identity once known, the core's sink, a log that never prints a secret.
 * No Bolt here; the clients are @slack/web-api's.
 */
import type { WebClient } from '@slack/web-api';
import type { Recent } from '../kit/inbound.js';
import type { AdapterSink, Log } from '../types.js';

export interface SlackContext {
  /** Outbound Web API calls (a 429 is waited out by the SDK, per Retry-After). */
  readonly web: WebClient;
  /** The same, but a 429 is rejected at once (the status message coalesces instead of waiting). */
  readonly statusWeb: WebClient;
  readonly botToken: string;
  readonly log: Log;
  /** An error as one line: Slack's error code (and the missing scope), never a secret. */
  readonly describeError: (err: unknown) => string;
  /** Removes every secret from a text. */
  readonly scrub: (s: string) => string;
  /** Set by start(): the workspace and the bot's own user id. */
  identity: { teamId: string; botUserId: string };
  /** The core; undefined before start and after stop. */
  sink: AdapterSink | undefined;
  /**
   * AI assistant app: `app` once Slack sent assistant_thread_started (or the option said so);
   * `threads` the assistant threads seen ("<channel>:<thread_ts>").
   */
  readonly assistant: { app: boolean; threads: Recent };
}

/** A bounded map: the least recently set entries go first. */
export class RecentMap<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    return this.map.get(k);
  }
  set(k: string, v: V): void {
    this.map.delete(k);
    this.map.set(k, v);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
}
