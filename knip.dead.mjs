// `npm run lint:dead` (part of `npm test`): knip.json's analysis (same entry points), failing on unused
// files anywhere and on unused exports in policies/ and adapters/, which have been cleaned out. The areas
// below still have unused exports: `npx knip` lists them all. Take an area off the list once it is clean.
import { readFileSync } from 'node:fs';

const base = JSON.parse(readFileSync(new URL('./knip.json', import.meta.url), 'utf8'));
const notYetClean = ['agent/**', 'bot/**', 'bench/**', 'test/**'];

export default { ...base, ignoreIssues: Object.fromEntries(notYetClean.map((glob) => [glob, ['exports', 'types']])) };
