/** Tools that exist only in tests: they make "how many times did it run" and pickers observable. */
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Tool } from '../../agent/tools/types.js';

/** High-risk; each execution appends a line to <workspace>/runs.log. */
export function countingTool(): Tool<{ label: string }> {
  return {
    name: 'deploy_counter',
    description: 'Records a deployment (test tool).',
    input: z.strictObject({ label: z.string() }),
    tier: 'high-risk',
    async propose(input) {
      return { summary: `deploy ${input.label}`, preview: `deploy --label ${input.label}` };
    },
    async execute(input, ctx) {
      appendFileSync(join(ctx.workspace, 'runs.log'), `${input.label}\n`);
      // 'hang' simulates a process that dies mid-execution: it never finishes on its own.
      if (input.label === 'hang') await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      return { content: `deployed ${input.label}` };
    },
  };
}

export function runsLog(workspace: string): string[] {
  try {
    return readFileSync(join(workspace, 'runs.log'), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** Low-risk, but its proposal carries options: an approver must pick one. */
export function pickerTool(): Tool<{ service: string }> {
  return {
    name: 'pick_region',
    description: 'Deploys a service to a region an approver picks (test tool).',
    input: z.strictObject({ service: z.string() }),
    tier: 'low-risk',
    async propose(input) {
      return {
        summary: `deploy ${input.service}: pick a region`,
        options: [
          { id: 'eu-west', label: 'EU West' },
          { id: 'us-east', label: 'US East' },
        ],
      };
    },
    async execute(input, _ctx, prepared) {
      return { content: `deployed ${input.service} to ${prepared.selectedOptionId ?? '(none)'}` };
    },
  };
}
