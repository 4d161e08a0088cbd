/**
 * The zod schema of gatehouse.yaml (bot/config/index.ts loads and resolves it). Every key an operator may
 * write is declared here, with the value rules and the messages a wrong value gets; unknown keys are
 * errors (strict objects). Feature modules own their sub-schemas (MCP, policy, network, memory, ...).
 *
 * Contract:
 * - The types come from here (`z.output`): a parsed `access`, `runner` or route IS its resolved value
 *   (AccessConfig, RunnerConfig, Route), every default filled by the schema (`.default`, `.prefault`).
 * - `defaults:` parses with the built-in value in every agent key that has a plain one (tier, timeouts,
 *   maxTokens, sandbox, ...); an agent's own keys stay optional, so it inherits defaults' values
 *   (bot/config/agents.ts layers them and keeps the built-ins that layer differently).
 * - Per-platform keys come from the descriptors (adapters/descriptors.ts): `access.<platform>` lists
 *   (accessLists), approver forms (approverForms, refused on other platforms naming the one they work
 *   for), id shapes, and the own-variable prefixes envAllowlist refuses (OWN_PREFIXES).
 * - The JSON Schema (`gatehouse config schema`) is made from this schema's input side: defaults of
 *   values zod transforms (sizes, whole numbers read from BigInt) do not show there.
 */
import { z } from 'zod';
import { didYouMean, quoteValue } from './problems.js';
import { DESCRIPTORS, descriptorOf, type AccessListOf, type AccessPlatform } from '../../adapters/descriptors.js';
import { PLATFORMS, type Platform } from '../../adapters/types.js';
import { companionsSchema } from '../../agent/model/companions.js';
import { parseSize, SANDBOX_MODES } from '../../agent/tools/sandbox/index.js';
import { networkSchema } from '../../agent/tools/builtin/web/config.js';
import { sandboxNetworkSchema } from '../../agent/egress/config.js';
import { TIERS } from '../../policies/tiers.js';
import { DEFAULT_WORKSPACE_MAX_BYTES, parseByteSize } from '../../agent/tools/workspace-quota.js';
import { isOwnName } from '../../policies/env.js';
import { DEFAULT_REFUSAL_LIMITS } from '../../policies/access.js';
import { mcpServersSchema } from '../../agent/mcp/config.js';
import { commandRulesSchema, toolPolicySchema } from './policy.js';
import { commandToolsSchema, webSearchSchema } from './tools.js';
import { threadFollowUpsSchema } from './thread-follow-ups.js';
import { memoryConfigSchema, remindersConfigSchema } from './memory-reminders.js';
import { budgetConfigSchema } from './budget.js';
import { requesterMayApproveSchema } from './requester-approval.js';
import { subagentsSchema } from '../../agent/tools/builtin/subagent/config.js';
import { approvalDeliverySchema } from './approval-delivery.js';

/** The model that classifies commands and checks what runs unless an agent names another. */
const DEFAULT_CLASSIFIER_MODEL = 'claude-haiku-5-5';

/** The longest a Node timer can wait (about 24.8 days); longer values would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** A whole number in [min, max]; YAML integers arrive as BigInt. */
function int(min: number, max: number, hint = '') {
  return z.preprocess(
    (v) => (typeof v === 'bigint' ? Number(v) : v),
    z.number().superRefine((n, ctx) => {
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `expected a whole number from ${min} to ${max}${hint}, got ${quoteValue(n)}` });
      }
    }),
  );
}
/** A cap on runs: a whole number in [1, 1000] or `unlimited` (resolved to Infinity). */
function runCap() {
  return z.preprocess(
    (v) => (typeof v === 'bigint' ? Number(v) : v),
    z
      .unknown()
      .superRefine((v, ctx) => {
        if (v === 'unlimited') return;
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 1000) {
          ctx.addIssue({ code: 'custom', message: `expected a whole number from 1 to 1000 or "unlimited", got ${quoteValue(v)}` });
        }
      })
      .transform((v) => (v === 'unlimited' ? Infinity : (v as number))),
  );
}

