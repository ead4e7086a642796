/**
 * Sharing-key compatibility (MetalLB's `sharingOK` and `checkSharing`): whether a service may
 * use an address other services already hold, given the sharing and backend keys recorded on it
 * and the ports each holder uses.
 */
import { formatIP } from '../ip.ts';
import { ipOf16 } from './addr16.ts';
import type { AllocRequest, Port, SharingConflict } from './types.ts';

/** The sharing and backend keys of an allocation ("" when the service sets none). */
export interface Keys {
  readonly sharing: string;
  readonly backend: string;
}

/** What is recorded on one address. */
export interface AddrState {
  /** Recorded keys (null once dropped). */
  keys: Keys | null;
  /** port key -> service key. */
  readonly ports: Map<string, string>;
  /** Services whose allocation contains the address. */
  readonly holders: Set<string>;
}

/** The keys a request asks for. */
export function keysOf(req: AllocRequest): Keys {
  return { sharing: req.sharingKey ?? '', backend: req.backendKey ?? '' };
}

/** An address's per-port key: port number and protocol. */
export function portKey(p: Port): string {
  return `${p.port}\u0000${p.protocol}`;
}

/** Identity of a pair of keys (the shared-address index is per pair). */
export function keysId(k: Keys): string {
  return `${k.sharing}\u0000${k.backend}`;
}

/** MetalLB's `sharingOK`: undefined when the keys allow sharing, else its message. */
function sharingProblem(existing: Keys, requested: Keys): string | undefined {
  if (existing.sharing === '') return 'existing service does not allow sharing';
  if (requested.sharing === '') return 'new service does not allow sharing';
  if (existing.sharing !== requested.sharing) {
    return `sharing key ${JSON.stringify(requested.sharing)} does not match existing sharing key ${JSON.stringify(existing.sharing)}`;
  }
  if (existing.backend !== requested.backend) {
    return `backend key ${JSON.stringify(requested.backend)} does not match existing sharing key ${JSON.stringify(existing.backend)}`;
  }
  return undefined;
}

/**
 * MetalLB's `checkSharing` on the state `st` recorded on `addr` (undefined: nothing recorded):
 * undefined when service `key` may use the address with these ports and keys, else the conflict
 * (the keys differ and another service holds it, or another service uses one of the ports).
 */
export function sharingConflict(st: AddrState | undefined, key: string, addr: bigint, ports: readonly Port[], keys: Keys): SharingConflict | undefined {
  if (!st?.keys) return undefined;
  const existing = { sharingKey: st.keys.sharing, backendKey: st.keys.backend };
  const requested = { sharingKey: keys.sharing, backendKey: keys.backend };
  const problem = sharingProblem(st.keys, keys);
  if (problem) {
    const others = [...st.holders].filter((s) => s !== key).sort();
    if (others.length > 0) {
      return { ip: formatIP(ipOf16(addr)), requestedBy: key, conflict: 'keys', services: others, existing, requested, keyProblem: problem };
    }
  }
  for (const p of ports) {
    const cur = st.ports.get(portKey(p));
    if (cur !== undefined && cur !== key) {
      return { ip: formatIP(ipOf16(addr)), requestedBy: key, conflict: 'port', services: [cur], existing, requested, port: `${p.protocol}/${p.port}` };
    }
  }
  return undefined;
}
