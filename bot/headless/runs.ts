/**
 * Headless runs (`gatehouse run`): one message to an agent from a script, a CI step or a home-made
 * bridge, through the same runner, store, LRU and gate as the chat platforms. Used in-process by the
 * CLI when no service runs, and by the service's local attach endpoint (./attach.ts) when one does,
 * so the result is the same either way.
 *
 * Contract:
 * - Conversation keys live in their own namespace: `--conversation KEY` is `cli:<KEY>`, KEY matching
 *   CONVERSATION_KEY (letters, digits, `._@-`; no `:`), so no KEY can name a chat's conversation
 *   (`telegram:42` is refused as a usage error). Without a KEY the run gets a fresh `cli:~<uuid>` and its
 *   transcript is deleted afterwards (a clean slate, and one-shot runs never push chats out of the LRU).
 * - Unattended (interactive false): ask_user_question is not offered, and every call above the tier is
 *   declined with a reason naming `--approval-policy` / `--interactive-stdin`. Interactive: questions
 *   and approvals reach the caller as `user_input_required` / `approval_required` messages, answered
 *   through `respond`; the caller is this conversation's approver.
 * - `approvalPolicy` is the tier for this run (the denylist and pickers still apply: a picker always
 *   needs a person). `timeoutSeconds` replaces the agent's runTimeoutMs; time waiting on the caller does
 *   not count (the runner's deadline pauses).
 * - Every event of the run goes to `send`, in order, then `run` resolves with the result. A usage
 *   problem (unknown agent, bad key) throws HeadlessUsageError before anything runs.
 */
import { randomUUID } from 'node:crypto';
import type { ApprovalBroker } from '../../agent/approvals/index.js';
import type { Card, RunLimit, Usage } from '../../agent/events.js';
import type { ConversationOutput } from '../../agent/run/output.js';
import type { Runner } from '../../agent/run/runner.js';
import type { Tier } from '../../policies/tiers.js';
import { agentForConversation, type Config } from '../config/index.js';
import {
  CLI_PREFIX,
  CONVERSATION_KEY,
  HEADLESS_USER,
  HeadlessRequest,
  HeadlessUsageError,
  type Choice,
  type Declined,
  type HeadlessMessage,
  type HeadlessResponse,
  type HeadlessResult,
  type ServiceInfo,
} from './protocol.js';
import { messageOf } from '../../agent/log.js';

export * from './protocol.js';

interface LiveRun {
  key: string;
  send(m: HeadlessMessage): void;
  answer?: string;
  error?: string;
  limit?: RunLimit;
  usage?: Usage;
  subagents?: { count: number; usage: Usage };
  reason?: string;
  declined: Declined[];
  /** Calls of sub-agents (spawn_subagent) that asked: their denials say so, as their declines do. */
  subagentAsks?: Set<string>;
}

const emptyUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUSD: 0, costKnown: true };

export class HeadlessRuns {
  private readonly live = new Map<string, LiveRun>();
  /** Conversation key -> the run id executing there now (the runner runs one turn per key at a time). */
  private readonly current = new Map<string, string>();
  /** Open request id -> its conversation key, and the button choices offered. */
  private readonly open = new Map<string, { key: string; runId: string; choices: Array<Choice & { token?: string }> }>();

  /** Keys whose current run asked for no streaming (--no-stream). */
  private readonly batch = new Set<string>();

  constructor(private readonly deps: { config: Config; runner: Runner; broker: ApprovalBroker }) {}

