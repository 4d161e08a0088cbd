/**
 * bot/acp/client-mcp.ts: the editor's MCP server list as the agent's servers. Names become valid and
 * never take an agent server's name; the same server passed again is not added twice; env and headers
 * are literal (a `${NAME}` is not filled from this process's environment); SSE and unknown shapes are
 * refused with a reason.
 */
import { clientMcpServers } from '../../bot/acp/client-mcp.js';

test('names are made valid and unique against the agent servers; stdio runs on the host with literal env', () => {
  const r = clientMcpServers(
    [
      { name: 'My Files_server!', command: '/usr/bin/fs-mcp', args: ['--root', '/tmp'], env: [{ name: 'TOKEN', value: '${ANTHROPIC_API_KEY}' }] },
      { name: 'github', command: '/usr/bin/gh-mcp', args: [], env: [] },
      { name: '___', type: 'http', url: 'http://127.0.0.1:8080/mcp', headers: [{ name: 'Authorization', value: 'Bearer ${SECRET}' }] },
    ],
    new Set(['github']),
    {},
  );
  expect(Object.keys(r.added)).toEqual(['My-Files-server', 'github-2', 'client']);
  expect(r.added['My-Files-server']).toMatchObject({
    kind: 'stdio',
    command: '/usr/bin/fs-mcp',
    args: ['--root', '/tmp'],
    sandbox: 'none',
    env: { TOKEN: '${ANTHROPIC_API_KEY}' },
  });
  expect(r.added['client']).toMatchObject({ kind: 'http', headers: { Authorization: 'Bearer ${SECRET}' } });
  expect(r.refused).toEqual([]);
});

test('a server already added (same command and args, or url) is not added again', () => {
  const first = clientMcpServers([{ name: 'fs', command: '/usr/bin/fs-mcp', args: ['a'], env: [] }], new Set(), {});
  const second = clientMcpServers(
    [
      { name: 'files', command: '/usr/bin/fs-mcp', args: ['a'], env: [] },
      { name: 'fs', command: '/usr/bin/fs-mcp', args: ['b'], env: [] },
    ],
    new Set(Object.keys(first.added)),
    first.added,
  );
  expect(Object.keys(second.added)).toEqual(['fs-2']);
});

test('SSE and entries of an unknown shape are refused with the reason; nothing is added for them', () => {
  const r = clientMcpServers(
    [{ type: 'sse', name: 'old', url: 'http://127.0.0.1/sse', headers: [] }, { name: 'nothing' }, { type: 'websocket', name: 'ws', url: 'ws://x' }, null],
    new Set(),
    {},
  );
  expect(r.added).toEqual({});
  expect(r.refused.map((x) => x.name)).toEqual(['old', 'nothing', 'ws', '(unnamed)']);
  expect(r.refused[0]!.reason).toMatch(/SSE/);
});
