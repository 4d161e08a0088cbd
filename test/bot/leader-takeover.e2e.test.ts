/**
 * Replicas on one PostgreSQL database: who holds the connections only one process may hold.
 * Real `gatehouse serve` processes (bot/main.ts from source), the fake model, and for each of
 * Telegram long polling, Slack Socket Mode and the Discord gateway the fake platform:
 * - two replicas: only one holds the connection (the fake counts connections); /readyz says leader
 *   and standby, both 200;
 * - SIGKILL the holder: the standby takes over (waited for, bounded by the 30 s of the issue plus
 *   margin; the time is printed, not asserted);
 * - a third replica joins; SIGTERM the holder while it runs a slow turn (the model holds its reply
 *   until the test has seen the drain, so no delay has to outlast a busy machine): /readyz says
 *   draining (503), the standby takes over at once (printed), the draining one still posts its
 *   answer and exits 0;
 * - every message sent before, across and after both takeovers is answered exactly once (the
 *   platform redelivers as it would: Telegram keeps unconfirmed updates, Slack retries an event not
 *   acked with the same event_id; Discord replays nothing to a new session, so its messages go while
 *   a holder is connected);
 * - /readyz with the store down (logins refused): 503 naming the store.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allowConnections, openPostgresStore, terminateConnections } from '../../agent/store/postgres/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { startFakeDiscord } from '../fakes/discord.js';
import { startFakeSlack } from '../fakes/slack.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { testPostgresAdminUrl, testPostgresUrl } from '../helpers/postgres.js';
import { startGatehouse, type Exit, type TestProcess } from '../helpers/process.js';
import { seededRandom } from '../helpers/random.js';
import { sleep, waitFor } from '../helpers/wait.js';

const rng = seededRandom();
/** The bound for a takeover after SIGKILL, plus margin for a loaded machine. */
const TAKEOVER_BOUND_MS = 30_000 + 15_000;

/** One platform as the test drives it. */
interface Platform {
  name: string;
  env: Record<string, string>;
  access: string;
  /** Connections the fake has open now. */
  held(): number;
  /** A user sends `text`; resolves once the platform has it (queued, or delivered and acked). */
  send(text: string): Promise<void>;
  /** How many of the bot's messages say `echo <nonce>`. */
  answered(nonce: string): number;
  /** Whether messages sent with no holder connected reach the next one (Discord: no). */
  queuesWhileAway: boolean;
  close(): Promise<void>;
}

async function telegram(): Promise<Platform> {
  const fake = await startFakeTelegram({ token: '123456:ABC-leader-test' });
  const user = { id: 4242, first_name: 'Ada' };
  const chat = { id: 4242, type: 'private' as const, first_name: 'Ada' };
  fake.addChat(chat);
  return {
    name: 'telegram',
    env: { TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot },
    access: `telegram: { users: ["${user.id}"] }`,
    // One poll at a time (a second concurrent one would get 409, counted below as a failure).
    held: () => fake.pollsOpen() + fake.calls.filter((c) => c.method === 'getUpdates' && c.errorCode === 409).length,
    send: async (text) => void (await fake.sendText({ chat, from: user, text })),
    answered: (nonce) => fake.sent.filter((m) => m.plain.includes(`echo ${nonce}`)).length,
    queuesWhileAway: true,
    close: () => fake.close(),
  };
}

async function slack(): Promise<Platform> {
  const botToken = 'xoxb-1-leader-test';
  const appToken = 'xapp-1-A0APP-3333-leaderTestToken';
  const fake = await startFakeSlack({ botToken, appToken });
  fake.mode = 'socket';
  let n = 0;
  return {
    name: 'slack',
    env: { SLACK_BOT_TOKEN: botToken, SLACK_APP_TOKEN: appToken, SLACK_API_URL: fake.apiUrl },
    access: 'slack: { users: ["U0ADA"] }',
    held: () => fake.sockets.open,
    // Like Slack: an event not acked (no socket: 503, no ack in 3 s: 408) is sent again, same event_id.
    async send(text) {
      const eventId = `EvLead${++n}`;
      for (let retry = 0; ; retry++) {
        const r = await fake.userMessage({ user: 'U0ADA', channel: 'D0ADA', text, im: true, eventId, ...(retry ? { retry } : {}) });
        if (r.statuses.every((s) => s === 200)) return;
        await sleep(500);
      }
    },
    answered: (nonce) => fake.messages.filter((m) => m.user === fake.botUserId && m.text.includes(`echo ${nonce}`)).length,
    queuesWhileAway: true,
    close: () => fake.close(),
  };
}

