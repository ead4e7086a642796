/**
 * ServiceL2Status objects as MetalLB v0.16.1 writes them
 * (`internal/k8s/controllers/layer2_status_controller.go`): one per service this node announces in
 * Layer 2, in the MetalLB namespace, `generateName: l2-`, labels `metallb.io/node`,
 * `metallb.io/service-name`, `metallb.io/service-namespace`, owned by the speaker Pod, and the
 * status (node, serviceName, serviceNamespace, interfaces unless all) written through the status
 * subresource. The announcing node deletes every other status of the service; a node that stops
 * announcing deletes its own.
 *
 * `planL2Status` is the pure decision; `L2StatusWriter` carries it out against the API, one
 * service at a time, retrying failures with backoff.
 */
import type { InterfaceSet } from '../core/election/types.ts';
import type { ServiceL2Status } from '../core/kube.ts';
import { StatusWriter, type StatusApi, type StatusWriterOptions } from './status-writer.ts';
import { LABEL_ANNOUNCE_NODE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, METALLB_STATUS_API_VERSION, type OwnerRef, type StatusPlan } from '../core/status.ts';

export { LABEL_ANNOUNCE_NODE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, type OwnerRef };

/** `status` of a ServiceL2Status as MetalLB builds it (`buildDesiredStatus`). */
export interface L2StatusBody {
  node: string;
  serviceName: string;
  serviceNamespace: string;
  interfaces?: Array<{ name: string }>;
}

/** What to do for one service's ServiceL2Status objects. */
export type L2StatusPlan = StatusPlan<ServiceL2Status, L2StatusBody>;

/** Input of planL2Status. */
export interface L2StatusInput {
  readonly node: string;
  /** the MetalLB namespace, where the objects live */
  readonly namespace: string;
  readonly serviceNamespace: string;
  readonly serviceName: string;
  /** the interfaces this node announces the service on, or null when it does not announce it (in L2) */
  readonly desired: InterfaceSet | undefined;
  /** the service's ServiceL2Status objects as currently known (any node) */
  readonly existing: readonly ServiceL2Status[];
  readonly owner: OwnerRef | null;
}

/** The status MetalLB writes: interface names only when not announcing on all interfaces. */
export function desiredL2Status(node: string, serviceNamespace: string, serviceName: string, interfaces: InterfaceSet): L2StatusBody {
  const s: L2StatusBody = { node, serviceName, serviceNamespace };
  if (interfaces !== 'all' && interfaces !== null && interfaces.length > 0) s.interfaces = interfaces.map((name) => ({ name }));
  return s;
}

function sameStatus(a: ServiceL2Status['status'], b: L2StatusBody): boolean {
  const ai = (a?.interfaces ?? []).map((i) => i?.name ?? '');
  const bi = (b.interfaces ?? []).map((i) => i.name);
  return (a?.node ?? '') === b.node && (a?.serviceName ?? '') === b.serviceName && (a?.serviceNamespace ?? '') === b.serviceNamespace && ai.length === bi.length && ai.every((x, i) => x === bi[i]);
}

/** Decides creates, status writes and deletes for one service, as MetalLB's reconciler. Pure. */
export function planL2Status(input: L2StatusInput): L2StatusPlan {
  const { node, existing } = input;
  const nameOf = (s: ServiceL2Status): string => s.metadata?.name ?? '';
  if (input.desired === null || input.desired === undefined) {
    return { deletes: existing.filter((s) => s.metadata?.labels?.[LABEL_ANNOUNCE_NODE] === node).map(nameOf), create: null, patch: null };
  }
  let mine: ServiceL2Status | null = null;
  const deletes: string[] = [];
  for (const s of existing) {
    if (mine === null && s.metadata?.labels?.[LABEL_ANNOUNCE_NODE] === node) mine = s;
    else deletes.push(nameOf(s));
  }
  const status = desiredL2Status(node, input.serviceNamespace, input.serviceName, input.desired);
  if (mine !== null) {
    return { deletes, create: null, patch: sameStatus(mine.status, status) ? null : { name: nameOf(mine), status } };
  }
  const create: ServiceL2Status = {
    apiVersion: METALLB_STATUS_API_VERSION,
    kind: 'ServiceL2Status',
    metadata: {
      generateName: 'l2-',
      namespace: input.namespace,
      labels: {
        [LABEL_ANNOUNCE_NODE]: node,
        [LABEL_SERVICE_NAME]: input.serviceName,
        [LABEL_SERVICE_NAMESPACE]: input.serviceNamespace,
      },
      ...(input.owner ? { ownerReferences: [{ ...input.owner }] } : {}),
    },
    spec: {},
  };
  return { deletes, create, patch: { name: null, status } };
}

/** The API calls the ServiceL2Status writer makes (StatusApi over ServiceL2Status). */
export type L2StatusApi = StatusApi<ServiceL2Status, L2StatusBody>;

/** Options of L2StatusWriter. */
export interface L2StatusWriterOptions extends Omit<StatusWriterOptions<ServiceL2Status, L2StatusBody>, 'plan' | 'controller' | 'what'> {
  readonly node: string;
  /** the interfaces this node announces `namespace/name` on in L2, or null */
  readonly desired: (service: string) => InterfaceSet | null;
  readonly owner: () => OwnerRef | null;
}

/** StatusWriter for this node's ServiceL2Status objects (MetalLB's Layer2StatusReconciler). */
export class L2StatusWriter extends StatusWriter<ServiceL2Status, L2StatusBody> {
  constructor(o: L2StatusWriterOptions) {
    super({
      ...o,
      controller: 'Layer2StatusReconciler',
      what: 'ServiceL2Status',
      plan: (service, serviceNamespace, serviceName, existing) =>
        planL2Status({
          node: o.node,
          namespace: o.namespace,
          serviceNamespace,
          serviceName,
          desired: o.desired(service),
          existing,
          owner: o.owner(),
        }),
    });
  }
}
