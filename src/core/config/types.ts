/**
 * The effective MetalLB configuration: what MetalLB v0.16.1's `internal/config` builds from the
 * metallb.io CRs (plus Nodes, Namespaces and Secrets). Produced by `parseConfig`
 * (src/core/config/parse.ts); consumed by the allocator, the election and the commands.
 */
import type { CIDR } from '../ip.ts';
import type { IPAddressPool, L2Advertisement, BGPAdvertisement, BGPPeer, BFDProfile } from '../kube.ts';
import type { Selector } from '../labels.ts';

/** A parsed label selector (defined by its parser, src/core/labels.ts). */
export type { Selector };

/**
 * One CIDR block as MetalLB's rules see it (Go's `*net.IPNet`): `cidr` is the printed,
 * normalised block; `maskBits` the mask length the rules use (equal to `cidr.prefix`, except for
 * an IPv4-mapped IPv6 CIDR written `::ffff:a.b.c.d/n` with n >= 96, which prints as the IPv4
 * block of length n - 96 but keeps length n for aggregation and overlap rules); `mapped` marks
 * that case (Go keeps a 16-byte network for it).
 */
export interface PoolBlock {
  readonly cidr: CIDR;
  readonly maskBits: number;
  readonly mapped: boolean;
}

/** One address entry of a pool, with the CIDR blocks it yields (in order). */
export interface PoolRange {
  /** The entry exactly as written in `spec.addresses`. */
  readonly entry: string;
  readonly cidrs: readonly CIDR[];
  /** The same blocks as `cidrs`, with the mask length MetalLB's rules use. */
  readonly blocks: readonly PoolBlock[];
}

/** `spec.serviceAllocation` of a pool, resolved. */
export interface ServiceAllocation {
  /** 0 when unset; a lower non-zero number is a higher priority. */
  readonly priority: number;
  /** `namespaces` plus the Namespace objects matched by `namespaceSelectors`. */
  readonly namespaces: ReadonlySet<string>;
  /** ORed; empty means no service selection by labels. */
  readonly serviceSelectors: readonly Selector[];
}

/** An L2Advertisement attached to a pool. */
export interface L2Adv {
  /** `metadata.name` of the L2Advertisement (not part of MetalLB's struct; kept for explanations). */
  readonly name: string;
  /** Names of the Nodes it applies to. */
  readonly nodes: ReadonlySet<string>;
  /** `spec.interfaces` (empty when allInterfaces). */
  readonly interfaces: readonly string[];
  readonly allInterfaces: boolean;
  readonly serviceSelectors: readonly Selector[];
  /** The CR it came from. */
  readonly source: L2Advertisement;
}

/** A BGPAdvertisement attached to a pool. */
export interface BGPAdv {
  readonly name: string;
  /** Defaults 32 / 128. */
  readonly aggregationLength: number;
  readonly aggregationLengthV6: number;
  readonly localPref: number;
  /** Canonical community strings (aliases resolved). */
  readonly communities: readonly string[];
  readonly peers: readonly string[];
  readonly nodes: ReadonlySet<string>;
  readonly serviceSelectors: readonly Selector[];
  readonly source: BGPAdvertisement;
}

/** An IPAddressPool. */
export interface Pool {
  readonly name: string;
  readonly ranges: readonly PoolRange[];
  /** All blocks of all ranges, in order. */
  readonly cidrs: readonly CIDR[];
  readonly autoAssign: boolean;
  readonly avoidBuggyIPs: boolean;
  /** Absent when the pool has no `spec.serviceAllocation`. */
  readonly serviceAllocation?: ServiceAllocation;
  readonly l2Advertisements: readonly L2Adv[];
  readonly bgpAdvertisements: readonly BGPAdv[];
  readonly labels: Readonly<Record<string, string>>;
  readonly source: IPAddressPool;
}

/** A BGPPeer as parsed. Durations in seconds. */
export interface Peer {
  readonly name: string;
  readonly myASN: number;
  readonly asn: number;
  readonly dynamicASN: string;
  readonly address?: string;
  readonly interface?: string;
  readonly sourceAddress?: string;
  readonly port: number;
  readonly holdTimeSeconds?: number;
  readonly keepaliveTimeSeconds?: number;
  readonly connectTimeSeconds?: number;
  readonly routerID?: string;
  readonly nodeSelectors: readonly Selector[];
  readonly password: string;
  readonly bfdProfile: string;
  readonly ebgpMultiHop: boolean;
  readonly vrf: string;
  readonly enableGracefulRestart: boolean;
  /** `spec.dualStackAddressFamily`. */
  readonly dualStackAddressFamily: boolean;
  /** `spec.disableMP` (deprecated, no effect in MetalLB v0.16). */
  readonly disableMP: boolean;
  /** `spec.localASN`, 0 when unset. */
  readonly localASN: number;
  /** `spec.passwordSecret` as written (absent when the spec has none). */
  readonly passwordSecret?: { readonly name?: string; readonly namespace?: string };
  /** The password read from the referenced basic-auth Secret (decoded), "" when none. */
  readonly secretPassword: string;
  readonly source: BGPPeer;
}

/** A BFDProfile as parsed (all values in their CR units, ms for intervals). */
export interface BFDProfileConfig {
  readonly name: string;
  /** Milliseconds; absent when unset (FRR's default applies). */
  readonly receiveInterval?: number;
  readonly transmitInterval?: number;
  readonly detectMultiplier?: number;
  readonly echoInterval?: number;
  readonly minimumTtl?: number;
  readonly echoMode: boolean;
  readonly passiveMode: boolean;
  readonly source: BFDProfile;
}

/** The effective configuration. */
export interface Config {
  /** Pools by name, in CR order. */
  readonly pools: ReadonlyMap<string, Pool>;
  readonly peers: ReadonlyMap<string, Peer>;
  readonly bfdProfiles: ReadonlyMap<string, BFDProfileConfig>;
  /** Namespace name → names of the pools reserved for it (MetalLB's `ByNamespace`). */
  readonly poolsByNamespace: ReadonlyMap<string, readonly string[]>;
  /** Names of the pools with service selectors (MetalLB's `ByServiceSelector`). */
  readonly poolsByServiceSelector: readonly string[];
}
