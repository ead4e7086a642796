/**
 * MetalLB v0.16.1's admission webhooks (internal/k8s/webhooks/webhookv1beta1, webhookv1beta2)
 * as a pure function: the decision for one admission request, given the stored objects; the
 * list of webhooks it registers (METALLB_WEBHOOKS) and its BGPPeer conversion (convertBGPPeer).
 * The HTTPS server around them is src/controller/webhook-server.ts.
 */
import { ConfigError, quote } from '../errors.ts';
import type { KubeObject } from '../kube.ts';
import { clusterStateFromObjects } from '../kube.ts';
import { formatDurationNs, parseDurationNs } from './duration.ts';
import { parseConfig, type BGPMode } from './parse.ts';
import { resetTransient } from './validate.ts';

/** Kinds MetalLB's webhooks admit. */
export const WEBHOOK_KINDS = ['IPAddressPool', 'L2Advertisement', 'BGPAdvertisement', 'Community', 'BGPPeer', 'BFDProfile'] as const;

/**
 * The whole-cluster validation the webhooks call (MetalLB `Validator.Validate`): gets the
 * objects to validate (kind lists in the order described in admissionReview) and throws an Error
 * when the configuration they form is rejected.
 */
export type ClusterValidation = (objects: readonly KubeObject[]) => void;

/**
 * MetalLB's real whole-cluster validation (`config.NewValidator(ValidationFor(mode))`):
 * resetTransient, then the mode check (`native`, `frr`, `frr-k8s`; other values none), then
 * the parser.
 */
export function clusterValidation(mode?: BGPMode | string): ClusterValidation {
  return (objects) => {
    parseConfig(clusterStateFromObjects(resetTransient(objects)), { mode });
  };
}

/** One admission request. */
export interface AdmissionRequest {
  /** Namespace MetalLB runs in; stored MetalLB objects are read from it only. */
  metallbNamespace: string;
  operation: 'create' | 'update' | 'delete';
  /** The object under admission (for `delete`, the object being deleted). */
  object: KubeObject;
  /** Objects stored in the cluster (any kinds; MetalLB kinds outside metallbNamespace are ignored). */
  stored: readonly KubeObject[];
  /** The whole-cluster validation; default clusterValidation() (no mode check). */
  clusterValidation?: ClusterValidation;
}

/** The webhook's answer. */
export interface AdmissionDecision {
  allowed: boolean;
  /** Why it was denied ("" when allowed). */
  reason: string;
  /** Admission warnings (the BGPPeer disableMP deprecation). */
  warnings: string[];
  /** What was handed to the whole-cluster validation, or null when it was not called. */
  validated: KubeObject[] | null;
}

function storedOfKind(req: AdmissionRequest, kind: string): KubeObject[] {
  return req.stored.filter((o) => o.kind === kind && o.metadata?.namespace === req.metallbNamespace);
}

/** MetalLB `*ListWithUpdate`: the stored list with `obj` replacing the same-named item, or appended. */
function withUpdate(list: readonly KubeObject[], obj: KubeObject): KubeObject[] {
  const out = [...list];
  const i = out.findIndex((o) => o.metadata?.name === obj.metadata?.name);
  if (i >= 0) out[i] = obj;
  else out.push(obj);
  return out;
}

/**
 * Decides one admission request as MetalLB's webhooks do:
 *
 * - `delete`: allowed, except a BFDProfile that a stored BGPPeer names in `spec.bfdProfile`.
 * - `create` of a BGPPeer with `spec.disableMP: true`: allowed at once with a deprecation warning.
 * - `create` outside `metallbNamespace`: denied (validation not called).
 * - BFDProfile `create`/`update`: nothing more.
 * - `create`/`update` of the other kinds: the stored objects of the kind with `object` merged in
 *   (same name replaced in place, else appended), plus the stored IPAddressPools for
 *   L2Advertisement / BGPAdvertisement and all Nodes for BGPAdvertisement / BGPPeer, are handed
 *   to the whole-cluster validation; denied when it throws.
 */
