/**
 * find_skills, load_skill, load_skill_section: the model sees the agent's skills by name and
 * description and loads one (or one section, or one of its files) when it needs it.
 *
 * Contract:
 * - All three are read-only and change nothing. What a skill's text tells the model to do is only
 *   text: any call the model then makes is gated like every other call (tier, toolPolicy, approvals).
 * - The folders come from `folders()` at each call (the agent's live `skills` config); without any, the
 *   tools refuse with a ToolError saying so. File reads are confined to the skill's folder (library.ts).
 */
import { z } from 'zod';
import { ToolError, type AnyTool, type Tool } from '../../types.js';
import { erase } from '../index.js';
import { headingsOf, listSkillFiles, readSkillFile, scanSkills, sectionOf, type Skill } from './library.js';

export const SKILL_TOOL_NAMES = ['find_skills', 'load_skill', 'load_skill_section'] as const;

export interface SkillToolOptions {
  /** The agent's skill folders (absolute), read at each call. */
  folders?: () => readonly string[] | undefined;
}

async function skills(opts: SkillToolOptions): Promise<{ skills: Skill[]; problems: string[] }> {
  const folders = opts.folders?.() ?? [];
  if (folders.length === 0) throw new ToolError('This agent has no skills configured (agents.<name>.skills).');
  return scanSkills(folders);
}

async function skillNamed(opts: SkillToolOptions, name: string): Promise<Skill> {
  const { skills: all } = await skills(opts);
  const s = all.find((k) => k.name === name);
  if (!s) throw new ToolError(`No skill named ${JSON.stringify(name)}; find_skills lists them (${all.map((k) => k.name).join(', ') || 'none'}).`);
  return s;
}

const FindInput = z.strictObject({ query: z.string().optional().describe('Only skills whose name or description contains these words.') });
const LoadInput = z.strictObject({
  name: z.string().min(1).describe('The skill name, as find_skills lists it.'),
  file: z.string().min(1).optional().describe("One of the skill's other files (a path relative to its folder) instead of SKILL.md."),
});
const SectionInput = z.strictObject({
  name: z.string().min(1).describe('The skill name.'),
  heading: z.string().min(1).describe('A heading of its SKILL.md, e.g. "Release steps".'),
});

export function skillTools(opts: SkillToolOptions = {}): AnyTool[] {
  const find: Tool<z.infer<typeof FindInput>> = {
    name: 'find_skills',
    description: 'List the skills available to you (name and description). Load one with load_skill when it fits the task.',
    input: FindInput,
    tier: 'read-only',
    async execute(input) {
      const { skills: all, problems } = await skills(opts);
      const words = (input.query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
      const hits = all.filter((s) => words.every((w) => `${s.name} ${s.description}`.toLowerCase().includes(w)));
      const lines = hits.map((s) => `- ${s.name}: ${s.description}`);
      return { content: [lines.length ? lines.join('\n') : 'No skills match.', ...(problems.length ? [`(skipped: ${problems.join('; ')})`] : [])].join('\n') };
    },
  };
  const load: Tool<z.infer<typeof LoadInput>> = {
    name: 'load_skill',
    description: "Load a skill's instructions (its SKILL.md), or one of its files with `file`. Lists its sections and files.",
    input: LoadInput,
    tier: 'read-only',
    async execute(input) {
      const s = await skillNamed(opts, input.name);
      if (input.file !== undefined) return { content: await readSkillFile(s, input.file) };
      const files = await listSkillFiles(s);
      return {
        content: [
          `# Skill: ${s.name}`,
          s.body.trim(),
          '',
          `Sections: ${headingsOf(s.body).join(' | ') || '(none)'}`,
          `Files: ${files.join(', ') || '(none)'}`,
        ].join('\n'),
      };
    },
  };
  const section: Tool<z.infer<typeof SectionInput>> = {
    name: 'load_skill_section',
    description: 'Load one section of a skill (by its heading) instead of the whole skill.',
    input: SectionInput,
    tier: 'read-only',
    async execute(input) {
      const s = await skillNamed(opts, input.name);
      const text = sectionOf(s.body, input.heading);
      if (text === undefined)
        throw new ToolError(`Skill ${s.name} has no heading ${JSON.stringify(input.heading)}; its headings: ${headingsOf(s.body).join(' | ') || '(none)'}`);
      return { content: text };
    },
  };
  return [erase(find), erase(load), erase(section)];
}
