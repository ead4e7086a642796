/**
 * MetalLB v0.16.1's admission webhooks (internal/k8s/webhooks/webhookv1beta1, webhookv1beta2)
 * as a pure function: the decision for one admission request, given the stored objects.
 */
import { ConfigError } from '../errors.ts';
import type { KubeObject } from '../kube.ts';
import { clusterStateFromObjects } from '../kube.ts';
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
