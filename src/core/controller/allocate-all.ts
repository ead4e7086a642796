/**
 * Whole-snapshot dry run (`metallb-ts allocate --dry-run`): what MetalLB's controller would
 * write for every LoadBalancer Service after a restart with this configuration.
 */
import type { Config } from '../config/types.ts';
import type { Service } from '../kube.ts';
import type { AllocationFailure } from '../allocator/index.ts';
import type { ControllerState, ReconcileEvent } from './reconcile.ts';
import { parseIP } from '../ip.ts';
import { ANNOTATION_IP_ALLOCATED_FROM_POOL, ipFamilyPolicy, serviceKey, statusIPs } from './service.ts';
import { canonical, finalAt } from './settled.ts';
import { NAME, isNameOrder, processingOrder, tieOrder, type Ties } from './order.ts';
import { orderVariants, poolVariants, variantNote, type TieFindings, type Variant } from './variants.ts';
import { keptIn, keptOwn, reconcileOnce, snapshot, startRun, type FinalPoint, type Fork, type ReconcileObserver, type Run } from './run-state.ts';
import { analyse, newAnalysis, noteOrders, tieGroups, type Analysis } from './nondeterminism.ts';

export { ingressEntries, processingOrder } from './order.ts';

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
   * lack a `nondeterministic` note. When its answer is final as soon as the restart's first
   * pass has reconciled it, and no order MetalLB can take changes what it found there, the run
   * stops there: the result is `partial` (its outcome only).
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
  /**
   * Present (true) when the run stopped once the `focus` Service's answer was final (see
   * AllocateAllOptions.focus): `services` holds its outcome only, exactly that of a full run, and
   * without a failure; `pools` and `passes` are those of the stopped run, not MetalLB's end state.
   */
  readonly partial?: true;
}

