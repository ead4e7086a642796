/**
 * The Layer 2 election (MetalLB v0.16.1 `speaker/layer2_controller.go` ShouldAnnounce and
 * `speaker/main.go` SetBalancer), computed once per service for the whole cluster:
 *
 *  1–4. service checks (type, ingress, IP syntax, pool P containing every IP) — service.ts;
 *  5.   no usable endpoint at all → `notOwner` on every node;
 *  7a.  A = L2Advertisements of P whose service selectors accept the service (none = all);
 *  7b.  a node that no advertisement of A selects → `noMatchingAdvertisement`;
 *  8.   candidates: live speakers (all Nodes when memberlist is disabled), minus
 *       NetworkUnavailable=True, minus nodes labelled with the exclusion label (unless
 *       `ignoreExcludeLB`), minus nodes no advertisement of A selects, and with
 *       externalTrafficPolicy Local only nodes hosting a usable endpoint;
 *  9–10. candidates ordered by SHA-256(`node#firstIP`); the first announces, the others `notOwner`.
 */
import type { Config, L2Adv } from '../config/types.ts';
import type { ClusterState, Service } from '../kube.ts';
import { namespacedName } from '../kube.ts';
import { endpointNodes, hasUsableEndpoint, slicesFor } from './endpoints.ts';
import { digestsHex, electionDigestInto, hashOrderOf, ipHashKey } from './hash.ts';
import { checkService } from './service.ts';
import { buildElectionIndex, candidateHead, selectionFlags, type CandidateHead, type ElectionIndex, type NodeInfo } from './state-index.ts';
import type { Dropped, HashEntry, InterfaceSet, L2Election, L2Reason, L2TraceStepName, NodeDecision, ServiceCheck, TraceStep } from './types.ts';

/** Input of electL2. */
export interface L2Input {
  readonly config: Config;
  readonly state: ClusterState;
  readonly service: Service;
  /** Node names of the speakers memberlist considers alive; null when memberlist is disabled. */
  readonly speakers: readonly string[] | null;
  /** The speaker flag `--ignore-exclude-lb`. */
  readonly ignoreExcludeLB: boolean;
  /**
   * The index of `state` (buildElectionIndex). Pass the same one for every service of a state:
   * without it each call indexes the whole state again. Built for the same `speakers` array, it
   * also caches the node-level candidate filters.
   */
  readonly index?: ElectionIndex;
}

/** The L2Advertisements of `pool` that select the service (MetalLB `l2AdsForService`). */
export function l2AdsForService(ads: readonly L2Adv[], service: Service): L2Adv[] {
  const labels = service.metadata?.labels ?? {};
  return ads.filter((ad) => ad.serviceSelectors.length === 0 || ad.serviceSelectors.some((s) => s.matches(labels)));
}

/**
 * The interfaces to announce on, from the advertisements selecting a node (MetalLB
 * `ipAdvertisementFor`): `all` if any of them has no interface list, else the sorted union; null
 * when the list is empty.
 */
