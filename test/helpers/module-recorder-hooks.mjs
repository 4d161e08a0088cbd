// Loader hooks for module-recorder.mjs: appends each loaded module's URL to the log file.
import { appendFileSync } from 'node:fs';

let file;
export function initialize(data) {
  file = data.file;
}

export async function load(url, context, nextLoad) {
  const result = await nextLoad(url, context);
  if (file && url.startsWith('file:')) appendFileSync(file, `esm ${url}\n`);
  return result;
}
