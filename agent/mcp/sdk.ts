/**
 * Everything of MCP that loads the SDK, in one module that ./manager.ts imports when it opens its first
 * connection: a bot with no MCP server configured (or none used yet) never loads the SDK.
 */
export { Client } from '@modelcontextprotocol/sdk/client/index.js';
export { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
export { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
export { launchSpec, LaunchError } from './launch.js';
export { ProcessTransport } from './process-transport.js';
