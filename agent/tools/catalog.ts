/**
 * Every built-in tool, in one registry. Built per agent because some tools take agent settings
 * (execute_command's timeout); the names are the same for all, which is what config validates against.
 */
import { ToolRegistry } from './registry.js';
import { askUserQuestionTool } from './builtin/ask-user.js';
import { executeCommandTool } from './builtin/execute-command.js';
import { builtinFileTools, builtinMiscTools } from './builtin/index.js';
import type { SandboxPolicy } from './sandbox/index.js';
import { memoryAndReminderTools, type MemoryAndReminderStores } from './builtin/memory-reminders.js';

export interface CatalogOptions {
  /** execute_command's default and maximum timeout (agents' commandTimeoutMs). */
  commandTimeoutMs?: number;
  /** Where execute_command runs (default: bubblewrap, network off). */
  sandbox?: SandboxPolicy;
  /** The stores behind view_memory / manage_memory and the reminder tools (absent: they refuse). */
  stores?: MemoryAndReminderStores;
}

export function builtinRegistry(opts: CatalogOptions = {}): ToolRegistry {
  return new ToolRegistry([
    ...builtinFileTools(),
    ...builtinMiscTools(),
    askUserQuestionTool(),
    ...memoryAndReminderTools(opts.stores),
    executeCommandTool({
      ...(opts.commandTimeoutMs !== undefined ? { defaultTimeoutMs: opts.commandTimeoutMs } : {}),
      ...(opts.sandbox ? { sandbox: opts.sandbox } : {}),
    }),
  ]);
}

/** The names config may list in an agent's `tools`. */
export function builtinToolNames(): string[] {
  return builtinRegistry().names();
}
