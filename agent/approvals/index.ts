/**
 * The approvals and questions of agent/approvals/, re-exported so importers keep their path:
 * broker.ts (asking, and the wiring of the rest), clicks.ts, host-decisions.ts and typed-answers.ts (the
 * ways of deciding), recorder.ts (decide once, update the cards, wake), authority.ts and requester.ts (who
 * may decide), reshow.ts (cards again after a restart), cards.ts (layout), wording.ts (outcome lines,
 * notices), audit-events.ts, store.ts (requests over the store's ApprovalRepo), delivery.ts (where a card
 * goes), decision-bus.ts, waits.ts and expiry-watch.ts (wake-ups, expiry across processes).
 */
export {
  ApprovalBroker,
  newToken,
} from './broker.js';
export { InProcessDecisionBus, SignalDecisionBus } from './decision-bus.js';
export { ApprovalStore } from './store.js';
export { Decision, type ClickResult } from './wording.js';
