/**
 * `whatif`: what changes for every LoadBalancer Service (addresses, pool, the L2 announcer, the
 * BGP nodes and peers) if a node goes down, a node label is added or removed, the speakers run with
 * (or without) `--ignore-exclude-lb`, or edited manifests are applied or deleted — alone or together.
 *
 * Nothing here decides anything itself: the state before and the state after the change each go
 * through diagnosticContext and explainService, the composition `explain` uses of the controller's
 * allocation (allocateAll, reconcileService) and each speaker's decisions (electL2, evaluateBGP
 * with its own configuration). This module only builds the state after the change and compares
 * the two answers. How each change is modelled (MetalLB v0.16.1's reactions):
 *
 * - **Node down** (`nodesDown`): its speaker leaves memberlist (the live speakers lose it), its
 *   speaker pod and its Node turn not Ready, and every endpoint on it becomes not ready and not
 *   serving (the pods' Ready condition turns False; what the EndpointSlice controller then writes).
 *   When memberlist is disabled (speakers source `memberlist-disabled`) no speaker notices: the
 *   election still counts the node, and the node's dead speaker announces nothing, so a Service it
 *   won loses its announcer. Its BGP sessions go down with it. Addresses do not move: MetalLB's
 *   allocation does not look at nodes.
 * - **Label** (`labels`): the Node's labels after `kubectl label node NODE key=value` / `key-`;
 *   L2Advertisement and BGPAdvertisement nodeSelectors, BGPPeer nodeSelectors (each speaker's own
 *   configuration) and the exclusion label are read again.
 * - **`--ignore-exclude-lb`** (`ignoreExcludeLB`): the speakers' flag after the change.
 * - **Apply / delete** (`apply`, `remove`): an applied object replaces the object of the same kind,
 *   namespace and name, else it is added; a deleted one is removed. As the API server does, the
 *   manifest's `status` is ignored (the existing object's status stays: Services keep their
 *   addresses), a Service manifest without cluster IPs keeps the existing Service's, and a new
 *   Service without them gets them as the API server would assign them (withAPIServerDefaults). When
 *   an applied or deleted object is one the controller reads (an IPAddressPool, a Community, a
 *   Namespace or a Service), the controller reprocesses every Service (MetalLB's SetPools /
 *   SetBalancer answer `reprocessAll`; SetPools keeps every allocation still inside a pool), which
 *   is the controller's dry run over the new state (allocateAll: Services keeping their status
 *   addresses first, so none takes an address another still holds): the addresses it ends with
 *   are the Services' addresses after the change.
 */
import { allocateAll, type AllocateAllResult } from '../controller/index.ts';
import { statusIPs } from '../controller/service.ts';
import { ConfigError, UserError } from '../errors.ts';
import { controllerConfig, diagnosticContext, explainService, type DiagnosticContext, type DiagnosticOptions, type Explanation, type SpeakersSource } from './index.ts';
import { DEFAULT_METALLB_NAMESPACE, KIND_TO_LIST, namespacedName, objectRef, type ClusterState, type KubeObject, type Node, type Service } from '../kube.ts';
import { withAPIServerDefaults } from '../apiserver-defaults.ts';
import { compareStrings } from '../labels.ts';

/** One label edit of `--label NODE key=value|key-` (kubectl's syntax): `value` null removes the label. */
export interface LabelEdit {
  readonly node: string;
  readonly key: string;
  readonly value: string | null;
}

/** The change to look at. Every field is optional; at least one must change something. */
export interface WhatIfChange {
  /** Nodes that go down (`--node-down`). */
  readonly nodesDown?: readonly string[];
  /** Node label edits (`--label`), applied in order. */
  readonly labels?: readonly LabelEdit[];
  /** The speakers' `--ignore-exclude-lb` after the change; absent: as before. */
  readonly ignoreExcludeLB?: boolean;
  /** Objects applied (`--apply`), in order: each replaces the object of its kind, namespace and name, or is added. */
  readonly apply?: readonly KubeObject[];
  /** Objects deleted (`--delete`): the objects of their kind, namespace and name are removed. */
  readonly remove?: readonly KubeObject[];
}

