/**
 * Operator commands that look at (or poke) a running or stopped Gatehouse from a shell:
 *   gatehouse reload          the running service re-reads gatehouse.yaml (SIGHUP via its pid file)
 *   gatehouse approvals       pending approvals and questions, with who can decide each
 *   gatehouse conversations   recent conversations: key, agent, last activity, messages, spend;
 *                             then each listed agent's spend today and this month (UTC)
 *
 * `approvals` reads the approvals repository (`allPending`, then each request), never creates a store,
 * and says which store it read (on stderr with --json); the service may be running meanwhile.
 * `conversations` reads the transcripts repository's listing (no transcript is loaded), never creates
 * a store (run from the wrong folder it says so, naming GATEHOUSE_STORE), and says which store it read
 * (on stderr with --json).
 * `--json` prints one JSON array. Contract: exit 0 with the listing (an empty one says so), 1 when the
 * config or the store cannot be read, with the reason.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { builtinToolNames } from '../../agent/tools/catalog.js';
import type { CliIO } from './io.js';
import { ConfigError, formatConfigError, loadConfig, type Config } from '../config/index.js';
import { dataDirOf, PID_FILE, RELOAD_STATUS_FILE, type ReloadStatus } from '../service/reload.js';
import { z } from 'zod';
import type { SpendRepo, Store } from '../../agent/store/types.js';
import { formatAmount, MICRO, spendKeys } from '../../agent/budget/limits.js';
import { openStore } from '../service/storage.js';
import { messageOf } from '../../agent/log.js';

/** `env` (default: a copy of the environment) receives the .env file's values too. */
export function loadForCommand(io: CliIO, env: Record<string, string | undefined> = { ...io.env }): Config | number {
  try {
    // These commands call no model: a key is not needed to read the store.
    env.ANTHROPIC_API_KEY ??= 'not-needed-for-this-command';
    return loadConfig({ env, cwd: io.cwd, knownTools: builtinToolNames() });
  } catch (err) {
    io.stderr.write((err instanceof ConfigError ? formatConfigError(err) : String(err)) + '\n');
    return 1;
  }
}

