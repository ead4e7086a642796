/**
 * The configuration parser: MetalLB v0.16.1 `config.For` (internal/config/config.go) on a
 * ClusterState. Order: BFDProfiles, BGPPeers, Community aliases, IPAddressPools (own rules,
 * name, overlaps), L2Advertisements, identical BGPAdvertisements, each BGPAdvertisement (own
 * rules, then per attached pool), and last the BFD-echo-with-IPv6 rule.
 *
 * One engine serves both `parseConfig` (stops at the first violation, as MetalLB does) and
 * `collectConfigErrors` (keeps going, skipping what failed, to report every violation). Until the
 * first violation both runs are identical, so the collector reports nothing exactly when the
 * parser succeeds.
 */
import { type Checked, ConfigError, quote, TransientConfigError } from '../errors.ts';
import type { BGPAdvertisement, ClusterState, Community as CommunityCR, IPAddressPool, KubeObject, L2Advertisement, LabelSelector, Node } from '../kube.ts';
import { objectRef } from '../kube.ts';
import { checkDuplicateSelectors, checkDuplicateStrings, compareStrings, parseSelector } from '../labels.ts';
import { isCommunityError, parseCommunity } from './community.ts';
import { blocksOverlap, formatBlock, parsePool } from './pool.ts';
import type { BFDProfileConfig, BGPAdv, Config, L2Adv, Peer, Pool, PoolBlock, Selector } from './types.ts';
import { validateFRR, validateNative } from './validate.ts';
import { parseBFDProfile, parsePeer, peerIdentity } from './parse-peer.ts';

export { parseBFDProfile, parsePeer } from './parse-peer.ts';
export { TransientConfigError } from '../errors.ts';

/** BGP implementation mode: which compatibility check runs before parsing (MetalLB `ValidationFor`). */
export type BGPMode = 'native' | 'frr' | 'frr-k8s';

/** Options of parseConfig / collectConfigErrors. */
export interface ParseOptions {
  /** Run this mode's compatibility check first (`native`: validateNative; `frr`/`frr-k8s`: validateFRR). Absent: none. */
  mode?: BGPMode | string;
}

/** Where violations go: `strict` throws the first, otherwise they are collected. */
export interface ErrorSink {
  readonly strict: boolean;
  readonly errors: ConfigError[];
}

/** Reports a violation: throws in strict mode, records it otherwise. */
export function report(sink: ErrorSink, err: ConfigError): void {
  if (sink.strict) throw err;
  sink.errors.push(err);
}

/** A failed Checked: `detail` about `obj`. */
function rejected(obj: KubeObject, detail: string): { readonly ok: false; readonly error: ConfigError } {
  return { ok: false, error: new ConfigError(detail, objectRef(obj)) };
}

/**
 * `check()`'s value, or what it throws as a ConfigError naming `obj` (a ConfigError as it is):
 * the one place where the throwing checks of other modules (label selectors, pools, peers, BFD
 * profiles) become values.
 */
function attempt<T>(obj: KubeObject, check: () => T): Checked<T> {
  try {
    return { ok: true, value: check() };
  } catch (err) {
    return { ok: false, error: err instanceof ConfigError ? err : new ConfigError((err as Error).message, objectRef(obj)) };
  }
}

// ---------------------------------------------------------------------------------------------
// BFD profiles

/** Names of the Nodes selected by a selector list; all Nodes when the list is empty (MetalLB `selectedNodes`). */
function selectedNodes(nodes: readonly Node[], selectors: readonly Selector[] | undefined): Set<string> {
  const out = new Set<string>();
  for (const n of nodes) {
    const name = n.metadata?.name ?? '';
    if (!selectors || selectors.length === 0 || selectors.some((s) => s.matches(n.metadata?.labels))) out.add(name);
  }
  return out;
}

/** The selectors of a list; throws (inside `attempt`) an Error naming the list at the first invalid one. */
function parseList(list: readonly LabelSelector[] | null | undefined, what: string): Selector[] {
  return (list ?? []).map((s) => {
    try {
      return parseSelector(s);
    } catch (err) {
      throw new Error(`invalid ${what} ${quote(s)}: ${(err as Error).message}`);
    }
  });
}