export function admissionReview(req: AdmissionRequest): AdmissionDecision {
  const obj = req.object;
  const kind = obj.kind ?? '';
  const allow = (validated: KubeObject[] | null, warnings: string[] = []): AdmissionDecision => ({ allowed: true, reason: '', warnings, validated });
  const deny = (reason: string, validated: KubeObject[] | null): AdmissionDecision => ({ allowed: false, reason, warnings: [], validated });
  const spec = ((obj as { spec?: Record<string, unknown> }).spec ?? {}) as Record<string, unknown>;

  if (req.operation === 'delete') {
    if (kind === 'BFDProfile') {
      const user = storedOfKind(req, 'BGPPeer').find((p) => ((p as { spec?: Record<string, unknown> }).spec?.bfdProfile ?? '') === obj.metadata?.name);
      if (user) return deny(`failed to delete BFDProfile ${obj.metadata?.name ?? ''}, used by BGPPeer ${user.metadata?.name ?? ''}`, null);
    }
    return allow(null);
  }
  if (req.operation === 'create') {
    if (kind === 'BGPPeer' && spec.disableMP === true) {
      return allow(null, ["disable mp is deprecated and has no effect since it's the default behavior now"]);
    }
    if (obj.metadata?.namespace !== req.metallbNamespace) {
      return deny(`resource must be created in ${req.metallbNamespace} namespace`, null);
    }
  }
  if (kind === 'BFDProfile') return allow(null);

  let objects: KubeObject[];
  const nodes = req.stored.filter((o) => o.kind === 'Node');
  switch (kind) {
    case 'IPAddressPool':
    case 'Community':
      objects = withUpdate(storedOfKind(req, kind), obj);
      break;
    case 'L2Advertisement':
      objects = [...withUpdate(storedOfKind(req, kind), obj), ...storedOfKind(req, 'IPAddressPool')];
      break;
    case 'BGPAdvertisement':
      objects = [...withUpdate(storedOfKind(req, kind), obj), ...storedOfKind(req, 'IPAddressPool'), ...nodes];
      break;
    case 'BGPPeer':
      objects = [...withUpdate(storedOfKind(req, kind), obj), ...nodes];
      break;
    default:
      return allow(null);
  }
  const validate = req.clusterValidation ?? clusterValidation();
  try {
    validate(objects);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof Error) return deny(err.message, objects);
    throw err;
  }
  return allow(objects);
}

/** One validating webhook MetalLB v0.16.1 serves (its kubebuilder markers, `config/webhook/manifests.yaml`). */
export interface WebhookSpec {
  /** URL path on the webhook server */
  path: string;
  /** the kind it admits */
  kind: (typeof WEBHOOK_KINDS)[number];
  /** the metallb.io version it is registered for */
  version: 'v1beta1' | 'v1beta2';
  /** the resource (plural) */
  resource: string;
  /** the operations MetalLB registers (ValidatingWebhookConfiguration `rules[].operations`) */
  operations: ReadonlyArray<'CREATE' | 'UPDATE' | 'DELETE'>;
  /** the webhook's name in the configuration (MetalLB's Helm chart spells the BGPPeer one `bgppeervalidationwebhook.metallb.io`) */
  name: string;
}

/**
 * MetalLB v0.16.1's validating webhooks, in the order of its `config/webhook/manifests.yaml`:
 * one path per kind, BGPPeer on v1beta2 only (v1beta1 objects reach it converted), BFDProfile
 * on create and delete (a profile in use cannot be deleted), the others on create and update.
 */
export const METALLB_WEBHOOKS: readonly WebhookSpec[] = [
  { path: '/validate-metallb-io-v1beta2-bgppeer', kind: 'BGPPeer', version: 'v1beta2', resource: 'bgppeers', operations: ['CREATE', 'UPDATE'], name: 'bgppeersvalidationwebhook.metallb.io' },
  { path: '/validate-metallb-io-v1beta1-bfdprofile', kind: 'BFDProfile', version: 'v1beta1', resource: 'bfdprofiles', operations: ['CREATE', 'DELETE'], name: 'bfdprofilevalidationwebhook.metallb.io' },
  {
    path: '/validate-metallb-io-v1beta1-bgpadvertisement',
    kind: 'BGPAdvertisement',
    version: 'v1beta1',
    resource: 'bgpadvertisements',
    operations: ['CREATE', 'UPDATE'],
    name: 'bgpadvertisementvalidationwebhook.metallb.io',
  },
  { path: '/validate-metallb-io-v1beta1-community', kind: 'Community', version: 'v1beta1', resource: 'communities', operations: ['CREATE', 'UPDATE'], name: 'communityvalidationwebhook.metallb.io' },
  {
    path: '/validate-metallb-io-v1beta1-ipaddresspool',
    kind: 'IPAddressPool',
    version: 'v1beta1',
    resource: 'ipaddresspools',
    operations: ['CREATE', 'UPDATE'],
    name: 'ipaddresspoolvalidationwebhook.metallb.io',
  },
  {
    path: '/validate-metallb-io-v1beta1-l2advertisement',
    kind: 'L2Advertisement',
    version: 'v1beta1',
    resource: 'l2advertisements',
    operations: ['CREATE', 'UPDATE'],
    name: 'l2advertisementvalidationwebhook.metallb.io',
  },
];

