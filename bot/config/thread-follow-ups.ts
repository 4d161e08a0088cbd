/**
 * The `threadFollowUps` setting: whether later messages in a thread where the bot was mentioned are
 * addressed to it without a new mention (Slack channel threads). Default true.
 *
 * Contract:
 * - Set on an agent (`agents.<name>.threadFollowUps`, or `defaults.threadFollowUps`) or on a route
 *   (`routes[i].threadFollowUps`). For a conversation, the first route that matches its key (the
 *   same one that picks the agent) decides when it sets the key; otherwise the agent serving it.
 * - Read at decision time, so a config reload applies to the next message.
 */
import { z } from 'zod';

export const threadFollowUpsSchema = z.boolean();

/** The parts of the config it reads (structural, so this file does not import the config module that imports it). */
interface FollowUpSettings {
  threadFollowUps?: boolean;
}

export function threadFollowUpsFor(config: { routes: ReadonlyArray<FollowUpSettings & { match: string }> }, key: string, agent: FollowUpSettings): boolean {
  // Same matching as agentForConversation: the key itself, or a prefix ending at a ':' boundary.
  const route = config.routes.find((r) => key === r.match || key.startsWith(`${r.match}:`));
  return route?.threadFollowUps ?? agent.threadFollowUps ?? true;
}
