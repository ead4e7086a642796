/**
 * Public API of the configuration layer: metallb.io CRs (+ Nodes, Namespaces, Secrets) to the
 * effective configuration MetalLB v0.16.1 builds, with every rejection of its parser, BGP-mode
 * checks and admission webhooks.
 */
export * from './types.ts';
export { parsePool, parseAddressEntry, blocksOverlap, formatBlock } from './pool.ts';
export { parseSelector, parseSelectorList, checkDuplicateSelectors, checkDuplicateStrings, matchesAny } from '../labels.ts';
