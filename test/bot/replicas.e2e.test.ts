/**
 * Three real `gatehouse serve` replicas on one PostgreSQL database, behind a round-robin front
 * (test/helpers/replicas.ts) that the fake Telegram's webhook posts to, each replica with a fake model
 * of its own (so a model call says which replica ran the turn; test/helpers/replica-chats.ts).
 *
 * 1. Many conversations at once: every message answered once, in order per chat, the work spread
 *    over the replicas; approval cards clicked through a replica other than the one running the
 *    turn, which wakes where it waits and runs the command once; questions answered by a typed
 *    reply taken by another replica (it learned of the question from the asker's announcement).
 * 2. Kill rounds: each round picks a victim replica, waits until it is in the middle of a run (a
 *    model call it never gets answered) and in the middle of an approval wait (its card posted),
 *    with other chats talking all along; SIGKILLs it; the card is approved through a survivor. The
 *    held conversation and the waiting run continue on another replica, the approved command runs
 *    exactly once, nothing is lost, and nothing is answered twice but an answer the killed replica
 *    had just posted (Telegram's send is not idempotent: see test/helpers/replica-chats.ts); the
 *    victim is started again for the next round.
 * Everything waits on events (answers, cards, model calls reaching the fakes), never on durations.
 */
import { rmSync } from 'node:fs';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { testPostgresUrl } from '../helpers/postgres.js';
import { ReplicaChats, replicaFolder } from '../helpers/replica-chats.js';
import { startReplicas, type Replicas } from '../helpers/replicas.js';

const TOKEN = '123456:REPLICAS-test_token_abcdefghijklm';
const REPLICAS = 3;
/** Kill rounds (each costs a takeover and a restart: ~30-60 s on a busy 2-core machine). */
const ROUNDS = Number(process.env.GATEHOUSE_TEST_KILL_ROUNDS ?? 3);

let dir: string;
let tg: FakeTelegram;
let chats: ReplicaChats;
let cluster: Replicas | undefined;

beforeEach(async () => {
  const folder = replicaFolder('gh-replicas-');
  dir = folder.dir;
  const workspace = folder.workspace;
  // Telegram sends an update again when the delivery fails (a replica killed mid-request).
  tg = await startFakeTelegram({ token: TOKEN, webhookRetry: { attempts: 60, delayMs: 250 } });
  chats = new ReplicaChats(tg, workspace);
  await chats.startModels(REPLICAS);
  cluster = await startReplicas({
    dir,
    count: REPLICAS,
    storeUrl: await testPostgresUrl(),
    configFile: folder.configFile,
    telegram: { token: tg.token, apiRoot: tg.apiRoot },
    modelUrl: (slot) => chats.models[slot]!.url,
  });
  cluster.front.steer((u) => {
    const chat =
      (u['callback_query'] as { message?: { chat?: { id?: number } } } | undefined)?.message?.chat?.id ??
      (u['message'] as { chat?: { id?: number } } | undefined)?.chat?.id;
    const avoid = chat === undefined ? undefined : avoidFor.get(chat);
    return avoid === undefined ? undefined : { avoid: [avoid] };
  });
}, 240_000);

afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
  await chats.close();
  await tg.close();
  // GATEHOUSE_TEST_KEEP=1 keeps every replica's log (replica-N/output-G.log) for a post-mortem.
  if (process.env.GATEHOUSE_TEST_KEEP === '1') console.log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}, 120_000);

/** `replica N at HH:MM:SS.mmm` for each SIGKILL, for failure messages. */
const kills: string[] = [];

/** Waits for an answer; on a timeout the error carries what every replica logged about that chat. */
async function answered(chat: number, n: number, ms?: number): Promise<void> {
  try {
    await chats.waitAnswered(chat, n, ms);
  } catch (err) {
    const lines = cluster?.linesWith(`telegram:${chat}`) ?? [];
    const update = chats.updateOf.get(`c${chat}-m${n}`);
    const attempts = tg.webhookDeliveries.filter((d) => d.updateId === update).map((d) => d.status);
    const routed = cluster?.front.deliveries.filter((d) => d.updateId === update).map((d) => `replica ${d.slot}: ${d.status}`);
    throw new Error(
      `${(err as Error).message}; update ${update ?? '(not sent yet)'}: Telegram's attempts ${JSON.stringify(attempts)}, through the front ${JSON.stringify(routed)}; ` +
        `kills so far: ${kills.join(', ') || 'none'}\nlogged about telegram:${chat}:\n${lines.slice(-30).join('\n')}`,
    );
  }
}

