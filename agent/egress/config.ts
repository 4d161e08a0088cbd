/**
 * The per-agent `sandboxNetwork` key of gatehouse.yaml (bot/config/schema.ts uses this schema):
 *
 *   sandboxNetwork: off                 # default: the box has no network (same as false)
 *   sandboxNetwork: on                  # the host's network (same as true)
 *   sandboxNetwork:
 *     allow: [github.com:443, "*.npmjs.org", 127.0.0.1:8080]
 *
 * Contract: `resolveSandboxNetwork(value)` -> `{ network, egressAllow }`: `network` true only for
 * on/true; `egressAllow` the allowlist (the box keeps no network and reaches only the egress proxy,
 * agent/egress/proxy.ts) or undefined. Entries are policies/egress.ts parseEgressEntry's; a bad one is a
 * config error at `agents.<name>.sandboxNetwork.allow[i]`.
 */
import { z } from 'zod';
import { parseEgressEntry } from '../../policies/egress.js';

const entry = z.string().superRefine((s, ctx) => {
  const parsed = parseEgressEntry(s);
  if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
});

const egressAllowSchema = z.strictObject({
  allow: z.array(entry).min(1, 'list at least one host; for no network at all write sandboxNetwork: off'),
});

export const sandboxNetworkSchema = z.union([z.boolean(), z.enum(['off', 'on']), egressAllowSchema], {
  error: (issue) =>
    typeof issue.input === 'object' && issue.input !== null
      ? 'expected { allow: [host[:port], "*.domain", ...] } and no other key'
      : 'expected true or false, "off", "on", or { allow: [host[:port], "*.domain", ...] }',
});
export type SandboxNetworkConfig = z.infer<typeof sandboxNetworkSchema>;

function resolveSandboxNetwork(value: SandboxNetworkConfig | undefined): { network: boolean; egressAllow?: string[] } {
  if (value === true || value === 'on') return { network: true };
  if (value === undefined || value === false || value === 'off') return { network: false };
  return { network: false, egressAllow: [...value.allow] };
}

/** The loaded config's two fields (bot/config/index.ts AgentConfig.sandboxNetwork / sandboxEgress). */
export function sandboxNetworkFields(value: SandboxNetworkConfig | undefined): { sandboxNetwork: boolean; sandboxEgress?: string[] } {
  const r = resolveSandboxNetwork(value);
  return { sandboxNetwork: r.network, ...(r.egressAllow ? { sandboxEgress: r.egressAllow } : {}) };
}
