/**
 * Kubernetes object shapes as metallb-ts reads them, and the ClusterState every command and the
 * core work on. Objects are kept exactly as the API server (or a `kubectl get -o yaml` dump)
 * shows them; only the fields MetalLB looks at are typed, everything else passes through.
 */

/** `metadata` of any object. Only the fields MetalLB reads are typed. */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  [extra: string]: unknown;
}

/** Any Kubernetes object: `apiVersion`, `kind`, `metadata`, and whatever else it carries. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [extra: string]: unknown;
}

/** Kubernetes `metav1.LabelSelector`. */
export interface LabelSelector {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: LabelSelectorRequirement[] | null;
}

/** One `matchExpressions` entry; `operator` is In, NotIn, Exists or DoesNotExist. */
export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[] | null;
}

export interface ServicePort {
  name?: string;
  protocol?: string;
  port: number;
  targetPort?: number | string;
  nodePort?: number;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
  ipMode?: string;
  ports?: unknown[];
}

/** core/v1 Service. */
export interface Service extends KubeObject {
  kind: 'Service';
  spec?: {
    type?: string;
    ports?: ServicePort[] | null;
    selector?: Record<string, string> | null;
    clusterIP?: string;
    clusterIPs?: string[];
    loadBalancerIP?: string;
    loadBalancerClass?: string;
    externalTrafficPolicy?: string;
    ipFamilies?: string[] | null;
    ipFamilyPolicy?: string;
    [extra: string]: unknown;
  };
  status?: { loadBalancer?: { ingress?: LoadBalancerIngress[] | null } | null; [extra: string]: unknown };
}

/** discovery.k8s.io/v1 EndpointSlice. The owning Service is the `kubernetes.io/service-name` label. */
export interface EndpointSlice extends KubeObject {
  kind: 'EndpointSlice';
  addressType?: string;
  endpoints?: Array<{
    addresses?: string[];
    nodeName?: string;
    conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
    [extra: string]: unknown;
  }> | null;
  ports?: unknown[] | null;
}

/** A Node condition (`type`, `status` "True"/"False"/"Unknown"). */
export interface NodeCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  [extra: string]: unknown;
}

/** core/v1 Node. */
export interface Node extends KubeObject {
  kind: 'Node';
  spec?: { [extra: string]: unknown };
  status?: { conditions?: NodeCondition[] | null; addresses?: Array<{ type: string; address: string }>; [extra: string]: unknown };
}

export interface Namespace extends KubeObject {
  kind: 'Namespace';
}

/** core/v1 Pod (speaker pods: which node they run on and whether they are Ready). */
export interface Pod extends KubeObject {
  kind: 'Pod';
  spec?: { nodeName?: string; [extra: string]: unknown };
  status?: { phase?: string; podIP?: string; conditions?: NodeCondition[] | null; [extra: string]: unknown };
}

export interface Secret extends KubeObject {
  kind: 'Secret';
  type?: string;
  data?: Record<string, string> | null;
  stringData?: Record<string, string> | null;
}

export interface ConfigMap extends KubeObject {
  kind: 'ConfigMap';
  data?: Record<string, string> | null;
}

/** metallb.io/v1beta1 IPAddressPool. */
export interface IPAddressPool extends KubeObject {
  kind: 'IPAddressPool';
  spec?: {
    addresses?: string[] | null;
    autoAssign?: boolean | null;
    avoidBuggyIPs?: boolean | null;
    serviceAllocation?: {
      priority?: number | null;
      namespaces?: string[] | null;
      namespaceSelectors?: LabelSelector[] | null;
      serviceSelectors?: LabelSelector[] | null;
    } | null;
  };
  status?: { [extra: string]: unknown };
}

/** metallb.io/v1beta1 L2Advertisement. */
export interface L2Advertisement extends KubeObject {
  kind: 'L2Advertisement';
  spec?: {
    ipAddressPools?: string[] | null;
    ipAddressPoolSelectors?: LabelSelector[] | null;
    nodeSelectors?: LabelSelector[] | null;
    serviceSelectors?: LabelSelector[] | null;
    interfaces?: string[] | null;
  };
}

