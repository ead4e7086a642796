/**
 * The normalized, implementation-neutral view of a parsed configuration (the `effective` shape of
 * the conformance fixtures, which test/conformance/config.ts compares), also fit for
 * `-o json|yaml` output. Plain JSON values only.
 */
import { formatCIDR } from '../ip.ts';
import { compareStrings } from '../labels.ts';
import type { BFDProfileConfig, BGPAdv, Config, L2Adv, Peer, Pool } from './types.ts';

/** A JSON object. */
export type Json = { [key: string]: unknown };

const sortedNames = (s: ReadonlySet<string>): string[] => [...s].sort(compareStrings);

function l2Summary(a: L2Adv): Json {
  return {
    nodes: sortedNames(a.nodes),
    ...(a.interfaces.length === 0 ? { allInterfaces: true } : { interfaces: [...a.interfaces] }),
    ...(a.serviceSelectors.length ? { serviceSelectors: a.serviceSelectors.map((s) => s.text).sort(compareStrings) } : {}),
  };
}

function bgpSummary(a: BGPAdv): Json {
  return {
    name: a.name,
    aggregationLength: a.aggregationLength,
    aggregationLengthV6: a.aggregationLengthV6,
    ...(a.localPref ? { localPref: a.localPref } : {}),
    ...(a.communities.length ? { communities: [...a.communities].sort(compareStrings) } : {}),
    ...(a.peers.length ? { peers: [...a.peers] } : {}),
    nodes: sortedNames(a.nodes),
    ...(a.serviceSelectors.length ? { serviceSelectors: a.serviceSelectors.map((s) => s.text).sort(compareStrings) } : {}),
  };
}

/** One pool: cidrs, autoAssign, avoidBuggyIPs, serviceAllocation?, l2Advertisements?, bgpAdvertisements?. */
export function poolSummary(p: Pool): Json {
  const sa = p.serviceAllocation;
  return {
    cidrs: p.cidrs.map(formatCIDR),
    autoAssign: p.autoAssign,
    avoidBuggyIPs: p.avoidBuggyIPs,
    ...(sa
      ? {
          serviceAllocation: {
            priority: sa.priority,
            namespaces: sortedNames(sa.namespaces),
            serviceSelectors: sa.serviceSelectors.map((s) => s.text),
          },
        }
      : {}),
    ...(p.l2Advertisements.length ? { l2Advertisements: p.l2Advertisements.map(l2Summary) } : {}),
    ...(p.bgpAdvertisements.length ? { bgpAdvertisements: p.bgpAdvertisements.map(bgpSummary) } : {}),
  };
}

/** One peer; zero/empty/false fields omitted, nodeSelectors omitted for the single match-everything selector. */
export function peerSummary(p: Peer): Json {
  const onlyEverything = p.nodeSelectors.length === 1 && p.nodeSelectors[0].text === '';
  const out: Json = { myASN: p.myASN };
  if (p.asn) out.asn = p.asn;
  if (p.dynamicASN) out.dynamicASN = p.dynamicASN;
  if (p.address) out.address = p.address;
  if (p.interface) out.interface = p.interface;
  if (p.sourceAddress) out.sourceAddress = p.sourceAddress;
  if (p.port) out.port = p.port;
  if (p.holdTimeSeconds !== undefined) out.holdTimeSeconds = p.holdTimeSeconds;
  if (p.keepaliveTimeSeconds !== undefined) out.keepaliveTimeSeconds = p.keepaliveTimeSeconds;
  if (p.connectTimeSeconds !== undefined) out.connectTimeSeconds = p.connectTimeSeconds;
  if (p.routerID) out.routerID = p.routerID;
  if (!onlyEverything && p.nodeSelectors.length) out.nodeSelectors = p.nodeSelectors.map((s) => s.text);
  if (p.password) out.password = p.password;
  if (p.passwordSecret) out.passwordSecret = { ...p.passwordSecret };
  if (p.secretPassword) out.secretPassword = p.secretPassword;
  if (p.bfdProfile) out.bfdProfile = p.bfdProfile;
  if (p.enableGracefulRestart) out.enableGracefulRestart = true;
  if (p.ebgpMultiHop) out.ebgpMultiHop = true;
  if (p.dualStackAddressFamily) out.dualStackAddressFamily = true;
  if (p.disableMP) out.disableMP = true;
  if (p.vrf) out.vrf = p.vrf;
  if (p.localASN) out.localASN = p.localASN;
  return out;
}

/** One BFD profile: the set values, echoMode/passiveMode only when true. */
export function bfdSummary(b: BFDProfileConfig): Json {
  const out: Json = {};
  for (const k of ['receiveInterval', 'transmitInterval', 'detectMultiplier', 'echoInterval', 'minimumTtl'] as const) {
    if (b[k] !== undefined) out[k] = b[k];
  }
  if (b.echoMode) out.echoMode = true;
  if (b.passiveMode) out.passiveMode = true;
  return out;
}

/** The whole configuration: {pools, peers, bfdProfiles, poolsByNamespace, poolsByServiceSelector}. */
export function effectiveSummary(c: Config): Json {
  const map = <T>(m: ReadonlyMap<string, T>, f: (v: T) => unknown): Json => Object.fromEntries([...m].map(([k, v]) => [k, f(v)]));
  return {
    pools: map(c.pools, poolSummary),
    peers: map(c.peers, peerSummary),
    bfdProfiles: map(c.bfdProfiles, bfdSummary),
    poolsByNamespace: map(c.poolsByNamespace, (v) => [...v]),
    poolsByServiceSelector: [...c.poolsByServiceSelector],
  };
}
