/**
 * Which replica holds the connections only one process may hold (an adapter's `held`: Telegram long
 * polling, Slack Socket Mode, the Discord gateway), following the store's Leadership.
 *
 * Contract:
 * - `heldConnections({ leadership, adapters, log })`: with no leadership (SQLite: one process per
 *   store) this process holds them as it always did ("sole"). With one (PostgreSQL replicas), the
 *   adapters start with `holdConnection: leadership.leading` after `prepare()` (the first attempt),
 *   and `follow()` then opens every held connection when leadership is won and closes them at once
 *   when it is lost. An open that fails while leading is logged and tried again every `retryMs`.
 * - Every change of role is logged: "leading: ..." or "standby: ... held by another replica".
 * - `stop()` closes the held connections, then releases the leadership (a standby takes over at
 *   once) and stops following; what an adapter still sends keeps working.
 * - `status()` for /readyz: the role and each held connection's state.
 */
import type { Adapter, HeldConnection } from '../../adapters/types.js';
import type { Leadership } from '../../agent/store/types.js';
import type { Log } from './log.js';
import { messageOf } from '../../agent/log.js';

/** The role name in the store: one lock for all of this bot's single-holder connections. */
export const CONNECTIONS_ROLE = 'platform-connections';

type ConnectionRole = 'sole' | 'leader' | 'standby';

export interface HeldStatus {
  role: ConnectionRole;
  connections: Array<{ platform: string; name: string; up: boolean }>;
}

export interface HeldConnections {
  /** Before the adapters start: the first leadership attempt. Whether to hold at start. */
  prepare(): Promise<boolean>;
  /** After the adapters started: follow leadership from now on. */
  follow(): void;
  stop(): Promise<void>;
  status(): HeldStatus;
}

export function heldConnections(opts: { leadership?: Leadership; adapters: Adapter[]; log: Log; retryMs?: number }): HeldConnections {
  const { leadership, log } = opts;
  const held = opts.adapters.flatMap((a) => (a.held ? [{ platform: a.platform, conn: a.held }] : []));
  const names = held.map((h) => h.conn.name).join(', ');
  const retryMs = opts.retryMs ?? 5_000;
  let stopped = false;
  let unsubscribe: (() => void) | undefined;
  let retry: NodeJS.Timeout | undefined;
  let syncing: Promise<void> = Promise.resolve();

  const role = (): ConnectionRole => (!leadership || held.length === 0 ? 'sole' : leadership.leading ? 'leader' : 'standby');

  async function openAll(): Promise<boolean> {
    let ok = true;
    for (const { conn } of held) {
      if (stopped || !leadership?.leading) return false;
      try {
        await conn.open();
      } catch (err) {
        ok = false;
        log('warn', `leading, but ${conn.name} did not open: ${messageOf(err)}; trying again in ${retryMs} ms`);
      }
    }
    return ok;
  }

  async function closeAll(conns: HeldConnection[] = held.map((h) => h.conn)): Promise<void> {
    for (const conn of conns) await conn.close().catch((err: unknown) => log('warn', `closing ${conn.name}: ${messageOf(err)}`));
  }

  /** One reconciliation at a time, in the order asked. */
  const sync = (): Promise<void> =>
    (syncing = syncing.then(async () => {
      if (retry) clearTimeout(retry);
      retry = undefined;
      if (stopped) return;
      if (leadership?.leading) {
        const ok = await openAll();
        if (!ok && !stopped && leadership.leading) {
          retry = setTimeout(() => void sync(), retryMs);
          retry.unref();
        }
      } else {
        await closeAll();
      }
    }));

  return {
    async prepare() {
      if (!leadership || held.length === 0) return true;
      await leadership.start();
      return leadership.leading;
    },
    follow() {
      if (!leadership || held.length === 0) return;
      log('info', leadership.leading ? `leading: this replica holds ${names}` : `standby: ${names} held by another replica; this one sends and takes webhooks`);
      unsubscribe = leadership.onChange((leading) => {
        log(leading ? 'info' : 'warn', leading ? `leading: taking over ${names}` : `standby: lost the leadership; closing ${names}`);
        void sync();
      });
      // A change between prepare() and now.
      void sync();
    },
    async stop() {
      stopped = true;
      unsubscribe?.();
      if (retry) clearTimeout(retry);
      await syncing.catch(() => undefined);
      await closeAll();
      if (leadership && held.length > 0) {
        const was = leadership.leading;
        await leadership.release();
        if (was) log('info', `handed over ${names}`);
      }
    },
    status: () => ({ role: role(), connections: held.map((h) => ({ platform: h.platform, name: h.conn.name, up: h.conn.up })) }),
  };
}
