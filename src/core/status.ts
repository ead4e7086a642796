/**
 * What MetalLB v0.16.1's speaker status objects (ServiceL2Status, ServiceBGPStatus) share: the
 * labels that tie one to its node and Service, their API version, and the owner reference to the
 * speaker Pod (`internal/k8s/controllers/{layer2,bgp}_status_controller.go`).
 */

export const LABEL_ANNOUNCE_NODE = 'metallb.io/node';
export const LABEL_SERVICE_NAME = 'metallb.io/service-name';
export const LABEL_SERVICE_NAMESPACE = 'metallb.io/service-namespace';
/** apiVersion of ServiceL2Status and ServiceBGPStatus. */
export const METALLB_STATUS_API_VERSION = 'metallb.io/v1beta1';

/** An owner reference (the speaker Pod). */
export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** What to do for one service's status objects of one node (planL2Status / planBGPStatus). */
export interface StatusPlan<T, B> {
  /** names of the objects to delete */
  readonly deletes: readonly string[];
  /** an object to create (the API ignores `status` on create: `patch` writes it next), or null */
  readonly create: T | null;
  /** the status to write on `name` (`null` name: the object about to be created), or null when up to date */
  readonly patch: { readonly name: string | null; readonly status: B } | null;
}