function count(v: bigint): Count {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
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
  if (opts.focus !== undefined) {
    const kept = keeperAnswer(config, services, opts.loadBalancerClass ?? '', opts.focus, statusKeptMemo);
    if (kept) return kept;
  }
  let first = allocateAllInOrder(config, services, opts, NAME, prefer, undefined, statusKeptMemo, true);
  if (first.result.partial) return first.result;
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

/** What the differential compares of an outcome: addresses, annotation, settling, events (as a set). */
function answerOf(o: ServiceAllocationOutcome): string {
  const events = o.events.map((e) => `${e.type}|${e.reason}|${e.message}`).sort();
  return JSON.stringify([o.ips, o.pool, o.oscillates ?? null, events]);
}

/** A run of allocateAllInOrder: its result, and what allocateAll needs to run the others (TieFindings: its tie groups). */
interface NameRun extends TieFindings {
  readonly result: AllocateAllResult;
  /** Service → every pool its allocations could have taken (chosen first, then the tied ones). */
  readonly tied: ReadonlyMap<string, readonly string[]>;
  /** Name order only: the state before the first group whose order matters, and at the start. */
  readonly fork?: Fork | FinalPoint;
  readonly fork0?: Fork;
  /** Name order only: index in the first pass of the first reconcile with tied pools. */
  readonly firstTiedAt?: number;
}

/**
 * allocateAll with the order within each ingress-entry count given by `tie`; `tiesMatter`: some
 * count has two Services or more, one of which does not keep its status addresses (pending, or
 * re-allocating), is PreferDualStack, or holds a status address another Service claims too, so
 * that order may change an answer. In name order with `tiesMatter`, `fork` is the state to run
 * the other tie orders from (see Fork). With `from`, the run resumes there (its `prefer` is the
 * fork's) and is lean: it computes the answers only, no `nondeterministic` notes. `keptMemo`:
 * statusKept's answers per Service object (the configuration's verdict), shared by the runs of
 * one allocateAll. `stopWhenFinal` (allocateAll's first run, with `opts.focus`): the run stops
 * right after the first pass's reconcile of the focused Service when focusSettledFirst holds,
 * and returns a `partial` result.
 */
function allocateAllInOrder(
  config: Config,
  services: readonly Service[],
  opts: AllocateAllOptions,
  ties: Ties,
  prefer: ReadonlyMap<string, string>,
  from?: Fork,
  keptMemo: WeakMap<Service, boolean> = new WeakMap(),
  stopWhenFinal = false,
): NameRun {
  const maxPasses = opts.maxPasses ?? 100;
  const lean = from !== undefined;
  const run = startRun(config, services, opts.loadBalancerClass ?? '', prefer, from, keptMemo);
  const { ctrl, current, initialIPs, entries, cycles } = run;
  const kept = (svc: Service): boolean => keptIn(run, svc);
  const initialKept = from ? from.initialKept : new Map([...current].map(([k, svc]) => [k, initialIPs.get(k)!.length > 0 && kept(svc)]));
  const base = from ? from.base : processingOrder([...current.values()], kept);
  const sorted = tieOrder([...base], ties).map(serviceKey);
  if (from) for (const [k, svc] of from.current) current.set(k, svc);
  const { mayMatter, mattering, placeMatters, moversFirstDiffers } = tieGroups(run, sorted, initialKept, lean);
  const tiesMatter = mattering.length > 0;
  // (A lean run notes nothing: no pending Services to compare.)
  const pending = lean ? [] : sorted.filter((k) => initialIPs.get(k)!.length === 0);
  const rank = new Map(sorted.map((k, i) => [k, i]));
  const analysis = lean ? undefined : newAnalysis(run, sorted, initialKept);
  const observe: ReconcileObserver | undefined = analysis && ((key, input, prevIPs, out) => analyse(analysis, key, input, prevIPs, out));
  const reconcile = (key: string, written: Set<string>) => reconcileOnce(run, key, written, observe);

  // The early stop (stopWhenFinal): the size of each ingress-entry group, and whether every
  // Service of a group of two or more reconciled so far kept exactly its own status addresses.
  let watching = stopWhenFinal && opts.focus !== undefined && !lean && isNameOrder(ties) && current.has(opts.focus);
  const groupSize = new Map<number, number>();
  if (watching) for (const k of sorted) groupSize.set(entries.get(k)!, (groupSize.get(entries.get(k)!) ?? 0) + 1);
  let prefixKept = true;
  let stopped = false;

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
    if (opts.focus !== undefined && firstTiedAt === undefined && finalAt(run, opts.focus)) return { index, focusFinal: true };
    return snapshot(run, base, initialKept, index, written, again);
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
      if (naming) fork0 = snapshot(run, base, initialKept, 0, written, again);
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
        const out = reconcile(key, written);
        if (out.result === 'reprocessAll') again = true;
        if (!found && fork && !keptOwn(run, key, out)) groupKept = false;
        if (firstTiedAt === undefined && (out.allocation?.tiedPools.length ?? 0) > 0) firstTiedAt = i;
        if (watching) {
          if (groupSize.get(entries.get(key)!)! > 1 && (mayMatter(key) || !keptOwn(run, key, out))) prefixKept = false;
          if (key === opts.focus) {
            watching = false;
            if (prefixKept && firstTiedAt === undefined && focusSettledFirst(run, order, i, groupSize, mayMatter)) {
              stopped = true;
              break;
            }
          }
        }
      }
      if (stopped) break;
      if (!found && (!fork || groupKept)) fork = undefined;
    } else for (const key of order) if (reconcile(key, written).result === 'reprocessAll') again = true;
    if (analysis) analysis.firstPass = false;
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
  if (stopped) {
    const focus = opts.focus!;
    return {
      result: { services: [outcomeOf(run, focus, analysis)], pools: poolOutcomes(config, ctrl), passes: 1, partial: true },
      tiesMatter,
      tied: run.tiedOf,
      mattering,
      movers: placeMatters,
      moversFirstDiffers,
    };
  }
  // The update events of the last pass's writes: each written Service is reconciled again, and so
  // on while it keeps changing (a cycle stops it: see WriteHistory).
  let echoes = limited ? [] : order.filter((k) => written.has(k));
  for (let round = 0; echoes.length > 0 && round < maxPasses; round++) {
    const next = new Set<string>();
    let reprocess = false;
    for (const key of echoes) {
      if (cycles.has(key)) continue;
      if (reconcile(key, next).result === 'reprocessAll') reprocess = true;
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
      for (const key of order) reconcile(key, next);
    }
    echoes = order.filter((k) => next.has(k) && !cycles.has(k));
  }
  if (analysis) noteOrders(analysis, pending, rank);

  const outcomes = order.map((key) => outcomeOf(run, key, analysis));
  outcomes.sort((a, b) => rank.get(a.service)! - rank.get(b.service)!);

  const pools = poolOutcomes(config, ctrl);
  return {
    result: { services: outcomes, pools, passes, ...(limited ? { passLimitReached: true as const } : {}) },
    tiesMatter,
    tied: run.tiedOf,
    mattering,
    movers: placeMatters,
    moversFirstDiffers,
    ...(fork ? { fork } : {}),
    ...(fork0 ? { fork0 } : {}),
    ...(firstTiedAt !== undefined ? { firstTiedAt } : {}),
  };
}

