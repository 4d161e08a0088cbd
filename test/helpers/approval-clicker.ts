/**
 * A second process deciding approvals (test/bot/first-click.e2e.test.ts): the real store (argv[2] is
 * a GATEHOUSE_STORE: a shared SQLite file or a PostgreSQL database, opened beside the test's own
 * connection, as bot/cli/index.ts opens it) and the real broker, wired as bot/service/app.ts wires them: its waits
 * are woken through the store's signals (SignalDecisionBus), never by polling.
 * stdin, one per line:
 *   `click <epoch ms> <user id> <token> <conversation key>`: at that moment, click; prints
 *     `click <ClickResult JSON>`.
 *   `wait <request id>`: waits on the request; prints `woke <request id> <Decision JSON>` once woken.
 * stdout: `ready` once the store is open.
 */
import { createInterface } from 'node:readline';
import { ApprovalBroker, ApprovalStore, SignalDecisionBus } from '../../agent/approvals/index.js';
import { storeFromEnv } from '../../bot/config/env.js';
import { openStore } from '../../bot/service/storage.js';

const { store: settings } = storeFromEnv({ GATEHOUSE_STORE: process.argv[2]! }, process.cwd());
const store = await openStore(settings);
const decisions = new ApprovalStore(store.approvals);
const bus = new SignalDecisionBus({ signals: store.signals, read: async (id) => (await decisions.get(id))?.decision, safetyReadMs: 0 });
await store.signals.ready();
const broker = new ApprovalBroker({
  approvals: store.approvals,
  bus,
  outputs: () => ({ emit: async () => undefined, streamsText: false, postCard: async () => 'h', updateCard: async () => undefined }),
  approversOf: () => ['alice', 'bob'],
});
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
const work: Array<Promise<void>> = [];
lines.on('line', (line) => {
  const [op, ...args] = line.split(' ');
  if (op === 'wait') {
    const id = args[0]!;
    work.push(broker.wait(id).then((d) => void process.stdout.write(`woke ${id} ${JSON.stringify(d)}\n`)));
    return;
  }
  const [at, user, token, conversationKey] = args;
  work.push(
    new Promise<void>((r) => setTimeout(r, Math.max(0, Number(at) - Date.now())))
      .then(() => broker.click({ token: token!, conversationKey: conversationKey!, user: { id: user! } }))
      .then((result) => void process.stdout.write(`click ${JSON.stringify(result)}\n`)),
  );
});
lines.on('close', async () => {
  await Promise.all(work);
  broker.close();
  bus.close();
  await store.close();
});
