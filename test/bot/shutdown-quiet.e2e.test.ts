// The real process stopped by SIGTERM / SIGINT during start-up and idle after an answer (test/bot/shutdown/stops.ts).
import { describeStops } from './shutdown/stops.js';

describeStops(['start-up', 'idle']);