function sortedByText(sels: Selector[]): Selector[] {
  return [...sels].sort((a, b) => compareStrings(a.text, b.text));
}

/**
 * The pools an advertisement is attached to, in attachment order: every pool when it has
 * neither `ipAddressPools` nor `ipAddressPoolSelectors`; otherwise the named pools that exist,
 * then the pools (in CR order) whose labels match a selector. A pool both named and matched
 * appears twice.
 */
function attachedPools(
  spec: { ipAddressPools?: string[] | null; ipAddressPoolSelectors?: LabelSelector[] | null } | undefined,
  poolSelectors: readonly Selector[],
  poolCRs: readonly IPAddressPool[],
  pools: ReadonlyMap<string, Pool>,
): Pool[] {
  const names = spec?.ipAddressPools ?? [];
  if (names.length === 0 && (spec?.ipAddressPoolSelectors ?? []).length === 0) return [...pools.values()];
  const selected: string[] = [];
  for (const cr of poolCRs) {
    const n = cr.metadata?.name ?? '';
    if (!selected.includes(n) && poolSelectors.some((s) => s.matches(cr.metadata?.labels))) selected.push(n);
  }
  const out: Pool[] = [];
  for (const n of [...names, ...selected]) {
    const p = pools.get(n);
    if (p) out.push(p);
  }
  return out;
}

interface ParsedL2 {
  adv: L2Adv;
  poolSelectors: Selector[];
}

/**
 * One L2Advertisement by its own rules (MetalLB `l2AdvertisementFromCR`): no repeated pool name,
 * no duplicate then no invalid `ipAddressPoolSelectors` / `nodeSelectors` / `serviceSelectors`.
 */
function parseL2Adv(cr: L2Advertisement, nodes: readonly Node[]): Checked<ParsedL2> {
  const spec = cr.spec ?? {};
  return attempt(cr, () => {
    checkDuplicateStrings(spec.ipAddressPools, 'ipAddressPools');
    checkDuplicateSelectors(spec.ipAddressPoolSelectors, 'ipAddressPoolSelectors');
    checkDuplicateSelectors(spec.nodeSelectors, 'nodeSelectors');
    checkDuplicateSelectors(spec.serviceSelectors, 'serviceSelectors');
    const nodeSels = parseList(spec.nodeSelectors, 'nodeSelectors');
    const serviceSelectors = sortedByText(parseList(spec.serviceSelectors, 'serviceSelectors'));
    const poolSelectors = parseList(spec.ipAddressPoolSelectors, 'ipAddressPoolSelectors');
    const interfaces = [...(spec.interfaces ?? [])];
    return {
      adv: {
        name: cr.metadata?.name ?? '',
        nodes: selectedNodes(nodes, nodeSels),
        interfaces,
        allInterfaces: interfaces.length === 0,
        serviceSelectors,
        source: cr,
      },
      poolSelectors,
    };
  });
}