/** metallb.io/v1beta1 BGPAdvertisement. */
export interface BGPAdvertisement extends KubeObject {
  kind: 'BGPAdvertisement';
  spec?: {
    aggregationLength?: number | null;
    aggregationLengthV6?: number | null;
    localPref?: number | null;
    communities?: string[] | null;
    ipAddressPools?: string[] | null;
    ipAddressPoolSelectors?: LabelSelector[] | null;
    nodeSelectors?: LabelSelector[] | null;
    peers?: string[] | null;
    serviceSelectors?: LabelSelector[] | null;
  };
}

/** metallb.io/v1beta2 (or v1beta1) BGPPeer. Fields are kept loose: the config parser checks them. */
export interface BGPPeer extends KubeObject {
  kind: 'BGPPeer';
  spec?: { [field: string]: unknown };
}

export interface Community extends KubeObject {
  kind: 'Community';
  spec?: { communities?: Array<{ name?: string; value?: string }> | null };
}

export interface BFDProfile extends KubeObject {
  kind: 'BFDProfile';
  spec?: { [field: string]: unknown };
}

/** metallb.io/v1beta1 ServiceL2Status: which node announces a service, on which interfaces. */
export interface ServiceL2Status extends KubeObject {
  kind: 'ServiceL2Status';
  spec?: { [field: string]: unknown };
  status?: {
    node?: string;
    serviceName?: string;
    serviceNamespace?: string;
    interfaces?: Array<{ name?: string }> | null;
    [extra: string]: unknown;
  };
}

export interface ServiceBGPStatus extends KubeObject {
  kind: 'ServiceBGPStatus';
  spec?: { [field: string]: unknown };
  status?: {
    node?: string;
    serviceName?: string;
    serviceNamespace?: string;
    peers?: string[] | null;
    [extra: string]: unknown;
  };
}

/** frrk8s.metallb.io/v1beta1 FRRConfiguration as stored (the speaker's own is `metallb-<node>`; shape in src/core/frrk8s/types.ts). */
export interface FRRConfigurationObject extends KubeObject {
  kind: 'FRRConfiguration';
  spec?: { [field: string]: unknown };
}

/** metallb.io/v1beta1 ConfigurationState: whether a component (`controller`, `speaker-<node>`) loaded the configuration. */
export interface ConfigurationStateObject extends KubeObject {
  kind: 'ConfigurationState';
  status?: {
    result?: string;
    errorSummary?: string;
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string; lastTransitionTime?: string }> | null;
    [extra: string]: unknown;
  };
}

/** core/v1 Event, as `explain` reads them in live mode. */
export interface Event extends KubeObject {
  kind: 'Event';
  involvedObject?: { kind?: string; namespace?: string; name?: string; uid?: string };
  reason?: string;
  message?: string;
  type?: string;
  lastTimestamp?: string;
  count?: number;
}

/**
 * The whole cluster as metallb-ts sees it: the output of the snapshot loader (`-f`) and of the
 * live API source alike, so every command and the core run unchanged on either.
 *
 * Lists keep the order in which the objects were read (file order, then document order): the
 * config parser's overlap and attachment rules depend on it, as MetalLB's do on API order.
 */
export interface ClusterState {
  services: Service[];
  endpointSlices: EndpointSlice[];
  nodes: Node[];
  namespaces: Namespace[];
  /** Speaker pods (and any other pods the snapshot had). */
  pods: Pod[];
  secrets: Secret[];
  configMaps: ConfigMap[];
  ipAddressPools: IPAddressPool[];
  l2Advertisements: L2Advertisement[];
  bgpAdvertisements: BGPAdvertisement[];
  bgpPeers: BGPPeer[];
  communities: Community[];
  bfdProfiles: BFDProfile[];
  serviceL2Statuses: ServiceL2Status[];
  serviceBGPStatuses: ServiceBGPStatus[];
  /** FRRConfigurations of the frr-k8s namespace (BGP mode through frr-k8s). */
  frrConfigurations: FRRConfigurationObject[];
  /** ConfigurationStates of MetalLB's namespace (`controller`, `speaker-<node>`). */
  configurationStates: ConfigurationStateObject[];
  events: Event[];
}

