/**
 * An unstable announcer (issue #12 item 8): from the Service's `nodeAssigned` Events (the speaker
 * records `announcing from node "X" with protocol "layer2"` when a node starts announcing) and the
 * speaker pods' restart counts, whether the Layer 2 announcement keeps moving between nodes, how
 * often in the time the Events cover, and which speaker's restarts move it.
 *
 * Events are folded by the recorder: one Event per node with its `count`, first and last time.
 * The timeline of those first/last times is all that is left of the order, so `moves` is a lower
 * bound: the number of times consecutive known announcements name different nodes. (MetalLB's
 * speaker records nodeAssigned at every sync, metallb-ts's when a node takes the Service over:
 * `announcements`, the sum of the counts, is exact for metallb-ts and an upper bound for MetalLB.)
 * A speaker that restarts leaves memberlist and comes back; if it ranks first in the hash order,
 * each restart moves the announcement away and back: that speaker is named as the cause.
 *
 * Both Event shapes are read: core/v1 (`involvedObject`, `message`, `count`, `firstTimestamp`,
 * `lastTimestamp`) and events.k8s.io/v1 (`regarding`, `note`, `deprecatedCount`,
 * `deprecatedFirstTimestamp`, `deprecatedLastTimestamp`, `series`, `eventTime`). Pure.
 */
import { isSpeakerPod } from '../election/speakers.ts';
import type { ClusterState, Service } from '../kube.ts';
import { parseNodeAssigned, type SpeakerEventReason } from '../speaker/events.ts';
import type { FindingId } from './types.ts';

/** The speaker's Event reason read here. */
const NODE_ASSIGNED = 'nodeAssigned' satisfies SpeakerEventReason;

/** A speaker pod on a node the announcement moved through, with its restarts. */
export interface SpeakerRestarts {
  /** `namespace/name` */
  readonly pod: string;
  readonly node: string;
  readonly restarts: number;
  /** Why the container last ended (`OOMKilled`, `Error`, …) and when, if the status says. */
  readonly lastReason: string | null;
  readonly lastFinishedAt: string | null;
}

/** What explain reports (`flapping` in `explain -o json`). */
export interface Flapping {
  /** Nodes the Service was announced from, in order of first announcement. */
  readonly nodes: readonly string[];
  /** At least this many moves from one node to another (from the Events' timeline). */
  readonly moves: number;
  /** At most this many (every announcement after the first a move: exact for metallb-ts's speaker). */
  readonly movesAtMost: number;
  /** nodeAssigned announcements counted by the Events (sum of their counts). */
  readonly announcements: number;
  /** The time the Events cover (RFC 3339), and its length in ms (null when unknown). */
  readonly from: string | null;
  readonly to: string | null;
  readonly windowMs: number | null;
  /** Speaker pods on those nodes that restarted, most restarts first. */
  readonly restarts: readonly SpeakerRestarts[];
  /** The speaker whose restarts move the announcement (the one ranking first in the hash order among them), or null. */
  readonly cause: SpeakerRestarts | null;
}

/** The object an Event is about: `involvedObject` (core/v1) or `regarding` (events.k8s.io/v1). */
interface EventObject {
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
}

/**
 * An Event as the API serves it, in either shape (core/v1 or events.k8s.io/v1), read from outside:
 * the fields read here, each possibly absent or of another type.
 */
interface RawEvent {
  reason?: unknown;
  involvedObject?: EventObject;
  regarding?: EventObject;
  metadata?: { namespace?: string; creationTimestamp?: unknown };
  message?: unknown;
  note?: unknown;
  series?: { count?: unknown; lastObservedTime?: unknown };
  count?: unknown;
  deprecatedCount?: unknown;
  eventTime?: unknown;
  firstTimestamp?: unknown;
  deprecatedFirstTimestamp?: unknown;
  lastTimestamp?: unknown;
  deprecatedLastTimestamp?: unknown;
}

/** A pod's container status as the API serves it: the fields read here. */
interface RawContainerStatus {
  name?: unknown;
  restartCount?: unknown;
  lastState?: { terminated?: { reason?: unknown; finishedAt?: unknown } };
}

function timeOf(...values: unknown[]): number | null {
  for (const v of values) {
    if (typeof v !== 'string' || v === '') continue;
    const t = Date.parse(v);
    if (Number.isFinite(t)) return t;
  }
  return null;
}

