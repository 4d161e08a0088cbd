/**
 * Skills on disk: a skill is a folder holding SKILL.md (YAML front matter with `name` and
 * `description`, then Markdown) and any other files. An agent's `skills` config names folders; each is
 * either a skill itself or holds skill folders one level down. Read at every call (edits show at once).
 *
 * Contract:
 * - Every file read is confined to its skill's folder: the path is resolved with symlinks followed
 *   (realpath) and must stay inside the skill folder's own realpath, so `..` or a symlink leading out
 *   is refused with a ToolError. Reads are capped (MAX_SKILL_FILE_BYTES).
 * - A SKILL.md without valid front matter (name, description) is skipped and listed as a problem,
 *   never guessed at.
 */
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ToolError } from '../../types.js';
import { messageOf } from '../../../log.js';

const MAX_SKILL_FILE_BYTES = 64 * 1024;

const frontMatter = z.object({ name: z.string().min(1).max(64), description: z.string().min(1).max(1024) });

export interface Skill {
  name: string;
  description: string;
  /** The skill folder's real path. */
  dir: string;
  /** SKILL.md's Markdown after the front matter. */
  body: string;
}

export interface SkillScan {
  skills: Skill[];
  problems: string[];
}

/** Splits `---\n<yaml>\n---\n<body>`; undefined when there is no front matter. */
function splitFrontMatter(text: string): { meta: unknown; body: string } | undefined {
  const m = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!m) return undefined;
  return { meta: parseYaml(m[1] ?? ''), body: text.slice(m[0].length) };
}

async function readSkill(dir: string): Promise<Skill | string | undefined> {
  const file = join(dir, 'SKILL.md');
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  let split;
  try {
    split = splitFrontMatter(text);
  } catch (err) {
    return `${file}: its front matter is not valid YAML (${messageOf(err).split('\n')[0]})`;
  }
  const meta = frontMatter.safeParse(split?.meta);
  if (!split || !meta.success) return `${file}: needs front matter with name and description (---\\nname: ...\\ndescription: ...\\n---)`;
  return { ...meta.data, dir: await realpath(dir), body: split.body };
}

/** Every skill under the configured folders; the first of two with one name wins (the other is a problem). */
export async function scanSkills(folders: readonly string[]): Promise<SkillScan> {
  const skills: Skill[] = [];
  const problems: string[] = [];
  const add = (s: Skill | string | undefined) => {
    if (s === undefined) return;
    if (typeof s === 'string') problems.push(s);
    else if (skills.some((k) => k.name === s.name)) problems.push(`${s.dir}: a skill named ${s.name} came earlier; this one is ignored`);
    else skills.push(s);
  };
  for (const folder of folders) {
    const own = await readSkill(folder);
    if (own !== undefined) {
      add(own);
      continue;
    }
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => undefined);
    if (!entries) {
      problems.push(`${folder}: cannot be read`);
      continue;
    }
    for (const e of entries.filter((x) => x.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) add(await readSkill(join(folder, e.name)));
  }
  return { skills, problems };
}

/** Reads `path` (relative to the skill folder) only if its real path stays inside the folder. */
export async function readSkillFile(skill: Skill, path: string): Promise<string> {
  if (isAbsolute(path)) throw new ToolError(`${path}: give a path relative to the skill folder`);
  const real = await realpath(join(skill.dir, path)).catch(() => {
    throw new ToolError(`${path}: no such file in skill ${skill.name}`);
  });
  const rel = relative(skill.dir, real);
  if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
    throw new ToolError(`${path}: outside skill ${skill.name}'s folder; only its own files can be read`);
  }
  const st = await stat(real);
  if (!st.isFile()) throw new ToolError(`${path}: not a file`);
  if (st.size > MAX_SKILL_FILE_BYTES) throw new ToolError(`${path}: ${st.size} bytes, over the ${MAX_SKILL_FILE_BYTES}-byte limit for a skill file`);
  return readFile(real, 'utf8');
}

/** The skill's files other than SKILL.md (relative paths, two levels deep at most, capped). */
export async function listSkillFiles(skill: Skill, limit = 100): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string, depth: number): Promise<void> => {
    const entries = await readdir(join(skill.dir, rel), { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (out.length >= limit) return;
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory() && depth < 2) await walk(p, depth + 1);
      else if (e.isFile() && p !== 'SKILL.md') out.push(p);
    }
  };
  await walk('', 0);
  return out;
}

/** The section under the Markdown heading `heading` (any level), up to the next heading of the same or higher level. */
export function sectionOf(body: string, heading: string): string | undefined {
  const lines = body.split('\n');
  const want = heading
    .replace(/^#+\s*/, '')
    .trim()
    .toLowerCase();
  const start = lines.findIndex(
    (l) =>
      /^#{1,6}\s/.test(l) &&
      l
        .replace(/^#+\s*/, '')
        .trim()
        .toLowerCase() === want,
  );
  if (start < 0) return undefined;
  const level = /^#+/.exec(lines[start] ?? '')?.[0].length ?? 1;
  let end = lines.length;
  for (let i = start + 1; i < lines.length; i++) {
    const m = /^(#{1,6})\s/.exec(lines[i] ?? '');
    if (m && (m[1]?.length ?? 7) <= level) {
      end = i;
      break;
    }
  }
  return lines.slice(start, end).join('\n').trim();
}

export function headingsOf(body: string): string[] {
  return body
    .split('\n')
    .filter((l) => /^#{1,6}\s/.test(l))
    .map((l) => l.trim());
}
