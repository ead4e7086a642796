/**
 * What the API server stores, as the controller loop compares it: resource versions (whether the
 * watch caught up with a write) and whether a write would store anything new.
 */
import type { KubeObject, Service } from '../core/kube.ts';
import { rvNumber } from './pool-status.ts';

/** Whether `seen` is the version `written` or a later one. */
export function caughtUp(seen: KubeObject, written: KubeObject): boolean {
  const a = rvNumber(seen);
  const b = rvNumber(written);
  if (a === null || b === null) return true; // opaque versions: trust the watch
  return a >= b;
}

/**
 * Whether writing `desired` over `current` would store nothing new: the same annotations, and the
 * same status once the API server's defaulting of `ipMode: VIP` (Kubernetes >= 1.30) is applied to
 * ingress entries the core writes without one. MetalLB writes in that case too (a no-op
 * UpdateStatus per Service per pass); the loop skips the request. The decision is the core's.
 */
export function storesSame(current: Service, desired: Service): boolean {
  const a = current.metadata?.annotations ?? {};
  const b = desired.metadata?.annotations ?? {};
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length || ka.some((k) => !Object.hasOwn(b, k) || a[k] !== b[k])) return false;
  const cur = current.status?.loadBalancer?.ingress ?? [];
  const want = desired.status?.loadBalancer?.ingress ?? [];
  if (cur.length !== want.length) return false;
  const defaulted = want.map((w, i) => (w.ip && w.ipMode === undefined && cur[i]?.ipMode === 'VIP' ? { ...w, ipMode: 'VIP' } : w));
  const rest = (st: Service['status']): string => JSON.stringify({ ...(st ?? {}), loadBalancer: { ...(st?.loadBalancer ?? {}), ingress: null } });
  return JSON.stringify(cur) === JSON.stringify(defaulted) && rest(current.status) === rest(desired.status);
}