async function discord(): Promise<Platform> {
  const token = 'OTAwMDAwMDAwMDAwMDAwMDAx.GleadX.leaderTestDiscordToken0123456789';
  const fake = await startFakeDiscord({ token });
  const ada = { id: '300000000000000001', name: 'ada' };
  return {
    name: 'discord',
    env: { DISCORD_TOKEN: token, DISCORD_API_URL: fake.apiUrl },
    access: `discord: { users: ["${ada.id}"] }`,
    held: () => fake.gateway.open,
    send: async (text) => void fake.userMessage({ user: ada, channel: '400000000000000001', text }),
    answered: (nonce) => fake.messages.filter((m) => m.authorId === fake.botUserId && m.content.includes(`echo ${nonce}`)).length,
    queuesWhileAway: false,
    close: () => fake.close(),
  };
}

interface Replica {
  name: string;
  proc: TestProcess;
  output(): string;
  exited: Promise<Exit>;
  port(): Promise<number>;
}

let model: FakeAnthropic;
/** The slow turn's reply waits for this (released by the test once it has seen the drain). */
let slowGate: { promise: Promise<void>; release(): void } = gate();
function gate(): { promise: Promise<void>; release(): void } {
  let release = () => undefined as void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
}
const lastUser = (req: RecordedRequest): string => JSON.stringify((req.body as { messages?: unknown[] }).messages?.at(-1) ?? '');

beforeAll(async () => {
  await testPostgresUrl();
  model = await startFakeAnthropic({ apiKey: 'sk-test' });
  model.setHandler((req): FakeReply => {
    const nonce = /msg-[a-z0-9-]+/.exec(lastUser(req))?.[0] ?? 'none';
    return { text: `echo ${nonce}`, ...(nonce.includes('slow') ? { gate: slowGate.promise } : {}) };
  });
}, 200_000);
afterAll(async () => {
  slowGate.release();
  await model.close();
});

const until = (what: string, check: () => boolean, timeoutMs: number, output: () => string = () => '') =>
  waitFor(what, check, { timeoutMs, intervalMs: 20, detail: output });

async function readyz(port: number): Promise<{ status: number; body: { ready: boolean; role: string; notReady: string[]; draining: boolean } }> {
  // One retry when the pooled keep-alive socket was closed by the server just as it was reused
  // (undici: "other side closed"), a race of the idle timeouts on a busy machine, not an answer.
  const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => fetch(`http://127.0.0.1:${port}/readyz`));
  return { status: res.status, body: (await res.json()) as never };
}