/**
 * `runner`: all restart-required (bot/service/reload.ts; agent/run/limits.ts explains the keys). Parsed, it
 * is the resolved RunnerConfig: every key filled. reservedRuns must leave at least one slot anyone
 * can take; its default (1) shrinks to maxConcurrentRuns - 1 when that is smaller.
 */
const runnerSchema = z
  .strictObject({
    maxConcurrentRuns: int(1, 1000).default(8),
    /** Infinity: no cap. */
    maxRunsPerUser: runCap().default(2),
    /** Infinity: no cap. */
    maxRunsPerPlace: runCap().default(3),
    reservedRuns: int(0, 999).optional(),
  })
  .superRefine((r, ctx) => {
    if (r.reservedRuns !== undefined && r.reservedRuns >= r.maxConcurrentRuns) {
      ctx.addIssue({
        code: 'custom',
        path: ['reservedRuns'],
        message: `must be less than runner.maxConcurrentRuns (${r.maxConcurrentRuns}): those slots are kept for users running nothing, so at least one must be open to anyone`,
      });
    }
  })
  .transform((r) => ({ ...r, reservedRuns: r.reservedRuns ?? Math.min(1, r.maxConcurrentRuns - 1) }));

export type RunnerConfig = z.output<typeof runnerSchema>;

const ms = () => int(1, MAX_TIMER_MS, ' (milliseconds; the most a timer can wait is about 24.8 days)');

/** A size in bytes: a number, or "512M", "2G", "64K" (binary units); resolves to bytes. */
const size = (min: number, max: number, what: string) =>
  z.preprocess(
    (v) => (typeof v === 'bigint' ? Number(v) : v),
    z.union([z.number(), z.string()]).transform((v, ctx) => {
      const n = parseSize(v);
      if (n === undefined || n < min || n > max) {
        ctx.addIssue({
          code: 'custom',
          message: `expected ${what} from ${min / 1048576} MiB to ${max / 1073741824} GiB, written like 512M or 2G (or a number of bytes), got ${quoteValue(v)}`,
        });
        return z.NEVER;
      }
      return n;
    }),
  );

/** The box's limits (agent/tools/sandbox/limits.ts); each unset key falls back to defaults, then built-ins. */
const sandboxLimitsSchema = z.strictObject({
  memory: size(64 * 1048576, 1024 * 1073741824, 'a memory size per process').optional(),
  tmpSize: size(1048576, 1024 * 1073741824, 'a size for /tmp').optional(),
  cpuSeconds: int(1, 604_800, ' (CPU seconds per process)').optional(),
  processes: int(8, 1_000_000).optional(),
  openFiles: int(64, 1_048_576).optional(),
});

/** A size in bytes: a number or "500MB" / "1GiB"; 0 or "none" turns the limit off. */
const byteSize = () =>
  z.unknown().transform((v, ctx) => {
    const n = parseByteSize(v);
    if (typeof n === 'number') return n;
    ctx.addIssue({ code: 'custom', message: n.error });
    return z.NEVER;
  });

const text = () =>
  z.string().superRefine((s, ctx) => {
    if (s.trim() === '') ctx.addIssue({ code: 'custom', message: 'must not be empty' });
  });

/** Gatehouse's own variable prefixes (policies/secret-names.ts isOwnName refuses them; a test keeps both equal). */
const OWN_PREFIXES = ['GATEHOUSE_', 'ANTHROPIC_', ...PLATFORMS.flatMap((p) => descriptorOf(p).envPrefix ?? [])];

/** What an id looks like on each platform: the adapters' descriptors say. */
const ID_RULES: Record<Platform, { re: RegExp; hint: string }> = Object.fromEntries(PLATFORMS.map((p) => [p, DESCRIPTORS[p].ids])) as Record<
  Platform,
  { re: RegExp; hint: string }
>;

/**
 * gatehouse.example.yaml writes ids as `<your-telegram-user-id>`: a copy used unchanged must admit
 * and approve nobody, so such a value is refused with a message that says to replace it.
 */
