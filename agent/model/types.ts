/**
 * The model seam: what the runner needs from a model. agent/model/anthropic.ts implements it on
 * @anthropic-ai/sdk; tests use the real implementation against test/fakes/anthropic.ts.
 *
 * Contract:
 * - `complete` resolves with the whole assistant message (content blocks in order, tool_use inputs
 *   parsed). With `onText`, text deltas reach it as they stream; without, the implementation may
 *   ask for the whole reply at once (cheaper when nobody watches the text grow). `onThinking` is
 *   the same for the text of thinking blocks (asked for with `thinking`).
 * - Retryable failures (429, 5xx, overloaded_error, connection resets) are retried inside, with
 *   backoff that honours retry-after. What finally fails is a ModelError with a short,
 *   secret-free `userMessage` fit to show in a chat.
 * - Aborting `signal` rejects with ModelError code 'aborted'.
 */
import type { ContentBlock, Message } from '../context/messages.js';
import type { Usage } from '../events.js';

export interface ModelToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  /**
   * A tool the Messages API runs itself (e.g. `{type: 'web_search_20250305', name: 'web_search'}`):
   * sent instead of the custom definition; its calls come back as server_tool_use blocks.
   */
  server?: { type: string; name: string } & Record<string, unknown>;
}

export interface ModelRequest {
  model: string;
  system: string;
  messages: Message[];
  tools: ModelToolSpec[];
  maxTokens: number;
  signal?: AbortSignal;
  /** Per-request timeout (ms); the classifier uses a short one. */
  timeoutMs?: number;
  onText?: (delta: string) => void;
  /**
   * Extended thinking with this many tokens of budget (the agent's `thinking`). The reply's
   * thinking blocks come back in `content`; with `onThinking` their text streams there as well.
   */
  thinking?: { budgetTokens: number };
  onThinking?: (delta: string) => void;
}

export interface ModelResponse {
  content: ContentBlock[];
  stopReason: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal' | 'pause_turn' | string;
  usage: Usage;
}

export interface ModelClient {
  complete(req: ModelRequest): Promise<ModelResponse>;
}

export type ModelErrorCode = 'rate_limited' | 'overloaded' | 'server' | 'auth' | 'bad_request' | 'timeout' | 'network' | 'aborted';

export class ModelError extends Error {
  override name = 'ModelError';
  constructor(
    readonly code: ModelErrorCode,
    /** Safe to show a chat user: no keys, no URLs with secrets, says what happens next. */
    readonly userMessage: string,
    detail: string,
  ) {
    super(detail);
  }
}