/**
 * The stored kinds MetalLB's webhook reads before it decides on `req` (its `getExisting*`
 * calls), so that a server fetches exactly those: nothing for a `delete` but a BFDProfile's (the
 * BGPPeers naming it), nor for a BGPPeer `create` with `disableMP` or any `create` outside
 * MetalLB's namespace (answered before reading), nor for BFDProfile `create`/`update`. `Node`
 * means every Node of the cluster, the other kinds MetalLB's namespace only.
 */
export function storedKindsFor(req: Pick<AdmissionRequest, 'metallbNamespace' | 'operation' | 'object'>): string[] {
  const kind = req.object.kind ?? '';
  if (req.operation === 'delete') return kind === 'BFDProfile' ? ['BGPPeer'] : [];
  if (req.operation === 'create') {
    const spec = (req.object as { spec?: Record<string, unknown> }).spec;
    if (kind === 'BGPPeer' && spec?.disableMP === true) return [];
    if (req.object.metadata?.namespace !== req.metallbNamespace) return [];
  }
  switch (kind) {
    case 'IPAddressPool':
      return ['IPAddressPool'];
    case 'Community':
      return ['Community'];
    case 'L2Advertisement':
      return ['L2Advertisement', 'IPAddressPool'];
    case 'BGPAdvertisement':
      return ['BGPAdvertisement', 'IPAddressPool', 'Node'];
    case 'BGPPeer':
      return ['BGPPeer', 'Node'];
    default:
      return [];
  }
}

// ------------------------------------------------------------------------------ BGPPeer conversion

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A `metav1.Duration` field as Go decodes and re-encodes it (`"90s"` → `"1m30s"`, absent → `"0s"`). */
function goDuration(value: unknown, field: string): string {
  if (value === undefined || value === null) return '0s';
  if (typeof value !== 'string') throw new Error(`spec.${field}: json: cannot unmarshal ${typeof value} into Go value of type string`);
  try {
    return formatDurationNs(parseDurationNs(value));
  } catch {
    throw new Error(`spec.${field}: time: invalid duration ${quote(value)}`);
  }
}

/** Copies the listed fields, leaving out Go's omitempty zero values ("" / 0 / false). */
function omitEmpty(src: Json, fields: readonly string[]): Json {
  const out: Json = {};
  for (const f of fields) {
    const v = src[f];
    if (v === undefined || v === null || v === '' || v === 0 || v === false) continue;
    out[f] = v;
  }
  return out;
}

/** v1beta1 NodeSelector → metav1.LabelSelector (MetalLB `parseNodeSelector`). */
function v1beta1SelectorToLabelSelector(sel: unknown): Json {
  const s = isObject(sel) ? sel : {};
  const labels = isObject(s.matchLabels) ? s.matchLabels : {};
  const exprs = Array.isArray(s.matchExpressions) ? s.matchExpressions : [];
  if (Object.keys(labels).length + exprs.length === 0) return {};
  const out: Json = {};
  // make(map) then copied: an empty map is omitted by omitempty
  if (Object.keys(labels).length > 0) out.matchLabels = { ...labels };
  if (exprs.length > 0) {
    out.matchExpressions = exprs.map((e) => {
      const x = isObject(e) ? e : {};
      const values = Array.isArray(x.values) ? [...x.values] : [];
      return { key: x.key ?? '', operator: x.operator ?? '', ...(values.length > 0 ? { values } : {}) };
    });
  }
  return out;
}

