/**
 * ACP sessions (`gatehouse acp`, ./command.ts): an editor's sessions as Gatehouse conversations, run
 * by the same runner, store and gate as the chat platforms.
 *
 * Contract:
 * - A session is the conversation `acp:<session id>`; one prompt is one turn of it, on the agent
 *   chosen for the process (`--agent`, else defaultAgent). The session's cwd is never
 *   the workspace: the agent's own workspace is (see the note written to stderr at session/new).
 * - Run events become `session/update` notifications, in order, before the prompt's response:
 *   `text` -> agent_message_chunk; `thinking` -> agent_thought_chunk; a call's first event -> tool_call, later ones -> tool_call_update
 *   (pending while it waits on approval, in_progress, completed / failed; declined calls are failed
 *   with the reason as content).
 * - A call above the tier becomes `session/request_permission` with allow once / allow always (the
 *   card's "Always", for its approval key) / reject. A reject, a cancelled outcome, an error or an
 *   option the card did not offer decides it as denied ("no answer given" when nobody chose); never
 *   a silent allow. Questions and pickers: with an editor that shows forms (`forms()`, from its
 *   `elicitation.form` capability) they are `elicitation/create` forms (./elicit.ts) and
 *   ask_user_question is offered; without, they are not offered (humanAvailable false) and any that
 *   comes is declined.
 * - `cancel(sessionId)` stops the running turn as /stop does; its prompt resolves `cancelled`. A
 *   prompt that is exactly `/reset` starts the conversation over, as in a chat. One prompt at a time
 *   per session (a second one meanwhile is refused with PromptRunning).
 * - `load(sessionId)` (session/load) takes the session's stored conversation back, on the same agent
 *   only, and replays it first (./replay.ts); a session the store does not hold is SessionNotLoadable.
 * - Tier overrides: `approvalPolicy` replaces the agent's tier for every turn (as `gatehouse run
 *   --approval-policy`); toolPolicy, commandRules and the denylist still apply.
 */
import { randomUUID } from 'node:crypto';
import type { AgentContext, SessionUpdate, StopReason, ToolKind, PermissionOption } from '@agentclientprotocol/sdk';
import type { ApprovalBroker } from '../../agent/approvals/index.js';
import type { AgentEvent, Card } from '../../agent/events.js';
import type { ConversationOutput } from '../../agent/run/output.js';
import type { Runner } from '../../agent/run/runner.js';
import type { Tier } from '../../policies/tiers.js';
import type { Log } from '../service/log.js';
import type { TranscriptRepo } from '../../agent/store/types.js';
import { replayUpdates } from './replay.js';
import { pickFromForm, questionForm } from './elicit.js';
import { messageOf } from '../../agent/log.js';

const ACP_PREFIX = 'acp:';
/** The editor's user: the approver of its own sessions. */
const ACP_USER = { id: 'acp', name: 'ACP client' } as const;

interface Live {
  runId: string;
  /** Calls already announced with tool_call (later events are updates). */
  announced: Set<string>;
  /** The call of the last approval_asked: the card that follows is its. */
  askingCall?: string;
  streamed: boolean;
  /** Aborted when the turn ends: open permission requests are withdrawn ($/cancel_request). */
  ended: AbortController;
  reason?: string;
  error?: string;
}

interface Session {
  id: string;
  key: string;
  live?: Live;
  /** Notifications of this session go out in order. */
  chain: Promise<void>;
}

export interface AcpDeps {
  runner: Runner;
  broker: ApprovalBroker;
  agentName: string;
  approvalPolicy?: Tier;
  client: () => AgentContext | undefined;
  log: Log;
  /** Where session/load finds a session's conversation. */
  transcripts: TranscriptRepo;
  /** The editor said it shows forms (elicitation.form): questions and pickers are asked as forms. */
  forms: () => boolean;
}

const KIND: Record<string, ToolKind> = {
  execute_command: 'execute',
  read_file: 'read',
  list_files: 'read',
  search_files: 'search',
  write_file: 'edit',
  edit_file: 'edit',
  fetch_url: 'fetch',
};

const kindOf = (tool: string): ToolKind => KIND[tool] ?? 'other';

/** session/load of a session this store does not hold, or one of another agent. */
export class SessionNotLoadable extends Error {
  constructor(
    message: string,
    /** The store holds no such session (else it is another agent's). */
    readonly missing: boolean,
  ) {
    super(message);
  }
}

export class PromptRunning extends Error {
  constructor(sessionId: string) {
    super(`session ${sessionId} already runs a prompt: cancel it or wait for its response`);
  }
}

