/**
 * Why the controller gives a Service no address (or takes one away), in plain words: MetalLB's own
 * text first — alerts and dashboards match it — then what it means for this Service and what to
 * change. Built from the controller's dry-run outcome (MetalLB's error, the allocator's structured
 * reason, the events with their causes), the controller's configuration and the Service itself
 * (where its families come from: spec.clusterIPs, spec.ipFamilies, spec.ipFamilyPolicy). Nothing
 * here decides anything: it words the decision the controller core made.
 */
import { refusalText, type AllocationFailure, type PoolAttempt } from '../allocator/index.ts';
import type { ServiceAllocationOutcome } from '../controller/index.ts';
import { ipFamilyPolicy, requestedPool, serviceFamily } from '../controller/service.ts';
import { objectRef } from '../kube.ts';
import { type AllocationDiagnosisInput, type AllocationFinding, type Fam, cap, familyName, other, list, serviceFamiliesText } from './allocation-input.ts';
import { poolFamilies, poolsWithRoom, roomHint, orJoin, inUseText, shareHint, acceptFix, requestedText, wanted } from './allocation-hints.ts';

export { type AllocationDiagnosisInput, type AllocationFinding, familyName, serviceFamiliesText } from './allocation-input.ts';

export { shareHint } from './allocation-hints.ts';

/** MetalLB's own text, then what it means: `MetalLB reports: TEXT. It means: `. */
function said(text: string): string {
  return `MetalLB reports: ${text.replace(/\.$/, '')}. It means: `;
}

/**
 * `["<nil>"] is not allowed in config` (poolLacksFamily): the pool has no free address of the
 * family the Service needs, MetalLB picks Go's nil address and its Assign refuses it. `additional`:
 * the PreferDualStack case, where the Service keeps its first address and lacks the second family.
 */
function poolLacksFamily(d: AllocationDiagnosisInput, f: Extract<AllocationFailure, { kind: 'poolLacksFamily' }>, text: string, additional: boolean): AllocationFinding {
  const pool = d.config.pools.get(f.pool);
  const has = poolFamilies(pool);
  const fam = familyName(f.family);
  const svc = d.service;
  const held = !has.includes(f.family)
    ? `pool ${f.pool}${requestedText(svc, f.pool)} has no ${fam} address (it has ${has.length ? `${has.map(familyName).join(' and ')} only` : 'no address at all'})`
    : `pool ${f.pool}${requestedText(svc, f.pool)} has ${fam} addresses, but none is free`;
  const families = serviceFamiliesText(svc);
  if (additional) {
    const first = f.ips.find((x) => x !== '<nil>') ?? '';
    // The family split over two pools (one per family): MetalLB takes a Service's addresses from one pool.
    const split = has.includes(f.family) ? undefined : [...d.config.pools.values()].find((p) => p.name !== f.pool && poolFamilies(p).includes(f.family) && (p.autoAssign || requestedPool(svc) === p.name));
    const splitRanges = split ? split.ranges.map((r) => r.entry).filter((e) => e.includes(':') === (f.family === 'ipv6')) : [];
    return {
      id: 'pool-lacks-family',
      severity: 'warning',
      message:
        `${said(text)}${held}, so this PreferDualStack Service gets ${first || 'its first address'} only and no ${fam} address (MetalLB picks no address, Go's nil, and refuses it)`
        + (split ? `; pool ${split.name} has the ${fam} addresses, but MetalLB takes all of a Service's addresses from one pool` : '')
        + `. ${cap(families)}`,
      fix: split
        ? `move the ${fam} range${splitRanges.length === 1 ? '' : 's'} ${list(splitRanges)} from pool ${split.name} into pool ${f.pool} (one pool with both families; two pools may not overlap), or set spec.ipFamilyPolicy: SingleStack if one family is meant`
        : !has.includes(f.family)
          ? `add an ${fam} range to pool ${f.pool} if the Service should be reachable over ${fam}, or set spec.ipFamilyPolicy: SingleStack if one family is meant`
          : `free or add ${fam} addresses in pool ${f.pool}, or set spec.ipFamilyPolicy: SingleStack if one family is meant`,
    };
  }
  const requested = requestedPool(svc) === f.pool;
  const otherFam = familyName(other(f.family));
  const fixes = !has.includes(f.family)
    ? [
        `add an ${fam} range to pool ${f.pool}`,
        requested ? `request a pool with ${fam} addresses (metallb.io/address-pool)${roomHint(d, f.family, [f.pool], true)}` : `use a pool with ${fam} addresses${roomHint(d, f.family, [f.pool], true)}`,
        `make the Service ${otherFam} (spec.ipFamilies: [${otherFam}]; the primary family of an existing Service cannot change: recreate it)`,
      ]
    : [
        `add ${fam} addresses to pool ${f.pool}, or delete Services that no longer need theirs`,
        requested ? `request another pool (metallb.io/address-pool)${roomHint(d, f.family, [f.pool], true)}` : `use another pool${roomHint(d, f.family, [f.pool], true)}`,
      ];
  return {
    id: 'pool-lacks-family',
    severity: 'error',
    message: `${said(text)}${held}, so this ${fam} Service cannot get an address from it (MetalLB picks no address, Go's nil, and refuses it). ${cap(families)}`,
    fix: orJoin(fixes),
  };
}

