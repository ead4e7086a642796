/**
 * BGP sessions of one speaker (MetalLB v0.16.1 `speaker/bgp_controller.go` syncPeers and
 * passwordForSession; `internal/bgp/frrk8s/frrk8s.go` sessionName): which BGPPeers run on the
 * node, under which key frr-k8s mode files them, and how their password is passed on.
 */
import type { Config, Peer } from '../config/types.ts';

/**
 * How a BGPPeer's `passwordSecret` reaches frr-k8s (MetalLB `SecretHandling`): `passThrough` when
 * frr-k8s runs in the speaker's namespace (the Secret reference is copied), `convert` when it runs
 * elsewhere (the password read from the Secret is written in clear text).
 */
export type SecretHandling = 'passThrough' | 'convert';

/** MetalLB newController: `convert` when the frr-k8s namespace differs from the speaker's. */
export function secretHandlingFor(namespace: string, frrk8sNamespace: string): SecretHandling {
  return namespace === frrk8sNamespace ? 'passThrough' : 'convert';
}

/**
 * The peers with a session on the node (syncPeers: no nodeSelectors, or one matching the node's
 * labels), in configuration order.
 */
export function bgpSessions(config: Config, nodeLabels: Readonly<Record<string, string>> | undefined): Peer[] {
  const labels = nodeLabels ?? {};
  return [...config.peers.values()].filter((p) => p.nodeSelectors.length === 0 || p.nodeSelectors.some((s) => s.matches(labels)));
}

/** Go's `%s` of a nil `net.IP`. */
const NIL = '<nil>';

/**
 * MetalLB's frr-k8s session key (`sessionName`):
 * `<peerASN or dynamicASN>@<address or interface>-<myASN>@<sourceAddress or <nil>>[/<vrf>]`.
 * Two peers with the same key are one neighbor in the FRRConfiguration (the later one wins).
 */
export function sessionKey(p: Peer): string {
  const asn = p.dynamicASN !== '' ? p.dynamicASN : String(p.asn);
  const peer = p.interface ? p.interface : (p.address ?? '');
  const base = `${asn}@${peer}-${p.myASN}@${p.sourceAddress ?? NIL}`;
  return p.vrf === '' ? base : `${base}/${p.vrf}`;
}

/** MetalLB's router key (`frr.RouterName`): `<myASN>@<routerID or <nil>>@<vrf>`. */
export function routerKey(p: Peer): string {
  return `${p.myASN}@${p.routerID ?? NIL}@${p.vrf}`;
}

/**
 * The password fields a session gets (MetalLB `passwordForSession`, frr-k8s mode): with
 * `passThrough`, the clear-text `password` and the `passwordSecret` reference as written; with
 * `convert`, the clear-text password or the one read from the Secret, and no reference.
 */
export function sessionPassword(p: Peer, handling: SecretHandling): { password: string; passwordSecret: { name?: string; namespace?: string } } {
  if (handling === 'passThrough') {
    const ref = p.passwordSecret ?? {};
    return { password: p.password, passwordSecret: { ...(ref.name ? { name: ref.name } : {}), ...(ref.namespace ? { namespace: ref.namespace } : {}) } };
  }
  return { password: p.secretPassword !== '' ? p.secretPassword : p.password, passwordSecret: {} };
}