/** Fails with what the replicas logged, so a broken guarantee can be read from the test output. */
function expectNoProblems(): void {
  const problems = chats.problems();
  if (problems.length > 0) throw new Error(`${problems.length} problems:\n  ${problems.slice(0, 40).join('\n  ')}\n\nreplica output:\n${cluster!.outputs()}`);
}

/** Clicks on a chat's cards, and its messages, are routed away from this replica (the one running its turn). */
const avoidFor = new Map<number, number>();

/** Approves a card through a replica other than `avoid`; returns the replica that took the click. */
async function approve(chat: number, n: number, avoid: number | undefined): Promise<number | undefined> {
  const card = await chats.card(chat, n);
  if (avoid !== undefined) avoidFor.set(chat, avoid);
  try {
    const { updateId } = await tg.press(chat, card.messageId, 0, { id: chat, first_name: `U${chat}` });
    return cluster!.front.deliveries.find((d) => d.updateId === updateId && d.status >= 200 && d.status < 300)?.slot;
  } finally {
    avoidFor.delete(chat);
  }
}

test('many conversations at once over three replicas: each message answered once and in order, spread over the replicas; cards clicked and questions answered by typing on another replica', async () => {
  const CHATS = 24;
  const PER_CHAT = 6;
  const talkers = Array.from({ length: CHATS }, () => chats.newChat());
  // Every chat's messages go out back to back (each POSTed once the previous was delivered), so a
  // chat's later messages are queued while the earlier ones run, often on other replicas.
  for (let i = 0; i < PER_CHAT; i++) for (const c of talkers) chats.send(c);

  const approvers = Array.from({ length: 6 }, () => chats.newChat());
  const clicks: Array<{ chat: number; runner: number | undefined; clickedOn: number | undefined }> = [];
  await Promise.all(
    approvers.map(async (c) => {
      const { n } = chats.send(c, 'approve');
      await chats.card(c, n);
      const runner = chats.runnerOf(c, n);
      clicks.push({ chat: c, runner, clickedOn: await approve(c, n, runner) });
      await answered(c, n);
      // And the conversation goes on after the approval.
      chats.send(c);
    }),
  );
  // A question answered by typing, the reply taken by a replica other than the one whose run asked.
  const askers = Array.from({ length: 4 }, () => chats.newChat());
  const typed: Array<{ chat: number; n: number; runner: number | undefined; takenBy: number | undefined }> = [];
  await Promise.all(
    askers.map(async (c) => {
      const { n } = chats.send(c, 'ask');
      await chats.card(c, n);
      const runner = chats.runnerOf(c, n);
      if (runner !== undefined) avoidFor.set(c, runner);
      let updateId: number;
      try {
        updateId = await chats.sendText(c, `indigo, says ${c}`);
      } finally {
        avoidFor.delete(c);
      }
      const takenBy = cluster!.front.deliveries.find((d) => d.updateId === updateId && d.status >= 200 && d.status < 300)?.slot;
      typed.push({ chat: c, n, runner, takenBy });
      await answered(c, n);
      chats.send(c);
    }),
  );
  await chats.settle();

  expectNoProblems();
  for (const t of typed) {
    expect(t.runner).toBeDefined();
    expect(t.takenBy).toBeDefined();
    expect(t.takenBy).not.toBe(t.runner);
    // The typed reply answered the question (it was not queued as a new turn), and the run went on
    // where it waited.
    const after = chats.calls.find((x) => x.chat === t.chat && x.n === t.n && x.afterTool);
    expect(after?.toolResult).toContain(`indigo, says ${t.chat}`);
    expect(after?.slot).toBe(t.runner);
  }
  for (const click of clicks) {
    expect(click.runner).toBeDefined();
    expect(click.clickedOn).toBeDefined();
    expect(click.clickedOn).not.toBe(click.runner);
    // The run woke where it waited: its model call after the command came from the same replica.
    expect(chats.calls.find((x) => x.chat === click.chat && x.afterTool)?.slot).toBe(click.runner);
  }
  // Different conversations spread over the replicas: every replica ran turns.
  for (let slot = 0; slot < REPLICAS; slot++) expect(chats.calls.filter((x) => x.slot === slot).length).toBeGreaterThan(0);
}, 300_000);

