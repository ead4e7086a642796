/**
 * The typed error every failing allocator operation throws: MetalLB's message in `message`, the
 * structured reason in `reason`.
 */
import type { AllocationFailure, PoolAttempt, PoolRefusal } from './types.ts';

/** Go's `%q` of a list of addresses: `["1.2.3.4" "1000::1"]`. */
export function quoteList(ips: readonly string[]): string {
  return `[${ips.map((s) => JSON.stringify(s)).join(' ')}]`;
}

/** MetalLB's error text for a failure (the text its events and logs carry). */
export function failureMessage(f: AllocationFailure): string {
  switch (f.kind) {
    case 'notAllowedInConfig':
    case 'poolLacksFamily':
      return `${quoteList(f.ips)} is not allowed in config`;
    case 'poolIncompatible':
      return `pool ${f.pool} not compatible for ip assignment`;
    case 'tooManyAddresses':
      return `more than two addresses ${quoteList(f.ips)}`;
    case 'sameFamily':
      return `${JSON.stringify(f.ips[0])} ${JSON.stringify(f.ips[1])} has the same family`;
    case 'sharingConflict': {
      const s = f.sharing;
      if (s.conflict === 'port') return `port ${s.port} is already in use on ${JSON.stringify(s.ip)}`;
      return `can't change sharing key for ${JSON.stringify(s.requestedBy)}, address also in use by ${s.services.join(',')}`;
    }
    case 'unknownPool':
      return `unknown pool ${JSON.stringify(f.pool)}`;
    case 'noAvailableIPs':
      return `no available IPs in pool ${f.pool}`;
    case 'noIPsForFamily':
      return `no available IPs in pool ${f.pool} for ${f.family} IPFamily`;
    case 'wrongFamilyAllocated':
      return f.allocated === 'unknown' ? `unknown allocated IP Family ${f.allocated}` : `IP for wrong family assigned alloc ${f.allocated} service family ${f.requested}`;
    case 'noPoolAvailable':
      return 'no available IPs';
  }
}

/** One line per refusal, for explanations (`pool: why`). */
export function refusalText(r: PoolRefusal): string {
  switch (r.reason) {
    case 'autoAssignDisabled':
      return 'autoAssign is false';
    case 'namespaceNotAllowed':
      return `namespace ${r.namespace} is not in the pool's namespaces [${r.namespaces.join(', ')}]`;
    case 'serviceSelectorMismatch':
      return `no service selector matches the service's labels [${r.selectors.join('; ')}]`;
    case 'reservedByServiceAllocation':
      return 'the pool has serviceAllocation and is not selected for this service';
    case 'noAvailableIPs':
      return `no available IPs (${r.inUse} addresses in use)`;
    case 'wrongFamily':
      return `no ${r.needed} address available (has ${r.available.join(' and ') || 'none'})`;
    case 'unknownPool':
      return 'the pool does not exist';
  }
}

/** Multi-line human explanation of a failure: MetalLB's message, then one line per pool tried. */
export function explainFailure(f: AllocationFailure): string {
  const lines = [failureMessage(f)];
  const attempts: readonly PoolAttempt[] = f.kind === 'noPoolAvailable' ? f.attempts : [];
  if (f.kind === 'sharingConflict' && f.sharing.keyProblem) lines.push(`  ${f.sharing.keyProblem}`);
  if (f.kind === 'poolIncompatible' || f.kind === 'noAvailableIPs') lines.push(`  ${f.pool}: ${refusalText(f.refusal)}`);
  if (f.kind === 'poolLacksFamily') {
    lines.push(`  ${f.pool}: no free ${f.family} address (has ${f.available.join(' and ') || 'none'} free)`);
  }
  for (const a of attempts) {
    lines.push(`  ${a.phase} ${a.pool}: ${a.outcome === 'chosen' ? 'chosen' : refusalText(a.refusal!)}`);
  }
  if (f.kind === 'noPoolAvailable' && f.cause) lines.push(`  then: ${failureMessage(f.cause)}`);
  return lines.join('\n');
}

/** Thrown by Allocator.assign / allocate / allocateFromPool; `reason` says why in detail. */
export class AllocationError extends Error {
  readonly reason: AllocationFailure;
  constructor(reason: AllocationFailure) {
    super(failureMessage(reason));
    this.name = 'AllocationError';
    this.reason = reason;
  }
}
