import { listTodosTool, manageTodosTool, TODOS_STATE_KEY } from '../../../agent/tools/builtin/todos.js';
import { ToolError } from '../../../agent/tools/types.js';
import { makeCtx, memoryState, propose, proposeAndRun, run } from './builtin-helpers.js';

// Todos touch no files; the workspace only has to be an absolute path.
const ws = '/nonexistent-workspace';

describe('manage_todos / list_todos', () => {
  test('an empty list reads as "No todos."', async () => {
    expect(await run(listTodosTool(), {}, makeCtx(ws))).toBe('No todos.');
  });

  test('manage_todos replaces the list, numbers new items, and list_todos shows it', async () => {
    const state = memoryState();
    const ctx = makeCtx(ws, { state });
    const { output } = await proposeAndRun(
      manageTodosTool(),
      {
        todos: [
          { text: 'Read the config loader', status: 'done' },
          { text: 'Write the failing test', status: 'in_progress' },
          { text: 'Fix the bug', status: 'pending' },
        ],
      },
      ctx,
    );
    expect(output).toBe(
      'Todo list updated (3 items: 1 done, 1 in progress, 1 pending):\n' +
        '[x] 1. Read the config loader\n[~] 2. Write the failing test (in progress)\n[ ] 3. Fix the bug',
    );
    expect(await run(listTodosTool(), {}, ctx)).toBe('[x] 1. Read the config loader\n[~] 2. Write the failing test (in progress)\n[ ] 3. Fix the bug');
    expect(state.data.get(TODOS_STATE_KEY)).toEqual([
      { id: '1', text: 'Read the config loader', status: 'done' },
      { id: '2', text: 'Write the failing test', status: 'in_progress' },
      { id: '3', text: 'Fix the bug', status: 'pending' },
    ]);

    // Second call: keeps given ids, a new item takes the lowest free id, dropped items are gone.
    await proposeAndRun(
      manageTodosTool(),
      {
        todos: [
          { id: '2', text: 'Write the failing test', status: 'done' },
          { id: '3', text: 'Fix the bug', status: 'in_progress' },
          { text: 'Open a PR', status: 'pending' },
        ],
      },
      ctx,
    );
    expect(await run(listTodosTool(), {}, ctx)).toBe('[x] 2. Write the failing test\n[~] 3. Fix the bug (in progress)\n[ ] 1. Open a PR');
  });

  test('propose shows the change and does not touch the state', async () => {
    const state = memoryState();
    const ctx = makeCtx(ws, { state });
    await proposeAndRun(manageTodosTool(), { todos: [{ text: 'a', status: 'pending' }] }, ctx);
    const p = await propose(manageTodosTool(), { todos: [{ id: '1', text: 'a', status: 'done' }] }, ctx);
    expect(p.summary).toBe('manage_todos (1 item: 1 done, 0 in progress, 0 pending)');
    expect(p.preview).toContain('-[ ] 1. a\n+[x] 1. a');
    expect(await run(listTodosTool(), {}, ctx)).toBe('[ ] 1. a');
  });

  test('execute stores what was proposed (approved)', async () => {
    const ctx = makeCtx(ws);
    const p = await propose(manageTodosTool(), { todos: [{ text: 'approved', status: 'pending' }] }, ctx);
    await manageTodosTool().execute({ todos: [{ text: 'other', status: 'done' }] }, ctx, { proposal: p });
    expect(await run(listTodosTool(), {}, ctx)).toBe('[ ] 1. approved');
  });

  test('an empty list clears it', async () => {
    const ctx = makeCtx(ws);
    await proposeAndRun(manageTodosTool(), { todos: [{ text: 'a', status: 'pending' }] }, ctx);
    await proposeAndRun(manageTodosTool(), { todos: [] }, ctx);
    expect(await run(listTodosTool(), {}, ctx)).toBe('No todos.');
  });

  test('duplicate ids are refused with what to do', async () => {
    const err = await propose(
      manageTodosTool(),
      {
        todos: [
          { id: 'x', text: 'a', status: 'pending' },
          { id: 'x', text: 'b', status: 'pending' },
        ],
      },
      makeCtx(ws),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect((err as Error).message).toMatch(/"x" appears twice/);
  });

  test('a corrupt stored value reads as empty instead of failing', async () => {
    const state = memoryState();
    state.set(TODOS_STATE_KEY, { not: 'a list' });
    expect(await run(listTodosTool(), {}, makeCtx(ws, { state }))).toBe('No todos.');
  });

  test('the schema rejects unknown keys, bad statuses and empty text', () => {
    const t = manageTodosTool();
    expect(t.input.safeParse({ todos: [{ text: 'a', status: 'pending', priority: 1 }] }).success).toBe(false);
    expect(t.input.safeParse({ todos: [{ text: 'a', status: 'blocked' }] }).success).toBe(false);
    expect(t.input.safeParse({ todos: [{ text: '', status: 'pending' }] }).success).toBe(false);
    expect(t.input.safeParse({ todos: [], extra: true }).success).toBe(false);
    expect(listTodosTool().input.safeParse({ anything: 1 }).success).toBe(false);
  });
});
