/**
 * A second process clicking approval buttons (test/bot/first-click.e2e.test.ts): the real store
 * (bot/storage.ts on a SQLite file) and the real broker, wired as bot/app.ts wires them.
 * stdin, one per line: `<epoch ms> <user id> <token> <conversation key>`: at that moment, click.
 * stdout, one per line: the ClickResult as JSON. `ready` once the store is open.
 */
import { createInterface } from 'node:readline';
import { ApprovalBroker } from '../../agent/approvals.js';
import { kvApprovalRepo } from '../../bot/kv-approvals.js';
import { openStorage } from '../../bot/storage.js';

const path = process.argv[2]!;
const storage = await openStorage({ kind: 'sqlite', path, url: `sqlite://${path}` });
const broker = new ApprovalBroker({
  approvals: kvApprovalRepo(storage),
  outputs: () => ({ emit: async () => undefined, streamsText: false, postCard: async () => 'h', updateCard: async () => undefined }),
  approversOf: () => ['alice', 'bob'],
});
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
const clicks: Array<Promise<void>> = [];
lines.on('line', (line) => {
  const [at, user, token, conversationKey] = line.split(' ');
  clicks.push(
    new Promise<void>((r) => setTimeout(r, Math.max(0, Number(at) - Date.now())))
      .then(() => broker.click({ token: token!, conversationKey: conversationKey!, user: { id: user! } }))
      .then((result) => void process.stdout.write(JSON.stringify(result) + '\n')),
  );
});
lines.on('close', async () => {
  await Promise.all(clicks);
  await storage.close();
});