/** The store's repositories, opened only if the store exists; closed after `fn`. */
async function withRepos<T>(io: CliIO, config: Config, fn: (s: Store) => Promise<T>): Promise<T | number> {
  let store: Store;
  try {
    store = await openStore(config.store, { mustExist: true, log: (_level, m) => io.stderr.write(m + '\n') });
  } catch (err) {
    io.stderr.write(`Could not open the store: ${messageOf(err)}\n`);
    return 1;
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

const time = (ms: number): string => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

interface PendingRow {
  id: string;
  kind: string;
  conversation: string;
  agent: string;
  title: string;
  createdAt: string;
  expiresAt: string;
  canDecide: string[];
}

/** Unknown arguments are an error (exit 2), not silently ignored. */
function badArgs(args: string[], allowed: string[], usage: string, io: CliIO): boolean {
  const bad = args.find((a, i) => !allowed.includes(a) && !(args[i - 1] === '--limit' && allowed.includes('--limit')));
  if (bad === undefined) return false;
  io.stderr.write(`Unknown argument ${JSON.stringify(bad)}.\nUsage: ${usage}\n`);
  return true;
}

const StoredRequestView = z
  .object({
    kind: z.string(),
    conversationKey: z.string(),
    platform: z.string(),
    agentName: z.string(),
    card: z.object({ title: z.string() }).loose(),
    createdAt: z.number(),
    expiresAt: z.number(),
    starterId: z.string().optional(),
  })
  .loose();

export async function approvalsCommand(args: string[], io: CliIO): Promise<number> {
  if (badArgs(args, ['--json'], 'gatehouse approvals [--json]', io)) return 2;
  const json = args.includes('--json');
  const config = loadForCommand(io);
  if (typeof config === 'number') return config;
  const result = await withRepos(io, config, async (s) => {
    const now = Date.now();
    const rows: PendingRow[] = [];
    let unreadable = 0;
    for (const { id } of await s.approvals.allPending(now)) {
      const stored = await s.approvals.get(id, now);
      if (!stored || stored.decision !== undefined) continue;
      const parsed = StoredRequestView.safeParse(stored.request);
      if (!parsed.success) {
        unreadable++;
        continue;
      }
      const r = parsed.data;
      if (r.expiresAt <= now) continue;
      const bound = (config.agents[r.agentName]?.approvers as Record<string, string[] | undefined> | undefined)?.[r.platform] ?? [];
      const canDecide = bound.map((who) => `${r.platform} ${who}`);
      if (r.kind === 'question' && r.starterId !== undefined) canDecide.unshift(`${r.platform} ${r.starterId} (who asked)`);
      rows.push({
        id,
        kind: r.kind,
        conversation: r.conversationKey,
        agent: r.agentName,
        title: r.card.title,
        createdAt: time(r.createdAt),
        expiresAt: time(r.expiresAt),
        canDecide,
      });
    }
    // Which store was read: on stdout for people, on stderr beside --json (stdout stays one array).
    io[json ? 'stderr' : 'stdout'].write(`${json ? 'store' : 'Store'}: ${s.description}\n`);
    if (unreadable > 0) io.stderr.write(`${unreadable} pending request(s) could not be read (written by another version?); they are left out.\n`);
    if (json) {
      io.stdout.write(JSON.stringify(rows) + '\n');
      return 0;
    }
    if (rows.length === 0) {
      io.stdout.write('No pending approvals or questions.\n');
      return 0;
    }
    for (const r of rows) {
      io.stdout.write(
        [
          `${r.kind} ${r.id}: ${r.title}`,
          `  conversation: ${r.conversation} (agent ${r.agent})`,
          `  asked:        ${r.createdAt}, expires ${r.expiresAt}`,
          `  can decide:   ${r.canDecide.length > 0 ? r.canDecide.join(', ') : `nobody (no approver bound: add one to agents.${r.agent}.approvers)`}`,
        ].join('\n') + '\n',
      );
    }
    return 0;
  });
  return result;
}

interface Spent {
  /** null: nothing priced was counted (an unpriced model's calls count tokens only). */
  usd: number | null;
  tokens: number;
  /** False: nothing is counted for it (an agent without a budget is not counted). */
  counted: boolean;
}

interface ConversationRow {
  key: string;
  agent: string;
  lastActivity: string;
  messages: number;
  spent: Spent;
}

interface AgentSpendRow {
  agent: string;
  today: Spent;
  thisMonth: Spent;
}

/** Conversation and agent totals as counted by the budget gate (agent/budget/limits.ts spendKeys). */
async function spendOf(spend: SpendRepo, rows: Array<{ key: string; agent: string }>, now: number) {
  const keys = rows.map((r) => spendKeys(r.agent, r.key, now));
  const all = keys.flatMap((k) => [k.conversation, k.agentDay, k.agentMonth]).flatMap((k) => [k.usd, k.tokens]);
  const t = await spend.totals([...new Set(all)]);
  // Used plus held by calls in flight: what the gate compares with the limit.
  const read = (k: { usd: string; tokens: string }): Spent => {
    const u = t.get(k.usd);
    const n = t.get(k.tokens);
    return { usd: u ? (u.used + u.reserved) / MICRO : null, tokens: n ? n.used + n.reserved : 0, counted: u !== undefined || n !== undefined };
  };
  const agents = new Map<string, AgentSpendRow>();
  rows.forEach((r, i) => agents.set(r.agent, { agent: r.agent, today: read(keys[i]!.agentDay), thisMonth: read(keys[i]!.agentMonth) }));
  return { conversations: keys.map((k) => read(k.conversation)), agents: [...agents.values()].filter((g) => g.thisMonth.counted) };
}

const showSpent = (s: Spent) =>
  s.counted ? `${s.usd === null ? '-' : formatAmount('usd', Math.round(s.usd * MICRO))}  ${formatAmount('tokens', s.tokens)}` : 'not counted (no budget)';

export async function conversationsCommand(args: string[], io: CliIO): Promise<number> {
  if (badArgs(args, ['--json', '--limit'], 'gatehouse conversations [--limit N] [--json]', io)) return 2;
  const json = args.includes('--json');
  const limitAt = args.indexOf('--limit');
  const limit = limitAt >= 0 ? Number(args[limitAt + 1]) : 20;
  if (!Number.isInteger(limit) || limit < 1) {
    io.stderr.write('Usage: gatehouse conversations [--limit N] [--json]   (N: a whole number from 1)\n');
    return 2;
  }
  const config = loadForCommand(io);
  if (typeof config === 'number') return config;
  return withRepos(io, config, async (s) => {
    // One more than shown: whether there are older ones, without counting them all.
    const listed = await s.transcripts.listRecent({ limit: limit + 1 });
    const base = listed.slice(0, limit).map((c) => ({ key: c.conversation, agent: c.agent, lastActivity: time(c.updatedAt), messages: c.lastSeq }));
    const spent = await spendOf(s.spend, base, Date.now());
    const shown: ConversationRow[] = base.map((r, i) => ({ ...r, spent: spent.conversations[i]! }));
    if (json) {
      io.stderr.write(`store: ${s.description}\n`);
      io.stdout.write(JSON.stringify(shown) + '\n');
      return 0;
    }
    io.stdout.write(`Store: ${s.description}\n`);
    if (shown.length === 0) {
      io.stdout.write('No conversations yet.\n');
      return 0;
    }
    const w = Math.max(...shown.map((r) => r.key.length), 'conversation'.length);
    const a = Math.max(...shown.map((r) => r.agent.length), 'agent'.length);
    io.stdout.write(`${'conversation'.padEnd(w)}  ${'agent'.padEnd(a)}  last activity         messages  spent\n`);
    for (const r of shown) {
      io.stdout.write(`${r.key.padEnd(w)}  ${r.agent.padEnd(a)}  ${r.lastActivity}  ${String(r.messages).padEnd(8)}  ${showSpent(r.spent)}\n`);
    }
    if (listed.length > shown.length) io.stdout.write('(older ones not shown; --limit N shows more)\n');
    for (const g of spent.agents) io.stdout.write(`agent ${g.agent}: today ${showSpent(g.today)}; this month ${showSpent(g.thisMonth)}\n`);
    return 0;
  });
}

/**
 * Asks the running service to re-read its config: SIGHUP to the pid in its pid file, then waits for
 * the service's reload status and prints it. Exit 0 when applied, 1 when rejected or nobody answered.
 */
export async function reloadCommand(args: string[], io: CliIO, waitMs = 10_000): Promise<number> {
  if (badArgs(args, [], 'gatehouse reload', io)) return 2;
  // The same checks the service makes: a file it would reject is reported here, and not sent.
  const config = loadForCommand(io);
  if (typeof config === 'number') {
    io.stderr.write('(Not sent: the running service keeps its current configuration until the file is fixed.)\n');
    return 1;
  }
  const dir = dataDirOf(config, io.cwd);
  if (!dir) {
    io.stderr.write('The store is in memory (GATEHOUSE_STORE=sqlite://:memory:): there is no pid file to find the service by; send it SIGHUP yourself.\n');
    return 1;
  }
  const pidFile = join(dir, PID_FILE);
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error('not a pid');
    process.kill(pid, 0);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    io.stderr.write(
      code === 'EPERM'
        ? `Not allowed to signal the service (pid file ${pidFile}): run this as the service's user, or \`systemctl reload gatehouse\`.\n`
        : `No running Gatehouse found (${pidFile} ${code === 'ENOENT' ? 'does not exist' : 'names no live process'}). Is it running with this GATEHOUSE_STORE and working directory?\n`,
    );
    return 1;
  }
  const statusFile = join(dir, RELOAD_STATUS_FILE);
  const sentAt = Date.now();
  process.kill(pid, 'SIGHUP');
  const end = sentAt + waitMs;
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    let status: ReloadStatus;
    try {
      if (statSync(statusFile).mtimeMs < sentAt - 1000) continue;
      status = JSON.parse(readFileSync(statusFile, 'utf8')) as ReloadStatus;
    } catch {
      continue;
    }
    if (status.pid !== pid || status.at < sentAt) continue;
    (status.ok ? io.stdout : io.stderr).write(status.message + '\n');
    return status.ok ? 0 : 1;
  }
  io.stderr.write(`Sent SIGHUP to pid ${pid}, but it did not report back within ${waitMs / 1000} s; check its log.\n`);
  return 1;
}
