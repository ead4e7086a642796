/**
 * Public API of the configuration layer: metallb.io CRs (+ Nodes, Namespaces, Secrets) to the
 * effective configuration MetalLB v0.16.1 builds, with every rejection of its parser, BGP-mode
 * checks and admission webhooks.
 */
export * from './types.ts';
export { parsePool, parseAddressEntry, blocksOverlap, formatBlock } from './pool.ts';
export {
  parseConfig,
  collectConfigErrors,
  TransientConfigError,
  parseBFDProfile,
  parsePeer,
  compatibleLocalPref,
  sameL2Advertisement,
  type BGPMode,
  type ParseOptions,
} from './parse.ts';
export { validateNative, validateFRR, resetTransient, peerIdentifier } from './validate.ts';
export {
  admissionReview,
  clusterValidation,
  WEBHOOK_KINDS,
  type AdmissionRequest,
  type AdmissionDecision,
  type ClusterValidation,
} from './webhook.ts';
export { effectiveSummary, poolSummary, peerSummary, bfdSummary, type Json } from './summary.ts';
export { parseCommunity, isCommunityError, type Community, type CommunityParseError } from './community.ts';
export { parseDurationNs, nsToSeconds } from './duration.ts';
export { configWarnings, type ConfigWarning } from './warnings.ts';
export {
  parseSelector,
  parseSelectorList,
  checkDuplicateSelectors,
  checkDuplicateStrings,
  matchesAny,
} from '../labels.ts';
