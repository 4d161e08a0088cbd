import { z } from 'zod';
import { builtinFileTools, builtinMiscTools } from '../../../agent/tools/builtin/index.js';
import { getTimeTool } from '../../../agent/tools/builtin/time.js';
import { ToolError } from '../../../agent/tools/types.js';
import { makeCtx, run } from './builtin-helpers.js';

const ws = '/nonexistent-workspace';

describe('the built-in tool sets', () => {
  const all = [...builtinFileTools(), ...builtinMiscTools()];

  test('names and tiers: reads are read-only, changes are low-risk and two-phase', () => {
    expect(all.map((t) => [t.name, t.tier, typeof t.propose === 'function'])).toEqual([
      ['read_file', 'read-only', false],
      ['ls', 'read-only', false],
      ['find', 'read-only', false],
      ['grep', 'read-only', false],
      ['write_file', 'low-risk', true],
      ['edit_file', 'low-risk', true],
      ['get_time', 'read-only', false],
      ['manage_todos', 'low-risk', true],
      ['list_todos', 'read-only', false],
    ]);
  });

  test.each(all.map((t) => [t.name, t] as const))('%s: a strict JSON schema with a description on every field', (_name, tool) => {
    expect(tool.description.length).toBeGreaterThan(20);
    const schema = z.toJSONSchema(tool.input as z.ZodType, { io: 'input' }) as {
      type: string;
      additionalProperties: boolean;
      properties: Record<string, { description?: string }>;
    };
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    for (const [key, prop] of Object.entries(schema.properties)) {
      expect([key, typeof prop.description]).toEqual([key, 'string']);
    }
    expect(tool.input.safeParse({ __unknown: 1 }).success).toBe(false);
  });
});

describe('get_time', () => {
  const now = () => new Date('2025-06-01T12:03:04.567Z');

  test('ISO with offset, weekday and zone, plus UTC', async () => {
    const out = await run(getTimeTool({ now, timeZone: 'Europe/Berlin' }), {}, makeCtx(ws));
    expect(out).toBe('2025-06-01T14:03:04+02:00 (Sunday, Europe/Berlin)\nUTC: 2025-06-01T12:03:04.567Z');
  });

  test('the model may ask for another zone; UTC shows +00:00; half-hour offsets work', async () => {
    const tool = getTimeTool({ now, timeZone: 'Europe/Berlin' });
    expect(await run(tool, { timeZone: 'UTC' }, makeCtx(ws))).toMatch(/^2025-06-01T12:03:04\+00:00 \(Sunday, UTC\)/);
    expect(await run(tool, { timeZone: 'Asia/Kolkata' }, makeCtx(ws))).toMatch(/^2025-06-01T17:33:04\+05:30 /);
    expect(await run(tool, { timeZone: 'America/New_York' }, makeCtx(ws))).toMatch(/^2025-06-01T08:03:04-04:00 /);
  });

  test('midnight is 00, not 24', async () => {
    const out = await run(getTimeTool({ now: () => new Date('2025-01-01T00:00:00Z'), timeZone: 'UTC' }), {}, makeCtx(ws));
    expect(out).toMatch(/^2025-01-01T00:00:00\+00:00 \(Wednesday, UTC\)/);
  });

  test('an unknown zone is a clear error', async () => {
    const err = await run(getTimeTool({ now }), { timeZone: 'Mars/Olympus' }, makeCtx(ws)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect((err as Error).message).toMatch(/"Mars\/Olympus" is not a known time zone/);
  });
});