/** One folded nodeAssigned Event: node, count, first and last time (ms). */
interface Folded {
  node: string;
  count: number;
  first: number | null;
  last: number | null;
}

/** nodeAssigned Events by `namespace/name` of their Service, per events list (explain runs once per Service: whois, whatif). */
const byServiceCache = new WeakMap<readonly unknown[], Map<string, RawEvent[]>>();

function nodeAssignedByService(events: readonly unknown[]): Map<string, RawEvent[]> {
  let m = byServiceCache.get(events);
  if (m) return m;
  m = new Map();
  for (const raw of events as (RawEvent | null | undefined)[]) {
    if (raw?.reason !== NODE_ASSIGNED) continue;
    const obj = raw.involvedObject ?? raw.regarding;
    if (!obj || (obj.kind && obj.kind !== 'Service')) continue;
    const key = `${obj.namespace ?? raw.metadata?.namespace ?? ''}/${obj.name ?? ''}`;
    const list = m.get(key);
    if (list) list.push(raw);
    else m.set(key, [raw]);
  }
  byServiceCache.set(events, m);
  return m;
}

/** The Service's Layer 2 nodeAssigned Events, either API shape, as Folded entries. */
function nodeAssignedEvents(state: Pick<ClusterState, 'events'>, service: Service): Folded[] {
  const ns = service.metadata?.namespace ?? 'default';
  const name = service.metadata?.name ?? '';
  const uid = service.metadata?.uid;
  const out: Folded[] = [];
  for (const raw of nodeAssignedByService(state.events).get(`${ns}/${name}`) ?? []) {
    const obj = raw.involvedObject ?? raw.regarding;
    if (uid && obj!.uid && obj!.uid !== uid) continue; // an earlier Service of the same name (nodeAssignedByService kept Events with an object only)
    const m = parseNodeAssigned(String(raw.message ?? raw.note ?? ''));
    if (m?.protocol !== 'layer2') continue;
    const series = raw.series ?? {};
    const count = Number(raw.count ?? raw.deprecatedCount ?? series.count ?? 1);
    const first = timeOf(raw.firstTimestamp, raw.deprecatedFirstTimestamp, raw.eventTime, raw.metadata?.creationTimestamp);
    const last = timeOf(raw.lastTimestamp, raw.deprecatedLastTimestamp, series.lastObservedTime, raw.eventTime, raw.firstTimestamp, raw.metadata?.creationTimestamp);
    out.push({ node: m.node, count: Number.isFinite(count) && count > 0 ? Math.floor(count) : 1, first, last });
  }
  return out;
}

