// The house's floors, checked on every `npm test` (test/house/layers.test.ts runs this config):
// bot -> adapters -> agent -> policies, never upward; no import cycles; each platform library only
// inside its own adapter folder. A violation names the two files and the rule.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'An import cycle (type-only imports too) hides which module is the lower one.',
      from: {},
      to: { circular: true },
    },
    { name: 'policies-is-the-ground-floor', severity: 'error', from: { path: '^policies/' }, to: { path: '^(agent|adapters|bot)/' } },
    { name: 'agent-does-not-know-adapters-or-bot', severity: 'error', from: { path: '^agent/' }, to: { path: '^(adapters|bot)/' } },
    { name: 'adapters-do-not-know-bot', severity: 'error', from: { path: '^adapters/' }, to: { path: '^bot/' } },
    { name: 'slack-library-only-in-its-adapter', severity: 'error', from: { pathNot: '^adapters/slack/' }, to: { path: 'node_modules/@slack/' } },
    {
      name: 'telegram-library-only-in-its-adapter',
      severity: 'error',
      from: { pathNot: '^adapters/telegram/' },
      to: { path: 'node_modules/(grammy|@grammyjs)/' },
    },
    {
      name: 'discord-library-only-in-its-adapter',
      severity: 'error',
      from: { pathNot: '^adapters/discord/' },
      to: { path: 'node_modules/(discord\\.js|@discordjs)/' },
    },
    {
      name: 'no-unresolvable-imports',
      severity: 'error',
      from: {},
      comment: 'mdast is a types-only package (@types/mdast).',
      to: { couldNotResolve: true, pathNot: '^mdast$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
  },
};
