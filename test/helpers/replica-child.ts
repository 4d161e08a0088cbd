/**
 * One "replica" for the cross-process tests of signals, decisions, grants, reminders and expiry
 * (test/agent/replica-signals.e2e.test.ts): the real store (argv[2] is a GATEHOUSE_STORE) and the
 * real pieces, wired as bot/service/app.ts wires them: the SignalDecisionBus (no safety re-read: only the
 * signal can wake a wait), the broker with sharedSignals, PersistedAllowlists with signals, the
 * reminder scheduler with the store's signals (maxWaitMs: env REPLICA_MAX_WAIT_MS, default 200, so
 * a reminder stored by a process without a scheduler is read soon).
 * stdin, one command a line; stdout, one line each (`<kind> <rest>`):
 *   sub <topic>                       -> every signal: `sig <topic> <payload>`
 *   pub <topic> <payload>             -> `pubbed`
 *   ask <conversation> <timeoutMs> <approval|question>  -> `asked <id> <token>...`
 *   wait <id>                         -> once woken: `woke <id> <Decision JSON>`
 *   click <token> <conversation> <user> -> `click <ClickResult JSON>`
 *   allow <agent> <command key>       -> `allowed`
 *   watch <agent>                     -> each re-check: `watcher <agent>`
 *   commands <agent>                  -> `commands <JSON>`
 *   reminders                         -> starts the scheduler: `scheduling`; each post: `fired <conversation> <text>`
 *   remind <conversation> <in ms> <text> -> a reminder set here (as the tool sets it): `reminded <id>`
 *   expiry                            -> starts the expiry watch: `watching`
 *   stop                              -> stops it all: `stopped`, then exits
 * Card updates, from whichever process: `updated <request id> <outcome line>`.
 * stdout: `ready` once the store is open and its signals listen.
 */
import { createInterface } from 'node:readline';
import { PersistedAllowlists } from '../../agent/approvals/allowlists.js';
import { ApprovalBroker, ApprovalStore, SignalDecisionBus } from '../../agent/approvals/index.js';
import { Reminders } from '../../agent/memory/reminders.js';
import { ReminderScheduler } from '../../bot/service/reminder-scheduler.js';
import { storeFromEnv } from '../../bot/config/env.js';
import { openStore } from '../../bot/service/storage.js';

const out = (line: string) => void process.stdout.write(`${line}\n`);
const { store: settings } = storeFromEnv({ GATEHOUSE_STORE: process.argv[2]! }, process.cwd());
const store = await openStore(settings, { log: (_level, m) => process.stderr.write(`${m}\n`) });
const decisions = new ApprovalStore(store.approvals);
const bus = new SignalDecisionBus({ signals: store.signals, read: async (id) => (await decisions.get(id))?.decision, safetyReadMs: 0 });
const broker = new ApprovalBroker({
  approvals: store.approvals,
  bus,
  sharedSignals: store.signals,
  outputs: () => ({
    emit: async () => undefined,
    streamsText: false,
    // The handle names the request, so an update from any process says which card it edits.
    postCard: async (_c, o) => `h:${o?.requestId ?? ''}`,
    updateCard: async (handle, card) => out(`updated ${handle.slice(2)} ${card.outcome ?? ''}`),
  }),
  approversOf: () => ['alice', 'bob'],
  log: (_level, m) => process.stderr.write(`${m}\n`),
});
const allowlists = new PersistedAllowlists(store.allowlists, Date.now, { signals: store.signals });
await allowlists.load(['default']);
const reminders = new Reminders(store.reminders, undefined, Date.now, store.signals);
const scheduler = new ReminderScheduler({
  reminders,
  signals: store.signals,
  post: async (key, text) => out(`fired ${key} ${text.split('\n')[0]}`),
  reachable: () => true,
  runAsTurn: () => false,
  log: (level, m) => process.stderr.write(`${level} ${m}\n`),
  maxWaitMs: Number(process.env.REPLICA_MAX_WAIT_MS ?? 200),
});
await store.signals.ready();
out('ready');

const lines = createInterface({ input: process.stdin });
const work: Array<Promise<unknown>> = [];
const run = (p: Promise<unknown>) => work.push(p.catch((err: unknown) => out(`error ${(err as Error).message}`)));
const where = (conversationKey: string) => ({ conversationKey, platform: 'telegram', agentName: 'default', runId: `run-${process.pid}` });

lines.on('line', (line) => {
  const [op, ...args] = line.split(' ');
  switch (op) {
    case 'sub':
      store.signals.subscribe(args[0]!, (p) => out(`sig ${args[0]} ${p}`));
      return out('subscribed');
    case 'pub':
      return void run(store.signals.publish(args[0]!, args.slice(1).join(' ')).then(() => out('pubbed')));
    case 'ask': {
      const [conversationKey, timeout, kind] = args;
      const timeoutMs = Number(timeout);
      const asked =
        kind === 'question'
          ? broker.askQuestion({
              ...where(conversationKey!),
              question: 'Which?',
              suggestions: [{ value: 'a', label: 'A' }],
              allowCustom: true,
              starterId: 'alice',
              timeoutMs,
            })
          : broker.askApproval({ ...where(conversationKey!), title: 'Run ls?', body: 'ls', alwaysLabel: null, timeoutMs });
      return void run(asked.then(async (id) => out(`asked ${id} ${(await broker.get(id))!.card.buttons.map((b) => b.token).join(' ')}`)));
    }
    case 'wait':
      return void run(broker.wait(args[0]!).then((d) => out(`woke ${args[0]} ${JSON.stringify(d)}`)));
    case 'click':
      return void run(broker.click({ token: args[0]!, conversationKey: args[1]!, user: { id: args[2]! } }).then((r) => out(`click ${JSON.stringify(r)}`)));
    case 'allow':
      return void run(allowlists.add(args[0]!, { kind: 'command', key: args.slice(1).join(' ') }).then(() => out('allowed')));
    case 'watch':
      allowlists.watch(args[0]!, async () => out(`watcher ${args[0]}`));
      return out('watching-allowlist');
    case 'commands':
      return out(`commands ${JSON.stringify(allowlists.commands(args[0]!))}`);
    case 'reminders':
      return void run(scheduler.start().then(() => out('scheduling')));
    case 'remind':
      return void run(
        reminders
          .add({ agentName: 'default', conversationKey: args[0]!, dueAt: Date.now() + Number(args[1]), text: args.slice(2).join(' ') })
          .then((r) => out(`reminded ${r.id}`)),
      );
    case 'expiry':
      return void run(broker.watchExpiry().then(() => out('watching')));
    case 'stop':
      return void run(
        (async () => {
          await scheduler.stop();
          broker.close();
          bus.close();
          allowlists.close();
          await store.close();
          out('stopped');
          process.exit(0);
        })(),
      );
  }
});
