/**
 * The `gatehouse run` protocol, shared by the CLI (./command.ts), the attach endpoint (./attach.ts) and
 * the in-process runs (./runs.ts): the schemas of what callers send, and (./wire.ts) the rest. Kept free
 * of heavy imports; an attached run's client loads only ./wire.ts and the socket client, and this
 * module (zod) only when it reads answers from stdin.
 */
import { z } from 'zod';
import { TIERS } from '../../policies/tiers.js';

export * from './wire.js';

export const HeadlessRequest = z.object({
  agent: z.string().min(1).optional(),
  conversation: z.string().optional(),
  message: z.string(),
  approvalPolicy: z.enum(TIERS).optional(),
  timeoutSeconds: z.number().positive().optional(),
  interactive: z.boolean().default(false),
  /** false: the model reply comes whole (the batch path), no text deltas (`gatehouse run --no-stream`). */
  stream: z.boolean().optional(),
});
export type HeadlessRequest = z.input<typeof HeadlessRequest>;

/** An answer from the caller: a choice's value, or typed text (questions that allow it). */
export const HeadlessResponse = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('user_input_response'),
    requestId: z.string().min(1),
    value: z.string().nullable().optional(),
    answer: z.string().nullable().optional(),
  }),
  z.object({ type: z.literal('approval_response'), requestId: z.string().min(1), value: z.string().nullable().optional(), approved: z.boolean().optional() }),
]);
export type HeadlessResponse = z.infer<typeof HeadlessResponse>;
