/**
 * The paths a command names in its arguments: secrets (and the directories that hold them, for tools
 * that copy or read whole trees), raw devices, /dev/tcp, and writes to protected places (./writes.ts),
 * including the files awk and sed scripts read and write. Symlinks made earlier in the same command
 * are followed (`links`).
 */
import { basename } from '../wrappers.js';
import { displayField, type CommandSite } from '../parse.js';
import { deny, type DenyVerdict } from './rules.js';
import { awkFiles, readSed, sedScripts } from './awk-sed.js';
import { normalizePath, RAW_DEVICE, resolveLinks, SECRET_DIRS, secretPath, type LinkMap } from './paths.js';
import { judgeWrite, teeInput, writeTargets } from './writes.js';

/** Tools that copy files: naming a secret directory copies its secrets. */
const COPIERS = new Set(['cp', 'scp', 'rsync', 'tar', 'zip', '7z', 'mv', 'rclone', 'sftp', 'curl', 'base64', 'xxd', 'gpg']);

/** Tools that read every file under a directory they are given. */
const DIR_READERS = new Set(['grep', 'egrep', 'fgrep', 'rg', 'ag', 'ack', 'strings', 'cat', 'head', 'tail', 'less', 'more', 'od', 'hexdump', 'xxd']);

/** Metadata tools that may name a raw device without reading its content. */
const DEVICE_METADATA = new Set([
  'ls',
  'lsblk',
  'blkid',
  'stat',
  'file',
  'df',
  'findmnt',
  'udevadm',
  'smartctl',
  'readlink',
  'realpath',
  'test',
  '[',
  'lsof',
  'fuser',
  'du',
  'echo',
  'printf',
  'grep',
]);

/** Paths named in the arguments: secrets, raw devices, /dev/tcp, writes to protected places. */
export function judgePaths(level: string[], site: CommandSite, links: LinkMap): DenyVerdict | null {
  const name = basename(level[0] ?? '');
  const args = level.slice(1);
  const writes = new Set(writeTargets(name, args));
  const teeText = name === 'tee' && args.some((w) => /^-[a-zA-Z]*a/.test(w) || w === '--append') ? teeInput(site) : null;
  for (const t of writes) {
    const v = judgeWrite(t, site.cwd, links, name, teeText);
    if (v) return v;
  }
  // dd names its output as of=PATH
  if (name === 'dd') for (const t of [...writes]) writes.add(`of=${t}`);
  for (const a of args) {
    if (a.includes('/dev/tcp/') || a.includes('/dev/udp/')) return deny('reverse-shell', '/dev/tcp');
    const secret = secretPath(a, site.cwd, links);
    if (secret) return deny('secret-file', secret);
    const p = resolveLinks(normalizePath(a.replace(/^(if|of|--?[\w-]+)=/, ''), site.cwd[0] ?? ''), links);
    if ((COPIERS.has(name) || DIR_READERS.has(name)) && SECRET_DIRS.test(p)) return deny('secret-file', `${name} of ${displayField(p)}`);
    if (RAW_DEVICE.test(p) && !DEVICE_METADATA.has(name)) return deny(writes.has(a) ? 'device-write' : 'raw-device', `${name} ${displayField(p)}`);
  }
  if (['awk', 'gawk', 'mawk', 'nawk'].includes(name)) {
    const files = awkFiles(args);
    for (const f of files.reads) {
      const secret = secretPath(f, site.cwd, links);
      if (secret) return deny('secret-file', `awk reads ${secret}`);
    }
    for (const f of files.writes) {
      const v = judgeWrite(f, site.cwd, links, 'awk print >');
      if (v) return v;
    }
  }
  if (name === 'sed' || name === 'gsed') {
    for (const s of sedScripts(args)) {
      const r = readSed(s);
      for (const f of r.reads) {
        const secret = secretPath(f, site.cwd, links);
        if (secret) return deny('secret-file', `sed r ${secret}`);
      }
      for (const f of r.writes) {
        const v = judgeWrite(f, site.cwd, links, 'sed w');
        if (v) return v;
      }
    }
  }
  return null;
}
