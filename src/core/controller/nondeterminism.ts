/**
 * allocateAll's nondeterminism analysis: where MetalLB's own result could differ from the dry
 * run's (random Go map order: restart order within one ingress-entry count, pool choice among
 * tied pools, overlapping pools; pending Services competing), which addresses such a random
 * choice decides (taints), and which Services depend on them; the `nondeterministic` notes.
 * The analysis reads a run (run-state.ts) as its reconciles go (analyse) and adds the notes
 * about the order once the passes are over (noteOrders).
 */
import type { Service } from '../kube.ts';
import { formatIP, parseIP, type IP } from '../ip.ts';
import { poolCompatibility } from '../allocator/index.ts';
import type { ReconcileOutcome } from './reconcile.ts';
import { allocRequest, ipFamilyPolicy, requestedIPs, statusIPs } from './service.ts';
import { canonical } from './settled.ts';
import { attemptsOf, poolOfFailure, possiblePools, usablePools } from './reach.ts';
import type { Run } from './run-state.ts';

/** What a run's tie groups (Services of one ingress-entry count) say about its order. */
export interface TieGroups {
  /** Whether `k`'s place in its group may change an answer. */
  readonly mayMatter: (k: string) => boolean;
  /** The ingress-entry counts whose group (two Services or more) has one that mayMatter, in order. */
  readonly mattering: number[];
  /** The Services whose place may matter. */
  readonly placeMatters: Set<string>;
  /** Some such group has a Service whose place does not matter before one whose place does. */
  readonly moversFirstDiffers: boolean;
}

/**
 * The tie groups of `run` in `sorted` order: a Service's place in its group may matter when it
 * does not keep its status addresses (`initialKept`), is PreferDualStack (it allocates its
 * missing family on every reconcile, even when it keeps its status: it may take what another
 * Service of its group would keep), or holds a status address another Service's status claims
 * too (all but one re-allocate, whatever the config says). A lean run (`lean`) finds none.
 */
export function tieGroups(run: Run, sorted: readonly string[], initialKept: ReadonlyMap<string, boolean>, lean: boolean): TieGroups {
  const { current, initialIPs, entries } = run;
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
  const mayMatter = (k: string): boolean => !initialKept.get(k) || ipFamilyPolicy(current.get(k)!) === 'PreferDualStack' || initialIPs.get(k)!.some((ip) => claims.get(canonical(ip))! > 1);
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
  return { mayMatter, mattering, placeMatters, moversFirstDiffers };
}

/** An address a random choice decides, and where the randomness comes from (for the notes). */
interface Taint {
  readonly addr: bigint;
  readonly family: 'ipv4' | 'ipv6';
  readonly source: string;
  /** Services whose own choice it is (not "affected" by it). */
  readonly owners: ReadonlySet<string>;
}

/** A status address of a Service that keeps its status addresses. */
interface Keeper {
  readonly key: string;
  readonly addr: bigint;
  readonly text: string;
}

/** The keepers of one status count, pool and family (ascending), and the movers reaching them. */
interface Group {
  readonly keepers: Keeper[];
  readonly reaches: Array<{ key: string; reach: bigint }>;
  tainted: number;
}

/** A pool a reconcile walked: full (found no room), or the addresses it chose there. */
interface Walk {
  readonly pool: string;
  readonly chosen?: readonly IP[];
  readonly full: boolean;
}

/** The analysis state of one (non-lean) run. */
export interface Analysis {
  readonly run: Run;
  /** Whether each Service keeps its status addresses at the start (statusKept). */
  readonly initialKept: ReadonlyMap<string, boolean>;
  /** Whether the run is in its first pass (the restart's order). */
  firstPass: boolean;
  /** The `nondeterministic` note texts of each Service, in the order they arose. */
  readonly notes: Map<string, string[]>;
  // ----- addresses a random choice decides (see allocateAll), in the order they arise
  /** One entry per address (the first source wins). */
  readonly taintByAddr: Map<string, Taint>;
  /** Per pool and family the lowest tainted address. */
  readonly lowestInPool: Map<string, Taint>;
  /**
   * Pools in which a Service whose result is random might take any address (it may re-allocate,
   * and where is not known): every Service walking one of them later, or taking an address in one,
   * depends on it.
   */
  readonly wholePools: Map<string, Taint>;
  /**
   * The status addresses of the Services that keep theirs, per status count, pool and family,
   * ascending; a Service whose address left its pool could take, coming first, any of them at or
   * below the address it finds free (all of them in a pool it finds full).
   */
  readonly groups: Map<string, Group>;
  /** Services whose address left its pool and that could take status addresses of others: what they could take. */
  readonly movers: Map<string, { why: string; count: number; victims: string[]; addrs: string[] }>;
  /** Services that could lose their status address that way. */
  readonly victims: Set<string>;
  /** Per status count and pool: the Services whose address left its pool that walked it, in order, and whether they took an address there. */
  readonly moverWalks: Map<string, Array<{ key: string; took: boolean; why: string }>>;
}

