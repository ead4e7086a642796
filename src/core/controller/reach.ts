/**
 * What a reconcile could take or walked, for allocateAll's nondeterminism notes: the pools a
 * Service could take addresses from, and the pools a failed allocation walked or could have used.
 */
import type { Service } from '../kube.ts';
import { parseIP, type IP } from '../ip.ts';
import { poolCompatibility, type AllocationFailure, type PoolAttempt } from '../allocator/index.ts';
import type { ControllerState } from './reconcile.ts';
import { allocRequest, requestedPool, statusIPs } from './service.ts';

/**
 * The pools a Service could take addresses from: the one it requests, else the pools its
 * allocation may walk (autoAssign, and selecting it or without serviceAllocation), and those
 * owning its status addresses.
 */
export function possiblePools(ctrl: ControllerState, key: string, svc: Service): string[] {
  const out = new Set<string>();
  const status = statusIPs(svc)
    .map((t) => parseIP(t))
    .filter((ip): ip is IP => ip !== undefined);
  for (const ip of status) for (const p of ctrl.allocator.poolsForIPs([ip])) out.add(p);
  const requested = requestedPool(svc);
  if (requested !== '') {
    out.add(requested);
    return [...out];
  }
  const req = allocRequest(key, svc);
  for (const name of ctrl.allocator.poolNames) {
    const pool = ctrl.allocator.pool(name)!;
    if (!pool.autoAssign) continue;
    const sa = pool.serviceAllocation;
    if (sa && !(sa.namespaces.has(req.namespace) || sa.serviceSelectors.length > 0)) continue;
    if (poolCompatibility(pool, req)) continue;
    out.add(name);
  }
  return [...out];
}

/** The pools a failed allocation walked, from its structured reason. */
export function attemptsOf(reason: AllocationFailure | undefined): readonly PoolAttempt[] {
  if (!reason) return [];
  if (reason.kind === 'noPoolAvailable') return reason.attempts;
  return [];
}

/** The pool a failed allocation from one pool found without room. */
export function poolOfFailure(reason: AllocationFailure | undefined): string | undefined {
  if (!reason) return undefined;
  if (reason.kind === 'noAvailableIPs' || reason.kind === 'poolLacksFamily' || reason.kind === 'noIPsForFamily') return reason.pool;
  return undefined;
}

/** Pools a failed allocation could have used, had an address been free. */
export function usablePools(reason: AllocationFailure | undefined): Set<string> {
  const out = new Set<string>();
  if (!reason) return out;
  if (reason.kind === 'noAvailableIPs') out.add(reason.pool);
  if (reason.kind === 'noPoolAvailable') {
    for (const a of reason.attempts) {
      if (a.outcome === 'chosen' || a.refusal?.reason === 'noAvailableIPs' || a.refusal?.reason === 'wrongFamily') out.add(a.pool);
    }
  }
  return out;
}
