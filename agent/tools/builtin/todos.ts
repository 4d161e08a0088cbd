/**
 * The agent's todo list for one conversation, kept in ctx.state under 'todos' (saved with the
 * transcript). manage_todos replaces the whole list; list_todos shows it.
 *
 * Tiers: list_todos is read-only. manage_todos is low-risk: it changes only the agent's own
 * per-conversation state; its propose half shows the new list as a diff, so an agent configured
 * read-only asks before its list changes.
 */
import { createTwoFilesPatch } from 'diff';
import { z } from 'zod';
import type { ConversationState, Tool } from '../types.js';
import { ToolError } from '../types.js';

export const TODOS_STATE_KEY = 'todos';
const MAX_TODOS = 100;

const TodoStatus = z.enum(['pending', 'in_progress', 'done']);
const Todo = z.object({ id: z.string(), text: z.string(), status: TodoStatus });
type Todo = z.infer<typeof Todo>;
const TodoList = z.array(Todo);

export const ManageTodosInput = z.strictObject({
  todos: z
    .array(
      z.strictObject({
        id: z.string().min(1).max(40).optional().describe('Keep the id of an existing item; omit for a new one.'),
        text: z.string().min(1).max(500).describe('What to do, one short line.'),
        status: TodoStatus.describe('pending, in_progress or done.'),
      }),
    )
    .max(MAX_TODOS)
    .describe(`The complete new list (it replaces the old one; an empty list clears it). At most ${MAX_TODOS} items.`),
});
export type ManageTodosInput = z.infer<typeof ManageTodosInput>;

export const ListTodosInput = z.strictObject({});
export type ListTodosInput = z.infer<typeof ListTodosInput>;

/** The stored list; a corrupt stored value reads as empty rather than failing every call. */
function readTodos(state: ConversationState): Todo[] {
  const parsed = TodoList.safeParse(state.get<unknown>(TODOS_STATE_KEY));
  return parsed.success ? parsed.data : [];
}

const MARK: Record<Todo['status'], string> = { pending: '[ ]', in_progress: '[~]', done: '[x]' };

function renderTodos(todos: readonly Todo[]): string {
  if (todos.length === 0) return 'No todos.';
  return todos.map((t) => `${MARK[t.status]} ${t.id}. ${t.text}${t.status === 'in_progress' ? ' (in progress)' : ''}`).join('\n');
}

/** Keeps given ids, numbers new items with the lowest free ids; duplicate ids are an error. */
function normalize(items: ManageTodosInput['todos']): Todo[] {
  const used = new Set<string>();
  for (const t of items) {
    if (t.id === undefined) continue;
    if (used.has(t.id)) throw new ToolError(`The id "${t.id}" appears twice; give each item its own id or omit it for new items.`);
    used.add(t.id);
  }
  let next = 1;
  return items.map((t) => {
    let id = t.id;
    if (id === undefined) {
      while (used.has(String(next))) next++;
      id = String(next);
      used.add(id);
    }
    return { id, text: t.text.replace(/\s*\n\s*/g, ' '), status: t.status };
  });
}

function counts(todos: readonly Todo[]): string {
  const n = (s: Todo['status']) => todos.filter((t) => t.status === s).length;
  return `${todos.length} item${todos.length === 1 ? '' : 's'}: ${n('done')} done, ${n('in_progress')} in progress, ${n('pending')} pending`;
}

/** manage_todos: low-risk (see the module comment). */
export function manageTodosTool(): Tool<ManageTodosInput> {
  return {
    name: 'manage_todos',
    description:
      'Replace your todo list for this conversation with the given items (use it to plan multi-step work and ' +
      'to mark progress). Send the whole list each time; keep ids of existing items.',
    input: ManageTodosInput,
    tier: 'low-risk',
    async propose(input, ctx) {
      const before = readTodos(ctx.state);
      const after = normalize(input.todos);
      const preview = createTwoFilesPatch('todos', 'todos', `${renderTodos(before)}\n`, `${renderTodos(after)}\n`, undefined, undefined, {
        context: 100,
      });
      return { summary: `manage_todos (${counts(after)})`, preview, data: { todos: after } };
    },
    async execute(input, ctx, prepared) {
      const fromProposal = z.object({ todos: TodoList }).safeParse(prepared.proposal?.data);
      const todos = fromProposal.success ? fromProposal.data.todos : normalize(input.todos);
      ctx.state.set(TODOS_STATE_KEY, todos);
      return { content: `Todo list updated (${counts(todos)}):\n${renderTodos(todos)}` };
    },
  };
}

/** list_todos: read-only. */
export function listTodosTool(): Tool<ListTodosInput> {
  return {
    name: 'list_todos',
    description: 'Show your todo list for this conversation.',
    input: ListTodosInput,
    tier: 'read-only',
    async execute(_input, ctx) {
      return { content: renderTodos(readTodos(ctx.state)) };
    },
  };
}
