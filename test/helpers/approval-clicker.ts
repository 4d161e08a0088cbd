/**
 * A second process deciding approvals (test/bot/first-click.e2e.test.ts): the real store (argv[2] is
 * a GATEHOUSE_STORE: a shared SQLite file or a PostgreSQL database, opened beside the test's own
 * connection, as bot/cli.ts opens it) and the real broker, wired as bot/app.ts wires them, polling
 * the store while it waits.
 * stdin, one per line:
 *   `click <epoch ms> <user id> <token> <conversation key>`: at that moment, click; prints
 *     `click <ClickResult JSON>`.
 *   `wait <request id>`: waits on the request; prints `woke <request id> <Decision JSON>` once woken.
 * stdout: `ready` once the store is open.
 */
import { createInterface } from 'node:readline';
import { ApprovalBroker } from '../../agent/approvals.js';
import { storeFromEnv } from '../../bot/env.js';
import { openStore } from '../../bot/storage.js';

const { store: settings } = storeFromEnv({ GATEHOUSE_STORE: process.argv[2]! }, process.cwd());
const store = await openStore(settings);
const broker = new ApprovalBroker({
  approvals: store.approvals,
  outputs: () => ({ emit: async () => undefined, streamsText: false, postCard: async () => 'h', updateCard: async () => undefined }),
  approversOf: () => ['alice', 'bob'],
  pollMs: 25,
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
  await store.close();
});
