/**
 * A Service without a selector (issue #12 item 4): Kubernetes makes no endpoints for it, so they
 * are managed by hand — an Endpoints object, which the endpointslice-mirroring controller copies
 * into EndpointSlices, or EndpointSlices written directly. MetalLB's speakers read EndpointSlices
 * only. The endpoint findings (`no-ready-endpoints`, `local-no-endpoint-on-candidate`) are
 * reworded for such a Service: "check that the selector matches running pods" cannot help.
 */
import { SERVICE_NAME_LABEL, type ClusterState, type EndpointSlice, type Service } from '../kube.ts';
import type { Finding } from './types.ts';

const MIRRORED = 'endpointslicemirroring-controller.k8s.io';

/** Whether the Service has no selector (absent or empty: Kubernetes manages no endpoints for it). */
export function hasNoSelector(svc: Service): boolean {
  return Object.keys(svc.spec?.selector ?? {}).length === 0;
}

/** The EndpointSlices of `svc` (label kubernetes.io/service-name, same namespace). */
function slicesOf(state: ClusterState, svc: Service): EndpointSlice[] {
  const ns = svc.metadata?.namespace ?? 'default';
  const name = svc.metadata?.name ?? '';
  return state.endpointSlices.filter((s) => (s.metadata?.namespace ?? 'default') === ns && s.metadata?.labels?.[SERVICE_NAME_LABEL] === name);
}

/** `EndpointSlice a (mirrored from an Endpoints object)`, `EndpointSlices a, b (written directly)`. */
function slicesText(slices: readonly EndpointSlice[]): string {
  const names = slices.map((s) => s.metadata?.name ?? '');
  const mirrored = slices.every((s) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] === MIRRORED);
  return `EndpointSlice${names.length === 1 ? '' : 's'} ${names.join(', ')} (${mirrored ? 'mirrored from an Endpoints object' : 'written by hand or by another controller'})`;
}

/**
 * The findings with the endpoint findings of a selector-less Service reworded: the endpoints are
 * managed by hand (none at all, none ready, or — with externalTrafficPolicy Local — none naming a
 * node, so no node hosts a local endpoint). Other Services' findings are returned unchanged.
 */
export function handManagedEndpoints(svc: Service, state: ClusterState, findings: readonly Finding[]): Finding[] {
  if (!hasNoSelector(svc)) return [...findings];
  const ns = svc.metadata?.namespace ?? 'default';
  const name = svc.metadata?.name ?? '';
  const slices = slicesOf(state, svc);
  const endpoints = slices.flatMap((s) => s.endpoints ?? []).filter((e) => e !== null && e !== undefined);
  const managed =
    'the Service has no selector, so Kubernetes makes no endpoints for it: they are managed by hand (an Endpoints object, which Kubernetes mirrors into EndpointSlices, or EndpointSlices labelled kubernetes.io/service-name), and MetalLB reads the EndpointSlices';
  const create = `create an Endpoints object ${ns}/${name} listing the backends' addresses and ports (or an EndpointSlice labelled ${SERVICE_NAME_LABEL}: ${name}), or give the Service a selector`;
  return findings.map((f): Finding => {
    if (f.id === 'no-ready-endpoints') {
      if (slices.length === 0) {
        return { ...f, message: `${managed}; there are none, so no speaker announces it (every node: notOwner)`, fix: create };
      }
      return {
        ...f,
        message: `${managed}; ${slicesText(slices)} ${slices.length === 1 ? 'has' : 'have'} ${endpoints.length} endpoint${endpoints.length === 1 ? '' : 's'}, none ready or serving, so no speaker announces it (every node: notOwner)`,
        fix: `mark the backends ready: in the Endpoints object list them under subsets[].addresses, not notReadyAddresses (in an EndpointSlice: conditions.ready: true); or ${create.replace(/^create/, 'recreate')}`,
      };
    }
    if (f.id === 'local-no-endpoint-on-candidate') {
      const nodeless = endpoints.filter((e) => !e.nodeName).flatMap((e) => e.addresses ?? []);
      if (nodeless.length === 0) return f;
      const shown = nodeless.length <= 5 ? nodeless.join(', ') : `${nodeless.slice(0, 5).join(', ')} and ${nodeless.length - 5} more`;
      return {
        ...f,
        message: `externalTrafficPolicy is Local, and ${managed.replace(/^the Service has/, 'the Service has')}: ${slicesText(slices)} list${slices.length === 1 ? 's' : ''} ${shown} without a nodeName, so no node hosts a local endpoint and no speaker announces it (MetalLB announces a Local Service only from nodes with a ready endpoint)`,
        fix: `set externalTrafficPolicy: Cluster (backends such as ${nodeless[0]} outside the cluster run on no node), or give the endpoints their node (Endpoints: subsets[].addresses[].nodeName)`,
      };
    }
    return f;
  });
}
