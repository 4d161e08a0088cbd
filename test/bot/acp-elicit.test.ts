/**
 * bot/acp/elicit.ts: what an editor's form answer decides. Only a button the form offered, or typed
 * text where the question allows it; anything else (declined, cancelled, a made-up value, typed text
 * for a question that takes none, Deny named as a choice) is no answer.
 */
import { pickFromForm, questionForm, type FormButton } from '../../bot/acp/elicit.js';

const buttons: FormButton[] = [
  { token: 't-red', label: 'Red', choice: 'answer:0' },
  { token: 't-blue', label: 'Blue', choice: 'answer:1' },
];
const picker: FormButton[] = [
  { token: 't-a', label: 'a.md', choice: 'option:a' },
  { token: 't-deny', label: 'Deny', choice: 'deny' },
];

test('the form: one single-select choice per button, Deny left out; a typed field only where typing answers', () => {
  const q = questionForm({ title: 'Question', body: 'Which color?' }, buttons, true);
  expect(q.message).toBe('Question\nWhich color?');
  expect(q.requestedSchema.properties?.['choice']).toMatchObject({
    oneOf: [
      { const: 'answer:0', title: 'Red' },
      { const: 'answer:1', title: 'Blue' },
    ],
  });
  expect(q.requestedSchema.properties?.['answer']).toBeDefined();
  expect(q.requestedSchema.required).toBeUndefined();
  const p = questionForm({ title: 'Pick', body: '' }, picker, false);
  expect(p.requestedSchema.properties?.['choice']).toMatchObject({ oneOf: [{ const: 'option:a', title: 'a.md' }] });
  expect(p.requestedSchema.properties?.['answer']).toBeUndefined();
  expect(p.requestedSchema.required).toEqual(['choice']);
});

test.each([
  ['a chosen button', { action: 'accept', content: { choice: 'answer:1' } }, buttons, true, { token: 't-blue' }],
  [
    'typed text where it answers (wins over a choice)',
    { action: 'accept', content: { choice: 'answer:0', answer: 'green' } },
    buttons,
    true,
    { answer: 'green' },
  ],
  ['typed text where it does not answer', { action: 'accept', content: { answer: '../../etc/passwd' } }, picker, false, { answer: null }],
  ['a value the form did not offer', { action: 'accept', content: { choice: 'option:../../etc/passwd' } }, picker, false, { answer: null }],
  ['Deny named as a choice', { action: 'accept', content: { choice: 'deny' } }, picker, false, { answer: null }],
  ['only blanks typed', { action: 'accept', content: { answer: '   ' } }, buttons, true, { answer: null }],
  ['declined', { action: 'decline' }, buttons, true, { answer: null }],
  ['cancelled', { action: 'cancel' }, buttons, true, { answer: null }],
  ['accepted with no content', { action: 'accept' }, buttons, true, { answer: null }],
] as const)('%s', (_name, response, offered, allowCustom, expected) => {
  expect(pickFromForm(response, offered, allowCustom)).toEqual(expected);
});
