/**
 * Companion models: other models an agent may hand a piece of media to (analyze_media), per kind of
 * work. Config per agent: `companions: { "analyze:image": [ids or {id, label}], "analyze:file": [...] }`.
 *
 * Contract:
 * - An entry is a model id (any id the model service accepts) or `{ id, label }`; the label is what
 *   an approver sees on the picker button (default: the id). Ids are unique per kind.
 * - The schema reports problems at the key path (`agents.ops.companions["analyze:image"][1].id`);
 *   unknown kinds are errors that list the known ones (strict object).
 */
import { z } from 'zod';

const COMPANION_KINDS = ['analyze:image', 'analyze:file'] as const;
export type CompanionKind = (typeof COMPANION_KINDS)[number];

export interface Companion {
  id: string;
  label: string;
}

export type Companions = Partial<Record<CompanionKind, Companion[]>>;

const modelId = z.string().superRefine((s, ctx) => {
  if (s.trim() === '') ctx.addIssue({ code: 'custom', message: 'must not be empty (a model id such as claude-haiku-5-5)' });
  else if (/<[^<>]*>/.test(s)) ctx.addIssue({ code: 'custom', message: `"${s}" is a placeholder; replace it with a model id` });
});

const entry = z.union([modelId, z.strictObject({ id: modelId, label: z.string().min(1).max(75).optional() })]);

const list = z
  .array(entry)
  .min(1, 'list at least one model id, or remove the key')
  .transform((items): Companion[] => items.map((e) => (typeof e === 'string' ? { id: e, label: e } : { id: e.id, label: e.label ?? e.id })))
  .superRefine((items, ctx) => {
    const seen = new Set<string>();
    items.forEach((c, i) => {
      if (seen.has(c.id)) ctx.addIssue({ code: 'custom', path: [i], message: `model "${c.id}" is listed twice` });
      seen.add(c.id);
    });
  });

export const companionsSchema = z.strictObject({
  'analyze:image': list.optional(),
  'analyze:file': list.optional(),
});

/** The config key an operator sets for a kind, as error messages name it. */
export function companionsKey(agentName: string, kind: CompanionKind): string {
  return `agents.${agentName}.companions["${kind}"]`;
}
