// `node --import` entry that records every module file a process loads, one line each
// ("esm <file URL>" or "cjs <path>", as it loads), in the file named by MODULE_RECORDER_LOG
// (test/bot/lazy-loading.e2e.test.ts and bench/startup.ts read it). ES modules are seen by a loader
// hook (module-recorder-hooks.mjs, in the loader thread), CommonJS ones as they compile. Worker
// threads are not followed. Nothing is recorded when the variable is unset.
import { appendFileSync } from 'node:fs';
import Module from 'node:module';

const file = process.env.MODULE_RECORDER_LOG;
if (file) {
  Module.register('./module-recorder-hooks.mjs', import.meta.url, { data: { file } });
  // CommonJS files (required by CommonJS packages, which the ESM hooks do not see).
  const extensions = Module._extensions;
  for (const ext of ['.js', '.cjs', '.json', '.node']) {
    const load = extensions[ext];
    if (!load) continue;
    extensions[ext] = function recorded(module, filename) {
      appendFileSync(file, `cjs ${filename}\n`);
      return load.call(this, module, filename);
    };
  }
}
