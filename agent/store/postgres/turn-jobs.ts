/**
 * The names and limits of the replicas' pg-boss queue (./turn-queue.ts), and how a turn id becomes
 * a job id.
 */
import { createHash } from 'node:crypto';

export const TURN_QUEUE = 'gatehouse-turns';
export const QUEUE_SCHEMA = 'gatehouse_queue';
export const CHANNEL = 'gatehouse_turns';
/** pg-boss's maximum expiry: a run parked longer is taken over (as if its replica died). */
export const EXPIRE_SECONDS = 24 * 3600;
/** A `failed` job blocks its key for good under key_strict_fifo: never let one get there. */
export const RETRY_LIMIT = 1_000_000;
/** A turn delivered this many times without reaching its checkpoint is dropped (it crashes replicas). */
export const MAX_DELIVERIES = 20;

/** pg-boss ids are uuids; a stored turn id that is not one maps to a stable uuid. */
export function jobIdOf(key: string): string {
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(key)) return key.toLowerCase();
  const h = createHash('sha1').update(key).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
