/**
 * Public value types of the allocator: what a service asks for, what it gets, and — when it gets
 * nothing — the structured reason why (MetalLB's message plus which pools were tried and why each
 * refused).
 */

/** Address family of a request or of a list of addresses (MetalLB's `ipfamily.Family`). */
export type Family = 'ipv4' | 'ipv6' | 'dual';

/** `spec.ipFamilyPolicy` values; absent behaves as `SingleStack`. */
export type IPFamilyPolicy = 'SingleStack' | 'PreferDualStack' | 'RequireDualStack';

/** One service port as the allocator tracks it (MetalLB's `allocator.Port`); protocol compared case-sensitively. */
export interface Port {
  readonly protocol: string;
  readonly port: number;
}

/**
 * Everything the allocator needs to know about the service it acts for.
 * `key` is the allocator key (`namespace/name`); `namespace` and `labels` drive
 * `serviceAllocation` compatibility; `ipFamilyPolicy`/`ipFamilies` drive dual-stack selection.
 */
export interface AllocRequest {
  readonly key: string;
  readonly namespace: string;
  readonly labels?: Readonly<Record<string, string>> | null;
  /** Absent means `SingleStack`. Any other string also behaves like SingleStack. */
  readonly ipFamilyPolicy?: string | null;
  /** `spec.ipFamilies`; only the first entry matters (`IPv6` first makes IPv6 primary). */
  readonly ipFamilies?: readonly string[] | null;
  readonly ports?: readonly Port[];
  /** Sharing key (`metallb.io/allow-shared-ip`); `""` = does not share. */
  readonly sharingKey?: string;
  /** Backend key (selector for `externalTrafficPolicy: Local`, else `""`). */
  readonly backendKey?: string;
}

/** Number of allocatable addresses of a pool; bigint because IPv6 pools can be huge (saturates at 2^63-1 like MetalLB). */
export interface Capacity {
  readonly total: bigint;
  readonly ipv4: bigint;
  readonly ipv6: bigint;
}

/** MetalLB's `PoolCounters`: distinct addresses in use and still available, per family. */
export interface PoolCounters {
  readonly availableIPv4: bigint;
  readonly availableIPv6: bigint;
  readonly assignedIPv4: bigint;
  readonly assignedIPv6: bigint;
}

/** Why one pool was not used for a service. */
export type PoolRefusal =
  /** `autoAssign: false`: never chosen by `allocate` (only by an explicit address or pool request). */
  | { readonly reason: 'autoAssignDisabled' }
  /** The pool's `serviceAllocation` namespace set does not contain the service's namespace. */
  | { readonly reason: 'namespaceNotAllowed'; readonly namespace: string; readonly namespaces: readonly string[] }
  /** None of the pool's service selectors matches the service's labels. */
  | { readonly reason: 'serviceSelectorMismatch'; readonly selectors: readonly string[] }
  /** Generic phase: the pool has a `serviceAllocation`, so only the pinned phase may use it. */
  | { readonly reason: 'reservedByServiceAllocation' }
  /**
   * Every address of the pool is taken (or excluded by avoidBuggyIPs) or fails the sharing check.
   * `inUse` counts the pool's addresses held by allocations attributed to it.
   */
  | { readonly reason: 'noAvailableIPs'; readonly inUse: number }
  /** The pool has free addresses, but not of the family the service needs. */
  | { readonly reason: 'wrongFamily'; readonly needed: Family; readonly available: readonly ('ipv4' | 'ipv6')[] }
  /** The pool does not exist in the configuration. */
  | { readonly reason: 'unknownPool' };

/** One pool considered by `allocate` (or `allocateFromPool`), in the order it was considered. */
export interface PoolAttempt {
  readonly pool: string;
  /** `pinned`: namespace/selector pools; `generic`: pools without serviceAllocation; `requested`: the address-pool annotation. */
  readonly phase: 'pinned' | 'generic' | 'requested';
  readonly outcome: 'chosen' | 'refused';
  readonly refusal?: PoolRefusal;
  /** First passing addresses found in the pool, per family (canonical strings). */
  readonly candidates?: { readonly ipv4?: string; readonly ipv6?: string };
}

