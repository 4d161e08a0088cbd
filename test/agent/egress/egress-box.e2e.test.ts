/**
 * Issue 24, network by host allowlist: real bwrap boxes, a real egress proxy on a unix socket, a real
 * HTTP server on 127.0.0.1. Each refusal asserts what the command saw and that the server got nothing.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import { createEgressProxy, type EgressProxy, type EgressRecord } from '../../../agent/egress/proxy.js';
import { boxCommand, execaOptions, prepareWorkspace, type SandboxPolicy } from '../../../agent/tools/sandbox/index.js';

let base: string;
let workspace: string;
let server: Server;
let port: number;
let hits: string[];
const proxies: EgressProxy[] = [];

beforeAll(async () => {
  base = mkdtempSync('/var/tmp/gh-egress-');
  chmodSync(base, 0o755);
  workspace = path.join(base, 'ws');
  mkdirSync(workspace);
  await prepareWorkspace(workspace);
  hits = [];
  server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url} host=${req.headers.host}`);
    res.end('hello from the test server\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const p of proxies) await p.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(base, { recursive: true, force: true });
});

beforeEach(() => {
  hits = [];
});

async function proxy(allow: string[], lookup?: (h: string) => Promise<string[]>): Promise<{ policy: SandboxPolicy; records: EgressRecord[] }> {
  const records: EgressRecord[] = [];
  const p = createEgressProxy({ allow, onConnection: (r) => records.push(r), ...(lookup ? { lookup } : {}) });
  const dir = mkdtempSync(path.join(base, 'sock-'));
  chmodSync(dir, 0o755);
  const socket = path.join(dir, 'egress.sock');
  await p.listen(socket);
  chmodSync(socket, 0o666);
  proxies.push(p);
  return { policy: { mode: 'bubblewrap', network: false, botFiles: [], egress: { socket } }, records };
}

async function run(policy: SandboxPolicy, script: string) {
  const boxed = boxCommand(policy, { workspace, cwd: workspace, env: { PATH: '/usr/bin:/bin' }, argv: ['/bin/sh', '-c', script] });
  const r = await execa(boxed.file, boxed.args, execaOptions(boxed, {}, { timeout: 60_000 }));
  return { code: r.exitCode, out: String(r.stdout), err: String(r.stderr) };
}

/** node's http through the proxy (plain HTTP, absolute URI), printing status and body. */
const nodeGet = (url: string) =>
  `node -e "const u=new URL(process.env.HTTP_PROXY);require('http').get({host:u.hostname,port:u.port,path:'${url}'},r=>{let b='';r.on('data',c=>b+=c);r.on('end',()=>{console.log(r.statusCode,b.trim())})}).on('error',e=>{console.log('ERR',e.code);process.exit(3)})"`;

/** A raw CONNECT through the proxy, then an HTTP request in the tunnel. */
const nodeConnect = (target: string) =>
  `node -e "const u=new URL(process.env.HTTPS_PROXY);const r=require('http').request({host:u.hostname,port:u.port,method:'CONNECT',path:'${target}'});r.on('connect',(res,s)=>{if(res.statusCode!==200){console.log(res.statusCode);return process.exit(4)}s.write('GET /tunnel HTTP/1.1\\\\r\\\\nHost: x\\\\r\\\\nConnection: close\\\\r\\\\n\\\\r\\\\n');let b='';s.on('data',c=>b+=c);s.on('end',()=>console.log(b.split('\\\\r\\\\n\\\\r\\\\n')[1].trim()))});r.on('response',x=>{console.log(x.statusCode)});r.end()"`;