/** One attempt of a failed allocate, in words (`team: namespace shop is not in the pool's namespaces [a]`). */
function attemptText(t: PoolAttempt): string {
  return `${t.pool}: ${t.refusal ? refusalText(t.refusal) : t.outcome}`;
}

/**
 * Why Services cannot share `ip`, by MetalLB's sharingOK rules in order (both sides need a
 * metallb.io/allow-shared-ip, the same one, and the same backend key: externalTrafficPolicy Cluster
 * on both, or Local on both with the same selector), and the change that lets them.
 */
function keyConflict(
  text: string,
  ip: string,
  holders: readonly string[],
  existing: { sharingKey: string; backendKey: string },
  requested: { sharingKey: string; backendKey: string },
): { message: string; fix: string } {
  const them = list(holders);
  const one = holders.length === 1;
  const held = `${said(text)}${ip} is held by ${them}, which cannot share it with this Service: `;
  const other = 'or request another address for this Service (metallb.io/loadBalancerIPs)';
  if (existing.sharingKey === '') {
    const key = requested.sharingKey || 'a key of your choice';
    return {
      message: `${held}${one ? 'it has' : 'they have'} no metallb.io/allow-shared-ip annotation`,
      fix: `set metallb.io/allow-shared-ip: "${key}" on ${them}${requested.sharingKey ? '' : ' and on this Service'}, ${other}`,
    };
  }
  if (requested.sharingKey === '') {
    return {
      message: `${held}this Service has no metallb.io/allow-shared-ip annotation (${them} ${one ? 'has' : 'have'} "${existing.sharingKey}")`,
      fix: `set metallb.io/allow-shared-ip: "${existing.sharingKey}" on this Service, ${other}`,
    };
  }
  if (existing.sharingKey !== requested.sharingKey) {
    return {
      message: `${held}the metallb.io/allow-shared-ip values differ ("${requested.sharingKey}" here, "${existing.sharingKey}" on ${them})`,
      fix: `set metallb.io/allow-shared-ip: "${existing.sharingKey}" on this Service, ${other}`,
    };
  }
  const policy = (backend: string): string => (backend === '' ? 'externalTrafficPolicy Cluster' : `externalTrafficPolicy Local with selector ${backend}`);
  const rule = "MetalLB shares an address only between Services that are all externalTrafficPolicy Cluster, or all Local with the same selector (the announcing node must host every Service's pods)";
  const fix =
    requested.backendKey !== '' && existing.backendKey === ''
      ? `set externalTrafficPolicy: Cluster on this Service (clients' source addresses are then translated), ${other}`
      : requested.backendKey === '' && existing.backendKey !== ''
        ? `set externalTrafficPolicy: Cluster on ${them}, ${other}`
        : `give this Service and ${them} the same selector, or externalTrafficPolicy: Cluster on both, ${other}`;
  return { message: `${held}this Service has ${policy(requested.backendKey)}, ${them} ${one ? 'has' : 'have'} ${policy(existing.backendKey)}; ${rule}`, fix };
}

