/** The memory and reminder tools as the registry takes them, built on the stores they use. */
import type { MemoryStore } from '../../memory/memory.js';
import type { Reminders } from '../../memory/reminders.js';
import type { AnyTool, Tool } from '../types.js';
import { manageMemoryTool, viewMemoryTool } from './memory.js';
import { addReminderTool, cancelReminderTool, listRemindersTool } from './reminders.js';

export interface MemoryAndReminderStores {
  memory?: MemoryStore;
  reminders?: Reminders;
}

function erase<I>(tool: Tool<I>): AnyTool {
  return tool as unknown as AnyTool;
}

/** view_memory, list_reminders (read-only); manage_memory, add_reminder, cancel_reminder (low-risk). */
export function memoryAndReminderTools(stores: MemoryAndReminderStores = {}): AnyTool[] {
  return [
    erase(viewMemoryTool(stores.memory)),
    erase(manageMemoryTool(stores.memory)),
    erase(addReminderTool(stores.reminders)),
    erase(listRemindersTool(stores.reminders)),
    erase(cancelReminderTool(stores.reminders)),
  ];
}
