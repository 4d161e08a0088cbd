/**
 * This process's replica id: the owner of the fences it takes and the name pg-boss registers.
 * GATEHOUSE_REPLICA_ID when set (a stable name per deployment slot), else hostname:pid:random.
 * Either way a restarted process takes new epochs, so its predecessor's fences never hold for it.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

let id: string | undefined;

export function replicaId(env: NodeJS.ProcessEnv = process.env): string {
  const set = env.GATEHOUSE_REPLICA_ID?.trim();
  if (set) return set;
  id ??= `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  return id;
}