/**
 * The finding for an allocator failure (`reason`) behind MetalLB's `text` (the error the Service's
 * event carries). Every kind gets a concrete fix.
 */
function fromReason(d: AllocationDiagnosisInput, reason: AllocationFailure, text: string): AllocationFinding {
  const svc = d.service;
  const ns = d.metallbNamespace;
  switch (reason.kind) {
    case 'poolLacksFamily':
      return poolLacksFamily(d, reason, text, reason.ips.length > 1);
    case 'sharingConflict': {
      const s = reason.sharing;
      return {
        id: 'sharing-conflict',
        severity: 'error',
        ...(s.conflict === 'port'
          ? {
              message: `${said(text)}port ${s.port} on ${s.ip} is already used by ${list(s.services)}, which shares the address`,
              fix: 'use a different port, or request another address (metallb.io/loadBalancerIPs)',
            }
          : keyConflict(text, s.ip, s.services, s.existing, s.requested)),
      };
    }
    case 'notAllowedInConfig': {
      const elsewhere = d.ignoredObjects.filter((o) => o.kind === 'IPAddressPool').map(objectRef);
      return {
        id: 'ip-not-in-pool',
        severity: 'error',
        message:
          `${said(text)}${list(reason.ips)} ${reason.ips.length === 1 ? 'is' : 'are'} in no IPAddressPool of ${ns}`
          + (elsewhere.length ? `; MetalLB ignores the pools outside its namespace (${list(elsewhere)})` : ''),
        fix: elsewhere.length
          ? `move the IPAddressPool into ${ns}, or request an address inside one of its pools`
          : 'request an address inside a pool (metallb.io/loadBalancerIPs), or add the address to an IPAddressPool',
      };
    }
    case 'poolIncompatible':
      return {
        id: 'pool-refuses-service',
        severity: 'error',
        message: `${said(text)}the address belongs to pool ${reason.pool}, which does not accept this Service: ${refusalText(reason.refusal)}`,
        fix: `${acceptFix(reason.pool, reason.refusal, svc)}, or request an address of a pool this Service may use${roomHint(d, wanted(svc)[0] ?? 'ipv4', [reason.pool], true)}`,
      };
    case 'tooManyAddresses':
      return {
        id: 'requested-ips-invalid',
        severity: 'error',
        message: `${said(text)}the Service asks for ${reason.ips.length} addresses (${list(reason.ips)}); a Service has at most two, one per family`,
        fix: 'list one address, or one IPv4 and one IPv6 address, in metallb.io/loadBalancerIPs',
      };
    case 'sameFamily':
      return {
        id: 'requested-ips-invalid',
        severity: 'error',
        message: `${said(text)}the Service asks for two addresses of one family (${list(reason.ips)}); two addresses must be one IPv4 and one IPv6`,
        fix: 'list one IPv4 and one IPv6 address in metallb.io/loadBalancerIPs (a dual-stack Service), or only one address',
      };
    case 'unknownPool': {
      const same = d.ignoredObjects.filter((o) => o.kind === 'IPAddressPool' && o.metadata?.name === reason.pool).map(objectRef);
      const names = [...d.config.pools.keys()].sort();
      return {
        id: 'unknown-pool',
        severity: 'error',
        message:
          `${said(text)}the Service requests pool ${reason.pool} (metallb.io/address-pool), and ${ns} has no IPAddressPool of that name`
          + (same.length ? `; ${list(same)} is outside MetalLB's namespace, which MetalLB does not read` : ''),
        fix: same.length
          ? `move IPAddressPool ${reason.pool} into ${ns}, or request an existing pool${names.length ? ` (${list(names)})` : ''}`
          : `correct the metallb.io/address-pool annotation${names.length ? ` (pools: ${list(names)})` : ''}, or create IPAddressPool ${reason.pool} in ${ns}`,
      };
    }
    case 'noAvailableIPs': {
      const fams = wanted(svc);
      return {
        id: 'pool-exhausted',
        severity: 'error',
        message:
          `${said(text)}pool ${reason.pool}${requestedText(svc, reason.pool)} has no free address for this Service`
          + (reason.refusal.reason === 'noAvailableIPs' ? ` (${inUseText(d, reason.pool, reason.refusal.inUse)})` : ` (${refusalText(reason.refusal)})`),
        fix: orJoin([
          `add addresses to pool ${reason.pool} (or a new IPAddressPool)`,
          'delete Services that no longer need theirs',
          shareHint(d, [reason.pool]) ?? 'share an address with another Service (metallb.io/allow-shared-ip)',
          ...(fams[0] && requestedPool(svc) === reason.pool && poolsWithRoom(d, fams[0], [reason.pool], true).length > 0
            ? [`request another pool (metallb.io/address-pool)${roomHint(d, fams[0], [reason.pool], true)}`]
            : []),
        ]),
      };
    }
    case 'noIPsForFamily': {
      const has = poolFamilies(d.config.pools.get(reason.pool));
      const missing = (['ipv4', 'ipv6'] as const).filter((f) => !reason.available.includes(f));
      const absent = missing.filter((f) => !has.includes(f));
      return {
        id: 'pool-lacks-family',
        severity: 'error',
        message:
          `${said(text)}this ${reason.policy} Service needs an IPv4 and an IPv6 address from one pool, and pool ${reason.pool}${requestedText(svc, reason.pool)} has no free ${missing.map(familyName).join(' or ')} address`
          + (absent.length ? ` (it has no ${absent.map(familyName).join(' or ')} range at all)` : '')
          + `; ${serviceFamiliesText(svc)}`,
        fix: `add ${missing.map((f) => `an ${familyName(f)}`).join(' and ')} range to pool ${reason.pool}, request a pool with both families (metallb.io/address-pool), or set spec.ipFamilyPolicy: PreferDualStack (MetalLB then gives the family the pool has)`,
      };
    }
    case 'wrongFamilyAllocated':
      return {
        id: 'allocation-family-changed',
        severity: 'error',
        message: `${said(text)}the controller still holds ${familyName(reason.allocated)} addresses for this Service, but it now asks for ${familyName(reason.requested)} ones; ${serviceFamiliesText(svc)}`,
        fix: 'remove the old addresses: delete and recreate the Service (or restart the controller so it forgets the old allocation)',
      };
    case 'noPoolAvailable': {
      if (reason.cause && reason.cause.kind !== 'noPoolAvailable') return fromReason(d, reason.cause, text);
      const attempts = reason.attempts;
      // A pool "without available IPs" may have none of the Service's family at all (MetalLB says
      // the same): that is a family mismatch, not an exhausted pool.
      const fams = wanted(svc);
      const lacksFamily = (pool: string): boolean => {
        const has = poolFamilies(d.config.pools.get(pool));
        return fams.length > 0 && fams.some((x) => !has.includes(x));
      };
      const noIPs = attempts.filter((t) => t.refusal?.reason === 'noAvailableIPs');
      const lacking = noIPs.filter((t) => lacksFamily(t.pool)).map((t) => t.pool);
      const exhausted = noIPs.filter((t) => !lacksFamily(t.pool)).map((t) => t.pool);
      const tried = attempts.map((t) =>
        lacking.includes(t.pool)
          ? `${t.pool}: no ${fams
              .filter((x) => !poolFamilies(d.config.pools.get(t.pool)).includes(x))
              .map(familyName)
              .join(' or ')} address at all (it has ${poolFamilies(d.config.pools.get(t.pool)).map(familyName).join(' and ') || 'none'} only)`
          : attemptText(t),
      );
      const fixes: string[] = [];
      const famText = fams.map(familyName).join(' and ');
      if (lacking.length > 0) {
        fixes.push(`add ${fams.length === 1 ? `an ${famText} range` : 'ranges of both families'} to pool ${list(lacking)} (or a new ${famText} IPAddressPool)`);
        if (fams.length === 1) {
          const otherFam = familyName(other(fams[0]!));
          fixes.push(`make the Service ${otherFam} (spec.ipFamilies: [${otherFam}]; the primary family of an existing Service cannot change: recreate it)`);
        }
      }
      if (exhausted.length > 0) {
        fixes.push(`add addresses to pool ${list(exhausted)} (or a new IPAddressPool), or delete Services that no longer need theirs`);
        const share = shareHint(d, exhausted);
        if (share) fixes.push(share);
      }
      const roomy = fams.length === 1 ? poolsWithRoom(d, fams[0]!, [], true) : null;
      for (const t of attempts) {
        if (!t.refusal || t.refusal.reason === 'noAvailableIPs') continue;
        // Requesting an autoAssign: false pool only helps when it has room for this Service.
        if (t.refusal.reason === 'autoAssignDisabled' && roomy && !roomy.includes(t.pool)) continue;
        fixes.push(acceptFix(t.pool, t.refusal, svc) + (t.refusal.reason === 'autoAssignDisabled' && roomy ? ', which has free addresses' : ''));
      }
      if (attempts.length === 0) fixes.push(`create an IPAddressPool in ${ns} with autoAssign and ${familyName(reason.family)} addresses`);
      const familyMatters = lacking.length > 0 || attempts.some((t) => t.refusal?.reason === 'wrongFamily');
      if (familyMatters && ipFamilyPolicy(svc) === 'RequireDualStack') fixes.push('set spec.ipFamilyPolicy: PreferDualStack (MetalLB then gives the family a pool has)');
      return {
        id: exhausted.length > 0 ? 'pool-exhausted' : lacking.length > 0 ? 'pool-lacks-family' : 'allocation-failed',
        severity: 'error',
        message:
          `${said(text)}no pool gives this ${familyName(reason.family)} Service an address${tried.length ? `; pools tried: ${tried.join('; ')}` : `; ${ns} has no pool it may use`}`
          + (familyMatters ? `. ${cap(serviceFamiliesText(svc))}` : ''),
        fix: orJoin(fixes),
      };
    }
  }
}

