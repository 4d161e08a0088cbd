/**
 * Config schema for the agent-declared tools (issue 23): `agents.<name>.commandTools`.
 *
 * Contract: a bad declaration is a config error at its key path (agents.<name>.commandTools.<tool>.argv[2]);
 * the checks themselves live next to the tool (agent/tools/builtin/command-tools/declaration.ts).
 */
import { z } from 'zod';
import { TIERS } from '../../policies/tiers.js';
import { declarationIssues } from '../../agent/tools/builtin/command-tools/declaration.js';
import type { WebSearchConfig } from '../../agent/tools/builtin/web/search.js';
import type { ConfigProblem, Env } from './env.js';
import { readSecretFiles } from './secret-files.js';

/** YAML integers arrive as BigInt. */
const num = (v: unknown) => (typeof v === 'bigint' ? Number(v) : v);
function int(min: number, max: number) {
  return z.preprocess(
    num,
    z
      .number()
      .int(`expected a whole number from ${min} to ${max}`)
      .min(min, `expected a whole number from ${min} to ${max}`)
      .max(max, `expected a whole number from ${min} to ${max}`),
  );
}

const param = z.strictObject({
  type: z.enum(['string', 'integer', 'number', 'boolean']),
  description: z.string().optional(),
  enum: z
    .array(z.preprocess(num, z.union([z.string(), z.number()])))
    .min(1)
    .optional(),
});

const inputSchema = z.strictObject({
  type: z.literal('object'),
  properties: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a parameter name is letters, digits and _'), param),
  required: z.array(z.string()).optional(),
});

const declaration = z.strictObject({
  description: z.string().min(1),
  input: inputSchema.default({ type: 'object', properties: {} }),
  argv: z.array(z.string().min(1, 'an argv element must not be empty')).min(1, 'argv needs at least the program'),
  tier: z.enum(TIERS),
  timeoutMs: int(1, 3_600_000).optional(),
});

/** `commandTools`: tool name -> declaration; names and slots checked against the built-in tools. */
export function commandToolsSchema(builtinNames: readonly string[]) {
  return z.record(z.string(), declaration).superRefine((tools, ctx) => {
    for (const [name, decl] of Object.entries(tools)) {
      for (const issue of declarationIssues(name, decl, builtinNames)) ctx.addIssue({ code: 'custom', path: [name, ...issue.path], message: issue.message });
    }
  });
}

/** `webSearch`: the agent's search provider; the key is read from the environment variable named in `apiKeyEnv`. */
export const webSearchSchema = z.strictObject({
  provider: z.enum(['searxng', 'brave', 'anthropic']),
  url: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL of the search API' }).optional(),
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name')
    .optional(),
  maxResults: int(1, 20).optional(),
  maxBytes: int(1024, 64 * 1024).optional(),
  timeoutMs: int(1, 120_000).optional(),
  /** anthropic: searches the API may run per request (its `max_uses`). */
  maxUses: int(1, 20).optional(),
});
export type WebSearchFileConfig = z.output<typeof webSearchSchema>;

const BRAVE_SEARCH_URL = 'https://api.search.brave.com';

/** The runtime settings, the key filled from env[apiKeyEnv] (or its _FILE); problems name the key path. */
export function resolveWebSearch(raw: WebSearchFileConfig | undefined, o: { env: Env; path: string; problems: ConfigProblem[] }): WebSearchConfig | undefined {
  if (!raw) return undefined;
  // The Messages API's own search: no URL, no key of ours; only its per-request cap.
  if (raw.provider === 'anthropic') {
    for (const key of ['url', 'apiKeyEnv'] as const) {
      if (raw[key] !== undefined)
        o.problems.push({ path: `${o.path}.${key}`, message: 'not used with provider anthropic (the API searches itself, on the model key)' });
    }
    return { provider: 'anthropic', url: '', maxResults: 5, maxBytes: 8 * 1024, timeoutMs: 15_000, maxUses: raw.maxUses ?? 5 };
  }
  let apiKey: string | undefined;
  if (raw.apiKeyEnv) {
    readSecretFiles(o.env, [raw.apiKeyEnv], o.problems);
    apiKey = o.env[raw.apiKeyEnv]?.trim() || undefined;
    if (!apiKey)
      o.problems.push({ path: `${o.path}.apiKeyEnv`, message: `${raw.apiKeyEnv} (or ${raw.apiKeyEnv}_FILE) is not set; put the search API key there` });
  } else if (raw.provider === 'brave') {
    o.problems.push({
      path: `${o.path}.apiKeyEnv`,
      message: 'Brave needs an API key: name the environment variable holding it, e.g. apiKeyEnv: BRAVE_API_KEY',
    });
  }
  const url = raw.url ?? (raw.provider === 'brave' ? BRAVE_SEARCH_URL : undefined);
  if (!url) {
    o.problems.push({ path: `${o.path}.url`, message: 'SearXNG needs the URL of your instance, e.g. https://searx.example.org' });
    return undefined;
  }
  return {
    provider: raw.provider,
    url,
    ...(apiKey ? { apiKey } : {}),
    maxResults: raw.maxResults ?? 5,
    maxBytes: raw.maxBytes ?? 8 * 1024,
    timeoutMs: raw.timeoutMs ?? 15_000,
  };
}