const PLACEHOLDER = /<[^<>]*>/;
function placeholderMessage(s: string): string {
  return `${quoteValue(s)} is a placeholder from gatehouse.example.yaml; replace it with the real value (or remove the entry)`;
}

/** Every approver form (`group:`, `role:`) with the platform whose descriptor allows it. */
const APPROVER_FORMS = PLATFORMS.flatMap((platform) => (descriptorOf(platform).approverForms ?? []).map((f) => ({ ...f, platform })));

/**
 * An id: a string, or a YAML number turned into its exact digits. `approver`: the platform's
 * approver forms (Slack `group:<id>`, Discord `role:<id>`) are accepted too.
 */
function id(platform: Platform, opts: { approver?: boolean } = {}) {
  const rule = ID_RULES[platform];
  const forms = opts.approver ? (descriptorOf(platform).approverForms ?? []) : [];
  return z.preprocess(
    (v) => (typeof v === 'bigint' || typeof v === 'number' ? String(v) : v),
    z.string().superRefine((s, ctx) => {
      if (PLACEHOLDER.test(s)) {
        ctx.addIssue({ code: 'custom', message: placeholderMessage(s) });
        return;
      }
      if (rule.re.test(s) || forms.some((f) => f.re.test(s))) return;
      const own = forms.find((f) => s.startsWith(f.prefix));
      const other = APPROVER_FORMS.find((f) => s.startsWith(f.prefix));
      let message = `${rule.hint}; got ${quoteValue(s)}`;
      if (own) message = `expected ${own.hint}, got ${quoteValue(s)}`;
      else if (other) message = `${other.prefix}<id> entries only work for ${other.platform} approvers, got ${quoteValue(s)}`;
      ctx.addIssue({ code: 'custom', message });
    }),
  );
}
const ids = (platform: Platform, opts?: { approver?: boolean }) => z.array(id(platform, opts)).optional();

export function uniq(list: readonly string[]): string[] {
  return [...new Set(list)];
}

/** An access list: ids, each once; unset: empty. */
const accessIds = (platform: Platform) =>
  z
    .array(id(platform))
    .transform((l) => uniq(l))
    .default(() => []);

/**
 * `access`: who may talk to the bot (policies/access.ts). Parsed, it is the resolved AccessConfig:
 * every list present (maybe empty), rateLimit and refusals filled.
 */
/** `access.<platform>`: one list per name in its descriptor's accessLists, every one filled. */
type AccessListsSchema<P extends AccessPlatform> = z.ZodPrefault<z.ZodObject<{ [K in AccessListOf<P>]: ReturnType<typeof accessIds> }, z.core.$strict>>;
function accessListsSchema<P extends AccessPlatform>(platform: P): AccessListsSchema<P> {
  const lists = descriptorOf(platform).accessLists ?? [];
  // The keys are the same literal list the type reads (adapters/descriptors.ts AccessListOf).
  return z.strictObject(Object.fromEntries(lists.map((k) => [k, accessIds(platform)]))).prefault({}) as unknown as AccessListsSchema<P>;
}
const accessPlatforms = Object.fromEntries(
  PLATFORMS.filter((p): p is AccessPlatform => descriptorOf(p).accessLists !== undefined).map((p) => [p, accessListsSchema(p)]),
) as unknown as { [P in AccessPlatform]: AccessListsSchema<P> };

const accessSchema = z.strictObject({
  ...accessPlatforms,
  rateLimit: z.strictObject({ messages: int(1, 10_000), perSeconds: int(1, 86_400, ' (seconds)') }).default(() => ({ messages: 20, perSeconds: 60 })),
  /** How refusals to strangers are throttled (policies/access.ts createRefusalThrottle). */
  refusals: z
    .strictObject({
      repliesPerMinute: int(0, 10_000, ' (0: strangers are never answered)').default(DEFAULT_REFUSAL_LIMITS.repliesPerMinute),
      strangerIntervalSeconds: int(1, 31_536_000, ' (seconds)').default(DEFAULT_REFUSAL_LIMITS.strangerIntervalSeconds),
    })
    .prefault({}),
});

