/**
 * Measuring wrappers: the model client (latency, tokens and cost by model, every call including the
 * classifier's and summaries) and the store (latency of every repository call).
 *
 * Contract: a wrapper changes no behaviour: same results, same errors, same `this`; it only times.
 * The store keeps its identity for everything that is not a repository method (engine, description,
 * signals, leadership); `operation` labels are `repository.method`, fixed by the Store interface.
 */
import { ModelError, type ModelClient } from '../../agent/model/types.js';
import type { Store } from '../../agent/store/types.js';
import type { GatehouseMetrics } from './metrics.js';

type Clock = () => number;
const defaultClock: Clock = () => performance.now();

export function measuredModel(model: ModelClient, metrics: Pick<GatehouseMetrics, 'modelCall'>, now: Clock = defaultClock): ModelClient {
  return {
    async complete(req) {
      const started = now();
      try {
        const res = await model.complete(req);
        metrics.modelCall(req.model, (now() - started) / 1000, 'ok', res.usage);
        return res;
      } catch (err) {
        metrics.modelCall(req.model, (now() - started) / 1000, err instanceof ModelError ? err.code : 'error');
        throw err;
      }
    },
  };
}

/** The repositories whose calls are timed (signals and leadership are long-lived, not calls). */
const REPOS = ['transcripts', 'runs', 'approvals', 'allowlists', 'events', 'memory', 'reminders', 'cache', 'leases'] as const;

function timed<T extends object>(target: T, name: string, metrics: Pick<GatehouseMetrics, 'storeCall'>, now: Clock): T {
  const cache = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(t, prop, receiver) {
      const value: unknown = Reflect.get(t, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      let wrapped = cache.get(prop);
      if (!wrapped) {
        const fn = value as (...args: unknown[]) => unknown;
        const operation = name ? `${name}.${prop}` : prop;
        wrapped = function (this: unknown, ...args: unknown[]): unknown {
          const started = now();
          const out = fn.apply(t, args);
          if (!(out instanceof Promise)) return out;
          return out.then(
            (v: unknown) => {
              metrics.storeCall(operation, (now() - started) / 1000, true);
              return v;
            },
            (err: unknown) => {
              metrics.storeCall(operation, (now() - started) / 1000, false);
              throw err;
            },
          );
        };
        cache.set(prop, wrapped);
      }
      return wrapped;
    },
  });
}

export function measuredStore(store: Store, metrics: Pick<GatehouseMetrics, 'storeCall'>, now: Clock = defaultClock): Store {
  const repos = new Map<PropertyKey, unknown>(
    REPOS.filter((r) => typeof store[r] === 'object' && store[r] !== null).map((r) => [r, timed(store[r], r, metrics, now)]),
  );
  const own = new Set<PropertyKey>(['checkpoint', 'ping']);
  const top = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(t, prop, receiver) {
      if (repos.has(prop)) return repos.get(prop);
      if (own.has(prop)) {
        if (!top.has(prop)) top.set(prop, Reflect.get(timed(t, '', metrics, now), prop));
        return top.get(prop);
      }
      const value: unknown = Reflect.get(t, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}