/** A fresh analysis of `run`, whose Services run in `sorted` order first. */
export function newAnalysis(run: Run, sorted: readonly string[], initialKept: ReadonlyMap<string, boolean>): Analysis {
  const groups = new Map<string, Group>();
  for (const k of sorted) {
    const ips = run.initialIPs.get(k)!;
    if (ips.length === 0 || !initialKept.get(k)) continue;
    for (const text of ips) {
      const ip = parseIP(text)!;
      for (const pool of run.ctrl.allocator.poolsForIPs([ip])) {
        const id = `${run.entries.get(k)!}|${pool}|${ip.family}`;
        let g = groups.get(id);
        if (!g) groups.set(id, (g = { keepers: [], reaches: [], tainted: 0 }));
        g.keepers.push({ key: k, addr: ip.value, text: formatIP(ip) });
      }
    }
  }
  for (const g of groups.values()) g.keepers.sort((x, y) => (x.addr < y.addr ? -1 : x.addr > y.addr ? 1 : 0));
  return {
    run,
    initialKept,
    firstPass: true,
    notes: new Map(),
    taintByAddr: new Map(),
    lowestInPool: new Map(),
    wholePools: new Map(),
    groups,
    movers: new Map(),
    victims: new Set(),
    moverWalks: new Map(),
  };
}

function note(an: Analysis, key: string, text: string): void {
  const list = an.notes.get(key) ?? [];
  if (!list.includes(text)) list.push(text);
  an.notes.set(key, list);
}

/** Marks `ips` as decided by `source`, a random choice of `owners`. */
function taint(an: Analysis, ips: readonly string[], source: string, owners: readonly string[]): void {
  for (const s of ips) {
    const ip = parseIP(s);
    if (!ip) continue;
    const id = `${ip.family}|${ip.value}`;
    if (an.taintByAddr.has(id)) continue;
    const t: Taint = { addr: ip.value, family: ip.family, source, owners: new Set(owners) };
    an.taintByAddr.set(id, t);
    for (const pool of an.run.ctrl.allocator.poolsForIPs([ip])) {
      const k = `${pool}|${ip.family}`;
      const low = an.lowestInPool.get(k);
      if (!low || t.addr < low.addr) an.lowestInPool.set(k, t);
    }
  }
}

/** Marks every pool `svcKey` could take addresses from (possiblePools) as decided by `source`. */
function taintPools(an: Analysis, svcKey: string, source: string, owners: readonly string[]): void {
  const svc = an.run.current.get(svcKey);
  if (!svc) return;
  for (const pool of possiblePools(an.run.ctrl, svcKey, svc)) {
    if (!an.wholePools.has(pool)) an.wholePools.set(pool, { addr: 0n, family: 'ipv4', source, owners: new Set(owners) });
  }
}

/**
 * The uncertain address `key`'s reconcile depends on, if any: one it took or asked for, or one
 * in a pool it walked that could change what it found there (any, in a pool it found full; one
 * at or below the address it got, in the pool it took it from); any, in a pool a random Service
 * may re-allocate in.
 */
function dependsOn(an: Analysis, key: string, touched: readonly string[], walked: readonly Walk[]): Taint | undefined {
  const { taintByAddr, wholePools, lowestInPool } = an;
  const alloc = an.run.ctrl.allocator;
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
}

function groupOf(an: Analysis, n: number, pool: string, family: string): Group | undefined {
  return an.groups.get(`${n}|${pool}|${family}`);
}

const FULL = 1n << 129n;