function setEqual(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

/** MetalLB `containsAdvertisement`: same all-interfaces flag, node set, interface set and service selectors. */
export function sameL2Advertisement(a: L2Adv, b: L2Adv): boolean {
  return (
    a.allInterfaces === b.allInterfaces
    && setEqual(a.nodes, b.nodes)
    && setEqual(new Set(a.interfaces), new Set(b.interfaces))
    && a.serviceSelectors.length === b.serviceSelectors.length
    && a.serviceSelectors.every((s, i) => s.text === b.serviceSelectors[i].text)
  );
}

interface ParsedBGP {
  adv: BGPAdv;
  poolSelectors: Selector[];
}

/** A BGPAdvertisement rejected for a reason already reported (a Community alias whose definition was rejected). */
const ALREADY_REPORTED = { ok: false, error: null } as const;

/**
 * One BGPAdvertisement by its own rules (MetalLB `bgpAdvertisementFromCR`). `aliases` maps
 * Community alias names to canonical values; `brokenAliases` are alias names whose definition
 * was rejected: an advertisement using one is ALREADY_REPORTED (error null), not reported again.
 */
function parseBGPAdv(cr: BGPAdvertisement, aliases: ReadonlyMap<string, string>, nodes: readonly Node[], brokenAliases: ReadonlySet<string>): Checked<ParsedBGP> | typeof ALREADY_REPORTED {
  const spec = cr.spec ?? {};
  const name = cr.metadata?.name ?? '';
  const duplicates = attempt(cr, () => {
    checkDuplicateStrings(spec.ipAddressPools, 'ipAddressPools');
    checkDuplicateStrings(spec.communities, 'community');
    checkDuplicateStrings(spec.peers, 'peers');
    checkDuplicateSelectors(spec.ipAddressPoolSelectors, 'ipAddressPoolSelectors');
    checkDuplicateSelectors(spec.nodeSelectors, 'nodeSelectors');
    checkDuplicateSelectors(spec.serviceSelectors, 'serviceSelectors');
  });
  if (!duplicates.ok) return duplicates;
  const hasServiceSelectors = (spec.serviceSelectors ?? []).length > 0;
  const aggLen = spec.aggregationLength ?? 32;
  const aggLenV6 = spec.aggregationLengthV6 ?? 128;
  if (hasServiceSelectors && spec.aggregationLength != null && spec.aggregationLength !== 32) {
    return rejected(cr, `serviceSelectors and aggregationLength are mutually exclusive, both cannot be set in ${name}`);
  }
  if (hasServiceSelectors && spec.aggregationLengthV6 != null && spec.aggregationLengthV6 !== 128) {
    return rejected(cr, `serviceSelectors and aggregationLengthV6 are mutually exclusive, both cannot be set in ${name}`);
  }
  if (aggLen > 32) return rejected(cr, `invalid aggregation length ${aggLen} for IPv4`);
  if (aggLenV6 > 128) return rejected(cr, `invalid aggregation length ${aggLenV6} for IPv6`);
  const communities = new Set<string>();
  for (const c of spec.communities ?? []) {
    const alias = aliases.get(c);
    if (alias !== undefined) {
      communities.add(alias);
      continue;
    }
    const parsed = parseCommunity(c);
    if (isCommunityError(parsed)) {
      if (parsed.error === 'format' && brokenAliases.has(c)) return ALREADY_REPORTED;
      if (parsed.error === 'format') {
        return { ok: false, error: new TransientConfigError(`invalid community "${c}" in BGP advertisement: neither a Community alias nor a community value`, objectRef(cr)) };
      }
      return rejected(cr, `invalid community "${c}" in BGP advertisement: ${parsed.message}`);
    }
    communities.add(parsed.text);
  }
  return attempt(cr, () => {
    const nodeSels = parseList(spec.nodeSelectors, 'nodeSelectors');
    const serviceSelectors = sortedByText(parseList(spec.serviceSelectors, 'serviceSelectors'));
    const poolSelectors = parseList(spec.ipAddressPoolSelectors, 'ipAddressPoolSelectors');
    return {
      adv: {
        name,
        aggregationLength: aggLen,
        aggregationLengthV6: aggLenV6,
        localPref: spec.localPref ?? 0,
        communities: [...communities].sort(compareStrings),
        peers: [...(spec.peers ?? [])],
        nodes: selectedNodes(nodes, nodeSels),
        serviceSelectors,
        source: cr,
      },
      poolSelectors,
    };
  });
}

function blocksOf(pool: Pool): PoolBlock[][] {
  // MetalLB keys a pool's blocks by entry (a map), so an entry written twice counts once.
  const seen = new Set<string>();
  const out: PoolBlock[][] = [];
  for (const r of pool.ranges) {
    if (seen.has(r.entry)) continue;
    seen.add(r.entry);
    out.push([...r.blocks]);
  }
  return out;
}

/** MetalLB `isAggrLengthDifferent`: aggregation lengths differ for every address family the pool has. */
function aggregationLengthsDiffer(a: BGPAdv, b: BGPAdv, pool: Pool): boolean {
  let hasV4 = false;
  let hasV6 = false;
  for (const blocks of blocksOf(pool)) {
    if (blocks.length === 0) continue;
    if (blocks[0].cidr.family === 'ipv4') hasV4 = true;
    else hasV6 = true;
  }
  if (!hasV4 && !hasV6) return true;
  if (a.aggregationLength !== b.aggregationLength && !hasV6) return true;
  if (a.aggregationLengthV6 !== b.aggregationLengthV6 && !hasV4) return true;
  return a.aggregationLength !== b.aggregationLength && a.aggregationLengthV6 !== b.aggregationLengthV6;
}

/**
 * MetalLB `BGPAdvertisementsHaveCompatibleLocalPref`: two advertisements of one pool may carry
 * different localPrefs only if their aggregation lengths differ, their peer lists are disjoint
 * (both non-empty), or they share no node.
 */
export function compatibleLocalPref(a: BGPAdv, b: BGPAdv, pool: Pool): boolean {
  if (a.localPref === b.localPref) return true;
  if (aggregationLengthsDiffer(a, b, pool)) return true;
  if (a.peers.length > 0 && b.peers.length > 0 && !a.peers.some((p) => b.peers.includes(p))) return true;
  for (const n of a.nodes) if (b.nodes.has(n)) return false;
  return true;
}

/**
 * MetalLB `validateBGPAdvPerPool`: aggregation lengths fit every entry, localPref compatible.
 * The violation, naming the advertisement, or null.
 */
function checkBGPAdvForPool(adv: BGPAdv, pool: Pool): ConfigError | null {
  for (const [i, blocks] of blocksOf(pool).entries()) {
    if (blocks.length === 0) continue;
    const max = blocks[0].cidr.family === 'ipv4' ? adv.aggregationLength : adv.aggregationLengthV6;
    const lowest = Math.min(...blocks.map((b) => b.maskBits));
    if (max < lowest) {
      return new ConfigError(
        `invalid aggregation length ${max}: prefix ${lowest} in pool "${pool.name}" is more specific than the aggregation length for addresses ${[...new Set(pool.ranges.map((r) => r.entry))][i]}`,
        objectRef(adv.source),
      );
    }
  }
  if (adv.serviceSelectors.length > 0) return null;
  for (const other of pool.bgpAdvertisements) {
    if (other.serviceSelectors.length > 0) continue;
    if (!compatibleLocalPref(adv, other, pool)) {
      return new ConfigError(
        `invalid local preference ${adv.localPref} for pool "${pool.name}": local preference ${other.localPref} was already set by BGPAdvertisement "${other.name}" for the same type of BGP update (common pool, aggregation lengths, peers and nodes)`,
        objectRef(adv.source),
      );
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Deep equality (Go reflect.DeepEqual on decoded objects; absent and null are the same)

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  if (typeof a === 'object' && typeof b === 'object') {
    const ao = a as Record<string, unknown>;
    const bo = b as Record<string, unknown>;
    const keys = new Set([...Object.keys(ao), ...Object.keys(bo)]);
    for (const k of keys) if (!deepEqual(ao[k], bo[k])) return false;
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// The engine

type MutablePool = Pool & { l2Advertisements: L2Adv[]; bgpAdvertisements: BGPAdv[] };

/**
 * Runs the parser over `state`, reporting violations to `sink`; returns the configuration built
 * from what passed. In strict mode the first violation is thrown.
 */
export function runParser(state: ClusterState, sink: ErrorSink, opts: ParseOptions = {}): Config {
  if (opts.mode === 'native') validateNative(state, sink);
  else if (opts.mode === 'frr' || opts.mode === 'frr-k8s') validateFRR(state, sink);

  // BFD profiles
  const bfdProfiles = new Map<string, BFDProfileConfig>();
  const brokenBFD = new Set<string>();
  for (const cr of state.bfdProfiles) {
    const checked = attempt(cr, () => parseBFDProfile(cr));
    if (!checked.ok) {
      if (cr.metadata?.name) brokenBFD.add(cr.metadata.name);
      report(sink, checked.error);
      continue;
    }
    const parsed = checked.value;
    if (bfdProfiles.has(parsed.name)) {
      report(sink, new ConfigError(`duplicate bfd profile name ${parsed.name}`, objectRef(cr)));
      continue;
    }
    bfdProfiles.set(parsed.name, parsed);
  }

  // BGP peers
  const peers = new Map<string, Peer>();
  const peerIds = new Map<Peer, string>();
  for (const cr of state.bgpPeers) {
    const checked = attempt(cr, () => parsePeer(cr, state.secrets));
    if (!checked.ok) {
      report(sink, checked.error);
      continue;
    }
    const peer = checked.value;
    if (peer.bfdProfile !== '' && !bfdProfiles.has(peer.bfdProfile)) {
      if (!brokenBFD.has(peer.bfdProfile)) {
        report(sink, new TransientConfigError(`peer ${peer.name} referencing non existing bfd profile ${peer.bfdProfile}`, objectRef(cr)));
      }
      continue;
    }
    const id = peerIdentity(peer);
    if ([...peers.values()].some((p) => peerIds.get(p) === id)) {
      report(sink, new ConfigError(`peer ${peer.name} already exists: an earlier BGPPeer has the same name and spec`, objectRef(cr)));
      continue;
    }
    peerIds.set(peer, id);
    peers.set(peer.name, peer);
  }

  // Community aliases
  const aliases = new Map<string, string>();
  const brokenAliases = new Set<string>();
  for (const cr of state.communities as CommunityCR[]) {
    for (const alias of cr.spec?.communities ?? []) {
      const aliasName = alias?.name ?? '';
      const parsed = parseCommunity(alias?.value ?? '');
      if (isCommunityError(parsed)) {
        brokenAliases.add(aliasName);
        report(sink, new ConfigError(`parsing community "${aliasName}": ${parsed.message}`, objectRef(cr)));
        continue;
      }
      if (aliases.has(aliasName)) {
        report(sink, new ConfigError(`duplicate definition of community "${aliasName}"`, objectRef(cr)));
        continue;
      }
      aliases.set(aliasName, parsed.text);
    }
  }

  // Pools
  const pools = new Map<string, MutablePool>();
  const accepted: Array<{ block: PoolBlock; pool: string }> = [];
  for (const cr of state.ipAddressPools) {
    const checked = attempt(cr, () => parsePool(cr, state.namespaces));
    if (!checked.ok) {
      report(sink, checked.error);
      continue;
    }
    const pool = checked.value;
    if (pools.has(pool.name)) {
      report(sink, new ConfigError(`duplicate definition of pool "${pool.name}"`, objectRef(cr)));
      continue;
    }
    for (const block of pool.ranges.flatMap((r) => r.blocks)) {
      const clash = accepted.find((m) => blocksOverlap(block, m.block));
      if (clash) {
        report(
          sink,
          new ConfigError(
            `CIDR "${formatBlock(block)}" in pool "${pool.name}" overlaps with already defined CIDR "${formatBlock(clash.block)}"${clash.pool === pool.name ? ' of the same pool' : ` of pool "${clash.pool}"`}`,
            objectRef(cr),
          ),
        );
      }
      accepted.push({ block, pool: pool.name });
    }
    pools.set(pool.name, { ...pool, l2Advertisements: [], bgpAdvertisements: [] });
  }

  // L2 advertisements
  for (const cr of state.l2Advertisements) {
    const parsed = parseL2Adv(cr, state.nodes);
    if (!parsed.ok) {
      report(sink, parsed.error);
      continue;
    }
    const { adv, poolSelectors } = parsed.value;
    for (const pool of attachedPools(cr.spec, poolSelectors, state.ipAddressPools, pools) as MutablePool[]) {
      if (!pool.l2Advertisements.some((a) => sameL2Advertisement(a, adv))) pool.l2Advertisements.push(adv);
    }
  }

  // Identical BGP advertisements
  const duplicateAdv = new Set<number>();
  const ads = state.bgpAdvertisements;
  for (let i = 0; i < ads.length; i++) {
    for (let j = i + 1; j < ads.length; j++) {
      if (!duplicateAdv.has(j) && deepEqual(ads[i], ads[j])) {
        duplicateAdv.add(j);
        report(sink, new ConfigError(`duplicate definition of bgpadvertisements: advertisements ${i + 1} and ${j + 1} are equal`, objectRef(ads[j])));
      }
    }
  }

  // BGP advertisements
  for (const [i, cr] of ads.entries()) {
    if (duplicateAdv.has(i)) continue;
    const parsed = parseBGPAdv(cr, aliases, state.nodes, brokenAliases);
    if (!parsed.ok) {
      if (parsed.error) report(sink, parsed.error);
      continue;
    }
    const { adv, poolSelectors } = parsed.value;
    for (const pool of attachedPools(cr.spec, poolSelectors, state.ipAddressPools, pools) as MutablePool[]) {
      const violation = checkBGPAdvForPool(adv, pool);
      if (violation) {
        report(sink, violation);
        continue;
      }
      pool.bgpAdvertisements.push(adv);
    }
  }

  // BFD echo mode with IPv6
  for (const pool of pools.values()) {
    if (!pool.cidrs.some((c) => c.family === 'ipv6')) continue;
    for (const adv of pool.bgpAdvertisements) {
      const targets = adv.peers.length === 0 ? [...peers.values()] : adv.peers.flatMap((n) => peers.get(n) ?? []);
      for (const peer of targets) {
        if (bfdProfiles.get(peer.bfdProfile)?.echoMode) {
          report(
            sink,
            new ConfigError(`pool ${pool.name} has bgpadvertisement ${adv.name} which references peer ${peer.name} which has bfd echo enabled, which is not possible with IPv6`, objectRef(adv.source)),
          );
          break;
        }
      }
    }
  }

  // Indexes
  const byNamespace = new Map<string, string[]>();
  const byServiceSelector: string[] = [];
  for (const pool of pools.values()) {
    const sa = pool.serviceAllocation;
    if (!sa) continue;
    for (const ns of sa.namespaces) {
      const list = byNamespace.get(ns) ?? [];
      list.push(pool.name);
      byNamespace.set(ns, list);
    }
    if (sa.serviceSelectors.length > 0) byServiceSelector.push(pool.name);
  }
  for (const list of byNamespace.values()) list.sort(compareStrings);
  byServiceSelector.sort(compareStrings);

  return { pools, peers, bfdProfiles, poolsByNamespace: byNamespace, poolsByServiceSelector: byServiceSelector };
}

/**
 * The effective configuration, as MetalLB v0.16.1's `config.For` builds it (see the module
 * comment for the order). With `opts.mode`, the mode's compatibility check runs first, as in a
 * deployment (`native`: validateNative; `frr`/`frr-k8s`: validateFRR).
 *
 * Pools keep CR order; advertisements attach in CR order ("all pools" attachments in pool
 * order, selected pools in pool CR order, where Go's map order is unspecified).
 *
 * @throws ConfigError at the first violation, naming the object
 *   (`metallb-system/IPAddressPool/public: ...`).
 */
export function parseConfig(state: ClusterState, opts: ParseOptions = {}): Config {
  return runParser(state, { strict: true, errors: [] }, opts);
}

/**
 * parseConfig as a value: the configuration, or the first violation (the ConfigError parseConfig
 * would throw). For callers to whom a rejected configuration is an expected outcome.
 */
export function checkConfig(state: ClusterState, opts: ParseOptions = {}): Checked<Config> {
  try {
    return { ok: true, value: parseConfig(state, opts) };
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, error: err };
    throw err;
  }
}

/**
 * Every violation parseConfig (with the same options) would stop at, not just the first: each
 * object is checked on its own, then the cross-object rules (duplicates, overlaps, references,
 * per-pool advertisement rules), skipping what already failed so that one mistake is reported
 * once. Returns [] exactly when parseConfig succeeds. Each error names its object.
 */
export function collectConfigErrors(state: ClusterState, opts: ParseOptions = {}): ConfigError[] {
  const sink: ErrorSink = { strict: false, errors: [] };
  runParser(state, sink, opts);
  return sink.errors;
}
