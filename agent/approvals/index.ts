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
  HOST_OPERATOR,
  newToken,
  TOKEN_PATTERN,
  type ApprovalBrokerOptions,
  type ApprovalCardInput,
  type QuestionCardInput,
} from './broker.js';
export { DECISION_TOPIC, InProcessDecisionBus, SignalDecisionBus, type DecisionBus } from './decision-bus.js';
export { APPROVAL_TOPIC } from './expiry-watch.js';
export { ApprovalStore, type LoadedRequest, type StoredRequest } from './store.js';
export { outcomeLine, Decision, noticeFor, type ApprovalOutcome, type ClickResult } from './wording.js';