describe.each([
  ['telegram', telegram],
  ['slack', slack],
  ['discord', discord],
] as const)('%s: one holder among replicas', (_name, make) => {
  let dir: string;
  let platform: Platform;
  let url: string;
  const replicas: Replica[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gh-leader-'));
    platform = await make();
    url = await testPostgresUrl();
    writeFileSync(
      join(dir, 'gatehouse.yaml'),
      `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file]\n    workspace: ./ws\naccess:\n  ${platform.access}\n`,
    );
  });
  afterEach(async () => {
    slowGate.release();
    await Promise.all(replicas.splice(0).map((r) => r.proc.stop('SIGKILL')));
    await platform.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function start(name: string): Replica {
    const proc = startGatehouse(['serve'], {
      cwd: dir,
      env: { ANTHROPIC_BASE_URL: model.url, GATEHOUSE_STORE: url, GATEHOUSE_HTTP_PORT: '0', ...platform.env },
    });
    const r: Replica = {
      name,
      proc,
      output: proc.output,
      exited: proc.exited,
      async port() {
        await proc.waitForOutput(/HTTP server on http:\/\/127\.0\.0\.1:\d+/, `${name}'s HTTP server`, 90_000);
        return Number(/HTTP server on http:\/\/127\.0\.0\.1:(\d+)/.exec(proc.output())![1]);
      },
    };
    replicas.push(r);
    return r;
  }
  const started = (r: Replica) => r.proc.waitForOutput('Gatehouse started', `${r.name} to start`, 90_000);
  const takesOver = (r: Replica) => r.output().includes('leading: taking over');
  const allOutput = () => replicas.map((r) => `--- ${r.name}\n${r.output()}`).join('\n');

  /** Until no turn is queued or running in the store. */
  async function settled(): Promise<void> {
    const store = await openPostgresStore({ url, log: () => undefined });
    try {
      await waitFor('no turn queued or running', async () => (await store.runs.queuedTurns()).length + (await store.runs.records()).length === 0, {
        timeoutMs: 30_000,
        intervalMs: 50,
        detail: allOutput,
      });
    } finally {
      await store.close();
    }
  }

  /** Until `r`'s /readyz says it leads with its connection up (a holder may be connecting still). */
  async function leads(r: Replica): Promise<void> {
    const port = await r.port();
    let last: unknown;
    await waitFor(
      `${r.name} to lead`,
      async () => {
        const s = await readyz(port).catch((err: unknown) => ({ status: 0, body: String(err) }));
        last = s.body;
        return s.status === 200 && typeof s.body === 'object' && s.body.role === 'leader';
      },
      { timeoutMs: 30_000, intervalMs: 100, detail: () => `last /readyz: ${JSON.stringify(last)}\n${allOutput()}` },
    );
  }

  async function expectAnswered(nonces: string[], timeoutMs = 60_000): Promise<void> {
    await until(`answers to ${nonces.join(', ')}`, () => nonces.every((n) => platform.answered(n) >= 1), timeoutMs, allOutput);
  }

  test('SIGKILL: the standby takes over; SIGTERM: handed over at once while the turn drains; each message answered once; /readyz', async () => {
    const a = start('A');
    await started(a);
    expect(a.output()).toContain('leading: this replica holds');
    const b = start('B');
    await started(b);
    expect(b.output()).toMatch(/standby: .* held by another replica/);
    await leads(a);
    await until('one connection at the fake', () => platform.held() === 1, 10_000, allOutput);
    const [pa, pb] = [await a.port(), await b.port()];
    const [ra, rb] = [await readyz(pa), await readyz(pb)];
    expect([ra.status, ra.body.role]).toEqual([200, 'leader']);
    expect([rb.status, rb.body.role]).toEqual([200, 'standby']);

    const run = rng.word(5);
    slowGate = gate();
    const nonce = (i: number | string) => `msg-${run}-${i}`;
    const sent: string[] = [];
    const send = async (i: number | string) => {
      sent.push(nonce(i));
      await platform.send(`hello ${nonce(i)}`);
    };
    for (const i of [1, 2, 3]) await send(i);
    await expectAnswered(sent);
    // The answered turns are saved before the kill: a holder killed between posting an answer and
    // its checkpoint leaves the turn queued, and a replica starting later runs it again (at least
    // once after a crash: the turn queue's business, not the connection's).
    await settled();

    // SIGKILL the holder; messages sent while nobody holds the connection wait at the platform.
    const killedAt = Date.now();
    a.proc.child.kill('SIGKILL');
    const during = platform.queuesWhileAway ? Promise.all([send(4), send(5)]) : Promise.resolve();
    await until('B to take over after SIGKILL', () => takesOver(b), TAKEOVER_BOUND_MS, allOutput);
    const sigkillTakeoverMs = Date.now() - killedAt;
    await during;
    await leads(b);
    for (const i of [6, 7]) await send(i);
    await expectAnswered(sent);
    const firstHandledMs = Date.now() - killedAt;
    await settled();

    // SIGTERM the holder in the middle of a slow turn. The third replica starts only once B runs
    // that turn: started before, it could fetch the turn itself (turns go to any replica), and B
    // would then have nothing to drain and close its /readyz at once.
    sent.push(nonce('slow'));
    await platform.send(`hello ${nonce('slow')}`);
    await until('the slow turn to reach the model', () => model.requests.some((r) => lastUser(r).includes(nonce('slow'))), 30_000, allOutput);
    const c = start('C');
    await started(c);
    expect(c.output()).toMatch(/standby: /);
    const termAt = Date.now();
    b.proc.child.kill('SIGTERM');
    await until('C to take over after SIGTERM', () => takesOver(c), 20_000, allOutput);
    const sigtermTakeoverMs = Date.now() - termAt;
    // B drains its running turn (the model holds the reply until released) and says so; it still
    // posts the answer.
    const draining = await readyz(pb);
    expect(platform.answered(nonce('slow'))).toBe(0);
    expect(draining.status).toBe(503);
    expect(draining.body.draining).toBe(true);
    expect(draining.body.notReady.join(' ')).toMatch(/draining/);
    slowGate.release();
    expect(await b.exited).toEqual({ code: 0, signal: null });
    await leads(c);
    for (const i of [8, 9]) await send(i);
    await expectAnswered(sent);
    expect((await readyz(await c.port())).body.role).toBe('leader');

    // Everything once: no redelivery, retry or takeover answered twice.
    await sleep(1_000);
    expect(Object.fromEntries(sent.map((n) => [n, platform.answered(n)]))).toEqual(Object.fromEntries(sent.map((n) => [n, 1])));
    await until('one connection at the fake', () => platform.held() === 1, 10_000, allOutput);

    // The store down: C is not ready and says why; back up, ready again.
    const admin = await testPostgresAdminUrl();
    const db = new URL(url).pathname.slice(1);
    await allowConnections(admin, db, false);
    try {
      await terminateConnections(admin, db);
      // If C is gone, say what it printed: a replica must stay up (and say not ready) while its store is down.
      const down = await readyz(await c.port()).catch((err: unknown) => {
        throw new Error(`C's /readyz failed (${(err as Error).message}) while the store was down; its output:\n${c.output()}`);
      });
      expect(down.status).toBe(503);
      expect(down.body.notReady.join(' ')).toMatch(/store postgres:\/\/.* unreachable/);
    } finally {
      await allowConnections(admin, db, true);
    }
    await leads(c);

    c.proc.child.kill('SIGTERM');
    expect(await c.exited).toEqual({ code: 0, signal: null });
    // eslint-disable-next-line no-console
    console.log(
      `${platform.name}: takeover after SIGKILL ${sigkillTakeoverMs} ms (first update handled by the new holder within ${firstHandledMs} ms); after SIGTERM ${sigtermTakeoverMs} ms`,
    );
  }, 300_000);
});
