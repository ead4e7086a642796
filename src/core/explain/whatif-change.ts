/**
 * The state after a `whatif` change (see whatif.ts for how each change is modelled): the label
 * edits of `--label` parsed as kubectl parses them, and changedState, which applies nodes down,
 * label edits, applied and deleted manifests to a ClusterState. Pure.
 */
import { UserError } from '../errors.ts';
import { DEFAULT_METALLB_NAMESPACE, KIND_TO_LIST, namespacedName, objectRef, type ClusterState, type KubeObject, type Node, type Service } from '../kube.ts';
import { withAPIServerDefaults } from '../apiserver-defaults.ts';
import { compareStrings } from '../labels.ts';

/** One label edit of `--label NODE key=value|key-` (kubectl's syntax): `value` null removes the label. */
export interface LabelEdit {
  readonly node: string;
  readonly key: string;
  readonly value: string | null;
}

/** The change to look at. Every field is optional; at least one must change something. */
export interface WhatIfChange {
  /** Nodes that go down (`--node-down`). */
  readonly nodesDown?: readonly string[];
  /** Node label edits (`--label`), applied in order. */
  readonly labels?: readonly LabelEdit[];
  /** The speakers' `--ignore-exclude-lb` after the change; absent: as before. */
  readonly ignoreExcludeLB?: boolean;
  /** Objects applied (`--apply`), in order: each replaces the object of its kind, namespace and name, or is added. */
  readonly apply?: readonly KubeObject[];
  /** Objects deleted (`--delete`): the objects of their kind, namespace and name are removed. */
  readonly remove?: readonly KubeObject[];
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a valid label key (kubectl's rules: `[prefix/]name`), or null. */
function labelKeyProblem(key: string): string | null {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : null;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== null && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) return `prefix "${prefix}" is not a DNS subdomain`;
  if (!LABEL_NAME.test(name)) return `name "${name}" must be 1-63 characters, alphanumeric, '-', '_' or '.', starting and ending alphanumeric`;
  return null;
}

/**
 * Parses the values of `--label` (a variadic option: `--label NODE key=value [key2-] ...`, repeatable,
 * kubectl label's syntax). A word without `=` that does not end in `-` is a node name (node names
 * never do); the edits after it are its own.
 * @throws UserError (exit 2) naming the word: an edit before any node, a node without an edit, a
 *   malformed key or value.
 */
export function parseLabelEdits(words: readonly string[]): LabelEdit[] {
  const out: LabelEdit[] = [];
  let node: string | null = null;
  let edits = 0;
  const endNode = (): void => {
    if (node !== null && edits === 0) throw new UserError(`--label ${node}: no label given (use --label ${node} key=value, or key- to remove it)`);
  };
  for (const w of words) {
    const eq = w.indexOf('=');
    const isEdit = eq >= 0 || w.endsWith('-');
    if (!isEdit) {
      endNode();
      node = w;
      edits = 0;
      continue;
    }
    if (node === null) throw new UserError(`--label ${w}: name the node first (--label NODE ${w})`);
    const key = eq >= 0 ? w.slice(0, eq) : w.slice(0, -1);
    const value = eq >= 0 ? w.slice(eq + 1) : null;
    const bad = labelKeyProblem(key);
    if (bad) throw new UserError(`--label ${node} ${w}: invalid label key: ${bad}`);
    if (value !== null && value !== '' && !LABEL_NAME.test(value)) {
      throw new UserError(`--label ${node} ${w}: invalid label value "${value}": at most 63 characters, alphanumeric, '-', '_' or '.', starting and ending alphanumeric`);
    }
    out.push({ node, key, value });
    edits++;
  }
  endNode();
  return out;
}

const CLUSTER_SCOPED = new Set(['Node', 'Namespace']);
const METALLB_KINDS = new Set(['IPAddressPool', 'L2Advertisement', 'BGPAdvertisement', 'BGPPeer', 'Community', 'BFDProfile', 'ServiceL2Status', 'ServiceBGPStatus', 'ConfigurationState']);
/** Kinds the controller reads: applying or deleting one makes it reprocess every Service. */
const CONTROLLER_KINDS = new Set(['IPAddressPool', 'Community', 'Namespace', 'Service']);

/** The API server's identity of an object: kind, namespace (metallb.io objects without one: MetalLB's; others: `default`), name. */
function identity(o: KubeObject, metallbNamespace: string): string {
  const kind = o.kind ?? '';
  const ns = CLUSTER_SCOPED.has(kind) ? '' : o.metadata?.namespace || (METALLB_KINDS.has(kind) ? metallbNamespace : 'default');
  return JSON.stringify([kind, ns, o.metadata?.name ?? '']);
}

/** `old`'s cluster IP fields where `next` has none (the API server keeps a Service's allocated cluster IPs). */
function keepClusterIPs(next: Service, old: Service): Service {
  const spec = next.spec ?? {};
  if ((spec.clusterIPs?.length ?? 0) > 0 || spec.clusterIP) return next;
  const o = old.spec ?? {};
  return {
    ...next,
    spec: {
      ...spec,
      ...(o.clusterIP !== undefined ? { clusterIP: o.clusterIP } : {}),
      ...(o.clusterIPs !== undefined ? { clusterIPs: o.clusterIPs } : {}),
      ...(spec.ipFamilies === undefined && o.ipFamilies !== undefined ? { ipFamilies: o.ipFamilies } : {}),
      ...(spec.ipFamilyPolicy === undefined && o.ipFamilyPolicy !== undefined ? { ipFamilyPolicy: o.ipFamilyPolicy } : {}),
    },
  };
}

/** ClusterState lists holding what MetalLB's components reported (cleared in the state after the change). */
const REPORTS = ['serviceL2Statuses', 'serviceBGPStatuses', 'events', 'configurationStates'] as const;

/** The state after the change, and what the change did (for the report). */
export interface ChangedState {
  readonly state: ClusterState;
  /** `namespace/Kind/name` of every object applied / deleted. */
  readonly applied: readonly string[];
  readonly deleted: readonly string[];
  /** Whether an object the controller reads was applied or deleted. */
  readonly controllerInputsChanged: boolean;
  /** New Services given cluster IPs as the API server would: `namespace/name: ...` with the families and why. */
  readonly defaulted: readonly string[];
}

/**
 * The state after the change (pure; `state` is not modified): objects deleted, then applied, then
 * the label edits, then the nodes down (see the module comment for what each does); what the
 * components reported before (ServiceL2Status, ServiceBGPStatus, Events, ConfigurationStates) is
 * left out, as they would rewrite it.
 * @throws UserError (exit 2) naming the flag for a node that is not in the state (`--node-down`,
 *   `--label`), a label removed that the node does not carry, a deleted object that is not there, or
 *   a new Service the API server would refuse (its IP families).
 */
export function changedState(state: ClusterState, change: WhatIfChange, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): ChangedState {
  const lists = new Map<string, KubeObject[]>();
  for (const list of Object.values(KIND_TO_LIST)) lists.set(list, [...(state[list] as KubeObject[])]);
  const listOf = (o: KubeObject): KubeObject[] => lists.get(KIND_TO_LIST[o.kind as keyof typeof KIND_TO_LIST])!;
  let controllerInputsChanged = false;
  const deleted: string[] = [];
  for (const o of change.remove ?? []) {
    const list = listOf(o);
    const id = identity(o, metallbNamespace);
    const at = list.findIndex((x) => identity(x, metallbNamespace) === id);
    if (at < 0) throw new UserError(`--delete: ${objectRef(o)} is not in the cluster state`);
    list.splice(at, 1);
    deleted.push(objectRef(o));
    if (CONTROLLER_KINDS.has(o.kind ?? '')) controllerInputsChanged = true;
  }
  const applied: string[] = [];
  const defaulted: string[] = [];
  for (const o of change.apply ?? []) {
    const list = listOf(o);
    const id = identity(o, metallbNamespace);
    const at = list.findIndex((x) => identity(x, metallbNamespace) === id);
    const { status: _ignored, ...manifest } = o as KubeObject & { status?: unknown };
    let next = manifest as KubeObject;
    if (at >= 0) {
      const old = list[at]! as KubeObject & { status?: unknown };
      if (old.status !== undefined) next = { ...next, status: old.status } as KubeObject;
      if (next.kind === 'Service') next = keepClusterIPs(next as Service, old as Service);
      list[at] = next;
    } else {
      if (next.kind === 'Service') {
        // The cluster's Service families are read from the Services before the change.
        const d = withAPIServerDefaults([...state.services, next as Service]);
        const mine = d.defaulted.find((x) => x.service === namespacedName(next));
        if (mine?.refused) throw new UserError(`--apply: ${objectRef(o)}: the API server would refuse to create it: ${mine.refused}`);
        next = d.services.at(-1)!;
        if (mine) defaulted.push(`${mine.service}: a new Service without cluster IPs: given ${mine.ipFamilyPolicy} ${mine.ipFamilies.join(', ')} as the API server would (${mine.basis})`);
      }
      list.push(next);
    }
    applied.push(objectRef(o));
    if (CONTROLLER_KINDS.has(o.kind ?? '')) controllerInputsChanged = true;
  }

  const nodes = lists.get('nodes') as Node[];
  const nodeAt = (flag: string, name: string): number => {
    const i = nodes.findIndex((n) => n.metadata?.name === name);
    if (i < 0) {
      const known = nodes.map((n) => n.metadata?.name ?? '').sort(compareStrings);
      const list = known.length <= 8 ? known.join(', ') : `${known.slice(0, 8).join(', ')} and ${known.length - 8} more`;
      throw new UserError(`${flag} ${name}: no Node ${name} in the cluster state (nodes: ${list || 'none'})`);
    }
    return i;
  };
  for (const e of change.labels ?? []) {
    const i = nodeAt('--label', e.node);
    const node = nodes[i]!;
    const labels = { ...(node.metadata?.labels ?? {}) };
    if (e.value === null) {
      if (!(e.key in labels)) throw new UserError(`--label ${e.node} ${e.key}-: node ${e.node} has no label ${e.key}`);
      delete labels[e.key];
    } else {
      labels[e.key] = e.value;
    }
    nodes[i] = { ...node, metadata: { ...node.metadata, labels } };
  }

  const down = new Set(change.nodesDown ?? []);
  for (const name of down) {
    const i = nodeAt('--node-down', name);
    const node = nodes[i]!;
    const conditions = (node.status?.conditions ?? []).filter((c) => c?.type !== 'Ready');
    conditions.push({ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status (metallb-ts whatif --node-down).' });
    nodes[i] = { ...node, status: { ...(node.status ?? {}), conditions } };
  }
  if (down.size > 0) {
    const slices = lists.get('endpointSlices')!;
    for (let i = 0; i < slices.length; i++) {
      const slice = slices[i] as ClusterState['endpointSlices'][number];
      if (!(slice.endpoints ?? []).some((ep) => ep.nodeName && down.has(ep.nodeName))) continue;
      slices[i] = { ...slice, endpoints: slice.endpoints!.map((ep) => (ep.nodeName && down.has(ep.nodeName) ? { ...ep, conditions: { ...(ep.conditions ?? {}), ready: false, serving: false } } : ep)) };
    }
    const pods = lists.get('pods')!;
    for (let i = 0; i < pods.length; i++) {
      const pod = pods[i] as ClusterState['pods'][number];
      if (!pod.spec?.nodeName || !down.has(pod.spec.nodeName)) continue;
      const conditions = (pod.status?.conditions ?? []).filter((c) => c?.type !== 'Ready');
      conditions.push({ type: 'Ready', status: 'False' });
      pods[i] = { ...pod, status: { ...(pod.status ?? {}), conditions } };
    }
  }
  const out = { ...state };
  for (const [list, objects] of lists) (out as unknown as Record<string, KubeObject[]>)[list] = objects;
  // What the components reported about the world before the change (ServiceL2Status,
  // ServiceBGPStatus, their Events, ConfigurationStates) is not evidence about the world after it:
  // they would rewrite it.
  for (const list of REPORTS) (out as unknown as Record<string, KubeObject[]>)[list] = [];
  return { state: out, applied, deleted, controllerInputsChanged, defaulted };
}
