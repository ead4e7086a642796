/**
 * Whole-snapshot dry run (`metallb-ts allocate --dry-run`): what MetalLB's controller would
 * write for every LoadBalancer Service after a restart with this configuration.
 */
import type { Config } from '../config/types.ts';
import type { Service } from '../kube.ts';
import { formatIP, parseIP, type IP } from '../ip.ts';
import { poolCompatibility, type AllocationFailure } from '../allocator/index.ts';
import { newController, reconcileService, setControllerPools, statusKept, type ControllerState, type ReconcileEvent, type ReconcileOutcome } from './reconcile.ts';
import { ANNOTATION_IP_ALLOCATED_FROM_POOL, allocRequest, ipFamilyPolicy, requestedIPs, serviceKey, statusIPs } from './service.ts';
import { canonical, finalAt, settled } from './settled.ts';
import { attemptsOf, poolOfFailure, possiblePools, usablePools } from './reach.ts';
import { WriteHistory, type WriteCycle } from './write-history.ts';

/** A count that may exceed 2^53: a number when it is a safe integer, else its decimal string. */
export type Count = number | string;

/** Options of allocateAll. */
export interface AllocateAllOptions {
  /**
   * MetalLB's `--lb-class`. Default "" (MetalLB's default): only Services without
   * `spec.loadBalancerClass` are handled. Otherwise only Services with exactly this class.
   */
  readonly loadBalancerClass?: string;
  /**
   * Maximum number of full passes (default 100). MetalLB reprocesses every Service again as long
   * as one asks for it, without a limit (with a growing backoff); `passLimitReached` says when
   * this cap ended the run instead.
   */
  readonly maxPasses?: number;
  /**
   * `namespace/name` of the one Service whose outcome the caller needs (`explain`): the other
   * executions MetalLB can take (see allocateAll) are not run when none of them can change its
   * answer (it is final before the first tie group whose order matters: see finalAt). Its
   * outcome and `pools` are then exactly those of a run without `focus`; other Services may
   * lack a `nondeterministic` note.
   */
  readonly focus?: string;
}

/** The dry-run outcome for one Service. */
export interface ServiceAllocationOutcome {
  /** `namespace/name`. */
  readonly service: string;
  /** Addresses MetalLB would write to `status.loadBalancer.ingress` (canonical), [] if none. */
  readonly ips: readonly string[];
  /**
   * The `metallb.io/ip-allocated-from-pool` annotation MetalLB leaves on the Service, or null (no
   * address; or none written: convergeBalancer failed before setting it, e.g. an invalid address
   * request, and the Service had none).
   */
  readonly pool: string | null;
  /** When the Service ends without addresses, or its last reconcile failed: MetalLB's error text; else null. */
  readonly error: string | null;
  /** The allocator's structured reason for `error`, when the allocator produced it. */
  readonly reason?: AllocationFailure;
  /**
   * The Events the Service has afterwards, as `kubectl describe` lists them: every distinct
   * (type, reason, message) the run emitted, in the order first emitted, with `count` (client-go's
   * recorder counts repeats in one Event). `cause`: the allocator's structured reason behind an
   * AllocationFailed / AdditionalAssignFailed / ClearAssignment message.
   */
  readonly events: readonly (ReconcileEvent & { readonly count: number })[];
  /** Set when MetalLB's own result could differ (random map order, unstable processing order); says why. */
  readonly nondeterministic?: string;
  /**
   * Set when MetalLB's controller never settles on this Service: each write triggers a reconcile
   * that writes the next of these address lists, forever. `ips` is where metallb-ts's controller
   * stops (it writes the first repeated state and then ignores its own writes of the Service).
   */
  readonly oscillates?: readonly (readonly string[])[];
}

/** Per-pool figures after the dry run. Counts are numbers, or strings when beyond 2^53. */
export interface PoolOutcome {
  readonly name: string;
  /** Capacity (MetalLB's poolCount; 2^63-1 for huge IPv6 blocks). */
  readonly size: Count;
  /** Distinct addresses in use (IPv4 + IPv6). */
  readonly inUse: number;
  readonly assignedIPv4: number;
  readonly assignedIPv6: number;
  readonly availableIPv4: Count;
  readonly availableIPv6: Count;
}

/** Result of allocateAll. */
export interface AllocateAllResult {
  /** One entry per handled LoadBalancer Service, in processing order (see allocateAll). */
  readonly services: readonly ServiceAllocationOutcome[];
  /** Every configured pool, in configuration order. */
  readonly pools: readonly PoolOutcome[];
  /** Number of full passes run (a pass reconciles every Service; another follows while one asks to reprocess all). */
  readonly passes: number;
  /** Present (true) when `maxPasses` stopped the passes while a Service still asked for another. */
  readonly passLimitReached?: true;
}

