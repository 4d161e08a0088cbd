/**
 * The tool seam. A tool is a zod schema plus functions, built by a factory with its dependencies
 * injected (no globals), so tests build tools against a temp workspace.
 *
 * Lifecycle of one call (agent/tools/executor.ts; its steps in gate-step.ts and run-call.ts):
 *   lookup -> input.safeParse -> propose (optional; prepares, mutates NOTHING) -> gate -> execute.
 * A tool never throws at the model: the executor turns a throw, a timeout or an abort into an
 * error tool_result. Tools should still throw `ToolError` with a message that says what to do.
 */
import type { ToolTelemetry } from '../telemetry/types.js';
import type { z } from 'zod';
import type { ToolTier, Tier } from '../../policies/tiers.js';
import type { ImageBlock, Message, TextBlock } from '../context/messages.js';
import type { Usage } from '../events.js';
import type { CompactResult, ContextInfo } from '../context/keeper.js';

export const DEFAULT_TOOL_TIMEOUT_MS = 3 * 60_000;

export interface QuestionSuggestion {
  value: string;
  label: string;
  description?: string;
}

export interface QuestionRequest {
  question: string;
  suggestions: QuestionSuggestion[];
  allowCustom: boolean;
}

/** `answer` null: nobody answered in time. */
export interface QuestionAnswer {
  answer: string | null;
  by?: string;
}

export interface ToolContext {
  /** Absolute, symlink-resolved workspace root every path is confined to. */
  workspace: string;
  /** Aborted on timeout or /stop: stop work, kill children. */
  signal: AbortSignal;
  conversationKey: string;
  agentName: string;
  /**
   * Who sent the turn this run answers (the run's starter): memory records it as a note's author.
   * Absent outside runs (operator shell, tests).
   */
  sender?: { platform: string; id: string; name?: string };
  /** Names the agent may pass through to child processes despite the secret filter. */
  envAllowlist: readonly string[];
  /** Present only where a human can answer (the tool is not offered otherwise). */
  askUser?: (q: QuestionRequest) => Promise<QuestionAnswer>;
  /** Per-conversation scratch state that lives with the transcript (e.g. todos). */
  state: ConversationState;
  /** The conversation's transcript as it stands (read-only; analyze_media finds attachments in it). */
  transcript?: () => readonly Message[];
  /** Counts a model call the tool made itself (analyze_media's companion) in the run's usage and cost. */
  addUsage?: (u: Usage) => void;
  /**
   * The run's context keeper over this transcript (context_info, summarize_context). `compact` changes
   * the transcript in place, as the keeper does when the window fills; the run's checkpoint saves it.
   */
  context?: { info(): ContextInfo; compact(focus?: string): Promise<CompactResult> };
  /** This call's metrics and trace: execute_command reports its sandbox here (agent/telemetry). */
  telemetry?: Pick<ToolTelemetry, 'sandbox'>;
  /** Starts sub-agents under this run's gate (spawn_subagent); absent outside runs. */
  subagents?: SubagentRunner;
  /**
   * A proxy of its own for one command of this call (agent/egress/hub.ts `session`): it knows this run,
   * so a host not on sandboxNetwork.allow becomes an approval card here. Undefined when the agent has
   * no egress proxy; absent outside runs (the agent's shared proxy then only declines).
   */
  egress?: (command: string) => Promise<CommandEgress | undefined>;
}

/** One command's egress proxy: its socket (bound into the box), and its end (notes for the tool result). */
export interface CommandEgress {
  socket: string;
  close(): Promise<string[]>;
}

/** What spawn_subagent asks of its run (agent/tools/builtin/subagent/host.ts). */
export interface SubagentRunner {
  /** The depth of the model calling the tool: 0 for the run's own, 1 inside a sub-agent. */
  readonly depth: number;
  /** The toolset and limits checked without starting anything (the propose half). */
  check(requested: readonly string[] | undefined): { ok: true; tools: string[] } | { ok: false; reason: string };
  /** Runs the task to its final answer, which is the tool's result. */
  run(task: string, requested: readonly string[] | undefined, signal: AbortSignal): Promise<ToolResult>;
}

/** Small per-conversation state (JSON), saved with the transcript. */
export interface ConversationState {
  get<T>(name: string): T | undefined;
  set(name: string, value: unknown): void;
}

export interface ProposalOption {
  id: string;
  label: string;
}

/** What the propose half prepared: shown on the approval card and handed to execute. */
export interface Proposal {
  /** One line: "write_file src/a.ts (+12 -3)". */
  summary: string;
  /** A unified diff or a command, shown preformatted. */
  preview?: string;
  /** A picker: the approver chooses one; such a request is never auto-approved. */
  options?: ProposalOption[];
  /** For shell commands: the command the gate must judge. */
  command?: string;
  /**
   * The tier of THIS call when it depends on the input (http_request: GET is read-only, POST
   * high-risk); the gate judges it instead of the tool's declared tier. Only a tool's own propose
   * sets it, never the model.
   */
  tier?: Tier;
  /** Anything execute needs from propose (JSON-serializable: it is persisted while waiting). */
  data?: unknown;
}

type ToolResultContent = string | Array<TextBlock | ImageBlock>;

export interface ToolResult {
  content: ToolResultContent;
  isError?: boolean;
}

export interface Tool<I = unknown> {
  name: string;
  /** What the model reads to decide when to call it. */
  description: string;
  input: z.ZodType<I>;
  /**
   * The JSON Schema the model sees, when it does not come from `input` (an MCP server's own schema,
   * passed as given; `input` then only checks the shape loosely and forwards the arguments untouched).
   */
  jsonSchema?: Record<string, unknown>;
  tier: ToolTier;
  /** Default DEFAULT_TOOL_TIMEOUT_MS; ignored when longRunning. */
  timeoutMs?: number;
  /** Waits on a human (ask_user_question): no timeout, waiting does not count against the run. */
  longRunning?: boolean;
  /** Offered to the model only where a human can answer. */
  needsHuman?: boolean;
  /**
   * Changes the workspace (agent/tools/workspace-quota.ts): true writes (refused while over the
   * limit), 'frees' only removes. The built-in file tools and execute_command are known by name.
   */
  changesWorkspace?: boolean | 'frees';
  /**
   * Run by the Messages API, not here (server-side web search): this definition is sent instead of
   * the schema, the model's calls and their results come back inside its reply, and `execute` is
   * only reached by a malformed reply. Offered, tiered and policed like any tool.
   */
  serverTool?: { type: string; name: string } & Record<string, unknown>;
  /** Prepares without mutating; required for gated tools so the card can show what will happen. */
  propose?(input: I, ctx: ToolContext): Promise<Proposal>;
  execute(input: I, ctx: ToolContext, prepared: Prepared): Promise<ToolResult>;
}

/** What execute receives besides the input: the proposal (if any) and the approver's choice. */
export interface Prepared {
  proposal?: Proposal;
  /** The picker option an approver chose. Never settable by the model (stripped from its input). */
  selectedOptionId?: string;
}

/** A failure with a message meant for the model (and a human reading the transcript). */
export class ToolError extends Error {
  override name = 'ToolError';
}

export type AnyTool = Tool<unknown>;
