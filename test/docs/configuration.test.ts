/**
 * docs/configuration.md documents every key of gatehouse.yaml's schema (from `gatehouse config
 * schema`'s JSON Schema), and names none the schema does not have.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configJsonSchema } from '../../bot/cli/config.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
type Node = { properties?: Record<string, Node>; additionalProperties?: Node | boolean; items?: Node; anyOf?: Node[] };

/** Every key path, as the page writes it: agents.<name>.x for agent keys (defaults.x is the same key). */
function keyPaths(): string[] {
  const out = new Set<string>();
  const walk = (s: Node, path: string) => {
    for (const [k, v] of Object.entries(s.properties ?? {})) {
      const p = path ? `${path}.${k}` : k;
      out.add(p);
      walk(v, p);
    }
    // A map of plain values (toolPolicy, env, headers) is one key; a map of objects (agents, mcpServers) has keys below <name>.
    if (s.additionalProperties && typeof s.additionalProperties === 'object' && s.additionalProperties.properties) {
      out.add(`${path}.<name>`);
      walk(s.additionalProperties, `${path}.<name>`);
    }
    if (s.items) walk(s.items, `${path}[]`);
    for (const a of s.anyOf ?? []) walk(a, path);
  };
  walk(configJsonSchema() as Node, '');
  return [...out].map((p) => p.replace(/^defaults\./, 'agents.<name>.')).filter((p, i, all) => all.indexOf(p) === i);
}

const page = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
/** The keys the page's tables document: the first cell of each row. */
const documented = [...page.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!);

test('every key of the schema is documented', () => {
  const paths = keyPaths();
  // A record whose values have keys shows up as <name> with keys under it (agents, mcpServers).
  expect(paths.length).toBeGreaterThan(100);
  expect(paths.filter((p) => !documented.includes(p))).toEqual([]);
});

test('the page documents no key the schema does not have', () => {
  const paths = new Set(keyPaths());
  expect(documented.filter((d) => !paths.has(d))).toEqual([]);
});