/** Details of a sharing-check failure on one address. */
export interface SharingConflict {
  /** The address (canonical). */
  readonly ip: string;
  /** The service key that asked for the address. */
  readonly requestedBy: string;
  /** `keys`: incompatible sharing/backend keys; `port`: a port is taken by another service. */
  readonly conflict: 'keys' | 'port';
  /** The other service keys involved (for `port`, the one holding the port). */
  readonly services: readonly string[];
  /** The keys recorded on the address. */
  readonly existing: { readonly sharingKey: string; readonly backendKey: string };
  /** The keys of the request. */
  readonly requested: { readonly sharingKey: string; readonly backendKey: string };
  /** For `keys`: MetalLB's `sharingOK` message (`existing service does not allow sharing`, ...). */
  readonly keyProblem?: string;
  /** For `port`: `PROTO/port`. */
  readonly port?: string;
}

/**
 * Structured reason of a failed allocator operation. `kind` names the MetalLB failure; the
 * message MetalLB would print is on the AllocationError carrying it.
 */
export type AllocationFailure =
  | { readonly kind: 'notAllowedInConfig'; readonly ips: readonly string[] }
  | { readonly kind: 'poolIncompatible'; readonly pool: string; readonly refusal: PoolRefusal }
  | { readonly kind: 'tooManyAddresses'; readonly ips: readonly string[] }
  | { readonly kind: 'sameFamily'; readonly ips: readonly string[] }
  | { readonly kind: 'sharingConflict'; readonly sharing: SharingConflict }
  | { readonly kind: 'unknownPool'; readonly pool: string }
  | { readonly kind: 'noAvailableIPs'; readonly pool: string; readonly refusal: PoolRefusal }
  | { readonly kind: 'noIPsForFamily'; readonly pool: string; readonly family: Family; readonly policy: string; readonly available: readonly ('ipv4' | 'ipv6')[] }
  /**
   * The pool has no free address of `family` (it has none of that family at all, or they are all
   * taken): MetalLB selects a nil address and its Assign fails with `["<nil>"] is not allowed in
   * config` (`ips` as MetalLB prints them: `["<nil>"]`, or `["10.0.0.4" "<nil>"]` when adding the
   * second family of a PreferDualStack Service). `available`: the families the pool still had.
   */
  | { readonly kind: 'poolLacksFamily'; readonly pool: string; readonly family: 'ipv4' | 'ipv6'; readonly ips: readonly string[]; readonly available: readonly ('ipv4' | 'ipv6')[] }
  | { readonly kind: 'wrongFamilyAllocated'; readonly allocated: Family | 'unknown'; readonly requested: Family }
  /** `allocate` found nothing: every pool tried, and the last concrete failure (if a chosen pool then failed). */
  | { readonly kind: 'noPoolAvailable'; readonly family: Family; readonly attempts: readonly PoolAttempt[]; readonly cause?: AllocationFailure };

/** Result of a successful `allocate` / `allocateFromPool` / `assign`. */
export interface AllocationResult {
  /** The addresses now held, in recorded order (canonical strings). */
  readonly ips: readonly string[];
  /** The pool the allocation is attributed to. */
  readonly pool: string;
  /** Pools considered (allocate / allocateFromPool only). */
  readonly attempts: readonly PoolAttempt[];
  /**
   * Other pools MetalLB could have chosen: where it walks pools in Go map order (its
   * per-namespace pool lists before sorting, the generic pools) every order is possible;
   * metallb-ts takes pool-name order. Empty when every order gives `pool`.
   */
  readonly tiedPools: readonly string[];
  /** The same pools with the addresses each would have given (canonical; [] when none). */
  readonly tiedChoices: readonly { readonly pool: string; readonly ips: readonly string[] }[];
}