/** Kinds the loader keeps, mapped to the ClusterState list they go to. Other kinds are ignored. */
export const KIND_TO_LIST = {
  Service: 'services',
  EndpointSlice: 'endpointSlices',
  Node: 'nodes',
  Namespace: 'namespaces',
  Pod: 'pods',
  Secret: 'secrets',
  ConfigMap: 'configMaps',
  IPAddressPool: 'ipAddressPools',
  L2Advertisement: 'l2Advertisements',
  BGPAdvertisement: 'bgpAdvertisements',
  BGPPeer: 'bgpPeers',
  Community: 'communities',
  BFDProfile: 'bfdProfiles',
  ServiceL2Status: 'serviceL2Statuses',
  ServiceBGPStatus: 'serviceBGPStatuses',
  FRRConfiguration: 'frrConfigurations',
  ConfigurationState: 'configurationStates',
  Event: 'events',
} as const satisfies Record<string, keyof ClusterState>;

/** A ClusterState with every list empty. */
export function emptyClusterState(): ClusterState {
  return {
    services: [],
    endpointSlices: [],
    nodes: [],
    namespaces: [],
    pods: [],
    secrets: [],
    configMaps: [],
    ipAddressPools: [],
    l2Advertisements: [],
    bgpAdvertisements: [],
    bgpPeers: [],
    communities: [],
    bfdProfiles: [],
    serviceL2Statuses: [],
    serviceBGPStatuses: [],
    frrConfigurations: [],
    configurationStates: [],
    events: [],
  };
}

/**
 * Builds a ClusterState from a list of objects, in order; kinds not in KIND_TO_LIST are dropped.
 * The same function the snapshot loader and the conformance runner use.
 */
export function clusterStateFromObjects(objects: readonly KubeObject[]): ClusterState {
  const state = emptyClusterState();
  for (const obj of objects) {
    if (typeof obj.kind !== 'string' || !Object.hasOwn(KIND_TO_LIST, obj.kind)) continue;
    const list = KIND_TO_LIST[obj.kind as keyof typeof KIND_TO_LIST];
    (state[list] as KubeObject[]).push(obj);
  }
  return state;
}

/** Where an object came from: file and 1-based line of its document, for error messages. */
export interface ObjectOrigin {
  file: string;
  line: number;
}

const origins = new WeakMap<object, ObjectOrigin>();

/** Records where `obj` was read from (the snapshot loader calls this). */
export function setOrigin(obj: object, origin: ObjectOrigin): void {
  origins.set(obj, origin);
}

/** Where `obj` was read from, if known. */
export function originOf(obj: object): ObjectOrigin | undefined {
  return origins.get(obj);
}

/**
 * The reference used in messages: `namespace/Kind/name` for namespaced objects
 * (e.g. `metallb-system/IPAddressPool/public`), `Kind/name` otherwise; `<unnamed>` when the
 * object has no name.
 */
export function objectRef(obj: KubeObject): string {
  const name = obj.metadata?.name || '<unnamed>';
  const ns = obj.metadata?.namespace;
  return ns ? `${ns}/${obj.kind ?? 'Object'}/${name}` : `${obj.kind ?? 'Object'}/${name}`;
}

/** `namespace/name` of a namespaced object (the allocator's and speaker's service key). */
export function namespacedName(obj: KubeObject): string {
  return `${obj.metadata?.namespace ?? 'default'}/${obj.metadata?.name ?? ''}`;
}

/** The namespace MetalLB is installed in unless told otherwise (`--metallb-namespace`). */
export const DEFAULT_METALLB_NAMESPACE = 'metallb-system';

/** Label a Node carries to be left out of load-balancer traffic; MetalLB checks the key only. */
export const EXCLUDE_LB_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers';

/**
 * The exclusion-label rule, in one place: whether MetalLB's speaker leaves this Node out of every
 * announcement (internal/k8s/nodes/nodes.go `IsNodeExcludedFromBalancers`: the label's key present, whatever its value —
 * kubeadm sets it empty on control-plane nodes). `--ignore-exclude-lb` is the caller's to apply.
 */
export function carriesExclusionLabel(node: { readonly metadata?: { readonly labels?: Readonly<Record<string, string>> } } | null | undefined): boolean {
  const labels = node?.metadata?.labels;
  return !!labels && Object.hasOwn(labels, EXCLUDE_LB_LABEL);
}
/** Label linking an EndpointSlice to its Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
