/**
 * What people read about approvals and questions: the decision's shape, the outcome line on a
 * decided card, the private notices a click gets, and the "queued behind" description.
 * No storage, no I/O: the broker decides, this says it.
 */
import { z } from 'zod';

export const Decision = z.object({
  outcome: z.enum(['approved', 'always', 'denied', 'expired', 'answered', 'unanswered']),
  by: z.string().optional(),
  byName: z.string().optional(),
  at: z.number(),
  selectedOptionId: z.string().optional(),
  answer: z.string().optional(),
  note: z.string().optional(),
});
export type Decision = z.infer<typeof Decision>;

export interface ClickResult {
  accepted: boolean;
  notice?: string;
}

/** The private notices a click (or a headless decision) gets. */
export const NOTICES = {
  badToken: 'This button is not valid.',
  staleToken: 'This button is no longer valid.',
  otherConversation: 'This button belongs to another conversation.',
  questionNotYours: 'Only the person who asked, or an approver, can answer this.',
  approvalNotYours: 'Only a bound approver can decide this. Nothing was changed.',
  requesterMayNotApprove: 'You started this request, so another approver must decide it. Nothing was changed.',
  expired: 'This request has expired.',
  noSuchRequest: 'No such open request in this conversation.',
  notAChoice: 'That is not one of the choices offered.',
} as const;

export function alreadyDecided(d: Decision | undefined): string {
  return d ? `Already decided: ${outcomeLine(d)}.` : 'Already decided.';
}

function firstLineOf(s: string): string {
  const line = s.split('\n', 1)[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

function who(d: Decision): string {
  return d.byName ? `${d.byName} (${d.by})` : (d.by ?? 'unknown');
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
}

/** The outcome line shown on a decided card (and in "already decided" notices). */
export function outcomeLine(d: Decision, _now?: () => number): string {
  const at = stamp(d.at);
  const note = d.note ? ` (${d.note})` : '';
  switch (d.outcome) {
    case 'approved':
      return d.selectedOptionId !== undefined ? `Chose "${d.selectedOptionId}" — ${who(d)}, ${at}${note}` : `Approved once by ${who(d)}, ${at}${note}`;
    case 'always':
      return `Always approved by ${who(d)}, ${at}${note}`;
    case 'denied':
      return d.by ? `Denied by ${who(d)}, ${at}${note}` : `Denied, ${at}${note}`;
    case 'expired':
      return `Expired without a decision, ${at}: not run${note}`;
    case 'answered':
      return `Answered by ${who(d)}, ${at}: ${d.answer ?? ''}`;
    case 'unanswered':
      return `No answer, ${at}${note}`;
  }
}

/** The private notice to the one whose click decided. */
export function noticeFor(d: Decision): string {
  switch (d.outcome) {
    case 'approved':
      return 'Approved.';
    case 'always':
      return 'Approved, and will be from now on.';
    case 'denied':
      return 'Denied.';
    case 'answered':
      return 'Answer sent.';
    default:
      return 'Done.';
  }
}

/** What a pending request is, for a "Queued: waiting for ... first" reply. */
export function describeWaitingFor(req: { kind: string; card: { title: string; body: string } }): string {
  if (req.kind === 'question') return `an answer to "${firstLineOf(req.card.body)}"`;
  const subject = /^Approve (.+)\?$/.exec(req.card.title)?.[1] ?? req.card.title;
  return `${req.kind === 'picker' ? 'a choice' : 'an approval'} on ${subject}`;
}
