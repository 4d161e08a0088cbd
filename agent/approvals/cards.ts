/**
 * Card layout: which buttons an approval, a picker, a question and an "Approve all" card carry, what
 * each button's choice means once clicked, and the decided card. No storage, no I/O.
 *
 * A button's choice (`once`, `always`, `deny`, `option:<id>`, `answer:<i>`, `all_approve`,
 * `all_deny`) is kept server-side with its token; the button itself carries only the token.
 */
import type { Card, CardButton } from '../events.js';
import type { ProposalOption, QuestionSuggestion } from '../tools/types.js';
import { outcomeLine, type Decision } from './wording.js';

interface LaidOutButton {
  label: string;
  style: CardButton['style'];
  choice: string;
}

export interface Layout {
  kind: 'approval' | 'picker' | 'question' | 'approve_all';
  card: Omit<Card, 'buttons'>;
  buttons: LaidOutButton[];
}

export function approvalLayout(input: { title: string; body: string; preview?: string; alwaysLabel: string | null; options?: ProposalOption[] }): Layout {
  const buttons: LaidOutButton[] = [];
  const picker = input.options !== undefined && input.options.length > 0;
  if (picker) {
    for (const o of input.options!) buttons.push({ label: o.label, style: 'primary', choice: `option:${o.id}` });
  } else {
    buttons.push({ label: 'Approve once', style: 'primary', choice: 'once' });
    if (input.alwaysLabel) buttons.push({ label: input.alwaysLabel, style: 'default', choice: 'always' });
  }
  buttons.push({ label: 'Deny', style: 'danger', choice: 'deny' });
  const kind = picker ? 'picker' : 'approval';
  const card: Omit<Card, 'buttons'> = { kind, title: input.title, body: input.body };
  if (input.preview !== undefined) card.preview = input.preview;
  return { kind, card, buttons };
}

export function approveAllLayout(input: { title: string; body: string }, memberCount: number): Layout {
  return {
    kind: 'approve_all',
    card: { kind: 'approve_all', title: input.title, body: input.body },
    buttons: [
      { label: `Approve all ${memberCount}`, style: 'primary', choice: 'all_approve' },
      { label: 'Deny all', style: 'danger', choice: 'all_deny' },
    ],
  };
}

export function questionLayout(input: { question: string; suggestions: QuestionSuggestion[]; allowCustom: boolean }): Layout {
  const buttons = input.suggestions.map((s, i): LaidOutButton => ({ label: s.label, style: 'default', choice: `answer:${i}` }));
  const lines = [input.question];
  for (const s of input.suggestions) if (s.description) lines.push(`• ${s.label}: ${s.description}`);
  if (input.allowCustom) lines.push(input.suggestions.length ? '(or type your own answer)' : '(type your answer)');
  return { kind: 'question', card: { kind: 'question', title: 'Question', body: lines.join('\n') }, buttons };
}

/** The card with its buttons, each carrying the token it was given. */
export function cardWithTokens(layout: Layout, tokens: readonly string[]): Card {
  return { ...layout.card, buttons: layout.buttons.map((b, i) => ({ token: tokens[i]!, label: b.label, style: b.style })) };
}

/** The decision a clicked choice stands for; null when the choice means nothing for this request. */
export function decisionForChoice(
  req: { suggestions?: QuestionSuggestion[] | undefined },
  choice: string,
  user: { id: string; name?: string },
  at: number,
): Decision | null {
  const base = { by: user.id, byName: user.name, at };
  if (choice === 'once' || choice === 'all_approve') return { outcome: 'approved', ...base };
  if (choice === 'always') return { outcome: 'always', ...base };
  if (choice === 'deny' || choice === 'all_deny') return { outcome: 'denied', ...base };
  if (choice.startsWith('option:')) return { outcome: 'approved', selectedOptionId: choice.slice(7), ...base };
  if (choice.startsWith('answer:')) {
    const s = req.suggestions?.[Number(choice.slice(7))];
    return s ? { outcome: 'answered', answer: s.value, ...base } : null;
  }
  return null;
}

/** The card once decided: no buttons, the outcome line. */
export function decidedCard(card: Card, decision: Decision): Card {
  return { ...card, buttons: [], outcome: outcomeLine(decision) };
}
