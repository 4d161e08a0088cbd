// `npm run lint:dead` (part of `npm test`): knip.json's analysis (same entry points), failing on unused
// files, unused exports and unused exported types anywhere in the tree. `npx knip` shows the same list
// with unused dependencies too.
import { readFileSync } from 'node:fs';

export default JSON.parse(readFileSync(new URL('./knip.json', import.meta.url), 'utf8'));
