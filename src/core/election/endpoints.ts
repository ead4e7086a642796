/**
 * EndpointSlices as the speaker reads them (MetalLB v0.16.1 `internal/k8s/epslices`): slices are
 * tied to their Service by the `kubernetes.io/service-name` label within the same namespace; an
 * endpoint is usable ("can serve") when `conditions.ready` is absent or true, or else when
 * `conditions.serving` is true. `terminating` is not looked at.
 */
import { SERVICE_NAME_LABEL, type ClusterState, type EndpointSlice, type Service } from '../kube.ts';

/** One endpoint of a slice. */
export type Endpoint = NonNullable<EndpointSlice['endpoints']>[number];

/** EndpointSlices by owning service key `namespace/name`. Build once per state, reuse per service. */
export type EndpointIndex = ReadonlyMap<string, readonly EndpointSlice[]>;

/** Whether an endpoint can serve (MetalLB `EndpointCanServe`): ready absent or true, else serving true. */
export function endpointCanServe(ep: Endpoint): boolean {
  const c = ep.conditions;
  if (!c || c.ready === undefined || c.ready === null || c.ready === true) return true;
  return c.serving === true;
}

/**
 * Groups the state's EndpointSlices by service key `namespace/name` (namespace defaults to
 * `default`), keeping state order. Slices without a non-empty `kubernetes.io/service-name` label
 * belong to no service, as in MetalLB's slice index.
 */
export function buildEndpointIndex(state: Pick<ClusterState, 'endpointSlices'>): EndpointIndex {
  const index = new Map<string, EndpointSlice[]>();
  for (const slice of state.endpointSlices) {
    const name = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
    if (!name) continue;
    const key = `${slice.metadata?.namespace ?? 'default'}/${name}`;
    const list = index.get(key);
    if (list) list.push(slice);
    else index.set(key, [slice]);
  }
  return index;
}

/** The slices of `service` in `index` (empty when none). */
export function slicesFor(index: EndpointIndex, service: Service): readonly EndpointSlice[] {
  return index.get(`${service.metadata?.namespace ?? 'default'}/${service.metadata?.name ?? ''}`) ?? [];
}

/** Every usable endpoint of the slices, in slice and endpoint order. */
export function usableEndpoints(slices: readonly EndpointSlice[]): Endpoint[] {
  const out: Endpoint[] = [];
  for (const slice of slices) for (const ep of slice.endpoints ?? []) if (endpointCanServe(ep)) out.push(ep);
  return out;
}

/**
 * Names of the nodes hosting at least one usable endpoint (endpoints without `nodeName` do not
 * count): the Local-policy candidate filter of the L2 election (MetalLB `nodesWithEndpoint`).
 */
export function endpointNodes(slices: readonly EndpointSlice[]): Set<string> {
  const out = new Set<string>();
  for (const slice of slices) {
    for (const ep of slice.endpoints ?? []) {
      if (ep.nodeName && endpointCanServe(ep)) out.add(ep.nodeName);
    }
  }
  return out;
}

/** Whether any endpoint of the slices is usable (MetalLB `activeEndpointExists`). */
export function hasUsableEndpoint(slices: readonly EndpointSlice[]): boolean {
  for (const slice of slices) for (const ep of slice.endpoints ?? []) if (endpointCanServe(ep)) return true;
  return false;
}

/**
 * Whether a usable endpoint with at least one address exists, optionally only on `node`
 * (MetalLB BGP `hasHealthyEndpoint`: unlike L2, endpoints without addresses do not count).
 */
export function hasHealthyEndpoint(slices: readonly EndpointSlice[], node?: string): boolean {
  for (const slice of slices) {
    for (const ep of slice.endpoints ?? []) {
      if (node !== undefined && ep.nodeName !== node) continue;
      if ((ep.addresses?.length ?? 0) > 0 && endpointCanServe(ep)) return true;
    }
  }
  return false;
}
