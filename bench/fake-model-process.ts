/**
 * The fake Messages server in its own process, answering every request at once with a short text.
 * Benchmarks fork it so the server does not compete with the code being measured for one core.
 * Sends its base URL to the parent over IPC; exits when the parent goes.
 */
import { startFakeAnthropic } from '../test/fakes/anthropic.js';

const fake = await startFakeAnthropic({ apiKey: 'bench' });
fake.recordRequests = false;
fake.setHandler(() => ({ text: 'ok' }));
process.send?.(fake.url);
process.on('disconnect', () => void fake.close().then(() => process.exit(0)));