/**
 * The finding for a controller failure without an allocator reason: MetalLB's controller checks
 * before it allocates (its messages, matched as MetalLB writes them).
 */
function fromMessage(d: AllocationDiagnosisInput, text: string): AllocationFinding {
  const svc = d.service;
  const policy = ipFamilyPolicy(svc);
  const say = (meaning: string): string => `${said(text)}${meaning}`;
  if (text === 'pools are empty') {
    // Pools applied without metadata.namespace land in the kubectl context's namespace (often default).
    const elsewhere = d.ignoredObjects.filter((o) => o.kind === 'IPAddressPool' || o.kind === 'L2Advertisement' || o.kind === 'BGPAdvertisement');
    const pools = elsewhere.filter((o) => o.kind === 'IPAddressPool');
    if (pools.length > 0) {
      const where = [...new Set(pools.map((o) => o.metadata?.namespace ?? ''))].sort();
      const refs = elsewhere.map(objectRef);
      return {
        id: 'no-pools',
        severity: 'error',
        message: say(`the controller has no IPAddressPool in ${d.metallbNamespace}: ${list(refs)} ${refs.length === 1 ? 'is' : 'are'} in namespace ${list(where)}, which MetalLB never reads`),
        fix: `create ${refs.length === 1 ? 'it' : 'them'} in ${d.metallbNamespace} instead (metadata.namespace: ${d.metallbNamespace} in the manifests, kubectl apply, then delete the cop${refs.length === 1 ? 'y' : 'ies'} in ${list(where)}), or pass --metallb-namespace ${where[0]} if MetalLB runs there`,
      };
    }
    return {
      id: 'no-pools',
      severity: 'error',
      message: say(`the controller has no IPAddressPool in ${d.metallbNamespace}`),
      fix: `create an IPAddressPool in ${d.metallbNamespace} (or pass --metallb-namespace if MetalLB runs elsewhere)`,
    };
  }
  if (text === 'No ClusterIPs') {
    return {
      id: 'no-cluster-ip',
      severity: 'error',
      message: say("the Service has no spec.clusterIP / clusterIPs (the API server always sets them: the snapshot looks trimmed); MetalLB's controller clears the addresses of such a Service"),
      fix: 'take the snapshot with `kubectl get services -o yaml` unedited, or add spec.clusterIP to the manifest',
    };
  }
  if (/requires dual stack but clusterips are not dual stack/.test(text)) {
    return {
      id: 'family-not-dual-stack',
      severity: 'error',
      message: say(`spec.ipFamilyPolicy is RequireDualStack, but the Service has cluster IPs of one family only; ${serviceFamiliesText(svc)}`),
      fix: 'set spec.ipFamilyPolicy: PreferDualStack (or SingleStack), or give the Service both families (spec.ipFamilies: [IPv4, IPv6] on a dual-stack cluster)',
    };
  }
  if (/clusterIPs family|invalid ClusterIPs/.test(text)) {
    return {
      id: 'cluster-ip-invalid',
      severity: 'error',
      message: say(`MetalLB cannot tell the Service's family from its cluster IPs; ${serviceFamiliesText(svc)}`),
      fix: 'take the snapshot with `kubectl get services -o yaml` unedited; spec.clusterIPs must be one address, or one IPv4 and one IPv6',
    };
  }
  if (/does not match the ipFamily of the service/.test(text)) {
    return {
      id: 'requested-ips-invalid',
      severity: 'error',
      message: say(`the requested address is not of the Service's family; ${serviceFamiliesText(svc)}`),
      fix: `request an address of the Service's family${policy === 'SingleStack' ? '' : ' (one per family for a dual-stack Service)'}, or recreate the Service with spec.ipFamilies matching the address`,
    };
  }
  if (/is not compatible with requested address pool/.test(text)) {
    return {
      id: 'requested-ips-invalid',
      severity: 'error',
      message: say(`the address requested with metallb.io/loadBalancerIPs (or spec.loadBalancerIP) is not in pool ${requestedPool(svc)}, which metallb.io/address-pool requests`),
      fix: `drop one of the two requests, or request an address inside pool ${requestedPool(svc)}`,
    };
  }
  if (/IPFamilyForAddresses: same address family/.test(text)) {
    return {
      id: 'requested-ips-invalid',
      severity: 'error',
      message: say('the Service requests two addresses of one family; two addresses must be one IPv4 and one IPv6'),
      fix: 'list one IPv4 and one IPv6 address in metallb.io/loadBalancerIPs (a dual-stack Service), or only one address',
    };
  }
  if (/IPFamilyForAddresses: invalid ips length/.test(text)) {
    return {
      id: 'requested-ips-invalid',
      severity: 'error',
      message: say('the Service requests more than two addresses; a Service has at most two, one per family'),
      fix: 'list one address, or one IPv4 and one IPv6 address, in metallb.io/loadBalancerIPs',
    };
  }
  if (/^(invalid |service can not have both)/.test(text)) {
    return {
      id: 'requested-ips-invalid',
      severity: 'error',
      message: say('MetalLB cannot read the addresses the Service requests'),
      fix: 'write metallb.io/loadBalancerIPs as one address or "IPv4,IPv6" (and not together with spec.loadBalancerIP, which is deprecated)',
    };
  }
  if (/didn't allocate an IP|allocated an IP that has no pool/.test(text)) {
    return {
      id: 'controller-internal-error',
      severity: 'error',
      message: say("MetalLB's controller hit an internal inconsistency (its InternalError event)"),
      fix: 'restart the controller; if it persists, report it to MetalLB with this snapshot (`metallb-ts snapshot`)',
    };
  }
  return {
    id: 'allocation-failed',
    severity: 'error',
    message: say('the controller cannot give the Service an address'),
    fix: `compare with the Service's events (kubectl describe service -n ${svc.metadata?.namespace ?? 'default'} ${svc.metadata?.name ?? ''}) and the controller's log; \`metallb-ts allocate --dry-run\` shows every Service`,
  };
}

