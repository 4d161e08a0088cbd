/**
 * Issue 18, stranger flood: 3,000 distinct unknown Telegram ids each DM the bot. Before, every one of
 * them got a refusal reply (2,982 of 3,000). Run for real: the router (bot/service/router.ts) behind the real
 * Telegram adapter (grammy) against the fake Bot API, on an injected clock. Asserted: the replies are
 * bounded by the per-platform budget (10 a minute, here over 5 minutes of clock), the log has ONE
 * flood line per minute of clock with counts, and a stranger is told at most once a day. Control:
 * with the budget lifted, every distinct stranger is answered (the old cost), so the test can fail.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTelegramAdapter, type TelegramAdapter } from '../../adapters/telegram/adapter.js';
import type { AdapterSink, InboundMessage } from '../../adapters/types.js';
import type { ApprovalBroker } from '../../agent/approvals/index.js';
import type { AuditEvent } from '../../agent/audit.js';
import type { Runner } from '../../agent/run/runner.js';
import { loadConfig } from '../../bot/config/index.js';
import { Router } from '../../bot/service/router.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { TOKEN, until } from '../adapters/telegram/helpers.js';

let tg: FakeTelegram;
let adapter: TelegramAdapter;
let dir: string;
let clock: number;
let logs: string[];
let audits: AuditEvent[];
let handled: number;

async function start(refusals = ''): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'gh-flood-'));
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    workspace: ws\naccess:\n  telegram: { users: ["501"] }\n${refusals ? `  refusals: ${refusals}\n` : ''}`,
  );
  const config = loadConfig({ env: { ANTHROPIC_API_KEY: 'k', GATEHOUSE_STORE: 'sqlite://:memory:' }, cwd: dir, knownTools: [] });
  clock = 1_700_000_000_000;
  logs = [];
  audits = [];
  handled = 0;
  const claimed = new Set<string>();
  // Strangers never reach the runner or the broker: any use of them fails the test loudly.
  const never = new Proxy(
    {},
    {
      get: (_t, p) =>
        p === 'then'
          ? undefined
          : () => {
              throw new Error(`a stranger reached ${String(p)}`);
            },
    },
  );
  const router = new Router({
    config,
    runner: never as Runner,
    broker: never as ApprovalBroker,
    events: { claim: async (id) => !claimed.has(id) && claimed.add(id) !== undefined },
    log: (level, msg) => logs.push(`${level} ${msg}`),
    audit: (e) => audits.push(e),
    now: () => clock,
  });
  const counting: AdapterSink = {
    message: async (m: InboundMessage) => {
      try {
        return await router.message(m);
      } finally {
        handled++;
      }
    },
    action: (a) => router.action(a),
  };
  tg = await startFakeTelegram({ token: TOKEN });
  adapter = createTelegramAdapter({ token: TOKEN, apiRoot: tg.apiRoot, log: (l, m) => logs.push(`${l} ${m}`) });
  await adapter.start(counting);
}

afterEach(async () => {
  await adapter.stop();
  await tg.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `count` strangers with new ids DM the bot, `perStep` at a time, the clock moving `stepMs` between steps. */
async function flood(count: number, opts: { firstId: number; perStep: number; stepMs: number }): Promise<void> {
  for (let i = 0; i < count; i += opts.perStep) {
    const batch = Math.min(opts.perStep, count - i);
    const target = handled + batch;
    for (let j = 0; j < batch; j++) {
      const id = opts.firstId + i + j;
      await tg.sendText({ chat: { id, type: 'private', first_name: 'S' }, from: { id, first_name: 'S' }, text: 'hello?' });
    }
    await until(() => handled >= target, `batch at ${i} handled`, 60_000);
    clock += opts.stepMs;
  }
}

const replies = () => tg.calls.filter((c) => c.method === 'sendMessage' && Number(c.params['chat_id']) !== 501).length;
const floodLines = () => logs.filter((l) => /^warn stranger flood on telegram: /.test(l));

test('3,000 distinct strangers over 5 minutes: at most 10 replies a minute, one flood line a minute', async () => {
  await start();
  // 3,000 ids, 50 every 5 s of clock: 600 a minute for 5 minutes.
  await flood(3000, { firstId: 100_000, perStep: 50, stepMs: 5_000 });
  // Every reply the router decided on has gone out (the adapter posts after the router answered).
  const told = () => audits.filter((a) => a.event === 'stranger_refused').length;
  await until(() => replies() === told(), 'the replies posted');
  // The budget: a burst of 10, then 10 a minute (5 minutes of clock): about 50, never thousands.
  expect(replies()).toBeGreaterThanOrEqual(10);
  expect(replies()).toBeLessThanOrEqual(10 + 10 * 5);
  // One flood line per minute of clock (the first at once), each with its counts.
  const lines = floodLines();
  expect(lines).toHaveLength(5);
  expect(lines[0]).toMatch(
    /: \d+ refused messages from \d+ senders in the last \d+ s, 10 told, \d+ not answered \(access\.refusals\.repliesPerMinute: 10, one per stranger every 86400 s\)$/,
  );
  const total = lines.reduce((n, l) => n + Number(/: (\d+) refused/.exec(l)![1]), 0);
  expect(total).toBeGreaterThan(2_400); // the lines account for the flood (the last minute is still open)
  // The audit trail names only strangers who were told, plus one stranger_flood per line.
  expect(audits.filter((a) => a.event === 'stranger_flood')).toHaveLength(5);
}, 300_000);

test('one stranger is told once a day, however often they write', async () => {
  await start();
  const mallory = { id: 666, type: 'private' as const, first_name: 'Mallory' };
  const send = async () => {
    const target = handled + 1;
    await tg.sendText({ chat: mallory, from: { id: 666, first_name: 'Mallory' }, text: 'let me in' });
    await until(() => handled >= target, 'handled');
  };
  for (let i = 0; i < 5; i++) {
    await send();
    clock += 3_600_000; // an hour
  }
  await until(() => replies() === 1, 'the one refusal');
  expect(tg.visible(666)[0]!.plain).toContain('access.telegram.users');
  clock += 20 * 3_600_000; // a day after the first reply
  await send();
  await until(() => replies() === 2, 'told again the next day');
}, 120_000);

test('control: with the budget lifted every distinct stranger is answered (the cost before)', async () => {
  await start('{ repliesPerMinute: 10000 }');
  await flood(200, { firstId: 200_000, perStep: 50, stepMs: 1_000 });
  await until(() => replies() === 200, 'every stranger answered', 60_000);
  expect(floodLines()).toHaveLength(0);
}, 120_000);

test('and with the default budget the same 200 strangers in under a minute cost 10 replies', async () => {
  await start();
  await flood(200, { firstId: 300_000, perStep: 50, stepMs: 1_000 });
  await until(() => replies() === 10, 'ten replies');
  await new Promise((r) => setTimeout(r, 200)); // nothing more trickles out
  expect(replies()).toBe(10);
  expect(floodLines()).toHaveLength(1);
}, 120_000);