/** How many keepers of `g` are at or below `reach`. */
function exposedCount(g: Group, reach: bigint): number {
  let lo = 0;
  let hi = g.keepers.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (g.keepers[mid]!.addr <= reach) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Notes what `out`, the reconcile of `key`'s object `input` (it held `prevIPs` before), shows of
 * MetalLB's randomness: tied pools, two statuses claiming one address, a Service whose address
 * left its pool (restart order), overlapping pools, and a dependence on an address such a choice
 * decides; and taints the addresses those decide.
 */
export function analyse(an: Analysis, key: string, input: Service, prevIPs: readonly string[], out: ReconcileOutcome): void {
  const a = out.allocation;
  const resultIPs = statusIPs(an.run.current.get(key)!);
  let orderNoted = false;
  if (a && a.tiedPools.length > 0) {
    orderNoted = true;
    note(an, key, `pools ${[a.pool, ...a.tiedPools].join(', ')} could each be chosen: MetalLB walks them in random (Go map) order, metallb-ts took ${a.pool}`);
    taint(an, [...a.ips, ...a.tiedChoices.flatMap((c) => c.ips)], `${key}'s random pool choice`, [key]);
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

  const had = an.run.initialIPs.get(key)!.length > 0;
  const n = an.run.entries.get(key)!;
  // Two statuses claiming one address: whichever MetalLB processes first keeps it (random only
  // between Services with as many ingress entries; otherwise the one with more comes first).
  let lostClaim = false;
  const conflict = out.events.find((e) => e.reason === 'ClearAssignment')?.cause;
  if (an.firstPass && had && conflict?.kind === 'sharingConflict') {
    const ip = canonical(conflict.sharing.ip);
    for (const other of conflict.sharing.services) {
      if (!(an.run.initialIPs.get(other) ?? []).map(canonical).includes(ip) || an.run.entries.get(other) !== n) continue;
      note(an, key, `its status address ${ip} is also claimed by ${other}'s status; MetalLB keeps it for whichever it processes first (random order after a restart)`);
      note(an, other, `its status address ${ip} is also claimed by ${key}'s status; MetalLB keeps it for whichever it processes first (random order after a restart)`);
      taint(an, [ip, ...resultIPs], `the restart order of ${key} and ${other}`, [key, other]);
      taintPools(an, key, `the restart order of ${key} and ${other}`, [key, other]);
      taintPools(an, other, `the restart order of ${key} and ${other}`, [key, other]);
      orderNoted = true;
      lostClaim = true;
    }
  }
  // It re-allocates now, in the order of the Services that keep their status addresses: one
  // whose address left its pool, or that lost a claimed address to another status.
  const moved = an.firstPass && had && (!an.initialKept.get(key) || lostClaim);
  const why = an.initialKept.get(key) ? 'its status address went to another Service' : 'its status address is no longer allowed';
  // Restart order: such a Service, processed before the Services of its group that keep theirs
  // (MetalLB's order within a group is random), takes what it finds free — their addresses too.
  if (moved && walked.length > 0) {
    for (const w of walked) {
      for (const family of ['ipv4', 'ipv6'] as const) {
        const g = groupOf(an, n, w.pool, family);
        if (!g) continue;
        const chosen = (w.chosen ?? []).find((c) => c.family === family);
        const reach = w.full ? FULL : chosen ? chosen.value : -1n;
        const count = exposedCount(g, reach);
        const others = g.keepers.slice(0, count).filter((k) => k.key !== key);
        if (others.length === 0) continue;
        orderNoted = true;
        g.reaches.push({ key, reach });
        let m = an.movers.get(key);
        if (!m) an.movers.set(key, (m = { why, count: 0, victims: [], addrs: [] }));
        m.count += others.length;
        for (const k of others.slice(0, 3)) {
          if (m.victims.length < 3) m.victims.push(k.key);
          if (m.addrs.length < 3) m.addrs.push(k.text);
        }
        if (count > g.tainted) {
          const fresh = g.keepers.slice(g.tainted, count);
          for (const k of fresh) an.victims.add(k.key);
          taint(
            an,
            fresh.map((k) => k.text),
            `the restart order of ${key} and ${fresh[0]!.key}`,
            [key, ...fresh.map((k) => k.key)],
          );
          taintPools(an, key, `the restart order of ${key} and ${fresh[0]!.key}`, [key]);
          for (const k of fresh) taintPools(an, k.key, `the restart order of ${key} and ${k.key}`, [key, k.key]);
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
      for (const pool of ip ? an.run.ctrl.allocator.poolsForIPs([ip]) : []) claims.set(pool, (claims.get(pool) ?? false) || resultIPs.includes(text));
    }
    for (const [pool, took] of claims) {
      const id = `${n}|${pool}`;
      const before = an.moverWalks.get(id) ?? [];
      if (before.some((b) => b.took) || (took && before.length > 0)) {
        orderNoted = true;
        const source = `the order in which MetalLB re-allocates ${key} and ${before[0]!.key}`;
        taint(an, resultIPs, source, [key]);
        taintPools(an, key, source, [key]);
      }
      before.push({ key, took, why });
      an.moverWalks.set(id, before);
    }
  }
  // Addresses in overlapping pools: MetalLB's poolFor takes the first owner in map order, which
  // decides the pool written and whether the Service may use the address at all.
  const tried = [...touched, ...attempts.filter((t) => t.outcome === 'chosen').flatMap((t) => [t.candidates?.ipv4, t.candidates?.ipv6])].filter((x): x is string => x !== undefined);
  for (const text of new Set(tried)) {
    const ip = parseIP(text);
    const owners = ip ? an.run.ctrl.allocator.poolsForIPs([ip]) : [];
    if (owners.length < 2) continue;
    orderNoted = true;
    note(an, key, `${canonical(text)} lies in overlapping pools ${owners.join(', ')}; MetalLB attributes it to any one of them (Go map order), which decides the pool and whether this Service may use it`);
    // Only an owner that refuses the Service changes its addresses (else just the pool written).
    const req = allocRequest(key, input);
    if (owners.some((o) => poolCompatibility(an.run.ctrl.allocator.pool(o)!, req) !== undefined)) {
      taint(an, [text, ...resultIPs], `the attribution of ${canonical(text)} to one of the overlapping pools ${owners.join(', ')}`, [key]);
      taintPools(an, key, `the attribution of ${canonical(text)} to one of the overlapping pools ${owners.join(', ')}`, [key]);
    }
  }
  const t = orderNoted ? undefined : dependsOn(an, key, touched, walked);
  if (t) {
    // Already flagged for a reason of its own: one note is enough; its addresses stay uncertain.
    if (!an.notes.has(key) && !an.movers.has(key) && !an.victims.has(key)) note(an, key, `its addresses depend on ${t.source}, which is random in MetalLB`);
    taint(an, resultIPs, t.source, [key]);
  }
}

/**
 * The notes about MetalLB's order, once the passes are over: Services that must re-allocate
 * competing for one pool, restart order among Services with as many status addresses (movers
 * and the keepers they may take from), and `pending` Services (no status address; in `rank`
 * order, their place in the first pass) competing for the same pools.
 */
export function noteOrders(an: Analysis, pending: readonly string[], rank: ReadonlyMap<string, number>): void {
  const pendingSet = new Set(pending);
  // Services that must re-allocate compete for the same pool in random order.
  for (const [id, list] of an.moverWalks) {
    if (list.length < 2 || !list.some((b) => b.took)) continue;
    const pool = id.slice(id.indexOf('|') + 1);
    const head = list.slice(0, 4).map((o) => o.key);
    for (const b of list) {
      const shown = head.filter((k) => k !== b.key).slice(0, 3);
      const rest = list.length - 1 - shown.length;
      const others = rest > 0 ? `${shown.join(', ')} and ${rest} more` : shown.join(', ');
      note(
        an,
        b.key,
        `${b.why}; MetalLB re-allocates such Services in random order (after a restart or a configuration change), and ${others} ${list.length > 2 ? 'compete' : 'competes'} with it for pool ${pool}`,
      );
    }
  }
  // Restart order among Services with as many status addresses (random in MetalLB).
  for (const [key, m] of an.movers) {
    const n = an.run.entries.get(key)!;
    const more = (shown: number): string => (m.count > shown ? ` and ${m.count - shown} more` : '');
    note(
      an,
      key,
      `${m.why}; after a restart MetalLB processes Services with ${n} status.loadBalancer.ingress entr${n > 1 ? 'ies' : 'y'} in random order, and coming before ${m.victims.join(', ')}${more(m.victims.length)} it may take ${m.addrs.join(', ')}${more(m.addrs.length)} from them`,
    );
  }
  for (const g of an.groups.values()) {
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
      note(an, k.key, `after a restart MetalLB may process ${names} (which must re-allocate) before this Service; ${lo > 1 ? 'one of them' : reaches[0]!.key} may then take ${k.text} and this Service lose it`);
    }
  }
  // Pending services competing for the same pools: MetalLB's order among them is unspecified.
  for (const [i, key] of pending.entries()) {
    if (an.run.ctrl.allocator.ipsOf(key).length > 0) continue;
    const failure = an.run.firstOutcome.get(key)?.failure ?? an.run.last.get(key)?.failure;
    const reason = failure?.reason;
    if (reason?.kind === 'sharingConflict') {
      for (const other of reason.sharing.services) {
        if (!pendingSet.has(other) || an.run.entries.get(other) !== an.run.entries.get(key) || (rank.get(other) ?? Infinity) > (rank.get(key) ?? 0)) continue;
        note(an, key, `its requested address is taken by ${other}, also pending; MetalLB processes pending services in unspecified order`);
        note(an, other, `${key} requested the same address and is also pending; MetalLB processes pending services in unspecified order`);
      }
    }
    const usable = usablePools(reason);
    if (usable.size === 0) continue;
    for (const earlier of pending.slice(0, i)) {
      const pool = an.run.ctrl.allocator.poolOf(earlier);
      if (pool === null || !usable.has(pool) || an.run.entries.get(earlier) !== an.run.entries.get(key)) continue;
      note(an, key, `pending services competed for pool ${pool}; MetalLB processes them in unspecified order, so ${key} might have received ${earlier}'s address`);
      note(an, earlier, `pending services competed for pool ${pool}; MetalLB processes them in unspecified order, so ${key} might have received this address instead`);
    }
  }
}