/**
 * Why the controller gives the Service no address, or would not keep the one in its status: MetalLB's
 * text, what it means, what to change. Null when the dry run reports no failure.
 */
export function diagnoseAllocation(d: AllocationDiagnosisInput): AllocationFinding | null {
  const o = d.outcome;
  if (!o.error) return null;
  return o.reason ? fromReason(d, o.reason, o.error) : fromMessage(d, o.error);
}

/**
 * Findings from the controller's events that are not the Service's final error: an
 * AdditionalAssignFailed (a PreferDualStack Service that gets one family only), a ClearAssignment
 * (a status address the controller drops before allocating anew), each with its cause in words.
 */
export function diagnoseEvents(d: AllocationDiagnosisInput): AllocationFinding[] {
  const out: AllocationFinding[] = [];
  const seen = new Set<string>();
  for (const e of d.outcome.events) {
    if (!e.cause || seen.has(e.reason)) continue;
    if (e.reason === 'AdditionalAssignFailed') {
      seen.add(e.reason);
      const text = e.message.replace(/^cannot assign additional IP in PreferDualStack: /, '');
      const f = fromReason(d, e.cause, text);
      out.push(f.severity === 'error' ? { ...f, severity: 'warning' } : f);
    } else if (e.reason === 'ClearAssignment' && d.outcome.ips.length > 0) {
      // Cleared, then allocated anew: the Service has another address now.
      seen.add(e.reason);
      const text = e.message.replace(/^current IP for "[^"]*" not allowed by config, will attempt for new IP assignment: /, '');
      const f = fromReason(d, e.cause, text);
      const fix = e.cause.kind === 'poolIncompatible' ? acceptFix(e.cause.pool, e.cause.refusal, d.service) : f.fix;
      out.push({
        id: 'status-ip-not-kept',
        severity: 'warning',
        message: `the controller drops the address in the status and allocates ${d.outcome.ips.join(', ')} instead (ClearAssignment): ${f.message}`,
        fix: `to keep the address in the status: ${fix}`,
      });
    }
  }
  return out;
}

