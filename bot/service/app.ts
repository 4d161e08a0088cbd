/**
 * The composition root: wires config, storage, the model, the runner, the approval broker, the
 * router and the adapters. Nothing else constructs these; tests build a Gatehouse the same way
 * (with fake servers behind the real clients), so what is tested is what runs.
 *
 * Sandbox at start (agent/tools/sandbox): for every agent with execute_command and `sandbox: bubblewrap`,
 * the workspace is handed to the sandbox user (bot running as root) and a `true` is run in the same box as
 * the same user; when that fails, createGatehouse throws a message naming the agent, the cause and the
 * fix, and nothing starts. When it works, one info line per agent says what the box sees and its limits,
 * and how memory is bounded (cgroup v2 or per-process rlimit). `sandbox: none` logs a warning naming the
 * agent at every start. execute_command hides the config file, the .env loaded and the store from its
 * commands (and, the box's view being default-deny, everything else of the host not configured).
 */
import { mkdirSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Adapter, ConversationRef } from '../../adapters/types.js';
import type { AccessPlatform } from '../../adapters/descriptors.js';
import { PersistedAllowlists } from '../../agent/approvals/allowlists.js';
import { ApprovalBroker, ApprovalStore, SignalDecisionBus } from '../../agent/approvals/index.js';
import { DELIVER_HERE } from '../../agent/approvals/delivery.js';
import { platformOf } from '../../agent/approvals/clicks.js';
import { directCards } from '../config/approval-delivery.js';
import { ConversationStore, DEFAULT_RETENTION } from '../../agent/context/conversation-store.js';
import type { Leadership, Store } from '../../agent/store/types.js';
import { classifierCompletionFrom } from '../../agent/model/anthropic.js';
import type { Usage } from '../../agent/events.js';
import type { ModelClient } from '../../agent/model/types.js';
import type { ConversationOutput } from '../../agent/run/output.js';
import { OrderedDelivery } from './ordered-delivery.js';
import { Runner } from '../../agent/run/runner.js';
import type { RunClock } from '../../agent/run/limits.js';
import type { AgentSettings } from '../../agent/settings.js';
import { builtinRegistry } from '../../agent/tools/catalog.js';
import { settingsSecretValues } from '../../agent/tools/builtin/web/tools.js';
import type { ToolRegistry } from '../../agent/tools/registry.js';
import type { AnyTool } from '../../agent/tools/types.js';
import { describeLimits, prepareWorkspace, probeSandbox, sandboxLimits, type SandboxLimits, type SandboxPolicy } from '../../agent/tools/sandbox/index.js';
import { createMcp, type Mcp } from '../../agent/mcp/index.js';
import { dataDirOf } from './reload.js';
import { createCommandClassifier, type CommandClassifier } from '../../policies/classifier.js';
import type { Audit } from '../../agent/audit.js';
import type { Telemetry } from '../../agent/telemetry/types.js';
import type { Config } from '../config/index.js';
import { auditTo, createLogger, type Log } from './log.js';
import { Router } from './router.js';
import { CLI_PREFIX, HeadlessRuns } from '../headless/runs.js';
import { createOperatorShell } from '../cli/operator-shell.js';
import { memoryAndReminders } from './reminder-scheduler.js';
import { replicaId } from './replica-id.js';
import { parseTurn } from '../../agent/run/turn.js';
import { LocalFirstTurnQueue } from '../../agent/run/local-first-queue.js';
import { hasSharedTurnQueue } from '../../agent/run/turn-queue.js';
import { heldConnections, type HeldStatus } from './leadership.js';
import { EgressApprovals } from '../../agent/egress/approvals.js';
import { EgressHub, egressPolicy } from '../../agent/egress/hub.js';
import { messageOf } from '../../agent/log.js';

export type { Log } from './log.js';

export interface GatehouseOptions {
  config: Config;
  /** The store's repositories (agent/store/types.ts): every kind of data the bot keeps. */
  store: Store;
  model: ModelClient;
  adapters: Adapter[];
  /**
   * Whether this process is one of the replicas sharing a PostgreSQL store (default true): its turns
   * go through the shared queue and it takes other replicas' work. A one-off in-process `gatehouse run`
   * passes false: it runs its own turn and nothing else.
   */
  replica?: boolean;
  log?: Log;
  /** The audit trail (default: info lines through `log`). */
  audit?: Audit;
  /** Metrics and traces (bot/telemetry); default: none. */
  telemetry?: Telemetry;
  /** Classifier timeout (default 8 s). */
  classifierTimeoutMs?: number;
  /** The clock of run deadlines (tests move a fake one; default the real timers). */
  runClock?: RunClock;
  /** Tools beyond the built-in ones (config must list them like any other). */
  extraTools?: AnyTool[];
  /**
   * Replicas: who holds the adapters' single-holder connections (bot/service/leadership.ts). Absent: this
   * process holds them (one process per store).
   */
  leadership?: Leadership;
  /** More of the bot's own paths that sandboxed commands must never see (the audit folder and key). */
  ownFiles?: readonly string[];
  /** Where conversations of a surface without an adapter go (`gatehouse acp`: bot/acp/); undefined: not its key. */
  extraOutputs?: (key: string) => ConversationOutput | undefined;
}