/** metav1.LabelSelector → v1beta1 NodeSelector (MetalLB `labelsToLegacySelector`). */
function labelSelectorToV1beta1(sel: unknown): Json {
  const s = isObject(sel) ? sel : {};
  const labels = isObject(s.matchLabels) ? s.matchLabels : {};
  const exprs = Array.isArray(s.matchExpressions) ? s.matchExpressions : [];
  const out: Json = {};
  if (Object.keys(labels).length > 0) out.matchLabels = { ...labels };
  if (exprs.length > 0) {
    out.matchExpressions = exprs.map((e) => {
      const x = isObject(e) ? e : {};
      return { key: x.key ?? '', operator: x.operator ?? '', values: Array.isArray(x.values) ? [...x.values] : [] };
    });
  }
  return out;
}

/**
 * MetalLB's BGPPeer conversion webhook (`/convert`, `api/v1beta1/bgppeer_conversion.go`, v1beta2
 * the hub) for one object: v1beta1 → v1beta2 (`ConvertTo`) or v1beta2 → v1beta1
 * (`ConvertFrom`), with the shape Go's JSON encoding of the typed result gives: durations
 * re-encoded (`"90s"` → `"1m30s"`; v1beta1 → v1beta2 always carries `holdTime` and
 * `keepaliveTime`, `"0s"` when unset, and an empty `passwordSecret`), zero values left out as
 * `omitempty` does, fields the target version lacks dropped (v1beta2's `vrf`, `passwordSecret`,
 * `interface`, `dynamicASN`, … are lost on the way to v1beta1, as in MetalLB), metadata kept,
 * `status: {}`.
 * @throws Error when the object is no BGPPeer, the versions are not v1beta1 ↔ v1beta2, or a
 *   duration does not parse (the conversion's Failure message).
 */
export function convertBGPPeer(obj: KubeObject, desiredAPIVersion: string): KubeObject {
  if (obj.kind !== 'BGPPeer') throw new Error(`${obj.kind ?? '<no kind>'} is not convertible: only BGPPeer has a conversion webhook`);
  const from = obj.apiVersion ?? '';
  const versions = ['metallb.io/v1beta1', 'metallb.io/v1beta2'];
  if (!versions.includes(from)) throw new Error(`unsupported source version ${JSON.stringify(from)} of BGPPeer`);
  if (!versions.includes(desiredAPIVersion)) throw new Error(`unsupported target version ${JSON.stringify(desiredAPIVersion)} of BGPPeer`);
  if (from === desiredAPIVersion) throw new Error(`conversion is not allowed between same type ${from} BGPPeer`);
  const src = isObject(obj.spec) ? obj.spec : {};
  let spec: Json;
  if (desiredAPIVersion === 'metallb.io/v1beta2') {
    const selectors = Array.isArray(src.nodeSelectors) ? src.nodeSelectors.map(v1beta1SelectorToLabelSelector) : [];
    spec = {
      myASN: src.myASN ?? 0,
      ...omitEmpty(src, ['peerASN', 'peerAddress', 'sourceAddress', 'peerPort']),
      holdTime: goDuration(src.holdTime, 'holdTime'),
      keepaliveTime: goDuration(src.keepaliveTime, 'keepaliveTime'),
      ...omitEmpty(src, ['routerID']),
      ...(selectors.length > 0 ? { nodeSelectors: selectors } : {}),
      ...omitEmpty(src, ['password']),
      passwordSecret: {},
      ...omitEmpty(src, ['bfdProfile', 'ebgpMultiHop']),
    };
  } else {
    const selectors = Array.isArray(src.nodeSelectors) ? src.nodeSelectors.map(labelSelectorToV1beta1) : [];
    spec = {
      myASN: src.myASN ?? 0,
      peerASN: src.peerASN ?? 0,
      peerAddress: src.peerAddress ?? '',
      ...omitEmpty(src, ['sourceAddress', 'peerPort']),
      holdTime: goDuration(src.holdTime, 'holdTime'),
      keepaliveTime: goDuration(src.keepaliveTime, 'keepaliveTime'),
      ...omitEmpty(src, ['routerID']),
      ...(selectors.length > 0 ? { nodeSelectors: selectors } : {}),
      ...omitEmpty(src, ['password', 'bfdProfile', 'ebgpMultiHop']),
    };
  }
  return { apiVersion: desiredAPIVersion, kind: 'BGPPeer', metadata: obj.metadata ?? {}, spec, status: {} };
}
