/**
 * `! cmd` in the terminal chat: the operator runs a shell command directly and its output becomes
 * context for the agent's next turn ("! git log -3", then "summarize that").
 *
 * Contract:
 * - Only messages of the `console` platform (the terminal chat, whose one user is the operator at the
 *   keyboard) reach this; the router never calls it for a chat platform, where `! ...` is an ordinary
 *   message to the agent.
 * - No approval (the operator typed it), but everything else that bounds an agent's command applies:
 *   the shell denylist (policies/shell, absolute: a denied command is refused and nothing runs), and it
 *   runs through the agent's own execute_command (its sandbox, scrubbed environment, per-stream output
 *   cap and commandTimeoutMs).
 * - What the operator sees and what is kept for the next turn is cut to OPERATOR_OUTPUT_MAX characters
 *   (start and end kept, the middle replaced by a marker).
 */
import type { AgentSettings } from '../../agent/settings.js';
import type { AnyTool, ToolContext } from '../../agent/tools/types.js';
import { analyzeCommand } from '../../policies/shell/index.js';
import { messageOf } from '../../agent/log.js';

const OPERATOR_OUTPUT_MAX = 4000;

export type OperatorShell = (conversationKey: string, agentName: string, command: string) => Promise<{ reply: string; context?: string }>;

/** Keeps the start and the end of a long text. */
function bound(text: string, max = OPERATOR_OUTPUT_MAX): string {
  if (text.length <= max) return text;
  const half = Math.floor((max - 60) / 2);
  return `${text.slice(0, half)}\n[... ${text.length - 2 * half} characters cut ...]\n${text.slice(-half)}`;
}

export function createOperatorShell(deps: {
  agent(name: string): AgentSettings | undefined;
  shellTool(agent: AgentSettings): AnyTool | undefined;
}): OperatorShell {
  return async (conversationKey, agentName, command) => {
    const verdict = await analyzeCommand(command);
    if (verdict.denied) return { reply: `Refused by the denylist (${verdict.denied.rule}): ${verdict.denied.reason}. Nothing ran.` };
    const agent = deps.agent(agentName);
    const tool = agent ? deps.shellTool(agent) : undefined;
    if (!agent || !tool) return { reply: 'No shell here: the agent has no execute_command tool.' };
    const state: Record<string, unknown> = {};
    const ctx: ToolContext = {
      workspace: agent.workspace,
      signal: new AbortController().signal,
      conversationKey,
      agentName,
      envAllowlist: agent.envAllowlist,
      state: { get: <T>(n: string) => state[n] as T | undefined, set: (n, v) => void (state[n] = v) },
    };
    let output: string;
    try {
      const input = tool.input.parse({ command });
      const proposal = tool.propose ? await tool.propose(input, ctx) : undefined;
      const result = await tool.execute(input, ctx, proposal ? { proposal } : {});
      output = typeof result.content === 'string' ? result.content : result.content.map((b) => (b.type === 'text' ? b.text : '[image]')).join('\n');
    } catch (err) {
      output = `The command did not run: ${messageOf(err)}`;
    }
    const shown = bound(output);
    return { reply: shown, context: `<operator_shell command=${JSON.stringify(command)}>\n${shown}\n</operator_shell>` };
  };
}
