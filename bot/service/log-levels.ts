/** The log levels (GATEHOUSE_LOG_LEVEL), apart from bot/service/log.ts so reading the environment does not load pino. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevelSetting = (typeof LOG_LEVELS)[number];