/** One Service's answer, before or after the change. */
export interface ServiceState {
  /** Its addresses (status, or the controller's prediction when it has none yet); [] when none. */
  readonly ips: readonly string[];
  readonly pool: string | null;
  /** explain's allocation status: `assigned`, `predicted`, `pending` or `ignored`. */
  readonly allocation: Explanation['allocation']['status'];
  /** explain's mode: `layer2`, `bgp`, `layer2+bgp` or `none`. */
  readonly mode: Explanation['mode'];
  /** The node announcing it in Layer 2, or null. */
  readonly announcer: string | null;
  /** The nodes advertising it over BGP (name order), each with the BGPPeers that get a prefix. */
  readonly bgp: ReadonlyArray<{ readonly node: string; readonly peers: readonly string[] }>;
  /**
   * Why it has no address or nobody announces it: the pending reason, or as explain's `Why` line
   * (its most severe finding, else the L2 election's summary); null when announced.
   */
  readonly why: string | null;
}

/**
 * How a Service changes, most severe first: `losesAddress`, `losesAnnouncer` (keeps its address,
 * nobody announces it any more), `changesAddress`, `changesAnnouncer` (another L2 node, or other
 * BGP nodes or peers), `changesPool`, `getsAddress`, `getsAnnouncer`, `added` / `deleted` (by
 * `--apply` / `--delete`), `unchanged`.
 */
export type ServiceChangeKind = 'losesAddress' | 'losesAnnouncer' | 'changesAddress' | 'changesAnnouncer' | 'changesPool' | 'getsAddress' | 'getsAnnouncer' | 'added' | 'deleted' | 'unchanged';

/** The order of ServiceChangeKind, most severe first (the verdict's and the table's order). */
export const CHANGE_ORDER: readonly ServiceChangeKind[] = [
  'losesAddress',
  'losesAnnouncer',
  'changesAddress',
  'changesAnnouncer',
  'changesPool',
  'getsAddress',
  'getsAnnouncer',
  'added',
  'deleted',
  'unchanged',
];

/** One Service of the report. */
export interface ServiceWhatIf {
  /** `namespace/name`. */
  readonly service: string;
  readonly namespace: string;
  readonly name: string;
  /** The most severe of `changes`. */
  readonly change: ServiceChangeKind;
  /** Every change that applies (`['unchanged']` when none), most severe first. */
  readonly changes: readonly ServiceChangeKind[];
  /** null for a Service `--apply` adds. */
  readonly before: ServiceState | null;
  /** null for a Service `--delete` removes. */
  readonly after: ServiceState | null;
}

/** The live speakers the election counts (null: every Node, memberlist disabled), and where the list came from. */
export interface SpeakersWhatIf {
  readonly source: SpeakersSource;
  readonly before: readonly string[] | null;
  readonly after: readonly string[] | null;
}

/** The result of whatIf (`whatif -o json|yaml`; documented in the README). */
export interface WhatIfReport {
  /** One line: `2 Services lose their address, 1 changes announcer, 11 unchanged`. */
  readonly verdict: string;
  /** Services per change kind (their most severe change); every kind present, zeros included. */
  readonly counts: Readonly<Record<ServiceChangeKind, number>>;
  /** Whether any Service loses its address or its announcer (exit 1). */
  readonly breaks: boolean;
  /** The change, as understood: nodes down, label edits, the flag, objects applied and deleted (`namespace/Kind/name`). */
  readonly change: {
    readonly nodesDown: readonly string[];
    readonly labels: readonly LabelEdit[];
    readonly ignoreExcludeLB: { readonly before: boolean; readonly after: boolean };
    readonly applied: readonly string[];
    readonly deleted: readonly string[];
  };
  readonly speakers: SpeakersWhatIf;
  /** Whether the controller reprocesses every Service (an object it reads was applied or deleted). */
  readonly reallocated: boolean;
  /** Every LoadBalancer Service MetalLB handles before or after, most severe change first, then `namespace/name`. */
  readonly services: readonly ServiceWhatIf[];
  /**
   * What to know about the answer: speakers that reject their configuration after the change (they
   * keep running the one they accepted last), addresses MetalLB's own controller could choose
   * differently, Services given cluster IPs as the API server would.
   */
  readonly notes: readonly string[];
}