/** `[10.0.0.0]`, `[10.0.0.0, 2001:db8::]`, `[]`. */
function state(ips: readonly string[]): string {
  return `[${ips.join(', ')}]`;
}

/**
 * A Service MetalLB's controller never settles on (`oscillates`): each of its own writes triggers a
 * reconcile that writes the next address list, forever. Null when it settles.
 */
export function diagnoseOscillation(d: AllocationDiagnosisInput): AllocationFinding | null {
  const states = d.outcome.oscillates;
  if (!states || states.length === 0) return null;
  const svc = d.service;
  const fam = serviceFamily(svc);
  const repeats = d.outcome.events.filter((e) => e.count > 1).map((e) => `${e.reason} ×${e.count} (${e.message})`);
  const cycle = `${states.map(state).join(' → ')} → ${state(states[0]!)} …`;
  const where = `metallb-ts's controller writes ${state(d.outcome.ips)} and stops there${repeats.length ? `; the dry run's events repeat: ${repeats.join(', ')}` : ''}`;
  const dualFlip = ipFamilyPolicy(svc) === 'PreferDualStack' && (fam === 'ipv4' || fam === 'ipv6') && states.some((s) => s.length === 2);
  if (dualFlip) {
    const otherFam = familyName(other(fam as Fam));
    return {
      id: 'allocation-oscillates',
      severity: 'warning',
      message: `MetalLB's controller never settles on this Service: it writes ${cycle} forever. This PreferDualStack Service has cluster IPs of one family (${familyName(fam)}): a reconcile keeping one address adds an ${otherFam} one from its pool, and the next finds the pair no longer matches the Service's family, clears it and allocates anew (${where}). ${cap(serviceFamiliesText(svc))}`,
      fix: `set spec.ipFamilyPolicy: SingleStack (the cluster gives this Service ${familyName(fam)} only), or give it cluster IPs of both families (spec.ipFamilies: [IPv4, IPv6] on a dual-stack cluster)`,
    };
  }
  return {
    id: 'allocation-oscillates',
    severity: 'warning',
    message: `MetalLB's controller never settles on this Service: each of its writes triggers a reconcile that writes the next of ${cycle} forever (${where})`,
    fix: `pin the addresses with the annotation metallb.io/loadBalancerIPs: ${d.outcome.ips.join(',') || '<addresses>'}, so that every reconcile asks for the same ones`,
  };
}

