/**
 * The approval requests in the store, over `ApprovalRepo` (agent/store/types.ts).
 *
 * Contract:
 * - A request is created with its button tokens in one call (one transaction), before its card is
 *   posted, so a click can only come after its token is findable.
 * - The stored request JSON is the `StoredRequest` shape below (the pre-repository store's `r:<id>`
 *   value, with `suggestions`, minus `decision`): the SQLite migration of old stores relies on it.
 *   The decision lives in the repository's own column, written once by `decideOnce`, a single
 *   atomic statement on every engine: of any number of callers, in any number of processes sharing
 *   the store, exactly one records a decision.
 * - `setHandles` rewrites only the request (card handles), never the decision; it keeps stored fields
 *   this version does not know.
 * - Kept until a day past expiry, so a late click gets a clear "already decided" or "expired".
 * - What comes back is validated (a store left by another version is outside data): an unreadable
 *   request reads as absent, an unreadable decision as none.
 */
import { z } from 'zod';
import type { Card } from '../events.js';
import type { ApprovalRepo, ApprovalToken } from '../store/types.js';
import type { QuestionSuggestion } from '../tools/types.js';
import { Decision } from './wording.js';

const Suggestion = z.object({ value: z.string(), label: z.string(), description: z.string().optional() });

const Request = z.object({
  id: z.string(),
  kind: z.enum(['approval', 'picker', 'question', 'approve_all']),
  conversationKey: z.string(),
  platform: z.string(),
  agentName: z.string(),
  runId: z.string(),
  card: z.custom<Card>((v) => typeof v === 'object' && v !== null),
  cardHandle: z.string().optional(),
  createdAt: z.number(),
  expiresAt: z.number(),
  /** question: who started the run (may answer besides approvers). */
  starterId: z.string().optional(),
  allowCustom: z.boolean().optional(),
  /** approve_all: the approval requests it decides. */
  members: z.array(z.string()).optional(),
  /** Handles of earlier copies of the card (shown again after a restart); decided with it. */
  earlierHandles: z.array(z.string()).optional(),
  /** question: what each suggestion button answers (kept here, never on the button). */
  suggestions: z.array(Suggestion).optional(),
  /** approvalDelivery (./delivery.ts): what the conversation shows when not the card itself (a status line, a note). */
  hereCard: z.custom<Card>((v) => typeof v === 'object' && v !== null).optional(),
  /** The card as sent to approvers' direct messages, and each copy (conversation key, user, handle). */
  directCard: z.custom<Card>((v) => typeof v === 'object' && v !== null).optional(),
  directs: z.array(z.object({ key: z.string(), platform: z.string(), userId: z.string(), handle: z.string().optional() })).optional(),
});
/** The request as stored (without its decision). */
export type StoredRequest = z.infer<typeof Request>;
/** A request with its decision, once there is one. */
export type LoadedRequest = StoredRequest & { decision?: Decision; suggestions?: QuestionSuggestion[] };

/** Decided requests stay a day, so late clicks get a clear notice. */
const KEEP_AFTER_EXPIRY_MS = 24 * 3600_000;

function keepUntilOf(req: Pick<StoredRequest, 'expiresAt'>, now: number): number {
  return Math.max(now + 60_000, req.expiresAt + KEEP_AFTER_EXPIRY_MS);
}

export class ApprovalStore {
  constructor(
    private readonly repo: ApprovalRepo,
    private readonly now: () => number = Date.now,
  ) {}

  /** The request and its tokens (token -> choice), in one call. */
  async create(request: StoredRequest, tokens: ApprovalToken[]): Promise<void> {
    await this.repo.create({
      id: request.id,
      conversation: request.conversationKey,
      request: withoutUndefined(request),
      tokens,
      createdAt: request.createdAt,
      keepUntil: keepUntilOf(request, this.now()),
    });
  }

  async get(id: string): Promise<LoadedRequest | undefined> {
    const row = await this.repo.get(id, this.now());
    if (!row) return undefined;
    const req = Request.safeParse(row.request);
    if (!req.success) return undefined;
    const decision = row.decision === undefined || row.decision === null ? undefined : Decision.safeParse(row.decision);
    return decision?.success ? { ...req.data, decision: decision.data } : req.data;
  }

  /** What a button token stands for; undefined when unknown or no longer kept. */
  byToken(token: string): Promise<{ requestId: string; choice: string } | undefined> {
    return this.repo.byToken(token, this.now());
  }

  /** Undecided request ids of a conversation, oldest first. */
  pending(conversationKey: string): Promise<string[]> {
    return this.repo.pending(conversationKey, this.now());
  }

  /** Every undecided request, oldest first. */
  allPending(): Promise<Array<{ id: string; conversation: string }>> {
    return this.repo.allPending(this.now());
  }

  /** Writes the request as given (its creator's copy, with a card handle now); not the decision. */
  async replace(request: StoredRequest): Promise<void> {
    await this.repo.update(request.id, withoutUndefined(request), keepUntilOf(request, this.now()));
  }

  /**
   * Rewrites the request's card handles with `fn`; the decision is not touched. Unknown fields of
   * the stored request are kept as they are.
   */
  async setHandles(
    id: string,
    fn: (
      handles: Pick<StoredRequest, 'cardHandle' | 'earlierHandles' | 'directs'>,
    ) => Partial<Pick<StoredRequest, 'cardHandle' | 'earlierHandles' | 'directs'>>,
  ): Promise<void> {
    const row = await this.repo.get(id, this.now());
    if (!row) return;
    const parsed = Request.loose().safeParse(row.request);
    if (!parsed.success) return;
    const next = { ...parsed.data, ...fn({ cardHandle: parsed.data.cardHandle, earlierHandles: parsed.data.earlierHandles, directs: parsed.data.directs }) };
    await this.repo.update(id, withoutUndefined(next), keepUntilOf(next, this.now()));
  }

  /** Records the decision unless there is one; true for exactly one caller. */
  decideOnce(req: Pick<StoredRequest, 'id' | 'expiresAt'>, decision: Decision): Promise<boolean> {
    const now = this.now();
    return this.repo.decideOnce(req.id, withoutUndefined(decision), now, keepUntilOf(req, now));
  }
}

/** JSON has no undefined: drop such keys so what is stored is what is read back. */
function withoutUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