export interface Gatehouse {
  config: Config;
  router: Router;
  runner: Runner;
  broker: ApprovalBroker;
  /** `gatehouse run` messages (in-process, or through the service's attach endpoint). */
  headless: HeadlessRuns;
  /** MCP connections (lazy: nothing connects until a call or a first listing). */
  mcp: Mcp;
  /**
   * Starts the adapters, continues runs that were waiting when the process stopped, then the reminder
   * scheduler (bot/service/reminder-scheduler.ts), which first posts what came due while the bot was down.
   */
  start(): Promise<void>;
  /**
   * Stops the reminder timer, hands the held platform connections and their leadership over (a standby
   * replica takes them at once), then adapters (no new input), then the runner: running turns get
   * `graceMs` (default 10 s) to finish, then are interrupted. Runs waiting on a human stay stored for
   * the next start.
   */
  stop(opts?: { graceMs?: number }): Promise<void>;
  /** This replica's role for the held platform connections and whether each is up (/readyz). */
  connections(): HeldStatus;
}

/** JSON lines on stdout at info (pretty on a terminal); the CLI builds its own from the config. */
const defaultLog: Log = (level, msg, fields) => {
  defaultLogger ??= createLogger({ level: 'info', destination: process.stdout, secrets: [] });
  defaultLogger.log(level, msg, fields);
};
let defaultLogger: ReturnType<typeof createLogger> | undefined;

/**
 * What an operator should fix before anyone writes: an enabled platform whose access list admits
 * nobody, and an agent serving a platform where nobody can approve its calls.
 */
function configWarnings(config: Config, platforms: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of platforms) {
    if (p === 'console') continue;
    const access = config.access[p as AccessPlatform] as Record<string, string[]> | undefined;
    if (access && Object.values(access).every((ids) => ids.length === 0)) {
      out.push(
        `${p} is enabled but access.${p} admits nobody (${Object.keys(access).join(', ')} are empty): every message there is refused; add ids under access.${p} in gatehouse.yaml`,
      );
    }
    const serving = new Set<string>();
    const routed = config.routes.filter((r) => r.match === p || r.match.startsWith(`${p}:`));
    for (const r of routed) serving.add(r.agent);
    if (!routed.some((r) => r.match === p)) serving.add(config.defaultAgent);
    for (const name of serving) {
      const agent = config.agents[name];
      if (agent && (agent.approvers[p as keyof typeof agent.approvers] ?? []).length === 0) {
        out.push(`agent ${name} serves ${p} but no approver is bound there (agents.${name}.approvers.${p}): its calls above tier ${agent.tier} are declined`);
      }
    }
  }
  return out;
}

/**
 * The bot's own files, hidden from sandboxed commands: the config file, the .env loaded, and the SQLite
 * store (its directory, and the database with its journal files for when that directory cannot be hidden).
 */
export function ownFiles(config: Config): string[] {
  const files: string[] = [];
  if (config.configFile) files.push(config.configFile);
  if (config.envFile) files.push(config.envFile);
  if (config.store.kind === 'sqlite' && config.store.path !== ':memory:') {
    const db = config.store.path;
    files.push(dirname(db), db, `${db}-wal`, `${db}-shm`, `${db}-journal`);
  }
  return files;
}

