/**
 * `frrk8s.metallb.io/v1beta1 FRRConfiguration` (frr-k8s v0.0.25, the version MetalLB v0.16.1
 * requires) in the JSON form MetalLB's speaker sends it: Go's `omitempty` applied, so absent
 * means empty/false/zero, while empty structs stay (`raw: {}`, `passwordSecret: {}`,
 * `toReceive: {allowed: {}}`). The apiserver adds the CRD's defaults when it stores one
 * (`toAdvertise.allowed.mode: filtered`, ...); `specsEqual` compares modulo those.
 */
import type { KubeObject, LabelSelector } from '../kube.ts';

export const FRRK8S_API_VERSION = 'frrk8s.metallb.io/v1beta1';
export const FRR_CONFIGURATION_KIND = 'FRRConfiguration';

/** `spec.bgp.routers[].neighbors[]`. */
export interface FRRNeighbor {
  asn?: number;
  /** `internal` | `external` */
  dynamicASN?: string;
  address?: string;
  interface?: string;
  /** always present (MetalLB passes a pointer to the BGPPeer's port) */
  port: number;
  password?: string;
  /** always present, `{}` when unset */
  passwordSecret: { name?: string; namespace?: string };
  /** Go duration strings (`1m30s`) */
  holdTime?: string;
  keepaliveTime?: string;
  connectTime?: string;
  ebgpMultiHop?: boolean;
  bfdProfile?: string;
  enableGracefulRestart?: boolean;
  toAdvertise: {
    allowed: { prefixes?: string[]; mode?: string };
    withLocalPref?: Array<{ localPref: number; prefixes: string[] }>;
    withCommunity?: Array<{ community: string; prefixes: string[] }>;
  };
  toReceive: { allowed: { prefixes?: unknown[]; mode?: string } };
  disableMP?: boolean;
  dualStackAddressFamily?: boolean;
}

/** `spec.bgp.routers[]`. */
export interface FRRRouter {
  asn: number;
  id?: string;
  vrf?: string;
  neighbors?: FRRNeighbor[];
  prefixes?: string[];
}

/** `spec.bgp.bfdProfiles[]`; intervals in milliseconds. */
export interface FRRBFDProfile {
  name: string;
  receiveInterval?: number;
  transmitInterval?: number;
  detectMultiplier?: number;
  echoInterval?: number;
  /** always present */
  echoMode: boolean;
  /** always present */
  passiveMode: boolean;
  minimumTtl?: number;
}

/** `spec` of an FRRConfiguration. */
export interface FRRConfigurationSpec {
  bgp: { routers?: FRRRouter[]; bfdProfiles?: FRRBFDProfile[] };
  raw: { priority?: number; rawConfig?: string };
  nodeSelector: LabelSelector;
}

/** The object MetalLB's speaker writes (`metallb-<node>` in the frr-k8s namespace). */
export interface FRRConfiguration extends KubeObject {
  apiVersion: typeof FRRK8S_API_VERSION;
  kind: typeof FRR_CONFIGURATION_KIND;
  metadata: { name: string; namespace: string; [extra: string]: unknown };
  spec: FRRConfigurationSpec;
}
