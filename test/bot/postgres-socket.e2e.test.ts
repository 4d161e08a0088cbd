/**
 * A real `gatehouse serve` on PostgreSQL over a Unix socket (GATEHOUSE_STORE=postgres://...@/db?host=
 * /folder), the way a bot on the same machine as its server connects: it starts, answers Telegram
 * messages, and when the server restarts under it (every connection cut, the socket file gone until
 * the server is back) the messages sent meanwhile are answered once, in order, after it returns.
 * The server is the real test server behind a socket file (test/helpers/socket-forwarder.ts).
 */
import { rmSync } from 'node:fs';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { testPostgresUrl } from '../helpers/postgres.js';
import { ReplicaChats, replicaFolder } from '../helpers/replica-chats.js';
import { startReplicas, type Replicas } from '../helpers/replicas.js';
import { startSocketForwarder, type SocketForwarder } from '../helpers/socket-forwarder.js';

const TOKEN = '123456:SOCKET-test_token_abcdefghijklmno';

let dir: string;
let tg: FakeTelegram;
let chats: ReplicaChats;
let socket: SocketForwarder;
let bot: Replicas | undefined;
let tcp: string;

beforeEach(async () => {
  const folder = replicaFolder('gh-pg-socket-');
  dir = folder.dir;
  const workspace = folder.workspace;
  tg = await startFakeTelegram({ token: TOKEN, webhookRetry: { attempts: 120, delayMs: 250 } });
  chats = new ReplicaChats(tg, workspace);
  await chats.startModels(1);
  tcp = await testPostgresUrl();
  socket = await startSocketForwarder(tcp);
  bot = await startReplicas({
    dir,
    count: 1,
    storeUrl: socket.url(tcp),
    configFile: folder.configFile,
    telegram: { token: tg.token, apiRoot: tg.apiRoot },
    modelUrl: () => chats.models[0]!.url,
  });
}, 240_000);

afterEach(async () => {
  await bot?.stop();
  bot = undefined;
  await socket.close();
  await chats.close();
  await tg.close();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

test('serve over a Unix socket answers, and rides out a server restart with nothing lost or doubled', async () => {
  const a = chats.newChat();
  const b = chats.newChat();
  for (const chat of [a, b]) await chats.waitAnswered(chat, chats.send(chat).n);
  expect(socket.accepted).toBeGreaterThan(0);
  // The start line names the socket it uses.
  expect(bot!.linesWith('postgres: store postgres://')[0]).toContain(`@/gh_test_`);
  expect(bot!.linesWith('postgres: store postgres://')[0]).toContain(`?host=${socket.folder}&port=`);

  await socket.down();
  const during = [a, a, b].map((chat) => ({ chat, n: chats.send(chat).n }));
  // The bot notices: its store calls find no socket file and wait for it.
  await tg.waitFor(() => bot!.linesWith('ENOENT').length > 0, 60_000, 'the bot waiting for the socket file');
  await socket.up();
  for (const m of during) await chats.waitAnswered(m.chat, m.n);
  await chats.settle();
  expect(chats.problems()).toEqual([]);
  expect(chats.answers(a)).toEqual([0, 1, 2]);
  expect(chats.answers(b)).toEqual([0, 1]);
  expect(bot!.live()).toEqual([0]); // the same process, never restarted
  expect(bot!.linesWith(new URL(tcp).password)).toEqual([]);
}, 240_000);