export async function createGatehouse(opts: GatehouseOptions): Promise<Gatehouse> {
  const { config, store: repos } = opts;
  const log = opts.log ?? defaultLog;
  const audit = opts.audit ?? auditTo(log);
  for (const agent of Object.values(config.agents)) {
    mkdirSync(agent.workspace, { recursive: true });
    // Confinement compares real paths: resolve the root's own symlinks once.
    agent.workspace = realpathSync(agent.workspace);
  }
  const botFiles = [...ownFiles(config), ...(opts.ownFiles ?? [])];
  // Replicas sharing a PostgreSQL store hear of each other's grants and decisions through the
  // store's signals (LISTEN/NOTIFY); on SQLite they stay in this process.
  const allowlists = new PersistedAllowlists(repos.allowlists, Date.now, { signals: repos.signals, log });
  await allowlists.load(Object.keys(config.agents));
  // sandboxNetwork: { allow }: one egress proxy per agent, started below or, for an allowlist a reload
  // added, before the agent's next run (agent/egress/hub.ts). Its list: the configured one, read at each
  // connection, and the hosts granted by "Always for this host".
  const egress = new EgressHub(audit);
  const egressSockets = new Map<string, string>();
  const startEgress = async (name: string): Promise<void> => {
    const a = config.agents[name];
    if (!a?.sandboxEgress || a.sandbox === 'none' || egressSockets.has(name)) return;
    if (!a.tools.includes('execute_command') && Object.keys(a.commandTools ?? {}).length === 0) return;
    egressSockets.set(name, await egress.start(name, () => [...(config.agents[name]?.sandboxEgress ?? []), ...allowlists.egress(name)]));
  };
  const sandboxPolicy = (agent: {
    name: string;
    sandbox?: SandboxPolicy['mode'];
    sandboxNetwork?: boolean;
    sandboxEgress?: readonly string[];
    sandboxLimits?: SandboxLimits;
    sandboxReadPaths?: readonly string[];
  }): SandboxPolicy => ({
    mode: agent.sandbox ?? 'bubblewrap',
    network: agent.sandboxNetwork ?? false,
    botFiles,
    ...(agent.sandboxLimits ? { limits: agent.sandboxLimits } : {}),
    ...(agent.sandboxReadPaths && agent.sandboxReadPaths.length > 0 ? { readPaths: [...agent.sandboxReadPaths] } : {}),
    ...egressPolicy(agent, egressSockets),
  });
  for (const agent of Object.values(config.agents)) {
    if (agent.sandbox === 'none') {
      log('warn', `agent ${agent.name}: sandbox: none — its shell commands run on this host with the bot's own rights, outside any sandbox`);
      if (agent.sandboxEgress)
        log('warn', `agent ${agent.name}: sandboxNetwork.allow is NOT enforced under sandbox: none (its commands use the host's network directly)`);
      continue;
    }
    // Command tools run in the same box: the workspace is handed over and the box probed for them too.
    if (!agent.tools.includes('execute_command') && Object.keys(agent.commandTools ?? {}).length === 0) continue;
    await startEgress(agent.name);
    try {
      await prepareWorkspace(agent.workspace);
      await probeSandbox(sandboxPolicy(agent), agent.workspace);
    } catch (err) {
      throw new Error(`agents.${agent.name}: sandbox: bubblewrap cannot run commands here: ${messageOf(err)} (agents.${agent.name}.sandbox)`);
    }
    const policy = sandboxPolicy(agent);
    log(
      'info',
      `agent ${agent.name}: sandbox: bubblewrap, network ${policy.network ? 'on' : policy.egress ? `only through the egress proxy to ${agent.sandboxEgress?.join(', ')}` : 'off'}, sees only the system, its workspace` +
        `${policy.readPaths ? ` and ${policy.readPaths.join(', ')} (read-only)` : ''}; ${describeLimits(sandboxLimits(policy))}`,
    );
  }
  const adapters = new Map(opts.adapters.map((a) => [a.platform, a]));
  // Whether a conversation's platform runs in this process (its adapter is here).
  const reachable = (key: string) => adapters.has(platformOf(key) as Adapter['platform']);
  const adapterFor = (key: string): { adapter: Adapter; ref: ConversationRef } => {
    const platform = platformOf(key);
    const adapter = adapters.get(platform as Adapter['platform']);
    if (!adapter) throw new Error(`no adapter for conversation ${key} (is ${platform} enabled?)`);
    return { adapter, ref: adapter.decodeKey(key) };
  };
  // One conversation's output is delivered in call order and never overlaps (streamed `text` is
  // emitted without waiting; cards must not overtake the status they follow).
  const delivery = new OrderedDelivery();
  const outputs = (key: string): ConversationOutput => {
    if (key.startsWith(CLI_PREFIX)) return headless.output(key);
    const extra = opts.extraOutputs?.(key);
    if (extra) return extra;
    const { adapter, ref } = adapterFor(key);
    return {
      emit: (e) => delivery.run(key, () => adapter.render(ref, e)),
      streamsText: adapter.streamsText,
      postCard: (c) => delivery.run(key, () => adapter.postCard(ref, c)),
      updateCard: (h, c) => delivery.run(key, () => adapter.updateCard(ref, h, c)),
    };
  };

  const decisions = new ApprovalStore(repos.approvals);
  const bus = new SignalDecisionBus({ signals: repos.signals, read: async (id) => (await decisions.get(id))?.decision, log });
  const broker = new ApprovalBroker({
    approvals: repos.approvals,
    bus,
    // Several processes only on PostgreSQL: each watches every request's expiry (one wins it).
    ...(repos.engine === 'postgres' ? { sharedSignals: repos.signals } : {}),
    outputs,
    approversOf: (agent, platform) => (config.agents[agent]?.approvers as Record<string, string[] | undefined> | undefined)?.[platform] ?? [],
    requesterMayApprove: (agent) => config.agents[agent]?.requesterMayApprove,
    deliveryOf: (agent) => config.agents[agent]?.approvalDelivery ?? DELIVER_HERE,
    direct: directCards((p) => adapters.get(p as Adapter['platform'])),
    log,
    audit,
    ...(opts.telemetry ? { telemetry: opts.telemetry } : {}),
    exclusiveStore: opts.store.exclusive === true,
  });
  // A host not on an agent's list: a card in the run's conversation (agent/egress/approvals.ts).
  const egressApprovals = new EgressApprovals({ broker, grant: (agent, entry) => allowlists.add(agent, { kind: 'egress', entry }), log });
  const conversations = new ConversationStore({
    transcripts: opts.store.transcripts,
    soleWriter: opts.store.exclusive === true,
    checkpoint: (c) => opts.store.checkpoint(c),
    retention: (agent) => config.agents[agent]?.retention ?? DEFAULT_RETENTION,
    log,
  });

  const classifiers = new Map<string, CommandClassifier>();
  const classifierFor = (agent: AgentSettings): CommandClassifier => {
    const id = `${agent.name}\u0000${agent.classifierModel}`;
    let c = classifiers.get(id);
    if (!c) {
      c = createCommandClassifier({
        complete: classifierCompletionFrom(opts.model, agent.classifierModel),
        ...(opts.classifierTimeoutMs !== undefined ? { timeoutMs: opts.classifierTimeoutMs } : {}),
      });
      classifiers.set(id, c);
    }
    return c;
  };
  // Boxed MCP servers: each gets its own folder under <data folder>/mcp, and the box hides botFiles.
  const dataDir = dataDirOf(config, process.cwd());
  const mcp = await createMcp({
    agents: () => config.agents,
    kv: repos.cache,
    log,
    box: { botFiles, ...(dataDir !== undefined ? { stateRoot: join(dataDir, 'mcp') } : {}) },
  });
  const assistant = memoryAndReminders(config, repos);
  const registries = new Map<string, ToolRegistry>();
  const registryFor = (agent: AgentSettings): ToolRegistry => {
    const live = config.agents[agent.name];
    const timeout = live?.commandTimeoutMs;
    const sandbox = sandboxPolicy(live ?? agent);
    const id = `${agent.name}:${timeout}:${sandbox.mode}:${sandbox.network}:${sandbox.egress?.socket ?? ''}:${JSON.stringify(sandbox.limits ?? {})}:${(sandbox.readPaths ?? []).join('\u0000')}:${JSON.stringify(live?.commandTools ?? {})}:${JSON.stringify(live?.webSearch ?? {})}`;
    let r = registries.get(id);
    if (!r) {
      const media = { model: opts.model, companions: () => config.agents[agent.name]?.companions };
      r = builtinRegistry({
        ...(timeout !== undefined ? { commandTimeoutMs: timeout } : {}),
        sandbox,
        media,
        toolResults: conversations,
        stores: assistant.stores,
        network: () => config.agents[agent.name]?.network,
        ...(live?.commandTools ? { commandTools: live.commandTools } : {}),
        skills: () => config.agents[agent.name]?.skills,
        ...(live?.webSearch ? { webSearch: live.webSearch } : {}),
        secrets: () => settingsSecretValues({ anthropic: config.anthropic, platforms: config.platforms }),
      });
      for (const t of opts.extraTools ?? []) r.add(t);
      r = mcp.registry(r, agent.name);
      registries.set(id, r);
    }
    return r;
  };

  // Replicas (PostgreSQL): turns go through the store's shared queue (pg-boss); SQLite keeps the in-process one.
  let runnerRef: Runner | undefined;
  // A `gatehouse run` attached to this replica is answered through this process: its turns run here.
  const settled = (key: string) => runnerRef?.isWaitingOnHuman(key) ?? false;
  const isLocal = (key: string) => key.startsWith(CLI_PREFIX);
  const sharedQueue =
    config.store.kind === 'postgres' && hasSharedTurnQueue(opts.store) && opts.replica !== false
      ? await opts.store.turnQueue({
          owner: replicaId(),
          parse: parseTurn,
          settled,
          local: isLocal,
          capacity: config.runner.maxConcurrentRuns,
          log,
        })
      : undefined;
  const queue = sharedQueue ? new LocalFirstTurnQueue(sharedQueue, isLocal, { parse: parseTurn, settled, log }) : undefined;
  const runner = new Runner({
    model: opts.model,
    conversations,
    runs: opts.store.runs,
    spend: opts.store.spend,
    ...(queue ? { queue, leases: opts.store.leases } : {}),
    broker,
    exclusiveStore: opts.store.exclusive === true,
    // A start picks up its chats only: a `gatehouse run` (cli:) or an editor's `gatehouse acp` (acp:)
    // beside the service runs its own conversations, and may be running them right now.
    resumes: reachable,
    registry: registryFor,
    prepareTools: async (agent) => {
      await startEgress(agent.name).catch((e: unknown) => log('warn', `agent ${agent.name}: could not start its egress proxy: ${messageOf(e)}`));
      await mcp.prepare(agent.name);
    },
    egress: {
      open: (who) => egress.session(who.agentName, egressApprovals.forCommand(who), { conversation: who.conversationKey, runId: who.runId }),
    },
    agents: { get: (name) => config.agents[name] },
    allowlists,
    outputs,
    classify: async (agent, command) => {
      const verdict = await classifierFor(agent).classify(command);
      // classifierCompletionFrom's replies carry the model client's Usage.
      const usage = verdict.usage as Usage | undefined;
      if (verdict.source !== 'fail-closed') return { tier: verdict.tier, ...(usage ? { usage } : {}) };
      log('warn', `classifier failed closed for agent ${agent.name}: ${verdict.detail ?? ''}`);
      // The approver should know this is "could not tell", not "judged dangerous".
      return {
        tier: verdict.tier,
        note: 'the classifier could not rate it, so it counts as high-risk; see the log',
        ...(usage ? { usage } : {}),
      };
    },
    maxConcurrentRuns: config.runner.maxConcurrentRuns,
    maxRunsPerUser: config.runner.maxRunsPerUser,
    maxRunsPerPlace: config.runner.maxRunsPerPlace,
    reservedRuns: config.runner.reservedRuns,
    log,
    audit,
    ...(opts.telemetry ? { telemetry: opts.telemetry } : {}),
    ...(opts.runClock ? { clock: opts.runClock } : {}),
    systemExtra: assistant.systemExtra,
  });
  runnerRef = runner;
  const reminderScheduler = assistant.scheduler({
    runner,
    post: (key, text) => {
      const { adapter, ref } = adapterFor(key);
      return delivery.run(key, () => adapter.postText(ref, text));
    },
    reachable,
    log,
  });
  const headless: HeadlessRuns = new HeadlessRuns({ config, runner, broker });
  const operatorShell = createOperatorShell({ agent: (name) => config.agents[name], shellTool: (a) => registryFor(a).get('execute_command') });
  const router = new Router({
    config,
    runner,
    broker,
    events: repos.events,
    log,
    audit,
    operatorShell,
    ...(opts.telemetry ? { telemetry: opts.telemetry } : {}),
  });
  const held = heldConnections({ ...(opts.leadership ? { leadership: opts.leadership } : {}), adapters: [...adapters.values()], log });

  return {
    config,
    router,
    runner,
    broker,
    headless,
    mcp,
    connections: () => held.status(),
    async start() {
      for (const w of configWarnings(config, [...adapters.keys()])) log('warn', w);
      // Retention at start, then at most once a minute per agent as conversations are saved.
      await conversations
        .applyRetention(Object.keys(config.agents))
        .catch((e: unknown) => log('warn', `could not apply the conversation retention: ${messageOf(e)}`));
      const hold = await held.prepare();
      for (const a of adapters.values()) await a.start(router, { holdConnection: hold });
      held.follow();
      await broker.watchExpiry();
      const resumed = await runner.resumeAll();
      if (resumed > 0) log('info', `continuing ${resumed} run(s) that were waiting for a human`);
      await reminderScheduler.start();
    },
    async stop(stopOpts = {}) {
      await reminderScheduler.stop();
      await held.stop();
      for (const a of adapters.values()) await a.stop().catch((e: unknown) => log('warn', `stopping ${a.platform}: ${messageOf(e)}`));
      await runner.close(stopOpts.graceMs);
      await mcp.close().catch((e: unknown) => log('warn', `closing MCP servers: ${messageOf(e)}`));
      broker.close();
      await egress.close();
      bus.close();
      allowlists.close();
    },
  };
}
