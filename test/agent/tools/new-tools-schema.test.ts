import { z } from 'zod';
import { builtinRegistry } from '../../../agent/tools/catalog.js';

const NEW = ['mkdir', 'rm', 'mv', 'cp', 'web_fetch', 'http_request', 'read_pdf', 'pdf_page_count'];

test('the new tools are in the catalog with their tiers', () => {
  const r = builtinRegistry();
  expect(NEW.map((n) => [n, r.get(n)?.tier])).toEqual([
    ['mkdir', 'high-risk'],
    ['rm', 'high-risk'],
    ['mv', 'high-risk'],
    ['cp', 'high-risk'],
    ['web_fetch', 'read-only'],
    ['http_request', 'high-risk'], // the most a call can be; GET/HEAD calls are rated read-only by propose
    ['read_pdf', 'read-only'],
    ['pdf_page_count', 'read-only'],
  ]);
});

test.each(NEW)('%s: a strict JSON schema with a description on every field', (name) => {
  const tool = builtinRegistry().get(name)!;
  expect(tool.description.length).toBeGreaterThan(20);
  const schema = z.toJSONSchema(tool.input as z.ZodType, { io: 'input' }) as {
    type: string;
    additionalProperties: boolean;
    properties: Record<string, { description?: string }>;
  };
  expect(schema.type).toBe('object');
  expect(schema.additionalProperties).toBe(false);
  for (const [key, prop] of Object.entries(schema.properties)) expect([key, typeof prop.description]).toEqual([key, 'string']);
  expect(tool.input.safeParse({ __unknown: 1 }).success).toBe(false);
});
