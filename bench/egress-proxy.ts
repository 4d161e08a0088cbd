/**
 * The egress proxy's cost (issue 24): added latency per connection and throughput, against a direct
 * connection, both to a server on 127.0.0.1. The path measured is the box's: client -> TCP forwarder
 * on 127.0.0.1 (as in the box, agent/egress/box.ts FORWARDER, here in this process) -> unix socket ->
 * proxy (CONNECT, name check, pinned connect) -> server. Also: a host not on the list through the ask
 * path answered at once (the held connection's own cost), and a per-command proxy's open + close.
 *
 *   node --import ./test/helpers/register-ts.mjs bench/egress-proxy.ts [connections] [megabytes]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EgressHub } from '../agent/egress/hub.js';
import { createEgressProxy } from '../agent/egress/proxy.js';

const N = Number(process.argv[2] ?? 500);
const MB = Number(process.argv[3] ?? 256);
const CHUNK = Buffer.alloc(64 * 1024, 120);

const server = createServer((req, res) => {
  if (req.url === '/big') {
    res.writeHead(200, { 'content-length': MB * 1024 * 1024 });
    let left = MB * 16;
    const pump = () => {
      while (left > 0) {
        left--;
        if (!res.write(CHUNK)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  } else res.end('ok');
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as AddressInfo).port;

const dir = mkdtempSync(path.join(tmpdir(), 'gh-egress-bench-'));
const sock = path.join(dir, 'p.sock');
let records = 0;
const proxy = createEgressProxy({ allow: [`127.0.0.1:${port}`], onConnection: () => records++ });
await proxy.listen(sock);
/** The box's forwarder (agent/egress/box.ts FORWARDER) in front of `socket`: its TCP port. */
async function forwarder(socket: string): Promise<{ port: number; close(): void }> {
  const f = createTcpServer((c) => {
    const u = connect(socket);
    c.pipe(u);
    u.pipe(c);
    c.on('error', () => u.destroy());
    u.on('error', () => c.destroy());
  });
  await new Promise<void>((r) => f.listen(0, '127.0.0.1', r));
  return { port: (f.address() as AddressInfo).port, close: () => f.close() };
}
const fwd = await forwarder(sock);
let fwdPort = fwd.port;

/** A fresh TCP connection to the server, direct or tunnelled; resolves with the socket ready for HTTP. */
function open(viaProxy: boolean): Promise<Socket> {
  if (!viaProxy) {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(s));
      s.on('error', reject);
    });
  }
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port: fwdPort, method: 'CONNECT', path: `127.0.0.1:${port}`, agent: false });
    r.on('connect', (res, s) => (res.statusCode === 200 ? resolve(s) : reject(new Error(`CONNECT ${res.statusCode}`))));
    r.on('error', reject);
    r.end();
  });
}