export function interfacesFor(ads: readonly L2Adv[]): InterfaceSet {
  if (ads.length === 0) return null;
  const set = new Set<string>();
  for (const ad of ads) {
    if (ad.allInterfaces || ad.interfaces.length === 0) return 'all';
    for (const i of ad.interfaces) set.add(i);
  }
  return [...set].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Whether a node with the interfaces `local` can announce on `interfaces` (MetalLB
 * `IPAdvertisement.MatchInterfaces`): `all` always can; a list when one of its names is among
 * `local`; null (no advertisement) never.
 */
export function matchInterfaces(interfaces: InterfaceSet, local: readonly string[]): boolean {
  if (interfaces === 'all') return true;
  if (interfaces === null) return false;
  return interfaces.some((name) => local.includes(name));
}

const WHY_NO_AD = 'no L2Advertisement applying to the service selects it';
const WHY_NOT_LOCAL = 'no usable endpoint on the node (externalTrafficPolicy: Local)';
const WHY_NO_NODE = 'no Node object of that name';

/**
 * Runs the L2 election for one service. Everything node-independent is computed once; the
 * per-node part (step 7b, the winner comparison, the interface set) is in `nodes`, one entry per
 * Node object in name order. Pure; never throws (bad input shows as a reason).
 *
 * Cost: O(nodes × |A|) plus one SHA-256 compression per candidate and a numeric sort.
 */
export function electL2(input: L2Input): L2Election {
  const { config, service, speakers, ignoreExcludeLB } = input;
  const index = input.index ?? buildElectionIndex(input.state, speakers);
  const key = namespacedName(service);
  const sc = checkService(config, service);
  const checks: ServiceCheck[] = sc.checks;
  const nodes = index.nodes;

  if (sc.reason !== null || sc.pool === null) {
    const reason: L2Reason = sc.reason ?? 'ipNotAllowed';
    const detail = checks[checks.length - 1].detail;
    return stopped(key, sc.ips, null, checks, reason, detail, [], nodes, null);
  }
  const pool = sc.pool;
  const ads = l2AdsForService(pool.l2Advertisements, service);
  const adNames = [...new Set(ads.map((a) => a.name))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

  // Step 7b: which of those advertisements select each Node object, and its interfaces.
  const selection = advertisementSelection(index, ads);

  const slices = slicesFor(index.endpoints, service);
  if (!hasUsableEndpoint(slices)) {
    checks.push({ check: 'endpoints', ok: false, detail: 'the service has no usable endpoint (ready, or serving)' });
    return stopped(key, sc.ips, pool.name, checks, 'notOwner', checks[checks.length - 1].detail, adNames, nodes, selection.interfacesOf);
  }
  checks.push({ check: 'endpoints', ok: true, detail: 'the service has usable endpoints' });

  // Step 8: candidates — live speakers, NetworkUnavailable, the exclusion label (candidateHead),
  // then a selecting advertisement, then (policy Local) a usable endpoint on the node.
  const candidates = new CandidateTrace(candidateHead(index, speakers, ignoreExcludeLB));
  candidates.filter('advertisement', (n) => n.position >= 0 && selection.selects(n.position), WHY_NO_AD);
  if (service.spec?.externalTrafficPolicy === 'Local') {
    const local = endpointNodes(slices);
    candidates.filter('localEndpoints', (n) => local.has(n.name), WHY_NOT_LOCAL);
  }

  // Steps 9–10: the hash order of the first IP; its first node wins.
  const hashedIP = sc.ips[0];
  const hashOrder = hashOrderFor(candidates.survivors, hashedIP);
  const count = hashOrder.length;
  const winner = count > 0 ? hashOrder[0].node : null;

  const ipsText = sc.ips.join(', ');
  const detail = winner ? `${winner} announces ${ipsText}: first of ${count} candidate${count === 1 ? '' : 's'} in the hash order of ${hashedIP}` : `nobody announces ${ipsText}: no candidate left`;
  const decisions = nodeDecisions(nodes, selection, candidates.droppedWhy, {
    winner,
    announce: `first of ${count} candidate${count === 1 ? '' : 's'} in the hash order of ${hashedIP}: announces ${ipsText}`,
    lost: `not first in the hash order of ${hashedIP}: ${winner} announces`,
    outcome: winner ? `${winner} announces` : 'nobody announces',
    noAdvertisement:
      ads.length === 0
        ? `no L2Advertisement of IPAddressPool "${pool.name}" selects this service`
        : `none of the L2Advertisements of IPAddressPool "${pool.name}" for this service (${adNames.join(', ')}) selects this node`,
  });

  return {
    service: key,
    ips: sc.ips,
    pool: pool.name,
    checks,
    serviceReason: null,
    advertisements: adNames,
    candidates: candidates.names,
    hashOrder,
    hashedIP,
    winner,
    nodes: decisions,
    trace: candidates.trace,
    detail,
  };
}

/**
 * Which advertisements of `ads` select each Node object of the index (MetalLB `l2AdsForNode`), and
 * the interfaces a node announces on (interfacesFor of those). Per node a bitmask of `ads` (a
 * plain flag past 30 advertisements, when the interface sets are computed per node); neighbours
 * mostly share their advertisements, so the last interface set and one per mask are remembered.
 */
function advertisementSelection(index: ElectionIndex, ads: readonly L2Adv[]): { selects(i: number): boolean; interfacesOf(i: number): InterfaceSet } {
  const nodes = index.nodes;
  const masks = new Int32Array(nodes.length);
  const bitmask = ads.length <= 30;
  for (let a = 0; a < ads.length; a++) {
    const flags = selectionFlags(index, ads[a].nodes);
    const bit = bitmask ? 1 << a : 1;
    for (let i = 0; i < nodes.length; i++) if (flags[i] !== 0) masks[i] |= bit;
  }
  const memo = new Map<number, InterfaceSet>();
  let lastMask = 0;
  let lastIfaces: InterfaceSet = null;
  return {
    selects: (i) => masks[i] !== 0,
    interfacesOf: (i) => {
      const m = masks[i];
      if (m === lastMask) return lastIfaces;
      if (!bitmask) return interfacesFor(ads.filter((ad) => ad.nodes.has(nodes[i].name)));
      let v = memo.get(m);
      if (v === undefined) {
        v = interfacesFor(ads.filter((_, a) => (m & (1 << a)) !== 0));
        memo.set(m, v);
      }
      lastMask = m;
      lastIfaces = v;
      return v;
    },
  };
}

/**
 * The candidate set of step 8 as it narrows: the survivors, the trace of every step and, per Node
 * object (by index position), why it was dropped. Starts from the service-independent head
 * (shared between services: copied only when a filter drops someone).
 */
class CandidateTrace {
  survivors: readonly NodeInfo[];
  names: readonly string[];
  droppedWhy: readonly (string | undefined)[];
  readonly trace: TraceStep[];
  private droppedCopied = false;

  constructor(head: CandidateHead) {
    this.survivors = head.survivors;
    this.trace = [...head.steps];
    this.names = this.trace[this.trace.length - 1].kept;
    this.droppedWhy = head.droppedByPosition;
  }

  /** Keeps the survivors `keep` accepts; the others are dropped with `why` (a live speaker without a Node object: WHY_NO_NODE). */
  filter(step: L2TraceStepName, keep: (n: NodeInfo) => boolean, why: string): void {
    let out: NodeInfo[] | null = null;
    const drops: Dropped[] = [];
    for (let i = 0; i < this.survivors.length; i++) {
      const n = this.survivors[i];
      if (keep(n)) {
        if (out) out.push(n);
        continue;
      }
      if (!out) out = this.survivors.slice(0, i);
      const w = n.position < 0 && why === WHY_NO_AD ? WHY_NO_NODE : why;
      drops.push({ node: n.name, why: w });
      if (n.position >= 0) {
        if (!this.droppedCopied) {
          this.droppedWhy = this.droppedWhy.slice();
          this.droppedCopied = true;
        }
        (this.droppedWhy as (string | undefined)[])[n.position] = w;
      }
    }
    if (out) {
      this.survivors = out;
      this.names = out.map((n) => n.name);
    }
    this.trace.push({ step, kept: this.names, dropped: drops });
  }
}

/**
 * MetalLB's sort of the candidates by sha256(`node#ip`), compared as unsigned bytes: one
 * SHA-256 compression per candidate into 32-bit words, then a numeric sort (hash.ts).
 */
function hashOrderFor(survivors: readonly NodeInfo[], hashedIP: string): HashEntry[] {
  const count = survivors.length;
  const words = new Int32Array(count * 8);
  const ipKey = ipHashKey(hashedIP);
  for (let k = 0; k < count; k++) electionDigestInto(survivors[k].hashKey, ipKey, words, k * 8);
  const order = hashOrderOf(words, count);
  const hex = count > 0 ? digestsHex(words, order) : '';
  const out: HashEntry[] = new Array(count);
  for (let k = 0; k < count; k++) out[k] = { node: survivors[order[k]].name, digest: hex.slice(k * 64, k * 64 + 64) };
  return out;
}

/**
 * Every Node object's decision (step 7b and the final comparison): no selecting advertisement,
 * the winner, or not the owner (why it was dropped from the candidates, or that another node won).
 * `texts`: the detail lines. Details of one drop reason are built once.
 */
function nodeDecisions(
  nodes: readonly NodeInfo[],
  selection: { selects(i: number): boolean; interfacesOf(i: number): InterfaceSet },
  droppedWhy: readonly (string | undefined)[],
  texts: { readonly winner: string | null; readonly announce: string; readonly lost: string; readonly outcome: string; readonly noAdvertisement: string },
): NodeDecision[] {
  const droppedDetail = new Map<string, string>();
  const decisions: NodeDecision[] = new Array(nodes.length);
  for (let i = 0; i < nodes.length; i++) {
    const name = nodes[i].name;
    const interfaces = selection.interfacesOf(i);
    if (!selection.selects(i)) {
      decisions[i] = { node: name, decision: 'noMatchingAdvertisement', detail: texts.noAdvertisement, interfaces };
    } else if (name === texts.winner) {
      decisions[i] = { node: name, decision: 'announce', detail: texts.announce, interfaces };
    } else {
      const why = droppedWhy[i];
      let d = texts.lost;
      if (why !== undefined) {
        d = droppedDetail.get(why) ?? '';
        if (!d) {
          d = `not a candidate (${why}); ${texts.outcome}`;
          droppedDetail.set(why, d);
        }
      }
      decisions[i] = { node: name, decision: 'notOwner', detail: d, interfaces };
    }
  }
  return decisions;
}

function stopped(
  service: string,
  ips: readonly string[],
  pool: string | null,
  checks: readonly ServiceCheck[],
  reason: L2Reason,
  detail: string,
  advertisements: readonly string[],
  nodes: readonly NodeInfo[],
  interfacesOf: ((i: number) => InterfaceSet) | null,
): L2Election {
  const decisions: NodeDecision[] = nodes.map((n, i) => ({
    node: n.name,
    decision: reason,
    detail,
    interfaces: interfacesOf ? interfacesOf(i) : null,
  }));
  return {
    service,
    ips,
    pool,
    checks,
    serviceReason: reason,
    advertisements,
    candidates: [],
    hashOrder: [],
    hashedIP: null,
    winner: null,
    nodes: decisions,
    trace: [],
    detail: `nobody announces: ${reason} (${detail})`,
  };
}

/**
 * The decision of the speaker on `node` for the election's service. Nodes without a Node object
 * get the service-level reason, else `noMatchingAdvertisement` (an advertisement only selects
 * Node objects), as MetalLB would decide. O(nodes).
 */
export function decideL2ForNode(election: L2Election, node: string): NodeDecision {
  for (const d of election.nodes) if (d.node === node) return d;
  if (election.serviceReason !== null) {
    return { node, decision: election.serviceReason, detail: election.checks[election.checks.length - 1]?.detail ?? '', interfaces: null };
  }
  return { node, decision: 'noMatchingAdvertisement', detail: 'no Node object of that name: no L2Advertisement selects it', interfaces: null };
}
