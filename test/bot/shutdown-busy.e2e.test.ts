// The real process stopped by SIGTERM / SIGINT while the model thinks, mid-stream and while an approval waits (test/bot/shutdown/stops.ts).
import { describeStops } from './shutdown/stops.js';

describeStops(['mid-run', 'mid-stream', 'approval wait']);