/** Options of whatIf: the diagnostic options of the state before the change (`--speakers`, a speaker's view, the flags). */
export type WhatIfOptions = DiagnosticOptions;

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a valid label key (kubectl's rules: `[prefix/]name`), or null. */
function labelKeyProblem(key: string): string | null {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : null;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== null && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) return `prefix "${prefix}" is not a DNS subdomain`;
  if (!LABEL_NAME.test(name)) return `name "${name}" must be 1-63 characters, alphanumeric, '-', '_' or '.', starting and ending alphanumeric`;
  return null;
}

/**
 * Parses the values of `--label` (a variadic option: `--label NODE key=value [key2-] ...`, repeatable,
 * kubectl label's syntax). A word without `=` that does not end in `-` is a node name (node names
 * never do); the edits after it are its own.
 * @throws UserError (exit 2) naming the word: an edit before any node, a node without an edit, a
 *   malformed key or value.
 */
export function parseLabelEdits(words: readonly string[]): LabelEdit[] {
  const out: LabelEdit[] = [];
  let node: string | null = null;
  let edits = 0;
  const endNode = (): void => {
    if (node !== null && edits === 0) throw new UserError(`--label ${node}: no label given (use --label ${node} key=value, or key- to remove it)`);
  };
  for (const w of words) {
    const eq = w.indexOf('=');
    const isEdit = eq >= 0 || w.endsWith('-');
    if (!isEdit) {
      endNode();
      node = w;
      edits = 0;
      continue;
    }
    if (node === null) throw new UserError(`--label ${w}: name the node first (--label NODE ${w})`);
    const key = eq >= 0 ? w.slice(0, eq) : w.slice(0, -1);
    const value = eq >= 0 ? w.slice(eq + 1) : null;
    const bad = labelKeyProblem(key);
    if (bad) throw new UserError(`--label ${node} ${w}: invalid label key: ${bad}`);
    if (value !== null && value !== '' && !LABEL_NAME.test(value)) {
      throw new UserError(`--label ${node} ${w}: invalid label value "${value}": at most 63 characters, alphanumeric, '-', '_' or '.', starting and ending alphanumeric`);
    }
    out.push({ node, key, value });
    edits++;
  }
  endNode();
  return out;
}

const CLUSTER_SCOPED = new Set(['Node', 'Namespace']);
const METALLB_KINDS = new Set(['IPAddressPool', 'L2Advertisement', 'BGPAdvertisement', 'BGPPeer', 'Community', 'BFDProfile', 'ServiceL2Status', 'ServiceBGPStatus', 'ConfigurationState']);
/** Kinds the controller reads: applying or deleting one makes it reprocess every Service. */
const CONTROLLER_KINDS = new Set(['IPAddressPool', 'Community', 'Namespace', 'Service']);

/** The API server's identity of an object: kind, namespace (metallb.io objects without one: MetalLB's; others: `default`), name. */
function identity(o: KubeObject, metallbNamespace: string): string {
  const kind = o.kind ?? '';
  const ns = CLUSTER_SCOPED.has(kind) ? '' : o.metadata?.namespace || (METALLB_KINDS.has(kind) ? metallbNamespace : 'default');
  return JSON.stringify([kind, ns, o.metadata?.name ?? '']);
}

/** `old`'s cluster IP fields where `next` has none (the API server keeps a Service's allocated cluster IPs). */
function keepClusterIPs(next: Service, old: Service): Service {
  const spec = next.spec ?? {};
  if ((spec.clusterIPs?.length ?? 0) > 0 || spec.clusterIP) return next;
  const o = old.spec ?? {};
  return {
    ...next,
    spec: {
      ...spec,
      ...(o.clusterIP !== undefined ? { clusterIP: o.clusterIP } : {}),
      ...(o.clusterIPs !== undefined ? { clusterIPs: o.clusterIPs } : {}),
      ...(spec.ipFamilies === undefined && o.ipFamilies !== undefined ? { ipFamilies: o.ipFamilies } : {}),
      ...(spec.ipFamilyPolicy === undefined && o.ipFamilyPolicy !== undefined ? { ipFamilyPolicy: o.ipFamilyPolicy } : {}),
    },
  };
}

/** ClusterState lists holding what MetalLB's components reported (cleared in the state after the change). */
const REPORTS = ['serviceL2Statuses', 'serviceBGPStatuses', 'events', 'configurationStates'] as const;

