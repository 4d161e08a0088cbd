/**
 * The per-agent `network` key of gatehouse.yaml (bot/config/index.ts adds it to the agent schema):
 *
 *   network:
 *     allow: [wiki.internal, "*.corp.example", 10.1.2.3, 192.168.0.0/16]
 *
 * Exceptions to the address rules of web_fetch and http_request (policies/network.ts): the listed host
 * names, addresses and ranges may be reached although they are private, loopback or link-local.
 */
import { z } from 'zod';
import { allowEntryProblem } from '../../../../policies/network.js';

const allowEntry = z.string().superRefine((s, ctx) => {
  const problem = allowEntryProblem(s);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

export const networkSchema = z.strictObject({
  allow: z.array(allowEntry).optional(),
});
export type NetworkConfig = z.infer<typeof networkSchema>;
