/**
 * Node module hooks that run the TypeScript sources in a child process, for tests that need a real
 * process (exit codes, signals): `node --import <this folder>/register-ts.mjs bot/main.ts`.
 * `.js` imports resolve to the `.ts` file next to them (as tsc's output would); `.ts` files are
 * stripped of types with @swc/core, as jest does with @swc/jest.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transformSync } from '@swc/core';

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
  const filename = fileURLToPath(url);
  const { code } = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'es6' },
  });
  return { format: 'module', source: code, shortCircuit: true };
}
