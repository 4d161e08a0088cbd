/**
 * ask_user_question: the model asks the people in the conversation and waits for an answer.
 * Suggestions become buttons; with allowCustom a typed reply answers too. Who may answer: the person
 * whose message started the run, and bound approvers (enforced by the approval broker).
 * It only waits on a human, so it is longRunning (no tool timeout; the wait does not count against
 * the run's timeout) and needsHuman (offered only where someone can answer). Read-only: asking
 * changes nothing.
 */
import { z } from 'zod';
import { ToolError, type Tool } from '../types.js';

const Input = z.strictObject({
  question: z.string().min(1).max(4000).describe('The question, complete and self-contained; it is shown in full.'),
  suggestions: z
    .array(
      z.strictObject({
        value: z.string().min(1).max(500).describe('What you receive back when this suggestion is chosen.'),
        label: z.string().min(1).max(60).describe('Short button text.'),
        description: z.string().max(300).optional().describe('One line shown under the question.'),
      }),
    )
    .max(8)
    .default([])
    .describe('Up to 8 likely answers, shown as buttons.'),
  allowCustom: z.boolean().default(true).describe('Whether a typed reply also answers.'),
});
export type AskUserInput = z.infer<typeof Input>;

export function askUserQuestionTool(): Tool<AskUserInput> {
  return {
    name: 'ask_user_question',
    description:
      'Ask the user a question and wait for the answer. Use when you cannot proceed without a decision or ' +
      'information only they have. Offer likely answers as suggestions. If nobody answers in time you are ' +
      'told so: then state the assumption you make and continue.',
    input: Input as z.ZodType<AskUserInput>,
    tier: 'read-only',
    longRunning: true,
    needsHuman: true,
    async execute(input, ctx) {
      if (!ctx.askUser) throw new ToolError('nobody can answer questions in this conversation; make a reasonable assumption and say so.');
      if (input.suggestions.length === 0 && !input.allowCustom) {
        throw new ToolError('give at least one suggestion, or set allowCustom to true.');
      }
      const a = await ctx.askUser({ question: input.question, suggestions: input.suggestions, allowCustom: input.allowCustom });
      if (a.answer === null) {
        return { content: 'Nobody answered in time. State the assumption you are making, then continue.' };
      }
      return { content: `Answer${a.by ? ` from ${a.by}` : ''}: ${a.answer}` };
    },
  };
}