function count(v: bigint): Count {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

function handled(svc: Service, lbClass: string): boolean {
  if (svc.spec?.type !== 'LoadBalancer') return false;
  const cls = svc.spec.loadBalancerClass;
  if (cls === undefined || cls === null || cls === '') return lbClass === '';
  return cls === lbClass;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The number of `status.loadBalancer.ingress` entries of a Service, hostname-only ones included:
 * the key MetalLB's reprocessAll sorts by (`service_controller_reload.go`
 * `len(…Status.LoadBalancer.Ingress)`).
 */
export function ingressEntries(svc: Service): number {
  return svc.status?.loadBalancer?.ingress?.length ?? 0;
}

/**
 * MetalLB's reprocess-all order, made stable. MetalLB sorts the Services by the number of
 * `status.loadBalancer.ingress` entries (hostname-only ones included: ingressEntries), most first;
 * within one count its order is the informer
 * cache's (Go map order, random). metallb-ts picks, within one count, the Services that keep their
 * status addresses first (`kept`, the configuration's verdict: see statusKept), then
 * `namespace/name` — an order MetalLB can take, and the one in which no Service whose address
 * left its pool takes, on a restart, an address another Service's status still holds. Services
 * without addresses come last, by `metadata.creationTimestamp` (oldest first, missing last), then
 * `namespace/name`. Returns a new array; the input is not modified. allocateAll and the live
 * controller loop (src/controller) both order their passes with it.
 */
export function processingOrder<S extends Service>(services: readonly S[], kept?: (svc: S) => boolean): S[] {
  const decorated = services.map((svc) => {
    const n = ingressEntries(svc);
    return { svc, key: serviceKey(svc), n, keeps: n > 0 && kept ? kept(svc) : true, ts: svc.metadata?.creationTimestamp ?? '\uffff' };
  });
  decorated.sort((a, b) => {
    if (a.n !== b.n) return b.n - a.n;
    if (a.n === 0) return cmp(a.ts, b.ts) || cmp(a.key, b.key);
    if (a.keeps !== b.keeps) return a.keeps ? -1 : 1;
    return cmp(a.key, b.key);
  });
  return decorated.map((d) => d.svc);
}

/** An address a random choice decides, and where the randomness comes from (for the notes). */
interface Taint {
  readonly addr: bigint;
  readonly family: 'ipv4' | 'ipv6';
  readonly source: string;
  /** Services whose own choice it is (not "affected" by it). */
  readonly owners: ReadonlySet<string>;
}

/**
 * Runs MetalLB's controller convergence over every LoadBalancer Service of a snapshot, as after
 * a controller restart, on a fresh allocator configured with `config.pools` (no I/O).
 *
 * - Order: processingOrder (status addresses first, most first; those that keep them first).
 * - Passes: every Service is reconciled; a written Service replaces the snapshot's object; while a
 *   reconcile of the pass asked MetalLB's "reprocess all" (SyncStateReprocessAll), another pass
 *   runs, re-sorted, as MetalLB's reprocessAll retries (up to `maxPasses`).
 * - Then MetalLB reconciles every Service the last pass wrote once more (the update event of its
 *   own write); a Service that changes again keeps going, and one whose writes come back to an
 *   earlier state never settles: it is reported in `oscillates` and stops there, as metallb-ts's
 *   controller does (WriteHistory).
 *
 * Services of another `loadBalancerClass` (see options) and non-LoadBalancer Services are left
 * out. Where MetalLB's result could differ, the outcome carries a `nondeterministic` note:
 * another pool some Go map order would have chosen (the allocator's `tiedPools`), an address in
 * overlapping pools, two statuses claiming one address, a Service whose address left its pool
 * that MetalLB may process before one whose status address it would then take (restart order is
 * random among Services with as many addresses), pending Services competing for the last free
 * addresses — and every Service whose result depends on one of those through the addresses
 * (it took, requested or walked past an address a random choice decides). Then other executions
 * MetalLB can take run too (see alternatives: other orders within the groups whose order may
 * matter, other tied pools), each resumed from the name order's state where it first differs
 * (see Fork), and a Service whose answer changes in one is flagged.
 */
export function allocateAll(config: Config, services: readonly Service[], opts: AllocateAllOptions = {}): AllocateAllResult {
  const prefer = new Map<string, string>();
  // statusKept depends on the configuration and the object only: every run shares its answers.
  const statusKeptMemo = new WeakMap<Service, boolean>();
  let first = allocateAllInOrder(config, services, opts, NAME, prefer, undefined, statusKeptMemo);
  // A Service that never settles in the pool name order gives it, but whose allocation could have
  // gone to another (tied) pool: MetalLB re-allocates it in random pool order each round and stays
  // once it lands in a pool where it settles (a PreferDualStack Service on a single-stack cluster
  // in an IPv6-only pool next to a dual-stack one). Follow that branch and answer its end state.
  const original = first;
  const escapes = new Map<string, { readonly from: readonly string[]; readonly to: string }>();
  for (const o of original.result.services) {
    if (!o.oscillates) continue;
    const tied = original.tied.get(o.service) ?? [];
    for (const pool of tied) {
      if (prefer.has(o.service)) break;
      const trial = new Map([...prefer, [o.service, pool]]);
      const alt = allocateAllInOrder(config, services, opts, NAME, trial, undefined, statusKeptMemo);
      const mine = alt.result.services.find((x) => x.service === o.service);
      if (!mine || mine.oscillates) continue;
      prefer.set(o.service, pool);
      escapes.set(o.service, { from: tied.filter((t) => t !== pool), to: pool });
      first = alt;
    }
  }
  if (escapes.size > 0) {
    const before = new Map(original.result.services.map((o) => [o.service, o]));
    const services_ = first.result.services.map((o): ServiceAllocationOutcome => {
      const e = escapes.get(o.service);
      if (e) {
        const text = `MetalLB re-allocates it in random (Go map) pool order after each round: in ${e.from.join(', ')} it never settles, in ${e.to} it does, so it ends there`;
        return { ...o, nondeterministic: o.nondeterministic ? `${o.nondeterministic}; ${text}` : text };
      }
      const b = before.get(o.service);
      if (o.nondeterministic !== undefined || (b && answerOf(b) === answerOf(o))) return o;
      return { ...o, nondeterministic: `its answer depends on the random pool choices that end ${[...escapes.keys()].join(', ')}'s re-allocations in MetalLB` };
    });
    first = { ...first, result: { ...first.result, services: services_ } };
  }
  // MetalLB's restart order within one ingress-entry count is Go map order, and so is its choice
  // among equally good pools: run other orders it can take (each tie group rotated by one,
  // reversed, with the Services whose place matters first; with two such groups or more, each
  // group alone too), with name order's pool choices and with other tied pools (every Service
  // that had tied pools taking another one), and flag every Service whose answer changes.
  // Rotating moves every member of a group, so a Service that takes the n-th free address of a
  // pool shared with its group gets another one.
  if (opts.focus !== undefined && focusFinal(first, opts.focus)) return first.result;
  const orders = orderVariants(first);
  const run = (v: Variant): { variant: Variant; tied: ReadonlyMap<string, readonly string[]>; outcomes: ReadonlyMap<string, ServiceAllocationOutcome> } => {
    // Each resumes from the latest state of the name order's run its changes leave alone (Fork).
    // (first.fork is no FinalPoint here: allocateAll returned before running others then.)
    const fork = first.fork && !('focusFinal' in first.fork) ? first.fork : undefined;
    const resumable = fork !== undefined && (v.prefer === prefer || (first.firstTiedAt ?? Infinity) >= fork.index);
    const from = resumable ? fork : first.fork0;
    const lean = allocateAllInOrder(config, services, opts, v.ties, v.prefer, from, statusKeptMemo);
    return { variant: v, tied: lean.tied, outcomes: new Map(lean.result.services.map((o) => [o.service, o])) };
  };
  const others = orders.filter((t) => t !== NAME).map((ties) => run({ ties, prefer, changed: [] }));
  // The pools tied in any of these orders (a pool full in one order may be free in another).
  const tied = new Map<string, string[]>();
  for (const m of [first.tied, ...others.map((o) => o.tied)]) {
    for (const [key, pools] of m) {
      const seen = tied.get(key) ?? [];
      for (const p of pools) if (!seen.includes(p)) seen.push(p);
      tied.set(key, seen);
    }
  }
  for (const p of poolVariants(tied, prefer)) for (const ties of orders) others.push(run({ ties, ...p }));
  if (others.length === 0) return first.result;
  const services_ = first.result.services.map((o): ServiceAllocationOutcome => {
    if (o.nondeterministic !== undefined) return o;
    const mine = answerOf(o);
    for (const { variant, outcomes } of others) {
      const alt = outcomes.get(o.service);
      if (alt === undefined || answerOf(alt) === mine) continue;
      const cycle = (c: readonly (readonly string[])[]): string => c.map((st) => st.join(', ') || 'no address').join(' / ');
      const ends = alt.oscillates ? 'never settles' : alt.ips.length > 0 ? `gets ${alt.ips.join(', ')}` : 'gets no address';
      const what =
        alt.oscillates && o.oscillates && cycle(alt.oscillates) !== cycle(o.oscillates)
          ? `never settles, cycling through ${cycle(alt.oscillates)}`
          : alt.ips.join(',') === o.ips.join(',') && !alt.oscillates === !o.oscillates
            ? 'ends with other events'
            : ends;
      return { ...o, nondeterministic: variantNote(variant, what) };
    }
    return o;
  });
  return { ...first.result, services: services_ };
}

/**
 * Whether no other execution allocateAll runs after the name-order run `first` can change
 * `focus`'s answer: it already has a `nondeterministic` note (the others only add one), or it is
 * not handled; or every other run resumes from `first.fork` (no reconcile before it had tied
 * pools, so that the pool variants resume there too) and its answer is final there (finalAt).
 */
function focusFinal(first: NameRun, focus: string): boolean {
  const mine = first.result.services.find((o) => o.service === focus);
  if (mine === undefined || mine.nondeterministic !== undefined) return true;
  const fork = first.fork;
  if (fork === undefined || (first.firstTiedAt ?? Infinity) < fork.index) return false;
  return 'focusFinal' in fork || finalAt(fork, focus);
}

/** One other execution MetalLB can take: an order within the tie groups and pool choices. */
interface Variant {
  readonly ties: Ties;
  /** preferredPools of the run (allocateAll's own map when the pool choices are name order's). */
  readonly prefer: ReadonlyMap<string, string>;
  /** The Services made to take another tied pool, with it. */
  readonly changed: ReadonlyArray<readonly [string, string]>;
}

const ORDER_NOTE = 'after a restart MetalLB processes the Services with as many status.loadBalancer.ingress entries in random (Go map) order';

/** The `nondeterministic` note of a Service whose answer changes in `v`: it `what`s there. */
function variantNote(v: Variant, what: string): string {
  const shown =
    v.changed
      .slice(0, 3)
      .map(([k, p]) => `${k} taking ${p}`)
      .join(', ') + (v.changed.length > 3 ? ` and ${v.changed.length - 3} more` : '');
  if (v.changed.length === 0) return `${ORDER_NOTE}; in another such order this Service ${what}`;
  if (isNameOrder(v.ties)) return `MetalLB picks among equally good pools in random (Go map) order; with other such choices (${shown}) this Service ${what}`;
  return `${ORDER_NOTE}, and picks among equally good pools in random order; in another such order, with ${shown}, this Service ${what}`;
}

/**
 * The orders allocateAll tries after the name-order run `first`: name order itself, and when a
 * tie group matters every group rotated, reversed, with the Services whose place matters first
 * (when that differs), and with two such groups or more each group alone in those three ways.
 */
function orderVariants(first: NameRun): Ties[] {
  const orders: Ties[] = [NAME];
  if (!first.tiesMatter) return orders;
  const movers = first.movers;
  const kinds: TieKind[] = first.moversFirstDiffers ? ['rotate', 'reverse', 'moversFirst'] : ['rotate', 'reverse'];
  for (const kind of kinds) orders.push({ others: kind, movers });
  if (first.mattering.length > 1) {
    for (const n of first.mattering) for (const kind of kinds) orders.push({ byCount: new Map([[n, kind]]), others: 'name', movers });
  }
  return orders;
}

/**
 * Other pool choices: every Service that had tied pools (`tied`: chosen pool first, in any order
 * tried) and whose pool `prefer` does not fix takes the next one; and, when that differs, the last.
 */
function poolVariants(tied: ReadonlyMap<string, readonly string[]>, prefer: ReadonlyMap<string, string>): Array<Omit<Variant, 'ties'>> {
  const out: Array<Omit<Variant, 'ties'>> = [];
  for (const pick of ['second', 'last'] as const) {
    const changed: Array<readonly [string, string]> = [];
    for (const [key, seen] of tied) {
      if (prefer.has(key) || seen.length < 2) continue;
      changed.push([key, pick === 'second' ? seen[1]! : seen[seen.length - 1]!]);
    }
    if (changed.length === 0 || (pick === 'last' && changed.every(([k, p]) => tied.get(k)![1] === p))) continue;
    out.push({ prefer: new Map([...prefer, ...changed]), changed });
  }
  return out;
}

/** What the differential compares of an outcome: addresses, annotation, settling, events (as a set). */
function answerOf(o: ServiceAllocationOutcome): string {
  const events = o.events.map((e) => `${e.type}|${e.reason}|${e.message}`).sort();
  return JSON.stringify([o.ips, o.pool, o.oscillates ?? null, events]);
}

/** How a run orders the Services of one ingress-entry group (see tieOrder). */
type TieKind = 'name' | 'reverse' | 'rotate' | 'moversFirst';

/**
 * A run's order within each ingress-entry group: `byCount` for the groups of those counts,
 * `others` for the rest. `movers`: the Services moversFirst puts first.
 */
interface Ties {
  readonly byCount?: ReadonlyMap<number, TieKind>;
  readonly others: TieKind;
  readonly movers?: ReadonlySet<string>;
}

/** processingOrder's own order in every group. */
const NAME: Ties = { others: 'name' };

function isNameOrder(t: Ties): boolean {
  return t.others === 'name' && (t.byCount === undefined || [...t.byCount.values()].every((k) => k === 'name'));
}

/**
 * `sorted` (processingOrder's result) with each run of Services of one ingress-entry count
 * reordered as `ties` says for it: `name` keeps it, `reverse` reverses it, `rotate` moves its
 * first Service last, `moversFirst` moves `ties.movers` before the others (each part in order).
 */
function tieOrder<S extends Service>(sorted: S[], ties: Ties): S[] {
  if (isNameOrder(ties)) return sorted;
  const out: S[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    const n = ingressEntries(sorted[i]!);
    while (j < sorted.length && ingressEntries(sorted[j]!) === n) j++;
    const group = sorted.slice(i, j);
    const kind = ties.byCount?.get(n) ?? ties.others;
    if (kind === 'reverse') out.push(...group.reverse());
    else if (kind === 'rotate') out.push(...group.slice(1), ...group.slice(0, 1));
    else if (kind === 'moversFirst') {
      const first = group.filter((svc) => ties.movers?.has(serviceKey(svc)));
      out.push(...first, ...group.filter((svc) => !ties.movers?.has(serviceKey(svc))));
    } else out.push(...group);
    i = j;
  }
  return out;
}

/**
 * A name-order dry run's state at the start of one Service of its first pass: the first Service
 * of the first ingress-entry group (two Services or more) whose order may matter. Every group
 * before it is one Service, or Services that each kept exactly their status addresses (no
 * walk, no failure; none PreferDualStack, no address claimed by two statuses): each touched only
 * its own addresses, so any order within it ends in this same state. The other tie orders resume
 * from here instead of running the whole prefix again (allocateAll). Holds its own copies: a
 * resumed run copies them again.
 */
interface Fork {
  /** processingOrder's result (name order within each count): the initial Service objects. */
  readonly base: readonly Service[];
  /** Index in `base` (and in every tieOrder of it) of the first Service to run: a group start. */
  readonly index: number;
  readonly initialKept: ReadonlyMap<string, boolean>;
  readonly ctrl: ControllerState;
  readonly current: ReadonlyMap<string, Service>;
  readonly wroteConverged: ReadonlyMap<string, Service>;
  readonly last: ReadonlyMap<string, ReconcileOutcome>;
  readonly firstOutcome: ReadonlyMap<string, ReconcileOutcome>;
  readonly emitted: ReadonlyMap<string, ReadonlyMap<string, ReconcileEvent & { count: number }>>;
  readonly history: WriteHistory;
  readonly cycles: ReadonlyMap<string, WriteCycle>;
  /** The first pass's writes and whether one of its reconciles asked to reprocess all, so far. */
  readonly written: ReadonlySet<string>;
  readonly again: boolean;
}

/**
 * Where a name-order run with `focus` would have taken its Fork, when the focused Service's
 * answer is final there (finalAt) and no reconcile before it had tied pools: allocateAll then
 * runs no other execution, and the state is not copied.
 */
interface FinalPoint {
  readonly index: number;
  readonly focusFinal: true;
}

/** A run of allocateAllInOrder: its result, and what allocateAll needs to run the others. */
interface NameRun {
  readonly result: AllocateAllResult;
  /** Some group of two Services or more has one whose place may change an answer (`mattering` is not empty). */
  readonly tiesMatter: boolean;
  /** Service → every pool its allocations could have taken (chosen first, then the tied ones). */
  readonly tied: ReadonlyMap<string, readonly string[]>;
  /** The ingress-entry counts of those groups, in processing order. */
  readonly mattering: readonly number[];
  /** The Services whose place may matter (moversFirst puts them first). */
  readonly movers: ReadonlySet<string>;
  /** Some such group has a Service whose place does not matter before one whose place does. */
  readonly moversFirstDiffers: boolean;
  /** Name order only: the state before the first group whose order matters, and at the start. */
  readonly fork?: Fork | FinalPoint;
  readonly fork0?: Fork;
  /** Name order only: index in the first pass of the first reconcile with tied pools. */
  readonly firstTiedAt?: number;
}

/** A copy of `emitted` (its events carry a count that later repeats increment). */
function copyEmitted(emitted: ReadonlyMap<string, ReadonlyMap<string, ReconcileEvent & { count: number }>>): Map<string, Map<string, ReconcileEvent & { count: number }>> {
  const out = new Map<string, Map<string, ReconcileEvent & { count: number }>>();
  for (const [key, mine] of emitted) out.set(key, new Map([...mine].map(([id, e]) => [id, { ...e }])));
  return out;
}

/**
 * allocateAll with the order within each ingress-entry count given by `tie`; `tiesMatter`: some
 * count has two Services or more, one of which does not keep its status addresses (pending, or
 * re-allocating), is PreferDualStack, or holds a status address another Service claims too, so
 * that order may change an answer. In name order with `tiesMatter`, `fork` is the state to run
 * the other tie orders from (see Fork). With `from`, the run resumes there (its `prefer` is the
 * fork's) and is lean: it computes the answers only, no `nondeterministic` notes. `keptMemo`:
 * statusKept's answers per Service object (the configuration's verdict), shared by the runs of
 * one allocateAll.
 */
function allocateAllInOrder(
  config: Config,
  services: readonly Service[],
  opts: AllocateAllOptions,
  ties: Ties,
  prefer: ReadonlyMap<string, string>,
  from?: Fork,
  keptMemo: WeakMap<Service, boolean> = new WeakMap(),
): NameRun {
  const lbClass = opts.loadBalancerClass ?? '';
  const maxPasses = opts.maxPasses ?? 100;
  const lean = from !== undefined;
  let ctrl: ControllerState;
  if (from) {
    ctrl = { allocator: from.ctrl.allocator.clone(), pools: from.ctrl.pools };
    ctrl.allocator.preferredPools.clear();
    for (const [k, p] of prefer) ctrl.allocator.preferredPools.set(k, p);
  } else {
    ctrl = newController();
    for (const [k, p] of prefer) ctrl.allocator.preferredPools.set(k, p);
    setControllerPools(ctrl, config.pools.values());
  }
  /** Service → every pool its allocations could have taken (chosen and tied), in the order seen. */
  const tiedOf = new Map<string, string[]>();
  const alloc = ctrl.allocator;

  const current = new Map<string, Service>();
  const initialIPs = new Map<string, string[]>();
  /** The restart-order class of each Service: its ingress entries (MetalLB's sort key). */
  const entries = new Map<string, number>();
  for (const svc of services) {
    if (!handled(svc, lbClass)) continue;
    const key = serviceKey(svc);
    current.set(key, svc);
    initialIPs.set(key, statusIPs(svc));
    entries.set(key, ingressEntries(svc));
  }
  /** The objects a reconcile wrote in this run, by key, while converged (see settled). */
  const wroteConverged = new Map<string, Service>(from?.wroteConverged ?? []);
  // settled(ctrl, key, svc) reads `svc` and key's own allocation, which only a reconcile of key
  // changes (run forgets it then); statusKept reads `svc` and the configuration: both are
  // remembered per object, the re-sorts of later passes ask them again for every Service.
  const settledMemo = new Map<string, { readonly svc: Service; readonly value: boolean }>();
  const isSettled = (key: string, svc: Service): boolean => {
    const m = settledMemo.get(key);
    if (m && m.svc === svc) return m.value;
    const value = settled(ctrl, key, svc);
    settledMemo.set(key, { svc, value });
    return value;
  };
  const kept = (svc: Service): boolean => {
    const key = serviceKey(svc);
    if (wroteConverged.get(key) === svc && isSettled(key, svc)) return true;
    let value = keptMemo.get(svc);
    if (value === undefined) keptMemo.set(svc, (value = statusKept(ctrl, key, svc)));
    return value;
  };
  const initialKept = from ? from.initialKept : new Map([...current].map(([k, svc]) => [k, initialIPs.get(k)!.length > 0 && kept(svc)]));
  const base = from ? from.base : processingOrder([...current.values()], kept);
  const sorted = tieOrder([...base], ties).map(serviceKey);
  if (from) for (const [k, svc] of from.current) current.set(k, svc);
  // A PreferDualStack Service allocates its missing family on every reconcile, even when it
  // keeps its status: it may take what another Service of its group would keep.
  // A status address claimed by several Services: all but one re-allocate, whatever the config says.
  const claims = new Map<string, number>();
  if (!lean) {
    for (const k of sorted) {
      const ips = initialIPs.get(k)!;
      for (let i = 0; i < ips.length; i++) {
        const ip = canonical(ips[i]!);
        // each address once per Service
        if (ips.findIndex((x) => canonical(x) === ip) === i) claims.set(ip, (claims.get(ip) ?? 0) + 1);
      }
    }
  }
  /** Whether `k`'s place in its group may change an answer (see tiesMatter). */
  const mayMatter = (k: string): boolean => !initialKept.get(k) || ipFamilyPolicy(current.get(k)!) === 'PreferDualStack' || initialIPs.get(k)!.some((ip) => claims.get(canonical(ip))! > 1);
  /** The ingress-entry counts whose group (two Services or more) has one that mayMatter, in order. */
  const mattering: number[] = [];
  const placeMatters = new Set<string>();
  let moversFirstDiffers = false;
  if (!lean) {
    const size = new Map<number, number>();
    for (const k of sorted) size.set(entries.get(k)!, (size.get(entries.get(k)!) ?? 0) + 1);
    const keeperSeen = new Set<number>();
    for (const k of sorted) {
      const n = entries.get(k)!;
      if (!mayMatter(k)) {
        keeperSeen.add(n);
        continue;
      }
      placeMatters.add(k);
      if (size.get(n)! < 2) continue;
      if (!mattering.includes(n)) mattering.push(n);
      if (keeperSeen.has(n)) moversFirstDiffers = true;
    }
  }
  const tiesMatter = mattering.length > 0;
  // (A lean run notes nothing: no pending Services to compare.)
  const pending = lean ? [] : sorted.filter((k) => initialIPs.get(k)!.length === 0);
  const rank = new Map(sorted.map((k, i) => [k, i]));
  const pendingSet = new Set(pending);

  const last = new Map<string, ReconcileOutcome>(from?.last ?? []);
  const emitted = from ? copyEmitted(from.emitted) : new Map<string, Map<string, ReconcileEvent & { count: number }>>();
  const firstOutcome = new Map<string, ReconcileOutcome>(from?.firstOutcome ?? []);
  const notes = new Map<string, string[]>();
  const note = (key: string, text: string): void => {
    const list = notes.get(key) ?? [];
    if (!list.includes(text)) list.push(text);
    notes.set(key, list);
  };
  const history = from ? from.history.clone() : new WriteHistory();
  const cycles = new Map<string, WriteCycle>(from?.cycles ?? []);

  // ----- addresses a random choice decides (see the function comment), in the order they arise
  // One entry per address (the first source wins), and per pool and family the lowest one.
  const taintByAddr = new Map<string, Taint>();
  const lowestInPool = new Map<string, Taint>();
  const taint = (ips: readonly string[], source: string, owners: readonly string[]): void => {
    for (const s of ips) {
      const ip = parseIP(s);
      if (!ip) continue;
      const id = `${ip.family}|${ip.value}`;
      if (taintByAddr.has(id)) continue;
      const t: Taint = { addr: ip.value, family: ip.family, source, owners: new Set(owners) };
      taintByAddr.set(id, t);
      for (const pool of alloc.poolsForIPs([ip])) {
        const k = `${pool}|${ip.family}`;
        const low = lowestInPool.get(k);
        if (!low || t.addr < low.addr) lowestInPool.set(k, t);
      }
    }
  };
  /**
   * Pools in which a Service whose result is random might take any address (it may re-allocate,
   * and where is not known): every Service walking one of them later, or taking an address in one,
   * depends on it.
   */
  const wholePools = new Map<string, Taint>();
  const taintPools = (svcKey: string, source: string, owners: readonly string[]): void => {
    const svc = current.get(svcKey);
    if (!svc) return;
    for (const pool of possiblePools(ctrl, svcKey, svc)) {
      if (!wholePools.has(pool)) wholePools.set(pool, { addr: 0n, family: 'ipv4', source, owners: new Set(owners) });
    }
  };
  /**
   * The uncertain address `key`'s reconcile depends on, if any: one it took or asked for, or one
   * in a pool it walked that could change what it found there (any, in a pool it found full; one
   * at or below the address it got, in the pool it took it from); any, in a pool a random Service
   * may re-allocate in.
   */
  const dependsOn = (key: string, touched: readonly string[], walked: ReadonlyArray<{ pool: string; chosen?: readonly IP[]; full: boolean }>): Taint | undefined => {
    if (taintByAddr.size === 0 && wholePools.size === 0 && lowestInPool.size === 0) return undefined;
    for (const s of touched) {
      const ip = parseIP(s);
      const t = ip && taintByAddr.get(`${ip.family}|${ip.value}`);
      if (t && !t.owners.has(key)) return t;
      if (ip && wholePools.size > 0) {
        for (const pool of alloc.poolsForIPs([ip])) {
          const w = wholePools.get(pool);
          if (w && !w.owners.has(key)) return w;
        }
      }
    }
    for (const w of walked) {
      const whole = wholePools.get(w.pool);
      if (whole && !whole.owners.has(key)) return whole;
      for (const family of ['ipv4', 'ipv6'] as const) {
        const low = lowestInPool.get(`${w.pool}|${family}`);
        if (!low || low.owners.has(key)) continue;
        if (w.full || (w.chosen ?? []).some((ip) => ip.family === family && low.addr <= ip.value)) return low;
      }
    }
    return undefined;
  };
  let firstPass = true;
  // The status addresses of the Services that keep theirs, per status count, pool and family,
  // ascending; a Service whose address left its pool could take, coming first, any of them at or
  // below the address it finds free (all of them in a pool it finds full).
  interface Keeper {
    readonly key: string;
    readonly addr: bigint;
    readonly text: string;
  }
  interface Group {
    readonly keepers: Keeper[];
    readonly reaches: Array<{ key: string; reach: bigint }>;
    tainted: number;
  }
  const groups = new Map<string, Group>();
  const groupOf = (n: number, pool: string, family: string): Group | undefined => groups.get(`${n}|${pool}|${family}`);
  for (const k of lean ? [] : sorted) {
    const ips = initialIPs.get(k)!;
    if (ips.length === 0 || !initialKept.get(k)) continue;
    for (const text of ips) {
      const ip = parseIP(text)!;
      for (const pool of alloc.poolsForIPs([ip])) {
        const id = `${entries.get(k)!}|${pool}|${ip.family}`;
        let g = groups.get(id);
        if (!g) groups.set(id, (g = { keepers: [], reaches: [], tainted: 0 }));
        g.keepers.push({ key: k, addr: ip.value, text: formatIP(ip) });
      }
    }
  }
  for (const g of groups.values()) g.keepers.sort((x, y) => (x.addr < y.addr ? -1 : x.addr > y.addr ? 1 : 0));
  const FULL = 1n << 129n;
  /** How many keepers of `g` are at or below `reach`. */
  const exposedCount = (g: Group, reach: bigint): number => {
    let lo = 0;
    let hi = g.keepers.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (g.keepers[mid]!.addr <= reach) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  /** Services whose address left its pool and that could take status addresses of others: what they could take. */
  const movers = new Map<string, { why: string; count: number; victims: string[]; addrs: string[] }>();
  /** Services that could lose their status address that way. */
  const victims = new Set<string>();
  /** Per status count and pool: the Services whose address left its pool that walked it, in order, and whether they took an address there. */
  const moverWalks = new Map<string, Array<{ key: string; took: boolean; why: string }>>();

  const analyse = (key: string, input: Service, prevIPs: readonly string[], out: ReconcileOutcome): void => {
    const a = out.allocation;
    const resultIPs = statusIPs(current.get(key)!);
    let orderNoted = false;
    if (a && a.tiedPools.length > 0) {
      orderNoted = true;
      note(key, `pools ${[a.pool, ...a.tiedPools].join(', ')} could each be chosen: MetalLB walks them in random (Go map) order, metallb-ts took ${a.pool}`);
      taint([...a.ips, ...a.tiedChoices.flatMap((c) => c.ips)], `${key}'s random pool choice`, [key]);
    }
    // What this reconcile looked at: the addresses it newly took or asked for, the pools it walked.
    const desired = requestedIPs(input);
    const touched = [...new Set([...statusIPs(input), ...(desired.ok ? desired.ips.map(formatIP) : []), ...resultIPs].map(canonical))].filter((s) => !prevIPs.includes(s));
    const attempts = a?.attempts ?? attemptsOf(out.failure?.reason);
    const resultByFamily = resultIPs.map((s) => parseIP(s)!).filter(Boolean);
    const walked = attempts
      .filter((t) => t.outcome === 'chosen' || t.refusal?.reason === 'noAvailableIPs' || t.refusal?.reason === 'wrongFamily')
      .map((t) => ({ pool: t.pool, full: t.outcome !== 'chosen', ...(t.outcome === 'chosen' ? { chosen: resultByFamily } : {}) }));
    const failedPool = poolOfFailure(out.failure?.reason);
    if (failedPool) walked.push({ pool: failedPool, full: true });

    const had = initialIPs.get(key)!.length > 0;
    const n = entries.get(key)!;
    // Two statuses claiming one address: whichever MetalLB processes first keeps it (random only
    // between Services with as many ingress entries; otherwise the one with more comes first).
    let lostClaim = false;
    const conflict = out.events.find((e) => e.reason === 'ClearAssignment')?.cause;
    if (firstPass && had && conflict?.kind === 'sharingConflict') {
      const ip = canonical(conflict.sharing.ip);
      for (const other of conflict.sharing.services) {
        if (!(initialIPs.get(other) ?? []).map(canonical).includes(ip) || entries.get(other) !== n) continue;
        note(key, `its status address ${ip} is also claimed by ${other}'s status; MetalLB keeps it for whichever it processes first (random order after a restart)`);
        note(other, `its status address ${ip} is also claimed by ${key}'s status; MetalLB keeps it for whichever it processes first (random order after a restart)`);
        taint([ip, ...resultIPs], `the restart order of ${key} and ${other}`, [key, other]);
        taintPools(key, `the restart order of ${key} and ${other}`, [key, other]);
        taintPools(other, `the restart order of ${key} and ${other}`, [key, other]);
        orderNoted = true;
        lostClaim = true;
      }
    }
    // It re-allocates now, in the order of the Services that keep their status addresses: one
    // whose address left its pool, or that lost a claimed address to another status.
    const moved = firstPass && had && (!initialKept.get(key) || lostClaim);
    const why = initialKept.get(key) ? 'its status address went to another Service' : 'its status address is no longer allowed';
    // Restart order: such a Service, processed before the Services of its group that keep theirs
    // (MetalLB's order within a group is random), takes what it finds free — their addresses too.
    if (moved && walked.length > 0) {
      for (const w of walked) {
        for (const family of ['ipv4', 'ipv6'] as const) {
          const g = groupOf(n, w.pool, family);
          if (!g) continue;
          const chosen = (w.chosen ?? []).find((c) => c.family === family);
          const reach = w.full ? FULL : chosen ? chosen.value : -1n;
          const count = exposedCount(g, reach);
          const others = g.keepers.slice(0, count).filter((k) => k.key !== key);
          if (others.length === 0) continue;
          orderNoted = true;
          g.reaches.push({ key, reach });
          let m = movers.get(key);
          if (!m) movers.set(key, (m = { why, count: 0, victims: [], addrs: [] }));
          m.count += others.length;
          for (const k of others.slice(0, 3)) {
            if (m.victims.length < 3) m.victims.push(k.key);
            if (m.addrs.length < 3) m.addrs.push(k.text);
          }
          if (count > g.tainted) {
            const fresh = g.keepers.slice(g.tainted, count);
            for (const k of fresh) victims.add(k.key);
            taint(
              fresh.map((k) => k.text),
              `the restart order of ${key} and ${fresh[0]!.key}`,
              [key, ...fresh.map((k) => k.key)],
            );
            taintPools(key, `the restart order of ${key} and ${fresh[0]!.key}`, [key]);
            for (const k of fresh) taintPools(k.key, `the restart order of ${key} and ${k.key}`, [key, k.key]);
            g.tainted = count;
          }
        }
      }
    }
    // Services whose address left its pool compete among themselves for what is free: MetalLB
    // processes them in random order (after a restart, and in the full pass after a change).
    if (moved) {
      // The pools it competes in: those it walked, and those of the addresses it asked for or got.
      const claims = new Map<string, boolean>(walked.map((w) => [w.pool, !w.full]));
      for (const text of touched) {
        const ip = parseIP(text);
        for (const pool of ip ? alloc.poolsForIPs([ip]) : []) claims.set(pool, (claims.get(pool) ?? false) || resultIPs.includes(text));
      }
      for (const [pool, took] of claims) {
        const id = `${n}|${pool}`;
        const before = moverWalks.get(id) ?? [];
        if (before.some((b) => b.took) || (took && before.length > 0)) {
          orderNoted = true;
          const source = `the order in which MetalLB re-allocates ${key} and ${before[0]!.key}`;
          taint(resultIPs, source, [key]);
          taintPools(key, source, [key]);
        }
        before.push({ key, took, why });
        moverWalks.set(id, before);
      }
    }
    // Addresses in overlapping pools: MetalLB's poolFor takes the first owner in map order, which
    // decides the pool written and whether the Service may use the address at all.
    const tried = [...touched, ...attempts.filter((t) => t.outcome === 'chosen').flatMap((t) => [t.candidates?.ipv4, t.candidates?.ipv6])].filter((x): x is string => x !== undefined);
    for (const text of new Set(tried)) {
      const ip = parseIP(text);
      const owners = ip ? alloc.poolsForIPs([ip]) : [];
      if (owners.length < 2) continue;
      orderNoted = true;
      note(key, `${canonical(text)} lies in overlapping pools ${owners.join(', ')}; MetalLB attributes it to any one of them (Go map order), which decides the pool and whether this Service may use it`);
      // Only an owner that refuses the Service changes its addresses (else just the pool written).
      const req = allocRequest(key, input);
      if (owners.some((o) => poolCompatibility(alloc.pool(o)!, req) !== undefined)) {
        taint([text, ...resultIPs], `the attribution of ${canonical(text)} to one of the overlapping pools ${owners.join(', ')}`, [key]);
        taintPools(key, `the attribution of ${canonical(text)} to one of the overlapping pools ${owners.join(', ')}`, [key]);
      }
    }
    const t = orderNoted ? undefined : dependsOn(key, touched, walked);
    if (t) {
      // Already flagged for a reason of its own: one note is enough; its addresses stay uncertain.
      if (!notes.has(key) && !movers.has(key) && !victims.has(key)) note(key, `its addresses depend on ${t.source}, which is random in MetalLB`);
      taint(resultIPs, t.source, [key]);
    }
  };

  const noop: ReconcileOutcome = { result: 'success', updated: false, events: [] };
  const run = (key: string, written: Set<string>): ReconcileOutcome => {
    const input = current.get(key)!;
    if (wroteConverged.get(key) === input && isSettled(key, input)) {
      last.set(key, noop);
      return noop;
    }
    const prevIPs = alloc.ipsOf(key);
    settledMemo.delete(key);
    const out = reconcileService(ctrl, key, input);
    wroteConverged.delete(key);
    if (out.updated && out.service) {
      current.set(key, out.service);
      written.add(key);
      // Within one dry run nobody else edits a Service: its inputs stay the same.
      const cycle = history.record(key, out.service, '');
      if (cycle) cycles.set(key, cycle);
      if (!out.failure) wroteConverged.set(key, out.service);
    }
    last.set(key, out);
    for (const e of out.events) {
      let mine = emitted.get(key);
      if (!mine) emitted.set(key, (mine = new Map()));
      const id = JSON.stringify([e.type, e.reason, e.message]);
      const seen = mine.get(id);
      if (seen) seen.count++;
      else mine.set(id, { ...e, count: 1 });
    }
    if (!firstOutcome.has(key)) firstOutcome.set(key, out);
    const a = out.allocation;
    if (a && a.tiedPools.length > 0) {
      const seen = tiedOf.get(key) ?? [];
      for (const p of [a.pool, ...a.tiedPools]) if (!seen.includes(p)) seen.push(p);
      tiedOf.set(key, seen);
    }
    if (!lean) analyse(key, input, prevIPs, out);
    return out;
  };

  /** Whether `out`, `key`'s reconcile, kept exactly its status addresses: no walk, no failure. */
  const keptOwn = (key: string, out: ReconcileOutcome): boolean => {
    if (out.allocation || out.failure) return false;
    const held = alloc.ipsOf(key);
    const had = initialIPs.get(key)!;
    return had.length > 0 && held.length === had.length && had.every((ip) => held.includes(canonical(ip)));
  };
  /** This run's state now, at index `index` of the first pass (see Fork). */
  const snapshot = (index: number, written: ReadonlySet<string>, again: boolean): Fork => ({
    base,
    index,
    initialKept,
    ctrl: { allocator: alloc.clone(), pools: ctrl.pools },
    current: new Map(current),
    wroteConverged: new Map(wroteConverged),
    last: new Map(last),
    firstOutcome: new Map(firstOutcome),
    emitted: copyEmitted(emitted),
    history: history.clone(),
    cycles: new Map(cycles),
    written: new Set(written),
    again,
  });

  let passes = 0;
  let limited = false;
  let order = sorted;
  let written = new Set<string>();
  let fork: Fork | FinalPoint | undefined;
  let fork0: Fork | undefined;
  /** Index in the first pass of the first reconcile that had tied pools. */
  let firstTiedAt: number | undefined;
  /** snapshot, or a FinalPoint when nothing after it can change the focused Service's answer (see focusFinal). */
  const forkAt = (index: number, written: ReadonlySet<string>, again: boolean): Fork | FinalPoint => {
    if (opts.focus !== undefined && firstTiedAt === undefined && finalAt({ ctrl, current, wroteConverged }, opts.focus)) return { index, focusFinal: true };
    return snapshot(index, written, again);
  };
  // Full passes while one asks to reprocess all (MetalLB's reprocessAll retry).
  for (;;) {
    passes++;
    written = new Set<string>(passes === 1 ? (from?.written ?? []) : []);
    let again = passes === 1 && from ? from.again : false;
    if (passes === 1) {
      // The fork point (name order, when ties matter): the start of the first group of two
      // Services or more that mayMatter, or that did not all keep exactly their own addresses.
      const naming = !from && isNameOrder(ties);
      if (naming) fork0 = snapshot(0, written, again);
      const forking = naming && tiesMatter;
      let found = !forking;
      let groupEnd = 0;
      let groupKept = true;
      for (let i = from?.index ?? 0; i < order.length; i++) {
        if (!found && i === groupEnd) {
          if (fork && !groupKept) found = true;
          else {
            fork = undefined;
            let j = i;
            while (j < order.length && entries.get(order[j]!) === entries.get(order[i]!)) j++;
            groupEnd = j;
            groupKept = true;
            if (j - i > 1) {
              fork = forkAt(i, written, again);
              if (order.slice(i, j).some(mayMatter)) found = true;
            }
          }
        }
        const key = order[i]!;
        const out = run(key, written);
        if (out.result === 'reprocessAll') again = true;
        if (!found && fork && !keptOwn(key, out)) groupKept = false;
        if (firstTiedAt === undefined && (out.allocation?.tiedPools.length ?? 0) > 0) firstTiedAt = i;
      }
      if (!found && (!fork || groupKept)) fork = undefined;
    } else for (const key of order) if (run(key, written).result === 'reprocessAll') again = true;
    firstPass = false;
    if (!again) break;
    if (passes >= maxPasses) {
      limited = true;
      break;
    }
    order = tieOrder(
      processingOrder(
        order.map((k) => current.get(k)!),
        kept,
      ),
      ties,
    ).map(serviceKey);
  }
  // The update events of the last pass's writes: each written Service is reconciled again, and so
  // on while it keeps changing (a cycle stops it: see WriteHistory).
  let echoes = limited ? [] : order.filter((k) => written.has(k));
  for (let round = 0; echoes.length > 0 && round < maxPasses; round++) {
    const next = new Set<string>();
    let reprocess = false;
    for (const key of echoes) {
      if (cycles.has(key)) continue;
      if (run(key, next).result === 'reprocessAll') reprocess = true;
    }
    if (reprocess && passes < maxPasses) {
      passes++;
      order = tieOrder(
        processingOrder(
          order.map((k) => current.get(k)!),
          kept,
        ),
        ties,
      ).map(serviceKey);
      for (const key of order) run(key, next);
    }
    echoes = order.filter((k) => next.has(k) && !cycles.has(k));
  }

  // Services that must re-allocate compete for the same pool in random order.
  for (const [id, list] of moverWalks) {
    if (list.length < 2 || !list.some((b) => b.took)) continue;
    const pool = id.slice(id.indexOf('|') + 1);
    const head = list.slice(0, 4).map((o) => o.key);
    for (const b of list) {
      const shown = head.filter((k) => k !== b.key).slice(0, 3);
      const rest = list.length - 1 - shown.length;
      const others = rest > 0 ? `${shown.join(', ')} and ${rest} more` : shown.join(', ');
      note(b.key, `${b.why}; MetalLB re-allocates such Services in random order (after a restart or a configuration change), and ${others} ${list.length > 2 ? 'compete' : 'competes'} with it for pool ${pool}`);
    }
  }
  // Restart order among Services with as many status addresses (random in MetalLB).
  for (const [key, m] of movers) {
    const n = entries.get(key)!;
    const more = (shown: number): string => (m.count > shown ? ` and ${m.count - shown} more` : '');
    note(
      key,
      `${m.why}; after a restart MetalLB processes Services with ${n} status.loadBalancer.ingress entr${n > 1 ? 'ies' : 'y'} in random order, and coming before ${m.victims.join(', ')}${more(m.victims.length)} it may take ${m.addrs.join(', ')}${more(m.addrs.length)} from them`,
    );
  }
  for (const g of groups.values()) {
    if (g.reaches.length === 0) continue;
    const reaches = [...g.reaches].sort((x, y) => (x.reach > y.reach ? -1 : x.reach < y.reach ? 1 : 0));
    for (const k of g.keepers.slice(0, g.tainted)) {
      // the movers reaching this address: a prefix of `reaches`
      let lo = 0;
      let hi = reaches.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (reaches[mid]!.reach >= k.addr) lo = mid + 1;
        else hi = mid;
      }
      if (lo === 0) continue;
      // (a mover never keeps its own status, so it is never one of the keepers here)
      const names =
        reaches
          .slice(0, Math.min(lo, 3))
          .map((r) => r.key)
          .join(', ') + (lo > 3 ? ` and ${lo - 3} more` : '');
      note(k.key, `after a restart MetalLB may process ${names} (which must re-allocate) before this Service; ${lo > 1 ? 'one of them' : reaches[0]!.key} may then take ${k.text} and this Service lose it`);
    }
  }
  // Pending services competing for the same pools: MetalLB's order among them is unspecified.
  for (const [i, key] of pending.entries()) {
    if (alloc.ipsOf(key).length > 0) continue;
    const failure = firstOutcome.get(key)?.failure ?? last.get(key)?.failure;
    const reason = failure?.reason;
    if (reason?.kind === 'sharingConflict') {
      for (const other of reason.sharing.services) {
        if (!pendingSet.has(other) || entries.get(other) !== entries.get(key) || (rank.get(other) ?? Infinity) > (rank.get(key) ?? 0)) continue;
        note(key, `its requested address is taken by ${other}, also pending; MetalLB processes pending services in unspecified order`);
        note(other, `${key} requested the same address and is also pending; MetalLB processes pending services in unspecified order`);
      }
    }
    const usable = usablePools(reason);
    if (usable.size === 0) continue;
    for (const earlier of pending.slice(0, i)) {
      const pool = alloc.poolOf(earlier);
      if (pool === null || !usable.has(pool) || entries.get(earlier) !== entries.get(key)) continue;
      note(key, `pending services competed for pool ${pool}; MetalLB processes them in unspecified order, so ${key} might have received ${earlier}'s address`);
      note(earlier, `pending services competed for pool ${pool}; MetalLB processes them in unspecified order, so ${key} might have received this address instead`);
    }
  }

  const outcomes: ServiceAllocationOutcome[] = order.map((key) => {
    const svc = current.get(key)!;
    const out = last.get(key)!;
    const ips = statusIPs(svc);
    const poolAnn = svc.metadata?.annotations?.[ANNOTATION_IP_ALLOCATED_FROM_POOL];
    const failure = out.failure ?? (ips.length === 0 ? firstOutcome.get(key)?.failure : undefined);
    const n = notes.get(key);
    const cycle = cycles.get(key);
    return {
      service: key,
      ips: ips.map(canonical),
      // The annotation as MetalLB leaves it: a reconcile that fails (an invalid address request,
      // after the status address was registered) writes nothing, so it may stay absent.
      pool: ips.length > 0 ? (poolAnn ?? null) : null,
      error: failure ? failure.message : null,
      ...(failure?.reason ? { reason: failure.reason } : {}),
      events: [...(emitted.get(key)?.values() ?? [])],
      ...(n ? { nondeterministic: n.join('; ') } : {}),
      ...(cycle ? { oscillates: cycle.states.map((st) => st.map(canonical)) } : {}),
    };
  });
  outcomes.sort((a, b) => rank.get(a.service)! - rank.get(b.service)!);

  const pools: PoolOutcome[] = [...config.pools.keys()].map((name) => {
    const cap = alloc.capacity(name)!;
    const c = alloc.counters(name);
    return {
      name,
      size: count(cap.total),
      inUse: Number(c.assignedIPv4 + c.assignedIPv6),
      assignedIPv4: Number(c.assignedIPv4),
      assignedIPv6: Number(c.assignedIPv6),
      availableIPv4: count(c.availableIPv4),
      availableIPv6: count(c.availableIPv6),
    };
  });
  return {
    result: { services: outcomes, pools, passes, ...(limited ? { passLimitReached: true as const } : {}) },
    tiesMatter,
    tied: tiedOf,
    mattering,
    movers: placeMatters,
    moversFirstDiffers,
    ...(fork ? { fork } : {}),
    ...(fork0 ? { fork0 } : {}),
    ...(firstTiedAt !== undefined ? { firstTiedAt } : {}),
  };
}