/**
 * The focused Service's answer without running the others, when none of them can change it (the
 * usual case of `explain` on a Service that holds its address): it and every Service with as many
 * status.loadBalancer.ingress entries or more (those MetalLB's restart reconciles before it, or
 * in its group in some order) keep their status addresses (statusKept), none is PreferDualStack,
 * no other Service's status claims one of their addresses and no two pools overlap. Each of those
 * then takes exactly its own addresses, which no other takes, whatever the order, and leaves no
 * random choice behind (no tied pool, no walk, no overlapping attribution) for the focused
 * Service's reconcile to depend on: that reconcile, run alone on a fresh controller, is the one
 * the restart runs. Returns the `partial` result when its answer is then final (finalAt), else
 * undefined (allocateAll runs the Services in order).
 */
function keeperAnswer(config: Config, services: readonly Service[], lbClass: string, focus: string, keptMemo: WeakMap<Service, boolean>): AllocateAllResult | undefined {
  const run = startRun(config, services, lbClass, new Map(), undefined, keptMemo);
  const n = run.entries.get(focus);
  if (n === undefined || n === 0 || run.ctrl.allocator.poolsOverlap()) return undefined;
  const claims = new Map<string, number>();
  for (const ips of run.initialIPs.values()) for (const ip of new Set(ips.map(canonical))) claims.set(ip, (claims.get(ip) ?? 0) + 1);
  for (const [key, entries] of run.entries) {
    if (entries < n) continue;
    const svc = run.current.get(key)!;
    const ips = run.initialIPs.get(key)!;
    if (ips.length === 0 || ipFamilyPolicy(svc) === 'PreferDualStack' || ips.some((ip) => claims.get(canonical(ip))! > 1) || !keptIn(run, svc)) return undefined;
  }
  const analysis = newAnalysis(run, [focus], new Map([[focus, true]]));
  const out = reconcileOnce(run, focus, new Set(), (key, input, prevIPs, o) => analyse(analysis, key, input, prevIPs, o));
  if (!keptOwn(run, focus, out) || !finalAt(run, focus)) return undefined;
  return { services: [outcomeOf(run, focus, analysis)], pools: poolOutcomes(config, run.ctrl), passes: 1, partial: true };
}

/**
 * Whether the focused Service `order[i]`, just reconciled in the name-order run's first pass, has
 * its final answer whatever order MetalLB takes (the caller checked that no reconcile so far had
 * tied pools, and that every Service so far in a group of two or more kept exactly its own status
 * addresses and may not matter, as tieGroups says): its answer is final now (finalAt), and every
 * later Service of its group, which another order puts before it, may not matter either and finds
 * none of its status addresses held by another Service, so that it keeps them in every order
 * without touching any other address. Services of later groups come after it in every order.
 */
function focusSettledFirst(run: Run, order: readonly string[], i: number, groupSize: ReadonlyMap<number, number>, mayMatter: (k: string) => boolean): boolean {
  const key = order[i]!;
  if (!finalAt(run, key)) return false;
  const n = run.entries.get(key)!;
  if (groupSize.get(n)! < 2) return true;
  if (mayMatter(key)) return false;
  for (let j = i + 1; j < order.length && run.entries.get(order[j]!) === n; j++) {
    const k = order[j]!;
    if (mayMatter(k)) return false;
    for (const text of run.initialIPs.get(k)!) {
      const ip = parseIP(text);
      if (!ip || run.ctrl.allocator.heldByOther(ip, k)) return false;
    }
  }
  return true;
}

/** `key`'s dry-run outcome from the run's state now (its notes from `analysis`, when the run keeps one). */
function outcomeOf(run: Run, key: string, analysis: Analysis | undefined): ServiceAllocationOutcome {
  const svc = run.current.get(key)!;
  const out = run.last.get(key)!;
  const ips = statusIPs(svc);
  const poolAnn = svc.metadata?.annotations?.[ANNOTATION_IP_ALLOCATED_FROM_POOL];
  const failure = out.failure ?? (ips.length === 0 ? run.firstOutcome.get(key)?.failure : undefined);
  const n = analysis?.notes.get(key);
  const cycle = run.cycles.get(key);
  return {
    service: key,
    ips: ips.map(canonical),
    // The annotation as MetalLB leaves it: a reconcile that fails (an invalid address request,
    // after the status address was registered) writes nothing, so it may stay absent.
    pool: ips.length > 0 ? (poolAnn ?? null) : null,
    error: failure ? failure.message : null,
    ...(failure?.reason ? { reason: failure.reason } : {}),
    events: [...(run.emitted.get(key)?.values() ?? [])],
    ...(n ? { nondeterministic: n.join('; ') } : {}),
    ...(cycle ? { oscillates: cycle.states.map((st) => st.map(canonical)) } : {}),
  };
}

/** Every configured pool's figures from the run's allocator now. */
function poolOutcomes(config: Config, ctrl: ControllerState): PoolOutcome[] {
  return [...config.pools.keys()].map((name) => {
    const cap = ctrl.allocator.capacity(name)!;
    const c = ctrl.allocator.counters(name);
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
}
