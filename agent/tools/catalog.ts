/**
 * Every built-in tool, in one registry. Built per agent because some tools take agent settings
 * (execute_command's timeout); the names are the same for all, which is what config validates against.
 */
import { ToolRegistry } from './registry.js';
import { askUserQuestionTool } from './builtin/ask-user.js';
import { askFilePickerTool } from './builtin/file-picker.js';
import { executeCommandTool } from './builtin/execute-command.js';
import { builtinFileTools, builtinManageTools, builtinMiscTools, builtinPdfTools, builtinWebTools, erase } from './builtin/index.js';
import type { NetworkConfig } from './builtin/web/config.js';
import type { SandboxPolicy } from './sandbox/index.js';
import { analyzeMediaTool, type AnalyzeMediaDeps } from './builtin/analyze-media.js';
import { retrieveToolResultTool, type ToolResultReader } from './builtin/retrieve-tool-result.js';
import { memoryAndReminderTools, type MemoryAndReminderStores } from './builtin/memory-reminders.js';
import { commandTool } from './builtin/command-tools/tool.js';
import type { CommandToolDecl } from './builtin/command-tools/declaration.js';
import { skillTools } from './builtin/skills/tools.js';
import { webSearchTool, type WebSearchConfig } from './builtin/web/search.js';
import { contextTools } from './builtin/context-tools.js';
import { spawnSubagentTool } from './builtin/subagent/tool.js';

export interface CatalogOptions {
  /** execute_command's default and maximum timeout (agents' commandTimeoutMs). */
  commandTimeoutMs?: number;
  /** Where execute_command runs (default: bubblewrap, network off). */
  sandbox?: SandboxPolicy;
  /** analyze_media's model client and the agent's companions (without: it refuses to run). */
  media?: AnalyzeMediaDeps;
  /** Where retrieve_tool_result reads stored results (without: it refuses to run). */
  toolResults?: ToolResultReader;
  /** The agent's live `network` settings (web_fetch / http_request read network.allow at each call). */
  network?: () => NetworkConfig | undefined;
  /** Gatehouse's own credentials (model key, platform tokens): web tools never send them. */
  secrets?: () => readonly string[];
  /** The stores behind view_memory / manage_memory and the reminder tools (absent: they refuse). */
  stores?: MemoryAndReminderStores;
  /** The agent's custom command tools (config `commandTools`), run in `sandbox`. */
  commandTools?: Readonly<Record<string, Omit<CommandToolDecl, 'name'>>>;
  /** The agent's live skill folders (config `skills`); without: the skill tools refuse. */
  skills?: () => readonly string[] | undefined;
  /** The agent's search provider; without one web_search does not exist. */
  webSearch?: WebSearchConfig;
}

export function builtinRegistry(opts: CatalogOptions = {}): ToolRegistry {
  return new ToolRegistry([
    ...builtinFileTools(),
    ...builtinManageTools(),
    ...builtinWebTools({ ...(opts.network ? { network: opts.network } : {}), ...(opts.secrets ? { secrets: opts.secrets } : {}) }),
    ...builtinPdfTools(),
    ...builtinMiscTools(),
    askUserQuestionTool(),
    askFilePickerTool(),
    ...memoryAndReminderTools(opts.stores),
    executeCommandTool({
      ...(opts.commandTimeoutMs !== undefined ? { defaultTimeoutMs: opts.commandTimeoutMs } : {}),
      ...(opts.sandbox ? { sandbox: opts.sandbox } : {}),
    }),
    erase(analyzeMediaTool(opts.media)),
    erase(retrieveToolResultTool(opts.toolResults)),
    ...contextTools(),
    erase(spawnSubagentTool()),
    ...(opts.webSearch ? [webSearchTool(opts.webSearch)] : []),
    ...skillTools(opts.skills ? { folders: opts.skills } : {}),
    ...Object.entries(opts.commandTools ?? {}).map(([name, d]) => commandTool({ ...d, name }, opts.sandbox ? { sandbox: opts.sandbox } : {})),
  ]);
}

/** The names config may list in an agent's `tools`. */
export function builtinToolNames(): string[] {
  return builtinRegistry().names();
}