export class AcpSessions {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly deps: AcpDeps) {}

  newSession(): string {
    const id = randomUUID();
    this.sessions.set(id, { id, key: `${ACP_PREFIX}${id}`, chain: Promise.resolve() });
    return id;
  }

  /**
   * session/load: the session's stored conversation becomes this process's session again, and its
   * messages are replayed to the client as session/update notifications before this resolves.
   */
  async load(id: string): Promise<void> {
    const key = `${ACP_PREFIX}${id}`;
    if (this.sessions.get(id)?.live) throw new PromptRunning(id);
    const stored = await this.deps.transcripts.load(key);
    if (!stored) throw new SessionNotLoadable(`no stored session ${id}`, true);
    if (stored.agent !== this.deps.agentName)
      throw new SessionNotLoadable(`session ${id} is agent ${stored.agent}'s: start gatehouse acp --agent ${stored.agent} to load it`, false);
    const s: Session = { id, key, chain: Promise.resolve() };
    this.sessions.set(id, s);
    const messages = [...stored.base, ...stored.rows.map((r) => r.message)];
    if (stored.baseSeq > 0)
      void this.update(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '[Earlier messages of this session were summarized.]\n' } });
    for (const update of replayUpdates(messages, kindOf)) void this.update(s, update);
    await s.chain;
  }

  has(id: string): boolean {
    return this.sessions.has(id);
  }

  private byKey(key: string): Session | undefined {
    return key.startsWith(ACP_PREFIX) ? this.sessions.get(key.slice(ACP_PREFIX.length)) : undefined;
  }

  /** Sends one session/update; in order per session, never throws (a closed client loses it). */
  private update(s: Session, update: SessionUpdate): Promise<void> {
    const client = this.deps.client();
    s.chain = s.chain.then(async () => {
      if (!client) return;
      await client
        .notify('session/update', { sessionId: s.id, update })
        .catch((e: unknown) => this.deps.log('warn', `acp: session/update failed: ${messageOf(e)}`));
    });
    return s.chain;
  }

  private toolEvent(
    s: Session,
    live: Live,
    callId: string,
    tool: string,
    fields: { status: 'pending' | 'in_progress' | 'completed' | 'failed'; title?: string; text?: string },
  ): Promise<void> {
    const content = fields.text !== undefined ? [{ type: 'content' as const, content: { type: 'text' as const, text: fields.text } }] : undefined;
    if (!live.announced.has(callId)) {
      live.announced.add(callId);
      return this.update(s, {
        sessionUpdate: 'tool_call',
        toolCallId: callId,
        title: fields.title ?? tool,
        kind: kindOf(tool),
        status: fields.status,
        ...(content ? { content } : {}),
      });
    }
    return this.update(s, {
      sessionUpdate: 'tool_call_update',
      toolCallId: callId,
      status: fields.status,
      ...(fields.title ? { title: fields.title } : {}),
      ...(content ? { content } : {}),
    });
  }

  /** The output of every `acp:` conversation of this process (bot/service/app.ts extraOutputs). */
  output(key: string): ConversationOutput | undefined {
    const s = this.byKey(key);
    if (!key.startsWith(ACP_PREFIX)) return undefined;
    return {
      streamsText: true,
      streamsThinking: true,
      emit: async (e) => {
        if (s) await this.onEvent(s, e);
        // A run resumed after a restart, or of a session this process does not know: no client waits on it.
        else if (e.type === 'run_started') this.deps.runner.stop(key);
      },
      postCard: async (card, meta) => {
        const handle = meta?.requestId ?? randomUUID();
        if (s && meta) void this.ask(s, meta.requestId, card);
        return handle;
      },
      updateCard: async () => undefined,
    };
  }

  private async onEvent(s: Session, e: AgentEvent): Promise<void> {
    const live = s.live;
    if (!live || e.runId !== live.runId) {
      if (e.type === 'run_started') this.deps.runner.stop(s.key);
      return;
    }
    switch (e.type) {
      case 'text':
        live.streamed = true;
        return this.update(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: e.delta } });
      case 'thinking':
        return this.update(s, { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: e.delta } });
      case 'answer':
        if (!live.streamed) return this.update(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: e.text } });
        return;
      case 'approval_asked':
        live.askingCall = e.callId;
        return this.toolEvent(s, live, e.callId, e.tool, { status: 'pending', title: e.summary });
      case 'approval_resolved':
        if (e.outcome === 'approved' || e.outcome === 'always') return;
        return this.toolEvent(s, live, e.callId, e.tool, { status: 'failed', text: `not run: ${e.outcome}${e.by ? ` by ${e.by}` : ''}` });
      case 'tool_started':
        return this.toolEvent(s, live, e.callId, e.tool, { status: 'in_progress', title: e.summary });
      case 'tool_finished':
        return this.toolEvent(s, live, e.callId, e.tool, { status: e.ok ? 'completed' : 'failed', text: e.summary });
      case 'tool_declined':
        return this.toolEvent(s, live, e.callId, e.tool, { status: 'failed', text: `declined: ${e.reason}` });
      case 'error':
        live.error = e.message;
        return this.update(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `\n[error] ${e.message}` } });
      case 'run_finished':
        live.reason = e.reason;
        return;
      default:
        return;
    }
  }

  /** A gated call's card, asked of the client; anything but an allow decides it as denied. */
  private async ask(s: Session, requestId: string, card: Card): Promise<void> {
    const { broker } = this.deps;
    const deny = () => broker.decideAs(requestId, s.key, { answer: null }, ACP_USER).catch(() => undefined);
    try {
      const req = await broker.get(requestId);
      // approve_all: its members are asked one by one.
      if (!req || req.kind === 'approve_all') return;
      if (req.kind !== 'approval') return void (await this.askByForm(s, requestId, card, req.kind === 'question' && req.allowCustom === true));
      const buttons = await broker.buttonChoices(requestId);
      const by = (choice: string) => buttons.find((b) => b.choice === choice);
      const offered: Array<{ option: PermissionOption; token: string }> = [];
      const once = by('once');
      const always = by('always');
      const reject = by('deny');
      if (once) offered.push({ option: { optionId: 'allow_once', name: once.label, kind: 'allow_once' }, token: once.token });
      if (always) offered.push({ option: { optionId: 'allow_always', name: always.label, kind: 'allow_always' }, token: always.token });
      if (reject) offered.push({ option: { optionId: 'reject', name: reject.label, kind: 'reject_once' }, token: reject.token });
      const client = this.deps.client();
      if (!client) return void (await deny());
      await s.chain;
      const callId = s.live?.askingCall ?? `approval-${requestId}`;
      const signal = s.live?.ended.signal;
      const r = await client.request(
        'session/request_permission',
        {
          sessionId: s.id,
          toolCall: {
            toolCallId: callId,
            title: card.title,
            status: 'pending',
            content: [{ type: 'content', content: { type: 'text', text: [card.body, card.preview].filter(Boolean).join('\n') } }],
          },
          options: offered.map((o) => o.option),
        },
        signal ? { cancellationSignal: signal, stopWaitingOnCancel: true } : {},
      );
      const chosen = r.outcome.outcome === 'selected' ? offered.find((o) => o.option.optionId === (r.outcome as { optionId: string }).optionId) : undefined;
      if (!chosen) return void (await deny());
      const done = await broker.decideAs(requestId, s.key, { token: chosen.token }, ACP_USER);
      if (!done.accepted) this.deps.log('info', `acp: permission answer not taken: ${done.notice ?? ''}`);
    } catch (e) {
      this.deps.log('warn', `acp: asking the client failed (${messageOf(e)}); the request is declined`);
      await deny();
    }
  }

  /** A question or picker as an elicitation form; no form support, or no usable answer: no answer. */
  private async askByForm(s: Session, requestId: string, card: Card, allowCustom: boolean): Promise<void> {
    const { broker } = this.deps;
    const client = this.deps.client();
    let pick: { token: string } | { answer: string | null } = { answer: null };
    if (client && this.deps.forms()) {
      const buttons = await broker.buttonChoices(requestId);
      await s.chain;
      const signal = s.live?.ended.signal;
      const callId = s.live?.askingCall;
      const response = await client.request(
        'elicitation/create',
        { mode: 'form', sessionId: s.id, ...(callId ? { toolCallId: callId } : {}), ...questionForm(card, buttons, allowCustom) },
        signal ? { cancellationSignal: signal, stopWaitingOnCancel: true } : {},
      );
      pick = pickFromForm(response, buttons, allowCustom);
    }
    const done = await broker.decideAs(requestId, s.key, pick, ACP_USER);
    if (!done.accepted) this.deps.log('info', `acp: form answer not taken: ${done.notice ?? ''}`);
  }

  /** One prompt: resolves with the stop reason once every update of the turn was sent. */
  async prompt(sessionId: string, text: string): Promise<StopReason> {
    const s = this.sessions.get(sessionId);
    if (!s) throw new Error(`no session ${sessionId}`);
    // One turn at a time per session: a second prompt would take the first one's events.
    if (s.live) throw new PromptRunning(sessionId);
    // As in a chat: /reset forgets the conversation (an error tells the user to send it).
    if (text.trim() === '/reset') {
      await this.deps.runner.reset(s.key, this.deps.agentName);
      await this.update(s, {
        sessionUpdate: 'agent_message_chunk',
        content: { type: 'text', text: 'Started a new conversation: I have forgotten what was said here before.' },
      });
      return 'end_turn';
    }
    const runId = randomUUID();
    const live: Live = { runId, announced: new Set(), streamed: false, ended: new AbortController() };
    s.live = live;
    const { finished } = await this.deps.runner.submit({
      agentName: this.deps.agentName,
      conversationKey: s.key,
      platform: 'acp',
      sender: { ...ACP_USER },
      text,
      humanAvailable: this.deps.forms(),
      runId,
      overrides: {
        ...(this.deps.approvalPolicy ? { tier: this.deps.approvalPolicy } : {}),
        approvers: { acp: [ACP_USER.id] },
      },
    });
    try {
      await finished;
      await s.chain;
    } finally {
      live.ended.abort();
      if (s.live === live) s.live = undefined;
    }
    if (live.reason === 'stopped') return 'cancelled';
    if (live.reason === 'max_iterations') return 'max_turn_requests';
    return 'end_turn';
  }

  cancel(sessionId: string): void {
    const s = this.sessions.get(sessionId);
    if (s) this.deps.runner.stop(s.key);
  }
}
