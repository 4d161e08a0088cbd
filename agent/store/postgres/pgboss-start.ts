/**
 * Contract: starts the replicas' pg-boss instance (in QUEUE_SCHEMA, its own small pool, no
 * scheduler) and makes sure the turn queue exists with its policy: one job at a time per
 * conversation (`key_strict_fifo`), heartbeats of at least pg-boss's minimum 10 s, the expiry and
 * retry limit of ./turn-jobs.ts. Two replicas starting at once both succeed: a create that loses
 * the race finds the queue there. pg-boss errors go to the log as warnings.
 */
import type { PgBoss as PgBossType } from 'pg-boss';
import type { SharedTurnQueueOptions } from '../../run/turn-queue.js';
import { EXPIRE_SECONDS, QUEUE_SCHEMA, RETRY_LIMIT, TURN_QUEUE } from './turn-jobs.js';

export async function startPgBoss(opts: SharedTurnQueueOptions & { url: string }): Promise<{ boss: PgBossType; heartbeatSeconds: number }> {
  const { PgBoss } = await import('pg-boss');
  const superviseSeconds = opts.tuning?.superviseSeconds ?? 5;
  const boss = new PgBoss({
    connectionString: opts.url,
    schema: QUEUE_SCHEMA,
    max: 4,
    application_name: 'gatehouse-queue',
    schedule: false,
    superviseIntervalSeconds: superviseSeconds,
    monitorIntervalSeconds: superviseSeconds,
    instanceName: opts.owner,
  });
  boss.on('error', (err) => opts.log?.('warn', `turn queue (pg-boss): ${err.message}`));
  await boss.start();
  const heartbeatSeconds = Math.max(10, opts.tuning?.heartbeatSeconds ?? 10);
  if (!(await boss.getQueue(TURN_QUEUE))) {
    await boss
      .createQueue(TURN_QUEUE, {
        policy: 'key_strict_fifo',
        heartbeatSeconds,
        expireInSeconds: EXPIRE_SECONDS,
        retryLimit: RETRY_LIMIT,
        retryDelay: 0,
        deleteAfterSeconds: 3600,
      })
      .catch(async (err: unknown) => {
        if (!(await boss.getQueue(TURN_QUEUE))) throw err; // another replica created it meanwhile: fine
      });
  }
  return { boss, heartbeatSeconds };
}
