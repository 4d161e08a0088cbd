// A real MCP server built with the SDK's McpServer, for tests. Plain JavaScript so a child `node` runs it.
//   node mcp-server.mjs            stdio
//   node mcp-server.mjs --http     Streamable HTTP on 127.0.0.1:<free port>; prints "listening <port>"
// Env: FIXTURE_HIDE_FILE: a file listing (comma-separated) tools NOT to offer, read at start.
//      FIXTURE_STARTS_FILE: a file this server appends its pid to at each start.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const hidden = new Set(
  process.env.FIXTURE_HIDE_FILE && existsSync(process.env.FIXTURE_HIDE_FILE)
    ? readFileSync(process.env.FIXTURE_HIDE_FILE, 'utf8').split(',').map((s) => s.trim()).filter(Boolean)
    : [],
);
if (process.env.FIXTURE_STARTS_FILE) appendFileSync(process.env.FIXTURE_STARTS_FILE, `${process.pid}\n`);
process.stderr.write(`fixture MCP server started (pid ${process.pid})\n`);

function build() {
  const server = new McpServer({ name: 'fixture', version: '1.0.0' });
  const tool = (name, config, fn) => {
    if (!hidden.has(name)) server.registerTool(name, config, fn);
  };
  // Accepts any object and echoes it back exactly: shows the arguments arrive untouched.
  tool(
    'echo',
    {
      description: 'Echoes its arguments as JSON.',
      inputSchema: z.looseObject({ text: z.string().describe('what to echo'), tags: z.array(z.string()).optional() }),
    },
    async (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }] }),
  );
  tool('slow', { description: 'Waits ms milliseconds.', inputSchema: { ms: z.number() } }, async ({ ms }) => {
    await new Promise((r) => setTimeout(r, ms));
    return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
  });
  tool('crash', { description: 'Exits the server mid-call.' }, async () => {
    process.stderr.write('fixture: crashing on purpose\n');
    process.exit(3);
  });
  tool('big', { description: 'Returns 300 KB of text.' }, async () => ({
    content: [{ type: 'text', text: 'HEAD' + 'x'.repeat(300 * 1024) + 'TAIL' }],
  }));
  tool('pid', { description: 'Returns the server pid.' }, async () => ({ content: [{ type: 'text', text: String(process.pid) }] }));
  tool('spawn_child', { description: 'Starts a long-lived child process and returns its pid.' }, async () => {
    const child = spawn('sleep', ['1000'], { stdio: 'ignore' });
    return { content: [{ type: 'text', text: String(child.pid) }] };
  });
  tool('fail', { description: 'Returns an error result.' }, async () => ({ content: [{ type: 'text', text: 'the issue tracker said no' }], isError: true }));
  return server;
}

if (process.argv.includes('--http')) {
  const http = createServer(async (req, res) => {
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    if (process.env.FIXTURE_REQUIRE_AUTH && req.headers.authorization !== process.env.FIXTURE_REQUIRE_AUTH) {
      res.writeHead(401).end('unauthorized');
      return;
    }
    // Stateless: a server and a transport per request.
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => void transport.handleRequest(req, res, body ? JSON.parse(body) : undefined));
  });
  http.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${http.address().port}\n`));
} else {
  await build().connect(new StdioServerTransport());
}