test('`gatehouse run` attached to a replica is answered there, every time, while the others share the chats', async () => {
  // The fake models answer a message without a chat token with this text; only the process that ran
  // the turn can print it (its output goes back through that replica's attach socket).
  for (let i = 0; i < 6; i++) {
    const slot = i % REPLICAS;
    const before = chats.models[slot]!.requests.length;
    const r = await cluster!.cli(slot, ['run', `plain question ${i}`]);
    if (r.code !== 0 || r.stdout.trim() !== 'no token in this call')
      throw new Error(`run ${i} on replica ${slot}: exit ${r.code}, stdout ${JSON.stringify(r.stdout)}, stderr ${r.stderr.slice(-800)}`);
    // It ran on the replica it attached to (that replica's model got the call).
    expect(chats.models[slot]!.requests.length).toBeGreaterThan(before);
  }
});

test(`a replica SIGKILLed mid-run and mid-approval-wait, ${ROUNDS} rounds: its conversations continue elsewhere, the approved command runs once, nothing lost, nothing answered twice but what the killed replica had just posted`, async () => {
  // Background conversations talking through every round.
  const background = Array.from({ length: 8 }, () => chats.newChat());
  let talking = true;
  let talkError: unknown;
  const talk = Promise.all(
    background.map(async (c) => {
      while (talking && talkError === undefined) {
        const { n, delivered } = chats.send(c);
        await delivered;
        await answered(c, n, 180_000).catch((err: unknown) => void (talkError ??= err));
      }
    }),
  );

  const report: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (talkError !== undefined) throw talkError;
    const victim = round % REPLICAS;
    chats.holdAt = (slot) => slot === victim;

    // A run in progress on the victim: -hold messages on new chats until one's model call reaches
    // it (the others are answered at once by whichever replica ran them).
    let held: { chat: number; n: number } | undefined;
    for (let tries = 0; tries < 30 && !held; tries++) {
      const chat = chats.newChat();
      const { n } = chats.send(chat, 'hold');
      const call = await chats.untilCall((x) => x.chat === chat && x.n === n, 120_000, `a model call for c${chat}-m${n}`);
      if (call.held) held = { chat, n };
    }
    if (!held)
      throw new Error(`round ${round}: replica ${victim} never ran one of 30 new conversations (are turns spread over replicas?)\n${cluster!.outputs()}`);
    chats.holdAt = () => false;

    // An approval waiting on the victim: -approve messages until the victim posts a card. Cards
    // of the other replicas are approved through a third one.
    let waiting: { chat: number; n: number } | undefined;
    for (let tries = 0; tries < 30 && !waiting; tries++) {
      const chat = chats.newChat();
      const { n } = chats.send(chat, 'approve');
      await chats.card(chat, n);
      const runner = chats.runnerOf(chat, n);
      if (runner === victim) waiting = { chat, n };
      else {
        await approve(chat, n, runner);
        await answered(chat, n);
      }
    }
    if (!waiting) throw new Error(`round ${round}: replica ${victim} never ran one of 30 approval turns\n${cluster!.outputs()}`);

    const killedPid = cluster!.slots[victim]!.pid;
    kills.push(`replica ${victim} at ${new Date().toISOString().slice(11, 23)}`);
    chats.killed.add(victim);
    await cluster!.kill(victim, 'SIGKILL');
    // Decided through a survivor while the run's replica is gone.
    const clickedOn = await approve(waiting.chat, waiting.n, victim);
    await answered(waiting.chat, waiting.n, 180_000);
    await answered(held.chat, held.n, 180_000);
    const resumedOn = chats.calls.find((x) => x.chat === waiting!.chat && x.afterTool)?.slot;
    const heldOn = chats.calls.filter((x) => x.chat === held!.chat && x.n === held!.n && !x.held).map((x) => x.slot);
    report.push(
      `round ${round}: killed replica ${victim} (pid ${killedPid}); click on ${clickedOn}, approved run resumed on ${resumedOn}, held run answered by ${heldOn.join('/')}`,
    );
    console.log(report.at(-1));
    expect(clickedOn).not.toBe(victim);
    expect(resumedOn).not.toBe(victim);
    expect(chats.linesOf(`c${waiting.chat}-m${waiting.n}`)).toBe(1);
    // Both conversations go on.
    const next = [chats.send(waiting.chat), chats.send(held.chat)];
    await answered(waiting.chat, next[0]!.n);
    await answered(held.chat, next[1]!.n);

    await cluster!.restart(victim);
  }
  talking = false;
  await talk;
  if (talkError !== undefined) throw talkError;
  await chats.settle();
  expectNoProblems();
  // Printed, not asserted: answers a killed replica had posted just before it died, posted again.
  console.log(`answers posted again after a kill: ${[...new Set(chats.repeats)].join(', ') || 'none'}`);
}, 900_000);