/**
 * The status addresses the controller would replace without saying why in an event (e.g. a
 * family that no longer matches the Service's): null when it keeps them, or when an event or the
 * final error already explains it.
 */
export function diagnoseReplacement(d: AllocationDiagnosisInput, current: readonly string[]): AllocationFinding | null {
  const o = d.outcome;
  if (current.length === 0 || o.ips.length === 0 || o.error || o.oscillates) return null;
  const same = current.length === o.ips.length && [...current].sort().join() === [...o.ips].sort().join();
  if (same || o.events.some((e) => e.reason === 'ClearAssignment')) return null;
  const fam = serviceFamily(d.service);
  const curFam = current.some((x) => x.includes(':')) ? (current.some((x) => !x.includes(':')) ? 'dual' : 'ipv6') : 'ipv4';
  const why =
    curFam !== fam
      ? `the addresses are ${familyName(curFam)} and the Service is ${familyName(fam)}, so MetalLB clears them and allocates anew. ${cap(serviceFamiliesText(d.service))}`
      : "MetalLB's controller does not keep them on a restart with this configuration";
  return {
    id: 'status-ip-not-kept',
    severity: 'warning',
    message: `the controller would replace the address${current.length === 1 ? '' : 'es'} in the status (${current.join(', ')}) with ${o.ips.join(', ')}: ${why}`,
    fix:
      curFam !== fam
        ? 'give the Service the families of its addresses (spec.ipFamilies, spec.ipFamilyPolicy), or let the controller re-allocate'
        : `to keep ${current.join(', ')}: request ${current.length === 1 ? 'it' : 'them'} with the annotation metallb.io/loadBalancerIPs: ${current.join(',')}`,
  };
}

/**
 * Where MetalLB could have chosen another pool (Go map order): each pool with the address it would
 * have given, from the allocator's `tiedChoices` when the dry run carries them. Null otherwise.
 */
export function tiedChoicesText(d: AllocationDiagnosisInput): string | null {
  const tied = (d.outcome as ServiceAllocationOutcome & { tiedChoices?: ReadonlyArray<{ pool: string; ips: readonly string[] }> }).tiedChoices;
  if (!tied || tied.length === 0) return null;
  const choices = tied.map((c) => `pool ${c.pool}${c.ips.length ? ` (${c.ips.join(', ')})` : ''}`);
  return `MetalLB could also have chosen ${choices.length === 1 ? choices[0] : `${choices.slice(0, -1).join(', ')} or ${choices[choices.length - 1]}`} for this Service: it walks the eligible pools in Go map order, which is random; metallb-ts took pool ${d.outcome.pool ?? '?'}${d.outcome.ips.length ? ` (${d.outcome.ips.join(', ')})` : ''}`;
}
