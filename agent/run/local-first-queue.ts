/**
 * Replicas, with work that must stay on this process: a `gatehouse run` attached to this replica
 * (its output goes back through this process's attach socket, so its turns must run here).
 *
 * Contract (a TurnQueue, ./turn-queue.ts):
 * - Conversations `isLocal` names go to an in-process queue whose turns live in this process's
 *   memory only (the attached client is the one waiting for them; a crash ends both), everything
 *   else to the shared queue. Run records of local runs are stored as any other (checkpoints), and
 *   the shared queue leaves local conversations alone at resume (`SharedTurnQueueOptions.local`).
 * - Order per conversation, `exclusive`, `busy`, `idle` and `close` act on the queue the
 *   conversation belongs to (both for idle/close).
 */
import type { QueuedTurnRow } from '../store/types.js';
import { InProcessTurnQueue, type DeliveryHooks, type TurnHandler, type TurnQueue } from './turn-queue.js';
import type { QueuedTurn, Turn } from './turn.js';
import type { Log } from '../log.js';

export class LocalFirstTurnQueue implements TurnQueue {
  readonly shared = true;
  private readonly local: InProcessTurnQueue;

  constructor(
    private readonly sharedQueue: TurnQueue,
    private readonly isLocal: (conversation: string) => boolean,
    opts: { parse(value: unknown): Turn | undefined; settled?(conversation: string): boolean; log?: Log },
  ) {
    this.local = new InProcessTurnQueue({ ...opts, runs: memoryTurns() });
  }

  enqueue(conversation: string, queued: QueuedTurn): Promise<boolean> {
    return this.pick(conversation).enqueue(conversation, queued);
  }

  start(handle: TurnHandler, hooks?: DeliveryHooks): void {
    this.sharedQueue.start(handle, hooks);
    this.local.start(handle);
  }

  resume(which?: (conversation: string) => boolean): Promise<number> {
    return this.sharedQueue.resume(which);
  }

  exclusive(conversation: string, task: () => Promise<void>): Promise<void> {
    return this.pick(conversation).exclusive(conversation, task);
  }

  busy(conversation: string): boolean {
    return this.pick(conversation).busy(conversation);
  }

  async idle(): Promise<void> {
    await Promise.all([this.sharedQueue.idle(), this.local.idle()]);
  }

  async close(graceMs: number): Promise<void> {
    await Promise.all([this.sharedQueue.close(graceMs), this.local.close(graceMs)]);
  }

  private pick(conversation: string): TurnQueue {
    return this.isLocal(conversation) ? this.local : this.sharedQueue;
  }
}

/** Queued turns in memory: what the in-process queue needs of the run repository. */
function memoryTurns() {
  const rows: QueuedTurnRow[] = [];
  return {
    async enqueueTurn(conversation: string, id: string, turn: unknown): Promise<boolean> {
      if (!rows.some((r) => r.conversation === conversation && r.id === id)) rows.push({ conversation, id, turn });
      return true;
    },
    async dropTurn(conversation: string, id: string): Promise<void> {
      const i = rows.findIndex((r) => r.conversation === conversation && r.id === id);
      if (i >= 0) rows.splice(i, 1);
    },
    async queuedTurns(): Promise<QueuedTurnRow[]> {
      return [...rows];
    },
  };
}
