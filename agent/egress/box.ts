/**
 * How a box with an allowlist reaches the egress proxy (proxy.ts).
 *
 * Contract:
 * - The box keeps its own empty network namespace (bwrap --unshare-net; bwrap brings its loopback up).
 *   The proxy's unix socket is bound read-only at BOX_SOCKET. The command runs under a small Node
 *   forwarder (FORWARDER) that listens on 127.0.0.1:BOX_PORT inside the box's namespace, pipes each
 *   connection to BOX_SOCKET, and then starts the command (stdio inherited, exit code and signal passed
 *   on, SIGTERM/SIGINT/SIGHUP forwarded). A program that ignores the proxy variables has no route out:
 *   nothing but loopback exists in the namespace.
 * - `proxyEnv()` are the variables every boxed command gets: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and
 *   lowercase) = http://127.0.0.1:BOX_PORT, NO_PROXY empty (nothing bypasses the proxy: there is no
 *   other route).
 */
export const BOX_SOCKET = '/run/gatehouse-egress.sock';
const BOX_PORT = 3128;

/** CommonJS for `node -e`; argv: socket, port, program, args... */
const FORWARDER = [
  "const net=require('net'),cp=require('child_process');",
  'const [sock,port,...cmd]=process.argv.slice(1);',
  'const s=net.createServer(c=>{const u=net.connect(sock);c.pipe(u);u.pipe(c);',
  "c.on('error',()=>u.destroy());u.on('error',()=>c.destroy());});",
  "s.on('error',e=>{process.stderr.write('gatehouse egress forwarder: '+e.message+'\\n');process.exit(125);});",
  "s.listen(+port,'127.0.0.1',()=>{s.unref();",
  "const ch=cp.spawn(cmd[0],cmd.slice(1),{stdio:'inherit'});",
  "for(const g of ['SIGTERM','SIGINT','SIGHUP'])process.on(g,()=>ch.kill(g));",
  "ch.on('error',e=>{process.stderr.write(cmd[0]+': '+e.message+'\\n');process.exit(127);});",
  "ch.on('exit',(code,sig)=>{if(sig){process.removeAllListeners(sig);process.kill(process.pid,sig);}process.exit(code??1);});});",
].join('');

export function proxyEnv(): Record<string, string> {
  const url = `http://127.0.0.1:${BOX_PORT}`;
  const env: Record<string, string> = {};
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']) {
    env[name] = url;
    env[name.toLowerCase()] = url;
  }
  env.NO_PROXY = '';
  env.no_proxy = '';
  return env;
}

/** The argv that runs `argv` under the forwarder, with `node` the box's Node binary. */
export function forwardedArgv(node: string, argv: readonly string[]): string[] {
  return [node, '-e', FORWARDER, '--', BOX_SOCKET, String(BOX_PORT), ...argv];
}