export type AccessConfig = z.output<typeof accessSchema>;

export function buildSchema(knownTools: readonly string[]) {
  const known = [...knownTools].sort();
  const toolName = z.string().superRefine((s, ctx) => {
    if (!knownTools.includes(s)) {
      ctx.addIssue({ code: 'custom', message: `unknown tool ${quoteValue(s)}${didYouMean(s, known)}; known tools: ${known.join(', ') || '(none)'}` });
    }
  });
  const envName = z.string().superRefine((s, ctx) => {
    if (/^SSH_/i.test(s)) {
      ctx.addIssue({
        code: 'custom',
        message: `${s} cannot be allowlisted: SSH_* variables would let the agent's commands use your SSH agent and keys; remove it`,
      });
    } else if (isOwnName(s)) {
      ctx.addIssue({
        code: 'custom',
        message: `${s} is Gatehouse's own credential (${OWN_PREFIXES.map((p) => `${p}*`).join(', ')}) and is never passed to the agent's commands; remove it`,
      });
    } else if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(s)) {
      ctx.addIssue({ code: 'custom', message: `expected an environment variable name (letters, digits, _), got ${quoteValue(s)}` });
    }
  });
  const command = z.string().superRefine((s, ctx) => {
    if (s.trim() === '') ctx.addIssue({ code: 'custom', message: 'must not be empty' });
    else if (/[;&|<>`$()\n]/.test(s)) {
      ctx.addIssue({
        code: 'custom',
        message: `${quoteValue(s)} would never match: an entry is a command prefix like "git status", and a command that chains, pipes, substitutes or redirects never matches as a whole`,
      });
    }
  });

  const agent = z.strictObject({
    model: text().optional(),
    classifierModel: text().optional(),
    system: z.string().optional(),
    tools: z.array(toolName).optional(),
    tier: z.enum(TIERS).optional(),
    approvers: z
      .strictObject({
        ...(Object.fromEntries(PLATFORMS.map((p) => [p, ids(p, { approver: true })])) as Record<Platform, ReturnType<typeof ids>>),
        /** The host operator (`gatehouse approvals decide`): `local` only. */
        cli: z
          .array(
            z.preprocess(
              (v) => (typeof v === 'number' || typeof v === 'bigint' ? String(v) : v),
              z.string().refine((s) => s === 'local', { message: 'the host operator is "local": write cli: [local] (or leave it out)' }),
            ),
          )
          .optional(),
      })
      .optional(),
    autoApprovedTools: z.array(text()).optional(),
    autoApprovedCommands: z.array(command).optional(),
    envAllowlist: z.array(envName).optional(),
    workspace: text().optional(),
    workspaceMaxBytes: byteSize().optional(),
    maxIterations: int(1, 100_000).optional(),
    runTimeoutMs: ms().optional(),
    /** The old name of retention.maxConversations (still read). */
    maxConversations: int(1, 10_000_000).optional(),
    retention: z
      .object({
        maxConversations: int(1, 10_000_000).optional(),
        /** 0: no age limit. */
        maxIdleDays: int(0, 100_000, ' (0: no age limit)').optional(),
      })
      .strict()
      .optional(),
    approvalTimeoutMs: ms().optional(),
    questionTimeoutMs: ms().optional(),
    commandTimeoutMs: ms().optional(),
    maxTokens: int(1, 1_000_000).optional(),
    // Extended thinking; the API's minimum budget is 1,024 tokens (below maxTokens: checked in config.ts).
    thinking: z
      .object({ budgetTokens: int(1_024, 1_000_000) })
      .strict()
      .optional(),
    sandbox: z.enum(SANDBOX_MODES).optional(),
    sandboxNetwork: sandboxNetworkSchema.optional(),
    sandboxLimits: sandboxLimitsSchema.optional(),
    sandboxReadPaths: z.array(text()).optional(),
    companions: companionsSchema.optional(),
    contextWindowTokens: int(1_000, 100_000_000).optional(),
    network: networkSchema.optional(),
    threadFollowUps: threadFollowUpsSchema.optional(),
    toolPolicy: toolPolicySchema.optional(),
    commandRules: commandRulesSchema.optional(),
    mcpServers: mcpServersSchema.optional(),
    memory: memoryConfigSchema.optional(),
    reminders: remindersConfigSchema.optional(),
    budget: budgetConfigSchema.optional(),
    requesterMayApprove: requesterMayApproveSchema.optional(),
    approvalDelivery: approvalDeliverySchema.optional(),
    discordReplyInThread: z.boolean().optional(),
    commandTools: commandToolsSchema(knownTools).optional(),
    skills: z.array(text()).optional(),
    webSearch: webSearchSchema.optional(),
    subagents: subagentsSchema.optional(),
  });

  // `defaults:` carries the built-in values: an agent's unset key takes defaults', an unset key there
  // the built-in one. model, tools, approvers, system, retention and sandboxLimits are layered in
  // bot/config/agents.ts (a no-config agent's own built-ins, the empty-system rule, per-key merges).
  const a = agent.shape;
  const agentDefaults = agent.extend({
    classifierModel: a.classifierModel.unwrap().default(DEFAULT_CLASSIFIER_MODEL),
    tier: a.tier.unwrap().default('read-only'),
    autoApprovedTools: a.autoApprovedTools.unwrap().default(() => []),
    autoApprovedCommands: a.autoApprovedCommands.unwrap().default(() => []),
    envAllowlist: a.envAllowlist.unwrap().default(() => []),
    workspaceMaxBytes: a.workspaceMaxBytes.unwrap().default(DEFAULT_WORKSPACE_MAX_BYTES),
    maxIterations: a.maxIterations.unwrap().default(100),
    runTimeoutMs: a.runTimeoutMs.unwrap().default(600_000),
    approvalTimeoutMs: a.approvalTimeoutMs.unwrap().default(1_800_000),
    questionTimeoutMs: a.questionTimeoutMs.unwrap().default(900_000),
    commandTimeoutMs: a.commandTimeoutMs.unwrap().default(300_000),
    maxTokens: a.maxTokens.unwrap().default(8192),
    sandbox: a.sandbox.unwrap().default('bubblewrap'),
    sandboxNetwork: a.sandboxNetwork.unwrap().default(false),
    discordReplyInThread: a.discordReplyInThread.unwrap().default(true),
  });

  const agentName = z.string().superRefine((s, ctx) => {
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(s)) {
      ctx.addIssue({ code: 'custom', message: 'agent names are 1-64 letters, digits, "-" or "_", starting with a letter or digit' });
    }
  });

  const routeMatch = z.string().superRefine((s, ctx) => {
    if (PLACEHOLDER.test(s)) {
      ctx.addIssue({ code: 'custom', message: placeholderMessage(s) });
      return;
    }
    const parts = s.split(':');
    if (!PLATFORMS.includes(parts[0] as Platform) || parts.some((p) => p === '')) {
      ctx.addIssue({
        code: 'custom',
        message: `expected a platform (${PLATFORMS.join(', ')}) or a conversation key prefix like "telegram:-1001234", got ${quoteValue(s)}`,
      });
    }
  });

  return z.strictObject({
    defaults: agentDefaults.prefault({}),
    agents: z.record(agentName, agent).optional(),
    routes: z.array(z.strictObject({ match: routeMatch, agent: text(), threadFollowUps: threadFollowUpsSchema.optional() })).optional(),
    defaultAgent: text().optional(),
    access: accessSchema.prefault({}),
    runner: runnerSchema.prefault({}),
  });
}

export type FileConfig = z.output<ReturnType<typeof buildSchema>>;
/** An agent's keys as written: every one optional (unset: defaults'). */
export type RawAgent = NonNullable<FileConfig['agents']>[string];
/** `defaults:` parsed: the built-in value in every key that has one. */
export type AgentDefaults = FileConfig['defaults'];
/** A route as written is a route resolved (bot/config/routes.ts checks its agent). */
export type Route = NonNullable<FileConfig['routes']>[number];