  /** The output of every `cli:` conversation (bot/service/app.ts routes those keys here). */
  output(key: string): ConversationOutput {
    return {
      streamsText: !this.batch.has(key),
      // Sent to the client, which writes them only under --events reasoning (or all).
      streamsThinking: true,
      emit: async (e) => {
        if (e.type === 'run_started') {
          this.current.set(key, e.runId);
          // A run resumed after a restart has no caller any more: stop it rather than leave it waiting.
          if (!this.live.has(e.runId)) this.deps.runner.stop(key);
        }
        const run = this.live.get(e.runId);
        if (run) {
          if (e.type === 'answer') run.answer = e.text;
          else if (e.type === 'error') {
            run.error = e.message;
            if (e.limit) run.limit = e.limit;
          } else if (e.type === 'usage') {
            run.usage = e.usage;
            if (e.subagents) run.subagents = e.subagents;
          } else if (e.type === 'run_finished') run.reason = e.reason;
          else if (e.type === 'tool_declined') run.declined.push({ tool: e.tool, reason: e.reason });
          else if (e.type === 'approval_asked' && fromSubagent(e)) (run.subagentAsks ??= new Set()).add(e.callId);
          else if (e.type === 'approval_resolved' && (e.outcome === 'denied' || e.outcome === 'expired')) {
            const why = e.outcome === 'expired' ? 'nobody approved it before the approval expired' : `denied${e.by ? ` by ${e.by}` : ''}`;
            run.declined.push({ tool: e.tool, reason: run.subagentAsks?.has(e.callId) ? `sub-agent: ${why}` : why });
          }
          run.send(e);
        }
        if (e.type === 'run_finished' && this.current.get(key) === e.runId) this.current.delete(key);
      },
      postCard: async (card, meta) => {
        const handle = meta?.requestId ?? randomUUID();
        const runId = this.current.get(key);
        const run = runId ? this.live.get(runId) : undefined;
        if (!run || !runId || !meta) return handle;
        await this.present(run, runId, key, meta.requestId, card);
        return handle;
      },
      updateCard: async (handle, card) => {
        const o = this.open.get(handle);
        if (!o) return;
        this.open.delete(handle);
        this.live.get(o.runId)?.send({ type: 'request_closed', requestId: handle, outcome: card.outcome ?? 'closed' });
      },
    };
  }

  private async present(run: LiveRun, runId: string, key: string, requestId: string, card: Card): Promise<void> {
    const req = await this.deps.broker.get(requestId);
    const buttons = await this.deps.broker.buttonChoices(requestId);
    if (!req) return;
    if (req.kind === 'question') {
      const suggestions = req.suggestions ?? [];
      const choices = buttons.map((b) => {
        const s = suggestions[Number(b.choice.slice('answer:'.length))];
        return { value: s?.value ?? b.label, label: b.label, ...(s?.description ? { description: s.description } : {}), token: b.token };
      });
      this.open.set(requestId, { key, runId, choices });
      // The card body is the question, then one line per described suggestion, then the typing hint.
      const extra = suggestions.filter((s) => s.description).length + (req.allowCustom ? 1 : 0);
      const bodyLines = card.body.split('\n');
      run.send({
        type: 'user_input_required',
        requestId,
        question: bodyLines.slice(0, Math.max(1, bodyLines.length - extra)).join('\n'),
        suggestions: choices.map(({ token: _t, ...c }) => c),
        allowCustom: req.allowCustom === true,
      });
      return;
    }
    const choiceValue = (choice: string): string =>
      choice === 'once' || choice === 'all_approve' ? 'approve' : choice === 'all_deny' ? 'deny' : choice.startsWith('option:') ? choice.slice(7) : choice;
    const choices = buttons.map((b) => ({ value: choiceValue(b.choice), label: b.label, token: b.token }));
    this.open.set(requestId, { key, runId, choices });
    run.send({
      type: 'approval_required',
      requestId,
      title: card.title,
      body: card.body,
      ...(card.preview !== undefined ? { preview: card.preview } : {}),
      choices: choices.map(({ token: _t, ...c }) => c),
    });
  }

  /** The config file this service runs on, as loaded (reload updates the live config it reads). */
  serviceInfo(): ServiceInfo {
    const c = this.deps.config;
    return { type: 'service', configFile: c.configFile ?? null, configSha256: c.configSha256 ?? null };
  }

  /** Answers an open request of a headless run. Never throws for bad input: the result says why. */
  async respond(r: HeadlessResponse): Promise<{ accepted: boolean; notice?: string }> {
    const o = this.open.get(r.requestId);
    if (!o) return { accepted: false, notice: `no open request ${r.requestId}` };
    const isQuestion = r.type === 'user_input_response';
    let text: string | null | undefined = r.value;
    if (isQuestion && (text === undefined || text === null)) text = r.answer;
    if (r.type === 'approval_response' && r.approved !== undefined && (text === undefined || text === null)) text = r.approved ? 'approve' : 'deny';
    if (text === undefined || text === null || text.trim() === '') {
      return this.deps.broker.decideAs(r.requestId, o.key, { answer: null }, HEADLESS_USER);
    }
    const choice = o.choices.find((c) => c.value === text) ?? o.choices.find((c) => c.label === text);
    if (choice?.token) return this.deps.broker.decideAs(r.requestId, o.key, { token: choice.token }, HEADLESS_USER);
    if (isQuestion) return this.deps.broker.decideAs(r.requestId, o.key, { answer: text }, HEADLESS_USER);
    return { accepted: false, notice: `"${text}" is not one of: ${o.choices.map((c) => c.value).join(', ')}` };
  }

