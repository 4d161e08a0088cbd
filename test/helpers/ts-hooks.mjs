/**
 * Node module hooks that run the TypeScript sources in a child process, for tests that need a real
 * process (exit codes, signals): `node --import <this folder>/register-ts.mjs bot/main.ts`.
 * `.js` imports resolve to the `.ts` file next to them (as tsc's output would); `.ts` files are
 * stripped of types with @swc/core, as jest does with @swc/jest.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync } from '@swc/core';

/**
 * Stripped sources are kept by content hash: a test that starts the bot 60 times would otherwise
 * compile every module 60 times (most of a start on a busy 2-core machine). A changed file has a new
 * hash; entries are written to a temporary name and renamed, so a reader never sees half a file.
 */
const SWC_OPTIONS = { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } };
const CACHE = join(tmpdir(), `gatehouse-ts-cache-${typeof process.getuid === 'function' ? process.getuid() : 'user'}`);
mkdirSync(CACHE, { recursive: true, mode: 0o700 });

function strip(filename) {
  const source = readFileSync(filename, 'utf8');
  const key = createHash('sha256').update(JSON.stringify(SWC_OPTIONS)).update('\0').update(filename).update('\0').update(source).digest('hex');
  const cached = join(CACHE, `${key}.js`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    // not compiled yet
  }
  const { code } = transformSync(source, { filename, ...SWC_OPTIONS });
  const temp = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  try {
    writeFileSync(temp, code, { mode: 0o600 });
    renameSync(temp, cached);
  } catch {
    // a cache that cannot be written only costs time
  }
  return code;
}

export async function resolve(specifier, context, next) {
  if (/^(\.{1,2}\/|\/|file:)/.test(specifier) && specifier.endsWith('.js') && context.parentURL) {
    const url = new URL(specifier, context.parentURL);
    const ts = new URL(url.href.replace(/\.js$/, '.ts'));
    if (!existsSync(fileURLToPath(url)) && existsSync(fileURLToPath(ts))) return next(ts.href, context);
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  return { format: 'module', source: strip(fileURLToPath(url)), shortCircuit: true };
}
