/** Issue 24: `sandboxNetwork: off | on | { allow }` through the real config loader. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, type Config, type ConfigProblem } from '../../../bot/config/index.js';
import { egressRefusal, parseEgressEntry, parseTarget } from '../../../policies/egress.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function load(yaml: string): Config {
  const cwd = mkdtempSync(join(tmpdir(), 'gatehouse-egress-config-'));
  dirs.push(cwd);
  writeFileSync(join(cwd, 'gatehouse.yaml'), yaml);
  return loadConfig({ env: { ANTHROPIC_API_KEY: 'sk-test-not-real' }, cwd, knownTools: ['execute_command'] });
}

function problems(yaml: string): ConfigProblem[] {
  try {
    load(yaml);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

test('off and on mean false and true; an allowlist keeps the box off the network and names the proxy list', () => {
  const c = load(
    'defaults: { model: m }\nagents:\n  a: { sandboxNetwork: off }\n  b: { sandboxNetwork: on }\n  c: { sandboxNetwork: { allow: [github.com:443, "*.npmjs.org", "127.0.0.1:8080"] } }\n  d: {}\ndefaultAgent: a\n',
  );
  expect(c.agents['a']).toMatchObject({ sandboxNetwork: false });
  expect(c.agents['a']!.sandboxEgress).toBeUndefined();
  expect(c.agents['b']).toMatchObject({ sandboxNetwork: true });
  expect(c.agents['c']).toMatchObject({ sandboxNetwork: false, sandboxEgress: ['github.com:443', '*.npmjs.org', '127.0.0.1:8080'] });
  expect(c.agents['d']).toMatchObject({ sandboxNetwork: false });
});

test('config errors name the key path: a bad entry, an empty list, an unknown key, a wrong value', () => {
  const p = problems(
    'defaults: { model: m }\nagents:\n  a: { sandboxNetwork: { allow: [github.com:443, "bad host", "h:99999"] } }\n  b: { sandboxNetwork: { allow: [] } }\n  c: { sandboxNetwork: { deny: [x] } }\n  d: { sandboxNetwork: maybe }\ndefaultAgent: a\n',
  );
  const at = (path: string) => p.filter((x) => x.path === path).map((x) => x.message);
  expect(at('agents.a.sandboxNetwork.allow[1]')).toEqual([expect.stringMatching(/"bad host" is not a host name/)]);
  expect(at('agents.a.sandboxNetwork.allow[2]')).toEqual([expect.stringMatching(/port must be 1-65535/)]);
  expect(at('agents.b.sandboxNetwork.allow')).toEqual([expect.stringMatching(/at least one host/)]);
  expect(at('agents.c.sandboxNetwork')).toEqual([expect.stringMatching(/expected \{ allow/)]);
  expect(at('agents.d.sandboxNetwork')).toEqual([expect.stringMatching(/expected true or false, "off", "on"/)]);
});

test('the rules: ports, wildcards, IPv6, internal addresses only by their own entry', () => {
  const allow = ['github.com:443', '*.npmjs.org', '[::1]:8080', '10.0.0.5'];
  expect(egressRefusal('github.com', 443, undefined, allow)).toBeUndefined();
  expect(egressRefusal('github.com', 22, undefined, allow)).toMatch(/github\.com:22 is not on/);
  expect(egressRefusal('registry.npmjs.org', 443, undefined, allow)).toBeUndefined();
  expect(egressRefusal('npmjs.org', 443, undefined, allow)).toMatch(/not on/);
  expect(egressRefusal('evilnpmjs.org', 443, undefined, allow)).toMatch(/not on/);
  expect(egressRefusal('GitHub.com.', 443, '140.82.112.3', allow)).toBeUndefined();
  expect(egressRefusal('github.com', 443, '10.0.0.7', allow)).toMatch(/resolves to 10\.0\.0\.7, a private/);
  expect(egressRefusal('github.com', 443, '169.254.169.254', allow)).toMatch(/metadata/);
  expect(egressRefusal('10.0.0.5', 5432, '10.0.0.5', allow)).toBeUndefined();
  expect(egressRefusal('::1', 8080, '::1', allow)).toBeUndefined();
  expect(egressRefusal('::1', 8081, '::1', allow)).toMatch(/loopback/);
  expect(egressRefusal('x.npmjs.org', 443, '::ffff:127.0.0.1', allow)).toMatch(/loopback/);
  expect(parseTarget('[::1]:443')).toEqual({ host: '::1', port: 443 });
  expect(parseTarget('host')).toBeUndefined();
  expect(parseTarget('h:0')).toBeUndefined();
  expect(typeof parseEgressEntry('::1')).toBe('string');
});