  /** Runs one message; resolves when the run has finished. `signal`: the caller went away (stops the run). */
  async run(input: HeadlessRequest, send: (m: HeadlessMessage) => void, signal?: AbortSignal): Promise<HeadlessResult> {
    const parsed = HeadlessRequest.safeParse(input);
    if (!parsed.success) throw new HeadlessUsageError(parsed.error.issues.map((i) => `${i.path.join('.') || 'request'}: ${i.message}`).join('; '));
    const req = parsed.data;
    if (req.conversation !== undefined && !CONVERSATION_KEY.test(req.conversation)) {
      throw new HeadlessUsageError(
        `--conversation must be 1-128 letters, digits, ".", "_", "@" or "-" (no ":"): it names a cli: conversation and cannot reach a chat's; got ${JSON.stringify(req.conversation)}`,
      );
    }
    if (req.message.trim() === '') throw new HeadlessUsageError('the message is empty: give it as an argument or on stdin');
    const { config } = this.deps;
    const key = `${CLI_PREFIX}${req.conversation ?? `~${randomUUID()}`}`;
    let agent;
    if (req.agent !== undefined) {
      agent = Object.hasOwn(config.agents, req.agent) ? config.agents[req.agent] : undefined;
      if (!agent) throw new HeadlessUsageError(`no agent named "${req.agent}" (configured: ${Object.keys(config.agents).join(', ')})`);
    } else {
      try {
        agent = agentForConversation(config, key);
      } catch (err) {
        throw new HeadlessUsageError(messageOf(err));
      }
    }
    const runId = randomUUID();
    const run: LiveRun = { key, send, declined: [] };
    this.live.set(runId, run);
    if (req.stream === false) this.batch.add(key);
    const onAbort = () => {
      if (this.current.get(key) === runId) this.deps.runner.stop(key);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const { finished } = await this.deps.runner.submit({
        agentName: agent.name,
        conversationKey: key,
        platform: 'cli',
        sender: { ...HEADLESS_USER },
        text: req.message,
        humanAvailable: req.interactive,
        runId,
        overrides: {
          ...(req.approvalPolicy ? { tier: req.approvalPolicy as Tier } : {}),
          approvers: { cli: req.interactive ? [HEADLESS_USER.id] : [] },
          ...(req.timeoutSeconds !== undefined ? { runTimeoutMs: Math.round(req.timeoutSeconds * 1000) } : {}),
          ...(req.interactive
            ? {}
            : { noApproverFix: 'run it again with --approval-policy <tier> to let that tier run without asking, or with --interactive-stdin to approve it' }),
        },
      });
      if (signal?.aborted) onAbort();
      await finished;
      if (req.conversation === undefined) await this.deps.runner.reset(key, agent.name);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.live.delete(runId);
      if (req.stream === false) this.batch.delete(key);
      for (const [id, o] of this.open) if (o.runId === runId) this.open.delete(id);
    }
    const usage = run.usage ?? emptyUsage;
    const ok = run.reason === 'completed' && run.answer !== undefined && run.error === undefined;
    const result: HeadlessResult = {
      ok,
      costUSD: usage.costUSD,
      costKnown: usage.costKnown,
      usage: {
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        cacheReadTokens: usage.cacheReadTokens,
        cacheWriteTokens: usage.cacheWriteTokens,
      },
      conversation: req.conversation ?? null,
      declined: run.declined,
    };
    if (run.subagents) {
      const s = run.subagents.usage;
      result.subagents = {
        count: run.subagents.count,
        costUSD: s.costUSD,
        usage: { inputTokens: s.inputTokens, outputTokens: s.outputTokens, cacheReadTokens: s.cacheReadTokens, cacheWriteTokens: s.cacheWriteTokens },
      };
    }
    if (run.answer !== undefined && ok) result.answer = run.answer;
    if (!ok) {
      result.error =
        run.error ??
        (run.reason === 'stopped'
          ? 'the run was stopped'
          : run.reason === undefined
            ? 'the run did not start (the service is stopping?)'
            : `the run ended: ${run.reason}`);
      if (run.limit) result.limit = run.limit;
    }
    return result;
  }
}

/** A sub-agent's call (agent/tools/builtin/subagent/host.ts prefixes them); the spawn's own summary starts so too. */
function fromSubagent(e: { tool: string; summary: string }): boolean {
  return e.summary.startsWith('sub-agent: ') && (e.tool !== 'spawn_subagent' || e.summary.startsWith('sub-agent: sub-agent: '));
}
