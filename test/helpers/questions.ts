/**
 * Model turns that ask the user (ask_user_question), for the e2e files that script them: one way to
 * spell the call, and the two-question thread the Slack, Discord and Telegram e2e files all play.
 */
import type { FakeReply } from '../fakes/anthropic.js';

export interface Suggestion {
  value: string;
  label: string;
}

/** A model turn calling ask_user_question; without `allowCustom` the input leaves it out (the tool's default). */
export function askReply(question: string, suggestions: Suggestion[], allowCustom?: boolean): FakeReply {
  return { toolUses: [{ name: 'ask_user_question', input: { question, suggestions, ...(allowCustom === undefined ? {} : { allowCustom }) } }] };
}

/**
 * "Which environment?" (Staging / Production) answered by 'Going with staging.', then "Which branch?"
 * (main, custom answers allowed) answered by 'Branch noted.'. Fresh objects on every call.
 */
export function environmentThenBranch(): FakeReply[] {
  return [
    askReply(
      'Which environment?',
      [
        { value: 'staging', label: 'Staging' },
        { value: 'prod', label: 'Production' },
      ],
      true,
    ),
    { text: 'Going with staging.' },
    askReply('Which branch?', [{ value: 'main', label: 'main' }], true),
    { text: 'Branch noted.' },
  ];
}