test('an allowed 127.0.0.1 server is reached through the proxy, by plain HTTP and by CONNECT, and the bytes are counted', async () => {
  const { policy, records } = await proxy([`127.0.0.1:${port}`]);
  const plain = await run(policy, nodeGet(`http://127.0.0.1:${port}/plain`));
  expect(plain.out).toBe('200 hello from the test server');
  const tunnel = await run(policy, nodeConnect(`127.0.0.1:${port}`));
  expect(tunnel.out).toBe('hello from the test server');
  expect(hits).toEqual([`GET /plain host=127.0.0.1:${port}`, 'GET /tunnel host=x']);
  expect(records.map((r) => [r.method, r.host, r.port, r.decision])).toEqual([
    ['HTTP', '127.0.0.1', port, 'allowed'],
    ['CONNECT', '127.0.0.1', port, 'allowed'],
  ]);
  for (const r of records) expect(r.bytesDown).toBeGreaterThan(20);
  expect(records[1]!.bytesUp).toBeGreaterThan(20);
});

test('curl in the box goes through the proxy by its variables', async () => {
  const { policy, records } = await proxy([`127.0.0.1:${port}`]);
  const r = await run(policy, `curl -sS http://127.0.0.1:${port}/curl; echo "proxy=$HTTP_PROXY https=$https_proxy"`);
  expect(r.out).toContain('hello from the test server');
  expect(r.out).toContain('proxy=http://127.0.0.1:3128 https=http://127.0.0.1:3128');
  expect(hits).toEqual([`GET /curl host=127.0.0.1:${port}`]);
  expect(records[0]!.decision).toBe('allowed');
});

test('a raw socket that ignores the proxy has no route out, not even to the allowed server', async () => {
  const { policy, records } = await proxy([`127.0.0.1:${port}`]);
  const r = await run(
    policy,
    `node -e "require('net').connect(${port},'127.0.0.1').on('connect',()=>{console.log('CONNECTED');process.exit(0)}).on('error',e=>{console.log('ERR',e.code);process.exit(5)})"`,
  );
  expect(r.out).toBe('ERR ECONNREFUSED');
  expect(hits).toEqual([]);
  expect(records).toEqual([]);
});

test('an unlisted host gets a 403 with the reason; nothing is connected', async () => {
  const { policy, records } = await proxy(['github.com:443']);
  const r = await run(policy, nodeGet(`http://127.0.0.1:${port}/x`));
  expect(r.out).toBe(`403 gatehouse egress proxy: 127.0.0.1:${port} is not on this agent's sandboxNetwork.allow list`);
  const c = await run(policy, nodeConnect(`example.org:443`));
  expect(c.out).toBe('403');
  expect(hits).toEqual([]);
  expect(records.map((x) => [x.host, x.decision])).toEqual([
    ['127.0.0.1', 'refused'],
    ['example.org', 'refused'],
  ]);
});

test('an internal address is refused unless an entry names that address; a listed name resolving to 127.0.0.1 (rebinding) is refused', async () => {
  const lookups: string[] = [];
  const { policy, records } = await proxy(['*.test.example', 'localhost'], async (h) => {
    lookups.push(h);
    return ['127.0.0.1'];
  });
  const r = await run(policy, nodeGet(`http://rebind.test.example:${port}/x`));
  expect(r.out).toMatch(/^403 gatehouse egress proxy: rebind\.test\.example resolves to 127\.0\.0\.1, a loopback address/);
  const l = await run(policy, nodeConnect(`localhost:${port}`));
  expect(l.out).toBe('403');
  expect(hits).toEqual([]);
  expect(lookups).toEqual(['rebind.test.example', 'localhost']);
  expect(records.every((x) => x.decision === 'refused')).toBe(true);
});

test('the address checked is the address connected to: a name admitted by its IP entry connects to that IP', async () => {
  let calls = 0;
  const { policy, records } = await proxy(['svc.test.example', `127.0.0.1:${port}`], async () => {
    calls++;
    return calls === 1 ? ['127.0.0.1'] : ['203.0.113.9'];
  });
  const r = await run(policy, nodeGet(`http://svc.test.example:${port}/pinned`));
  expect(r.out).toBe('200 hello from the test server');
  expect(calls).toBe(1);
  expect(records[0]).toMatchObject({ host: 'svc.test.example', address: '127.0.0.1', decision: 'allowed' });
  expect(hits).toEqual([`GET /pinned host=svc.test.example:${port}`]);
});