/** Restart figures of the speaker pods on `nodes` (the `speaker` container, else the most restarted one). */
function speakerRestarts(state: Pick<ClusterState, 'pods'>, nodes: ReadonlySet<string>): SpeakerRestarts[] {
  const out: SpeakerRestarts[] = [];
  for (const pod of state.pods) {
    if (!isSpeakerPod(pod)) continue;
    const node = pod.spec?.nodeName;
    if (!node || !nodes.has(node)) continue;
    const statuses = ((pod as { status?: { containerStatuses?: unknown } }).status?.containerStatuses ?? []) as (RawContainerStatus | null | undefined)[];
    const st = statuses.find((s) => s?.name === 'speaker') ?? [...statuses].sort((a, b) => Number(b?.restartCount ?? 0) - Number(a?.restartCount ?? 0))[0];
    const restarts = Number(st?.restartCount ?? 0);
    if (!(restarts > 0)) continue;
    const term = st?.lastState?.terminated;
    out.push({
      pod: `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`,
      node,
      restarts,
      lastReason: typeof term?.reason === 'string' ? term.reason : null,
      lastFinishedAt: typeof term?.finishedAt === 'string' ? term.finishedAt : null,
    });
  }
  return out.sort((a, b) => b.restarts - a.restarts || (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
}

/**
 * Whether the Service's Layer 2 announcer is unstable: at least two moves between nodes in the
 * Events' timeline (one move is a failover). `hashOrder`: the candidates of the current election,
 * first = winner (ranks the speakers whose restarts move it). null when stable or no Events.
 */
export function announcerFlapping(state: Pick<ClusterState, 'events' | 'pods'>, service: Service, hashOrder: readonly string[]): Flapping | null {
  const events = nodeAssignedEvents(state, service);
  if (events.length < 2) return null;
  // The timeline of what is known: each Event's first and last announcement.
  const points: Array<{ t: number; node: string }> = [];
  for (const e of events) {
    if (e.first !== null) points.push({ t: e.first, node: e.node });
    if (e.last !== null && e.last !== e.first) points.push({ t: e.last, node: e.node });
  }
  points.sort((a, b) => a.t - b.t);
  let moves = 0;
  for (let i = 1; i < points.length; i++) if (points[i]!.node !== points[i - 1]!.node) moves++;
  const distinct = new Set(events.map((e) => e.node));
  moves = Math.max(moves, distinct.size - 1);
  if (moves < 2) return null;
  const nodes: string[] = [];
  for (const p of points) if (!nodes.includes(p.node)) nodes.push(p.node);
  for (const e of events) if (!nodes.includes(e.node)) nodes.push(e.node);
  const from = points.length ? points[0]!.t : null;
  const to = points.length ? points[points.length - 1]!.t : null;
  const restarts = speakerRestarts(state, distinct);
  const rank = (n: string): number => {
    const i = hashOrder.indexOf(n);
    return i < 0 ? Number.MAX_SAFE_INTEGER : i;
  };
  const announcements = events.reduce((n, e) => n + e.count, 0);
  const cause = restarts.length === 0 ? null : [...restarts].sort((a, b) => rank(a.node) - rank(b.node) || b.restarts - a.restarts)[0]!;
  return {
    nodes,
    moves,
    movesAtMost: Math.max(moves, announcements - 1),
    announcements,
    from: from === null ? null : new Date(from).toISOString(),
    to: to === null ? null : new Date(to).toISOString(),
    windowMs: from === null || to === null ? null : to - from,
    restarts,
    cause,
  };
}

/** `42 min`, `3 h`, `2 d`. */
function span(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} d`;
}

function names(xs: readonly string[], max = 6): string {
  return xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`;
}

/**
 * Finding `unstable-announcer` (warning): how often it moved, between which nodes, in what time,
 * which speaker's restarts move it; the fix: L2Advertisement nodeSelectors on stable nodes (and
 * the restarts themselves). `advertisements`: the L2Advertisements that apply to the Service.
 */
export function flappingFindings(f: Flapping | null, advertisements: readonly string[], namespace: string): Array<{ id: FindingId; severity: 'warning'; message: string; fix: string }> {
  if (!f) return [];
  const when = f.windowMs !== null && f.windowMs > 0 ? ` in ${span(f.windowMs)} of events` : ' (nodeAssigned events)';
  const times = f.movesAtMost > f.moves ? `${f.moves}–${f.movesAtMost} times` : `${f.moves} times`;
  let message = `moved ${times} between ${names(f.nodes)}${when}`;
  if (f.cause) {
    const c = f.cause;
    message += `: ${c.node}'s speaker restarted ${c.restarts} time${c.restarts === 1 ? '' : 's'}${c.lastReason ? ` (last ${c.lastReason})` : ''}, each restart moves it away and back`;
    const others = f.restarts.filter((r) => r !== c);
    if (others.length) message += `; also restarting: ${names(others.map((r) => `${r.node} (${r.restarts})`))}`;
  } else {
    message += '; no speaker on those nodes restarted: look for memberlist members leaving and joining (network) or node labels changing';
  }
  const stable = f.nodes.filter((n) => !f.restarts.some((r) => r.node === n));
  const ads = advertisements.length ? `L2Advertisement ${names(advertisements, 3)}` : 'the L2Advertisement';
  let fix = `give ${ads} nodeSelectors that pick stable nodes${stable.length ? ` (e.g. ${names(stable, 3)})` : ''}, so the announcement stays put`;
  if (f.cause) {
    const [podNs, podName] = f.cause.pod.split('/');
    fix += `; and find why ${f.cause.pod} restarts${f.cause.lastFinishedAt ? ` (last at ${f.cause.lastFinishedAt})` : ''}: kubectl -n ${podNs || namespace} describe pod ${podName}${f.cause.lastReason === 'OOMKilled' ? ' (OOMKilled: raise its memory limit)' : ''}`;
  }
  return [{ id: 'unstable-announcer', severity: 'warning', message, fix }];
}
