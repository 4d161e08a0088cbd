/**
 * The per-agent `memory` and `reminders` config keys (schema and defaults), kept out of bot/config/index.ts
 * so that file only names them. Documented in gatehouse.example.yaml.
 *
 *   memory:    { scopes: [agent, conversation], maxEntries: 50, maxBytes: 8192, agentScopeWrites: approve }
 *   reminders: { runAsTurn: false, maxPerConversation: 20, minRepeatIntervalMs: 300000 }
 */
import { z } from 'zod';
import { AGENT_SCOPE_WRITES, DEFAULT_MEMORY_SETTINGS, MEMORY_SCOPES, type MemorySettings } from '../../agent/memory/memory.js';
import { DEFAULT_REMINDER_SETTINGS, type ReminderSettings } from '../../agent/memory/reminders.js';

/** A whole number in [min, max]; YAML integers arrive as BigInt. */
function int(min: number, max: number, unit = '') {
  return z.preprocess(
    (v) => (typeof v === 'bigint' ? Number(v) : v),
    z.number().superRefine((n, ctx) => {
      if (!Number.isInteger(n) || n < min || n > max)
        ctx.addIssue({ code: 'custom', message: `expected a whole number from ${min} to ${max}${unit}, got ${n}` });
    }),
  );
}

export const memoryConfigSchema = z.strictObject({
  scopes: z.array(z.enum(MEMORY_SCOPES)).optional(),
  maxEntries: int(1, 10_000).optional(),
  maxBytes: int(64, 1_000_000, ' (bytes)').optional(),
  // approve: an approver's click for every change to agent memory; off: the tools cannot change it.
  agentScopeWrites: z.enum(AGENT_SCOPE_WRITES).optional(),
});

export const remindersConfigSchema = z.strictObject({
  runAsTurn: z.boolean().optional(),
  maxPerConversation: int(1, 10_000).optional(),
  // The longest a Node timer can wait bounds it above (about 24.8 days).
  minRepeatIntervalMs: int(1_000, 2_147_483_647, ' (milliseconds)').optional(),
});

export function resolveMemoryConfig(raw: z.output<typeof memoryConfigSchema> | undefined): MemorySettings {
  return {
    scopes: raw?.scopes ? [...new Set(raw.scopes)] : [...DEFAULT_MEMORY_SETTINGS.scopes],
    maxEntries: raw?.maxEntries ?? DEFAULT_MEMORY_SETTINGS.maxEntries,
    maxBytes: raw?.maxBytes ?? DEFAULT_MEMORY_SETTINGS.maxBytes,
    agentScopeWrites: raw?.agentScopeWrites ?? DEFAULT_MEMORY_SETTINGS.agentScopeWrites,
  };
}

export function resolveRemindersConfig(raw: z.output<typeof remindersConfigSchema> | undefined): ReminderSettings {
  return {
    runAsTurn: raw?.runAsTurn ?? DEFAULT_REMINDER_SETTINGS.runAsTurn,
    maxPerConversation: raw?.maxPerConversation ?? DEFAULT_REMINDER_SETTINGS.maxPerConversation,
    minRepeatIntervalMs: raw?.minRepeatIntervalMs ?? DEFAULT_REMINDER_SETTINGS.minRepeatIntervalMs,
  };
}
