/**
 * Small helpers for the adapters' environment parsers (descriptor.ts files). No platform library.
 *
 * Contract: `envValue` treats an empty or blank value (`KEY=` in .env) as unset. `httpUrl` gives an
 * http(s) URL or records a problem naming the variable; it never echoes the value (it may carry
 * credentials), only its scheme.
 */
import type { EnvProblem } from '../types.js';

export function envValue(env: Readonly<Record<string, string | undefined>>, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
}

export function httpUrl(name: string, value: string, problems: EnvProblem[]): URL | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push({ path: name, message: 'not a valid URL; expected something like https://host[:port][/path]' });
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problems.push({ path: name, message: `expected an http:// or https:// URL, got scheme "${url.protocol}"` });
    return undefined;
  }
  return url;
}
