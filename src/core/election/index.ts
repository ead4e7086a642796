/**
 * The speaker's decisions: the Layer 2 election and the BGP decision, as plain values with
 * MetalLB v0.16.1's reason strings and a trace (see types.ts).
 */
export * from './types.ts';
export { electL2, decideL2ForNode, l2AdsForService, interfacesFor, type L2Input } from './l2.ts';
export { evaluateBGP, decideBGP, decideBGPForNode, aggregatedPrefix, type BGPInput } from './bgp.ts';
export { aliveSpeakers, isSpeakerPod } from './speakers.ts';
export { checkService, poolForIPs, type ServiceChecks } from './service.ts';
export {
  buildEndpointIndex,
  slicesFor,
  usableEndpoints,
  endpointNodes,
  endpointCanServe,
  hasUsableEndpoint,
  hasHealthyEndpoint,
  type Endpoint,
  type EndpointIndex,
} from './endpoints.ts';
export { buildElectionIndex, type ElectionIndex, type NodeInfo } from './state-index.ts';
export { electionDigestHex } from './hash.ts';