/** One request on a fresh connection: bytes of body read. */
function get(viaProxy: boolean, url: string): Promise<number> {
  return open(viaProxy).then(
    (s) =>
      new Promise((resolve, reject) => {
        let n = 0;
        let headerDone = false;
        s.on('data', (c: Buffer) => {
          if (!headerDone) {
            const i = c.indexOf('\r\n\r\n');
            if (i < 0) return;
            headerDone = true;
            n += c.length - i - 4;
          } else n += c.length;
        });
        s.on('end', () => resolve(n));
        s.on('error', reject);
        s.write(`GET ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      }),
  );
}

async function latency(viaProxy: boolean): Promise<{ medianUs: number; p95Us: number }> {
  for (let i = 0; i < 20; i++) await get(viaProxy, '/'); // warm up
  const t: number[] = [];
  for (let i = 0; i < N; i++) {
    const s = process.hrtime.bigint();
    await get(viaProxy, '/');
    t.push(Number(process.hrtime.bigint() - s) / 1000);
  }
  t.sort((a, b) => a - b);
  return { medianUs: Math.round(t[Math.floor(N / 2)]!), p95Us: Math.round(t[Math.floor(N * 0.95)]!) };
}

async function throughput(viaProxy: boolean): Promise<number> {
  const s = process.hrtime.bigint();
  const n = await get(viaProxy, '/big');
  const sec = Number(process.hrtime.bigint() - s) / 1e9;
  if (n !== MB * 1024 * 1024) throw new Error(`read ${n} bytes, expected ${MB} MB`);
  return Math.round(MB / sec);
}

const direct = await latency(false);
const proxied = await latency(true);
const dT = await throughput(false);
const pT = await throughput(true);

// A host not on the list, through the ask path (agent/egress/approvals.ts) with an answer at once: the
// proxy's own cost of holding and releasing a connection (a card's human wait excluded).
const askSock = path.join(dir, 'ask.sock');
let asks = 0;
const askProxy = createEgressProxy({
  allow: ['127.0.0.1:1'],
  ask: async () => {
    asks++;
    return { allowed: true };
  },
});
await askProxy.listen(askSock);
const askFwd = await forwarder(askSock);
fwdPort = askFwd.port;
const asked = await latency(true);
fwdPort = fwd.port;

// One command's own proxy (hub.ts session): opened before the command, closed after it.
const hub = new EgressHub(() => undefined);
await hub.start('bench', () => [`127.0.0.1:${port}`]);
const sessionMs: number[] = [];
for (let i = 0; i < 200; i++) {
  const s0 = process.hrtime.bigint();
  const session = await hub.session('bench', { ask: async () => ({ allowed: true }), close: async () => [] }, { conversation: 'c', runId: 'r' });
  await session!.close();
  sessionMs.push(Number(process.hrtime.bigint() - s0) / 1000);
}
sessionMs.sort((a, b) => a - b);
await hub.close();
console.log(`connections: ${N} sequential, each a fresh TCP connection + one small GET`);
console.log(`  direct:        median ${direct.medianUs} us, p95 ${direct.p95Us} us`);
console.log(`  through proxy: median ${proxied.medianUs} us, p95 ${proxied.p95Us} us (added: ${proxied.medianUs - direct.medianUs} us median)`);
console.log(`throughput: one ${MB} MB download`);
console.log(`  direct:        ${dT} MB/s`);
console.log(`  through proxy: ${pT} MB/s (${Math.round((pT / dT) * 100)}% of direct)`);
console.log(`  through proxy, host not listed, ask answered at once: median ${asked.medianUs} us, p95 ${asked.p95Us} us (${asks} asks)`);
console.log(`audit records: ${records}`);
console.log(`per-command proxy (session) open + close, 200 times: median ${Math.round(sessionMs[100]!)} us, p95 ${Math.round(sessionMs[190]!)} us`);

// The forwarder's cost per boxed command: `true` in a real bwrap box, without and with the egress path.
const { execa } = await import('execa');
const { boxCommand, execaOptions, prepareWorkspace } = await import('../agent/tools/sandbox/index.js');
const ws = path.join(dir, 'ws');
const { mkdirSync, chmodSync } = await import('node:fs');
chmodSync(dir, 0o755);
mkdirSync(ws);
await prepareWorkspace(ws);
chmodSync(sock, 0o666);
async function boxStart(egress: boolean): Promise<number> {
  const policy = { mode: 'bubblewrap' as const, network: false, botFiles: [], ...(egress ? { egress: { socket: sock } } : {}) };
  const t: number[] = [];
  for (let i = 0; i < 20; i++) {
    const boxed = boxCommand(policy, { workspace: ws, cwd: ws, env: { PATH: '/usr/bin:/bin' }, argv: ['/bin/true'] });
    const s = process.hrtime.bigint();
    const r = await execa(boxed.file, boxed.args, execaOptions(boxed, {}));
    if (r.exitCode !== 0) throw new Error(String(r.stderr));
    t.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  t.sort((a, b) => a - b);
  return Math.round(t[10]!);
}
const plainBox = await boxStart(false);
const egressBox = await boxStart(true);
console.log(`boxed \`true\`, median of 20: ${plainBox} ms without the proxy path, ${egressBox} ms with the forwarder (node) in front`);
await proxy.close();
await askProxy.close();
fwd.close();
askFwd.close();
server.closeAllConnections();
server.close();
rmSync(dir, { recursive: true, force: true });
