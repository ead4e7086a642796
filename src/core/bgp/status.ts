/**
 * ServiceBGPStatus objects as MetalLB v0.16.1's speaker keeps them
 * (`internal/k8s/controllers/bgp_status_controller.go`): per node and announced service, one
 * object in the speaker's namespace, `generateName: bgp-`, labels `metallb.io/node`,
 * `metallb.io/service-name`, `metallb.io/service-namespace`, owned by the speaker Pod (not as
 * controller), `status.peers` = the BGPPeers the service's prefixes go to (peersByService).
 * No peers: the node's objects for the service are deleted; more than one: the extras are.
 */
import type { ServiceBGPStatus } from '../kube.ts';
import { LABEL_ANNOUNCE_NODE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, METALLB_STATUS_API_VERSION, type OwnerRef, type StatusPlan } from '../status.ts';

/** `status` of a ServiceBGPStatus. */
export interface BGPStatusBody {
  node: string;
  serviceName: string;
  serviceNamespace: string;
  peers: string[];
}

/** What to do for one service's ServiceBGPStatus objects of this node. */
export type BGPStatusPlan = StatusPlan<ServiceBGPStatus, BGPStatusBody>;

/** Input of planBGPStatus. */
export interface BGPStatusInput {
  readonly node: string;
  /** the speaker's namespace, where the objects live */
  readonly namespace: string;
  readonly serviceNamespace: string;
  readonly serviceName: string;
  /** sorted BGPPeer names the service reaches from this node ([]: none) */
  readonly peers: readonly string[];
  /** the service's ServiceBGPStatus objects currently known (any node) */
  readonly existing: readonly ServiceBGPStatus[];
  readonly owner: OwnerRef | null;
}

/** The object MetalLB creates for a service on `node` (before its generated name and status). */
export function newServiceBGPStatus(node: string, namespace: string, serviceNamespace: string, serviceName: string, owner: OwnerRef | null): ServiceBGPStatus {
  return {
    apiVersion: METALLB_STATUS_API_VERSION,
    kind: 'ServiceBGPStatus',
    metadata: {
      generateName: 'bgp-',
      namespace,
      labels: { [LABEL_ANNOUNCE_NODE]: node, [LABEL_SERVICE_NAME]: serviceName, [LABEL_SERVICE_NAMESPACE]: serviceNamespace },
      ...(owner ? { ownerReferences: [{ ...owner }] } : {}),
    },
    spec: {},
  };
}

function samePeers(a: ServiceBGPStatus['status'], b: BGPStatusBody): boolean {
  const ap = a?.peers ?? [];
  return (a?.node ?? '') === b.node && (a?.serviceName ?? '') === b.serviceName && (a?.serviceNamespace ?? '') === b.serviceNamespace && ap.length === b.peers.length && ap.every((p, i) => p === b.peers[i]);
}

/** Decides deletes, the create and the status write for one service on one node, as MetalLB's reconciler. Pure. */
export function planBGPStatus(input: BGPStatusInput): BGPStatusPlan {
  const nameOf = (s: ServiceBGPStatus): string => s.metadata?.name ?? '';
  const mine = input.existing.filter(
    (s) => s.metadata?.labels?.[LABEL_ANNOUNCE_NODE] === input.node && s.metadata?.labels?.[LABEL_SERVICE_NAME] === input.serviceName && s.metadata?.labels?.[LABEL_SERVICE_NAMESPACE] === input.serviceNamespace,
  );
  if (input.peers.length === 0) return { deletes: mine.map(nameOf), create: null, patch: null };
  const status: BGPStatusBody = { node: input.node, serviceName: input.serviceName, serviceNamespace: input.serviceNamespace, peers: [...input.peers] };
  const deletes = mine.slice(1).map(nameOf);
  const current = mine[0];
  if (current) return { deletes, create: null, patch: samePeers(current.status, status) ? null : { name: nameOf(current), status } };
  return {
    deletes,
    create: newServiceBGPStatus(input.node, input.namespace, input.serviceNamespace, input.serviceName, input.owner),
    patch: { name: null, status },
  };
}

/** The ServiceBGPStatus as it stands once planBGPStatus's writes are done (for dry runs), or null. */
export function desiredServiceBGPStatus(input: Omit<BGPStatusInput, 'existing'> & { readonly existing?: readonly ServiceBGPStatus[] }): ServiceBGPStatus | null {
  if (input.peers.length === 0) return null;
  const current = (input.existing ?? []).find(
    (s) => s.metadata?.labels?.[LABEL_ANNOUNCE_NODE] === input.node && s.metadata?.labels?.[LABEL_SERVICE_NAME] === input.serviceName && s.metadata?.labels?.[LABEL_SERVICE_NAMESPACE] === input.serviceNamespace,
  );
  const base = current ?? newServiceBGPStatus(input.node, input.namespace, input.serviceNamespace, input.serviceName, input.owner);
  return { ...base, status: { node: input.node, serviceName: input.serviceName, serviceNamespace: input.serviceNamespace, peers: [...input.peers] } };
}