/** The state after the change, and what the change did (for the report). */
export interface ChangedState {
  readonly state: ClusterState;
  /** `namespace/Kind/name` of every object applied / deleted. */
  readonly applied: readonly string[];
  readonly deleted: readonly string[];
  /** Whether an object the controller reads was applied or deleted. */
  readonly controllerInputsChanged: boolean;
  /** New Services given cluster IPs as the API server would: `namespace/name: ...` with the families and why. */
  readonly defaulted: readonly string[];
}

/**
 * The state after the change (pure; `state` is not modified): objects deleted, then applied, then
 * the label edits, then the nodes down (see the module comment for what each does); what the
 * components reported before (ServiceL2Status, ServiceBGPStatus, Events, ConfigurationStates) is
 * left out, as they would rewrite it.
 * @throws UserError (exit 2) naming the flag for a node that is not in the state (`--node-down`,
 *   `--label`), a label removed that the node does not carry, a deleted object that is not there, or
 *   a new Service the API server would refuse (its IP families).
 */
export function changedState(state: ClusterState, change: WhatIfChange, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): ChangedState {
  const lists = new Map<string, KubeObject[]>();
  for (const list of Object.values(KIND_TO_LIST)) lists.set(list, [...(state[list] as KubeObject[])]);
  const listOf = (o: KubeObject): KubeObject[] => lists.get(KIND_TO_LIST[o.kind as keyof typeof KIND_TO_LIST])!;
  let controllerInputsChanged = false;
  const deleted: string[] = [];
  for (const o of change.remove ?? []) {
    const list = listOf(o);
    const id = identity(o, metallbNamespace);
    const at = list.findIndex((x) => identity(x, metallbNamespace) === id);
    if (at < 0) throw new UserError(`--delete: ${objectRef(o)} is not in the cluster state`);
    list.splice(at, 1);
    deleted.push(objectRef(o));
    if (CONTROLLER_KINDS.has(o.kind ?? '')) controllerInputsChanged = true;
  }
  const applied: string[] = [];
  const defaulted: string[] = [];
  for (const o of change.apply ?? []) {
    const list = listOf(o);
    const id = identity(o, metallbNamespace);
    const at = list.findIndex((x) => identity(x, metallbNamespace) === id);
    const { status: _ignored, ...manifest } = o as KubeObject & { status?: unknown };
    let next = manifest as KubeObject;
    if (at >= 0) {
      const old = list[at]! as KubeObject & { status?: unknown };
      if (old.status !== undefined) next = { ...next, status: old.status } as KubeObject;
      if (next.kind === 'Service') next = keepClusterIPs(next as Service, old as Service);
      list[at] = next;
    } else {
      if (next.kind === 'Service') {
        // The cluster's Service families are read from the Services before the change.
        const d = withAPIServerDefaults([...state.services, next as Service]);
        const mine = d.defaulted.find((x) => x.service === namespacedName(next));
        if (mine?.refused) throw new UserError(`--apply: ${objectRef(o)}: the API server would refuse to create it: ${mine.refused}`);
        next = d.services.at(-1)!;
        if (mine) defaulted.push(`${mine.service}: a new Service without cluster IPs: given ${mine.ipFamilyPolicy} ${mine.ipFamilies.join(', ')} as the API server would (${mine.basis})`);
      }
      list.push(next);
    }
    applied.push(objectRef(o));
    if (CONTROLLER_KINDS.has(o.kind ?? '')) controllerInputsChanged = true;
  }

  const nodes = lists.get('nodes') as Node[];
  const nodeAt = (flag: string, name: string): number => {
    const i = nodes.findIndex((n) => n.metadata?.name === name);
    if (i < 0) {
      const known = nodes.map((n) => n.metadata?.name ?? '').sort(compareStrings);
      const list = known.length <= 8 ? known.join(', ') : `${known.slice(0, 8).join(', ')} and ${known.length - 8} more`;
      throw new UserError(`${flag} ${name}: no Node ${name} in the cluster state (nodes: ${list || 'none'})`);
    }
    return i;
  };
  for (const e of change.labels ?? []) {
    const i = nodeAt('--label', e.node);
    const node = nodes[i]!;
    const labels = { ...(node.metadata?.labels ?? {}) };
    if (e.value === null) {
      if (!(e.key in labels)) throw new UserError(`--label ${e.node} ${e.key}-: node ${e.node} has no label ${e.key}`);
      delete labels[e.key];
    } else {
      labels[e.key] = e.value;
    }
    nodes[i] = { ...node, metadata: { ...node.metadata, labels } };
  }

  const down = new Set(change.nodesDown ?? []);
  for (const name of down) {
    const i = nodeAt('--node-down', name);
    const node = nodes[i]!;
    const conditions = (node.status?.conditions ?? []).filter((c) => c?.type !== 'Ready');
    conditions.push({ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status (metallb-ts whatif --node-down).' });
    nodes[i] = { ...node, status: { ...(node.status ?? {}), conditions } };
  }
  if (down.size > 0) {
    const slices = lists.get('endpointSlices')!;
    for (let i = 0; i < slices.length; i++) {
      const slice = slices[i] as ClusterState['endpointSlices'][number];
      if (!(slice.endpoints ?? []).some((ep) => ep.nodeName && down.has(ep.nodeName))) continue;
      slices[i] = { ...slice, endpoints: slice.endpoints!.map((ep) => (ep.nodeName && down.has(ep.nodeName) ? { ...ep, conditions: { ...(ep.conditions ?? {}), ready: false, serving: false } } : ep)) };
    }
    const pods = lists.get('pods')!;
    for (let i = 0; i < pods.length; i++) {
      const pod = pods[i] as ClusterState['pods'][number];
      if (!pod.spec?.nodeName || !down.has(pod.spec.nodeName)) continue;
      const conditions = (pod.status?.conditions ?? []).filter((c) => c?.type !== 'Ready');
      conditions.push({ type: 'Ready', status: 'False' });
      pods[i] = { ...pod, status: { ...(pod.status ?? {}), conditions } };
    }
  }
  const out = { ...state };
  for (const [list, objects] of lists) (out as unknown as Record<string, KubeObject[]>)[list] = objects;
  // What the components reported about the world before the change (ServiceL2Status,
  // ServiceBGPStatus, their Events, ConfigurationStates) is not evidence about the world after it:
  // they would rewrite it.
  for (const list of REPORTS) (out as unknown as Record<string, KubeObject[]>)[list] = [];
  return { state: out, applied, deleted, controllerInputsChanged, defaulted };
}

/** The BGP nodes of an explanation that reach a router, with the peers getting a prefix. */
function bgpOf(e: Explanation): ServiceState['bgp'] {
  if (e.bgpAnnouncers.length === 0 || !e.bgp) return [];
  const reaching = new Set(e.bgpAnnouncers);
  return e.bgp.nodes
    .filter((n) => reaching.has(n.node))
    .map((n) => ({
      node: n.node,
      peers: n.peers
        .filter((p) => p.prefixes.length > 0)
        .map((p) => p.peer)
        .sort(compareStrings),
    }))
    .sort((a, b) => compareStrings(a.node, b.node));
}

/**
 * Why the L2 candidates of before are no candidates now: `lab-worker-a: no live speaker on the node
 * (not a memberlist member); lab-worker-b: no L2Advertisement applying to the service selects it`,
 * read from the election's trace (each dropped node with the filter's reason). Null when none of
 * them was dropped (or there was none).
 */
function droppedText(e: Explanation, candidatesBefore: readonly string[]): string | null {
  const wanted = new Set(candidatesBefore);
  const byWhy = new Map<string, string[]>();
  for (const step of e.l2?.trace ?? []) {
    for (const d of step.dropped) {
      if (!wanted.has(d.node)) continue;
      byWhy.set(d.why, [...(byWhy.get(d.why) ?? []), d.node]);
    }
  }
  if (byWhy.size === 0) return null;
  const names = (xs: string[]) => (xs.length <= 5 ? xs.join(', ') : `${xs.slice(0, 5).join(', ')} and ${xs.length - 5} more`);
  return `no candidate left: ${[...byWhy].map(([why, nodes]) => `${names(nodes)}: ${why}`).join('; ')}`;
}

/**
 * A Service's answer from its explanation. `down`: nodes whose speaker is dead (they announce
 * nothing); `candidatesBefore`: the L2 candidates before the change, for saying why they are gone.
 */
function serviceState(e: Explanation, down: ReadonlySet<string>, candidatesBefore: readonly string[] = []): ServiceState {
  const base = { pool: e.allocation.pool, allocation: e.allocation.status, mode: e.mode };
  if (e.allocation.status === 'ignored') {
    // No longer MetalLB's (another type or class): the controller releases its addresses.
    return { ...base, ips: [], announcer: null, bgp: [], why: e.allocation.reason };
  }
  const elected = bgpOf(e);
  const bgp = elected.filter((n) => !down.has(n.node));
  let announcer = e.announcer;
  let why: string | null = null;
  if (announcer !== null && down.has(announcer)) {
    why = `${announcer} is down but still first in the hash order: memberlist is disabled, so no other speaker takes over`;
    announcer = null;
  }
  if (why === null && e.allocation.ips.length === 0) why = e.allocation.reason;
  if (why === null && announcer === null && bgp.length === 0) {
    if (elected.length > 0) {
      why = `its BGP nodes are down (${elected.map((n) => n.node).join(', ')})`;
    } else {
      // As explain's Why: the most severe finding, else the election's own summary.
      // As explain's Why: the most severe finding; else, what dropped the candidates of before;
      // else the election's own summary.
      const f = e.findings.find((x) => x.severity === 'error');
      why = f ? f.message : e.mode === 'bgp' ? 'no node advertises it to a BGP peer' : (droppedText(e, candidatesBefore) ?? (e.l2?.detail || 'nobody announces it'));
    }
  }
  return { ...base, ips: [...e.allocation.ips], announcer, bgp, why };
}

function announced(s: ServiceState): boolean {
  return s.announcer !== null || s.bgp.length > 0;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort(compareStrings).join('\n') === [...b].sort(compareStrings).join('\n');
}

/** Who announces, as one comparable string. */
function announcerKey(s: ServiceState): string {
  return JSON.stringify([s.announcer, s.bgp]);
}

/** The changes between two answers of one Service, most severe first; `['unchanged']` when none. */
export function classify(before: ServiceState | null, after: ServiceState | null): ServiceChangeKind[] {
  if (before === null) return ['added'];
  if (after === null) return ['deleted'];
  const out = new Set<ServiceChangeKind>();
  const had = before.ips.length > 0;
  const has = after.ips.length > 0;
  if (had && !has) out.add('losesAddress');
  else if (!had && has) out.add('getsAddress');
  else if (had && !sameList(before.ips, after.ips)) out.add('changesAddress');
  if (has && had && before.pool !== after.pool) out.add('changesPool');
  if (announced(before) && !announced(after)) out.add('losesAnnouncer');
  else if (!announced(before) && announced(after)) out.add('getsAnnouncer');
  else if (announced(before) && announcerKey(before) !== announcerKey(after)) out.add('changesAnnouncer');
  const list = CHANGE_ORDER.filter((k) => out.has(k));
  return list.length > 0 ? list : ['unchanged'];
}

const PHRASES: Record<ServiceChangeKind, [one: string, many: string]> = {
  losesAddress: ['loses its address', 'lose their address'],
  losesAnnouncer: ['loses its announcer', 'lose their announcer'],
  changesAddress: ['changes address', 'change address'],
  changesAnnouncer: ['changes announcer', 'change announcer'],
  changesPool: ['changes pool', 'change pool'],
  getsAddress: ['gets an address', 'get an address'],
  getsAnnouncer: ['gets an announcer', 'get an announcer'],
  added: ['is new', 'are new'],
  deleted: ['is deleted', 'are deleted'],
  unchanged: ['unchanged', 'unchanged'],
};

/** `3 Services lose their address, 5 change announcer, 40 unchanged` (kinds with a count only, most severe first). */
export function verdictText(counts: Readonly<Record<ServiceChangeKind, number>>): string {
  const parts: string[] = [];
  for (const k of CHANGE_ORDER) {
    const n = counts[k];
    if (n === 0) continue;
    const [one, many] = PHRASES[k];
    const noun = parts.length === 0 ? (n === 1 ? ' Service' : ' Services') : '';
    parts.push(k === 'unchanged' ? `${n}${noun} unchanged` : `${n}${noun} ${n === 1 ? one : many}`);
  }
  return parts.length > 0 ? parts.join(', ') : 'no LoadBalancer Service handled by MetalLB';
}

/** allocateAll's notes about the random order of a restart only (not of a running controller's reprocess). */
const RESTART_ONLY = /after a restart MetalLB (may )?process/;

/** Whether `svc` is a Service MetalLB handles (type LoadBalancer, its loadBalancerClass). */
function handled(svc: Service, lbClass: string): boolean {
  return svc.spec?.type === 'LoadBalancer' && (svc.spec.loadBalancerClass ?? '') === lbClass;
}

/**
 * The answer for every Service of a context that MetalLB handles or that is in `also` (a Service
 * handled on the other side of the change: here it is of another type or class, so it has no
 * address), by `namespace/name`.
 */
function answers(
  ctx: DiagnosticContext,
  down: ReadonlySet<string>,
  also: ReadonlySet<string>,
  candidatesBefore?: ReadonlyMap<string, readonly string[]>,
): { states: Map<string, ServiceState>; candidates: Map<string, readonly string[]> } {
  const states = new Map<string, ServiceState>();
  const candidates = new Map<string, readonly string[]>();
  for (const svc of ctx.state.services) {
    const key = namespacedName(svc);
    if (!handled(svc, ctx.loadBalancerClass) && !also.has(key)) continue;
    const e = explainService({ ...ctx, service: svc });
    states.set(key, serviceState(e, down, candidatesBefore?.get(key)));
    candidates.set(key, e.l2?.candidates ?? []);
  }
  return { states, candidates };
}

/** `namespace/name` of the Services of `state` MetalLB handles. */
function handledKeys(state: ClusterState, lbClass: string): Set<string> {
  return new Set(state.services.filter((s) => handled(s, lbClass)).map(namespacedName));
}

/** Whether `change` changes anything at all. */
export function isEmptyChange(change: WhatIfChange, before: { ignoreExcludeLB: boolean }): boolean {
  return (
    (change.nodesDown?.length ?? 0) === 0
    && (change.labels?.length ?? 0) === 0
    && (change.apply?.length ?? 0) === 0
    && (change.remove?.length ?? 0) === 0
    && (change.ignoreExcludeLB === undefined || change.ignoreExcludeLB === before.ignoreExcludeLB)
  );
}

/**
 * What changes for every LoadBalancer Service MetalLB handles when `change` happens to `state`.
 * Before: diagnosticContext(state, opts) — the live speakers as `explain` finds them. After: the
 * state of changedState; the live speakers less the nodes down (when memberlist is disabled, the
 * list stays "every Node": nobody notices), plus the Nodes the change adds (the speaker DaemonSet
 * runs there too); `change.ignoreExcludeLB` when given; when the change
 * touches an object the controller reads, every Service's addresses are the controller's dry run
 * over the new state (allocateAll, written to the Services' status as the controller would).
 * Then explainService on every Service, before and after, and classify. Pure.
 * @throws ConfigError when the controller rejects the configuration before the change (as explain);
 *   UserError (exit 2) when it rejects it after the change (it would keep running the last one it
 *   accepted), or for changedState's errors, or for a change that changes nothing.
 */
export function whatIf(state: ClusterState, change: WhatIfChange, opts: WhatIfOptions = {}): WhatIfReport {
  const metallbNamespace = opts.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE;
  const lbClass = opts.loadBalancerClass ?? '';
  const ignoreBefore = opts.ignoreExcludeLB === true;
  if (isEmptyChange(change, { ignoreExcludeLB: ignoreBefore })) {
    throw new UserError('nothing to change: give --node-down NODE, --label NODE key=value|key-, --ignore-exclude-lb / --no-ignore-exclude-lb, --apply FILE or --delete FILE');
  }
  const before = diagnosticContext(state, opts);
  const changed = changedState(state, change, metallbNamespace);
  const down = new Set(change.nodesDown ?? []);
  const ignoreAfter = change.ignoreExcludeLB ?? ignoreBefore;

  let afterState = changed.state;
  const notes: string[] = [];
  if (changed.controllerInputsChanged) {
    let run: AllocateAllResult;
    try {
      run = allocateAll(controllerConfig(afterState, metallbNamespace), afterState.services, { loadBalancerClass: lbClass });
    } catch (err) {
      if (err instanceof ConfigError) {
        throw new UserError(
          `with the change, MetalLB's controller rejects the configuration: ${err.message}; the controller and every speaker would keep running the configuration they accepted last (see metallb-ts validate)`,
        );
      }
      throw err;
    }
    const ips = new Map(run.services.map((s) => [s.service, s]));
    afterState = {
      ...afterState,
      services: afterState.services.map((svc) => {
        const o = ips.get(namespacedName(svc));
        if (!o || sameList(statusIPs(svc), o.ips)) return svc;
        return { ...svc, status: { ...(svc.status ?? {}), loadBalancer: { ingress: o.ips.map((ip) => ({ ip })) } } };
      }),
    };
    // allocateAll models a restart; on a configuration change the running controller keeps every
    // allocation still inside a pool (SetPools) while it reprocesses, so the restart-order
    // uncertainty (who re-allocates first after a restart) does not apply; the others do.
    for (const o of run.services) {
      if (o.nondeterministic && !RESTART_ONLY.test(o.nondeterministic)) notes.push(`${o.service}: ${o.nondeterministic}`);
    }
  }
  notes.push(...changed.defaulted);

  // Nodes the change adds get a speaker (MetalLB's DaemonSet) that joins memberlist.
  const known = new Set(state.nodes.map((n) => n.metadata?.name ?? ''));
  const newNodes = afterState.nodes.map((n) => n.metadata?.name ?? '').filter((n) => n !== '' && !known.has(n) && !down.has(n));
  let afterSpeakers: readonly string[] | null;
  if (before.speakers === null) {
    afterSpeakers = before.speakersSource === 'memberlist-disabled' ? null : [...before.index.nodeNames, ...newNodes].filter((n) => !down.has(n));
  } else {
    afterSpeakers = [...new Set([...before.speakers, ...newNodes])].filter((n) => !down.has(n)).sort(compareStrings);
  }
  const afterOpts: DiagnosticOptions = {
    ...(afterSpeakers === null ? { memberlist: { speakers: null } } : { speakers: afterSpeakers }),
    ignoreExcludeLB: ignoreAfter,
    loadBalancerClass: lbClass,
    metallbNamespace,
  };
  let after: DiagnosticContext;
  try {
    after = diagnosticContext(afterState, afterOpts);
  } catch (err) {
    if (err instanceof ConfigError) {
      throw new UserError(
        `with the change, MetalLB's controller rejects the configuration: ${err.message}; the controller and every speaker would keep running the configuration they accepted last (see metallb-ts validate)`,
      );
    }
    throw err;
  }
  const beforeRejected = new Set(before.speakerConfigs.groups.filter((g) => g.status === 'rejected').flatMap((g) => g.nodes));
  for (const g of after.speakerConfigs.groups) {
    if (g.status !== 'rejected') continue;
    const nodes = g.nodes.filter((n) => !beforeRejected.has(n));
    if (nodes.length === 0) continue;
    const error = g.result.ok ? '' : g.result.error.message;
    notes.push(`the speaker${nodes.length === 1 ? '' : 's'} of ${nodes.join(', ')} would reject the configuration (${error}) and keep running the one accepted last, which this answer cannot show`);
  }

  const beforeAnswers = answers(before, new Set(), handledKeys(after.state, lbClass));
  const b = beforeAnswers.states;
  const a = answers(after, down, handledKeys(before.state, lbClass), beforeAnswers.candidates).states;
  const keys = [...new Set([...b.keys(), ...a.keys()])];
  const counts = Object.fromEntries(CHANGE_ORDER.map((k) => [k, 0])) as Record<ServiceChangeKind, number>;
  const services = keys.map((key): ServiceWhatIf => {
    const bs = b.get(key) ?? null;
    const as = a.get(key) ?? null;
    const changes = classify(bs, as);
    counts[changes[0]!]++;
    const slash = key.indexOf('/');
    return { service: key, namespace: key.slice(0, slash), name: key.slice(slash + 1), change: changes[0]!, changes, before: bs, after: as };
  });
  const rank = new Map(CHANGE_ORDER.map((k, i) => [k, i]));
  services.sort((x, y) => rank.get(x.change)! - rank.get(y.change)! || compareStrings(x.service, y.service));
  const breaks = services.some((s) => s.changes.includes('losesAddress') || s.changes.includes('losesAnnouncer'));
  return {
    verdict: verdictText(counts),
    counts,
    breaks,
    change: {
      nodesDown: [...down],
      labels: [...(change.labels ?? [])],
      ignoreExcludeLB: { before: ignoreBefore, after: ignoreAfter },
      applied: changed.applied,
      deleted: changed.deleted,
    },
    speakers: { source: before.speakersSource, before: before.speakers, after: afterSpeakers },
    reallocated: changed.controllerInputsChanged,
    services,
    notes,
  };
}
