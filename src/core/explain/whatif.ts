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
import { filteredByLoadBalancerClass, statusIPs } from '../controller/service.ts';
import { ConfigError, EXIT_NO, EXIT_OK, UserError } from '../errors.ts';
import { controllerConfig, diagnosticContext, explainService, type DiagnosticContext, type DiagnosticOptions, type Explanation, type SpeakersSource } from './index.ts';
import { DEFAULT_METALLB_NAMESPACE, namespacedName, type ClusterState, type Service } from '../kube.ts';
import { compareStrings } from '../labels.ts';
import { changedState, type LabelEdit, type WhatIfChange } from './whatif-change.ts';

export { type LabelEdit, type WhatIfChange, parseLabelEdits, type ChangedState, changedState } from './whatif-change.ts';

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
  return svc.spec?.type === 'LoadBalancer' && !filteredByLoadBalancerClass(svc, lbClass);
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

/** Exit status of `whatif`: 1 when a Service loses its address or its announcer, else 0. */
export function whatIfExitCode(report: WhatIfReport): number {
  return report.breaks ? EXIT_NO : EXIT_OK;
}
