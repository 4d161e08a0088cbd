/**
 * `threadFollowUps` in gatehouse.yaml: per agent (and defaults), per route, validated with the key
 * path in the error, the route winning over the agent.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentForConversation, ConfigError, loadConfig } from '../../bot/config/index.js';
import { threadFollowUpsFor } from '../../bot/config/thread-follow-ups.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function load(yaml: string) {
  const cwd = mkdtempSync(join(tmpdir(), 'gatehouse-follow-'));
  dirs.push(cwd);
  writeFileSync(join(cwd, 'gatehouse.yaml'), yaml);
  return loadConfig({ env: { ANTHROPIC_API_KEY: 'sk-test' }, cwd, knownTools: ['read_file'] });
}

const followUps = (config: ReturnType<typeof load>, key: string) => threadFollowUpsFor(config, key, agentForConversation(config, key));

test('default on; off per agent, through defaults, and per route (the route wins)', () => {
  const config = load(`
defaults: { model: m, threadFollowUps: false }
agents:
  chatty: { threadFollowUps: true }
  quiet: {}
  plain: { model: m }
routes:
  - { match: "slack:T0:C0LOUD", agent: quiet, threadFollowUps: true }
  - { match: "slack:T0:C0QUIET", agent: chatty, threadFollowUps: false }
  - { match: "slack:T0:C0CHATTY", agent: chatty }
  - { match: "slack:T0:C0PLAIN", agent: plain }
defaultAgent: quiet
`);
  expect(followUps(config, 'slack:T0:C0OTHER:1.2')).toBe(false); // defaultAgent quiet, from defaults
  expect(followUps(config, 'slack:T0:C0CHATTY:1.2')).toBe(true); // the agent's own key
  expect(followUps(config, 'slack:T0:C0QUIET:1.2')).toBe(false); // the route over its agent
  expect(followUps(config, 'slack:T0:C0LOUD:1.2')).toBe(true);
  expect(followUps(config, 'slack:T0:C0PLAIN:1.2')).toBe(false); // defaults layer
  expect(followUps(load('agents: { a: { model: m } }\n'), 'slack:T0:C0:1.2')).toBe(true); // nothing set: on
});

test('a wrong value names the key path', () => {
  let err: unknown;
  try {
    load('agents:\n  a: { model: m, threadFollowUps: "sometimes" }\nroutes:\n  - { match: slack, agent: a, threadFollowUps: 1 }\n');
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ConfigError);
  const paths = (err as ConfigError).problems.map((p) => p.path);
  expect(paths).toEqual(expect.arrayContaining(['agents.a.threadFollowUps', 'routes[0].threadFollowUps']));
});
