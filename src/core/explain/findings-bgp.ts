/**
 * BGP findings of `explain`: sessions, peers lists, address families, LOCAL_PREF conflicts and
 * the configuration traps touching the Service's pool (see bgpFindings).
 */
import { compatibleLocalPref } from '../config/parse.ts';
import type { BGPAdv, Pool } from '../config/types.ts';
import { reachesRouter } from './bgp.ts';
import { bgpTraps, clashWhy } from './bgp-traps.ts';
import type { Finding } from './types.ts';
import { list, type FindingsInput } from './findings-input.ts';

/**
 * BGP findings for the Service: nodes that decide to announce but reach no router (no session,
 * `bgp-no-peer-session`; every prefix of a family filtered by the neighbors' address family,
 * `bgp-family-filtered`), LOCAL_PREF conflicts (`bgp-localpref-conflict`, naming both
 * advertisements and why they clash), and the configuration traps (bgp-traps.ts) touching the
 * Service's pool.
 */
export function bgpFindings(f: FindingsInput, out: Finding[]): void {
  if (!f.bgp || (f.mode !== 'bgp' && f.mode !== 'layer2+bgp')) return;
  if (f.bgp.serviceReason) return;
  const poolName = f.bgp.pool;
  const announcing = f.bgp.nodes.filter((n) => n.decision === 'announce');
  const reached = announcing.filter(reachesRouter);
  const blocking = (): 'error' | 'warning' => (reached.length === 0 && f.announcer === null ? 'error' : 'warning');
  const peerCRs = f.state.bgpPeers.filter((p) => !p.metadata?.namespace || p.metadata.namespace === f.metallbNamespace);

  const decided = f.bgp.nodes.filter((n) => n.decision !== 'configRejected');
  if (f.mode === 'bgp' && decided.length > 0 && decided.every((n) => n.decision === 'noMatchingAdvertisement')) {
    const names = [...new Set(f.speakerConfigs.accepted.flatMap((g) => (g.result.ok && poolName ? (g.result.config.pools.get(poolName)?.bgpAdvertisements ?? []) : []).map((a) => a.name)))].sort();
    out.push({
      id: 'no-advertisement',
      severity: 'error',
      message: `none of pool ${poolName}'s BGPAdvertisements (${list(names)}) selects this Service by its serviceSelectors`,
      fix: 'add the labels the serviceSelectors expect to the Service, or widen the serviceSelectors',
    });
  }
  const failing = f.bgp.nodes.filter((n) => n.decision === 'syncError');
  if (failing.length > 0) {
    const names = failing.map((n) => n.node);
    const l2Lost = f.hashWinner !== null && names.includes(f.hashWinner) && f.mode !== 'bgp';
    out.push({
      id: 'bgp-too-many-communities',
      severity: f.announcer === null && reached.length === 0 ? 'error' : 'warning',
      message: `on ${list(names)}: ${failing[0]!.detail}` + (l2Lost ? `; ${f.hashWinner} wins the layer2 election, so nobody announces the Service over layer2` : ''),
      fix: 'keep each BGPAdvertisement that applies to the Service to at most 63 communities (split them across advertisements with different peers, or drop some)',
    });
  }
  const sessionless = announcing.filter((n) => n.peers.every((p) => !p.session)).map((n) => n.node);
  if (sessionless.length > 0) {
    out.push({
      id: 'bgp-no-peer-session',
      severity: blocking(),
      message:
        peerCRs.length === 0
          ? 'the pool has BGPAdvertisements but no BGPPeer is configured: no router learns the route'
          : `${list(sessionless)} would advertise the Service but ${sessionless.length === 1 ? 'has' : 'have'} no BGP session (no BGPPeer's nodeSelectors select ${sessionless.length === 1 ? 'it' : 'them'})`,
      fix: peerCRs.length === 0 ? 'create a BGPPeer for your router' : "make a BGPPeer's nodeSelectors select these nodes (or drop them), or restrict the BGPAdvertisement's nodeSelectors to nodes that peer",
    });
  }

  // A family of the Service's addresses that reaches no router anywhere, though the advertisements send it to peers.
  for (const fam of ['ipv4', 'ipv6'] as const) {
    const isFam = (prefix: string): boolean => prefix.includes(':') === (fam === 'ipv6');
    let sent = false;
    let delivered = false;
    const blockedPeers = new Set<string>();
    for (const n of announcing) {
      for (const p of n.peers) {
        if (p.prefixes.some((x) => isFam(x.prefix))) delivered = true;
        if (p.filtered.some(isFam)) {
          sent = true;
          blockedPeers.add(p.peer);
        }
      }
    }
    if (!sent || delivered) continue;
    const famName = fam === 'ipv4' ? 'IPv4' : 'IPv6';
    const other = fam === 'ipv4' ? 'IPv6' : 'IPv4';
    const ips = f.allocation.ips.filter((ip) => ip.includes(':') === (fam === 'ipv6'));
    const peers = [...blockedPeers].sort();
    out.push({
      id: 'bgp-family-filtered',
      severity: f.mode === 'bgp' ? 'error' : 'warning',
      message: `${list(ips)} (${famName}) reaches no router: the BGP peers it is sent to (${list(peers)}) are ${other} neighbors without dualStackAddressFamily, and the speakers' FRRConfiguration sends them ${other} prefixes only`,
      fix: `set spec.dualStackAddressFamily: true on BGPPeer ${list(peers)}, or add an ${famName} BGPPeer`,
    });
  }

  // LOCAL_PREF conflicts: which two advertisements, and why they clash.
  const conflicts = new Map<string, { nodes: string[]; a: BGPAdv; b: BGPAdv; pool: Pool }>();
  const labels = f.serviceObject.metadata?.labels ?? {};
  for (const n of f.bgp.nodes) {
    if (n.decision !== 'conflictingAdvertisements') continue;
    const g = f.speakerConfigs.byNode.get(n.node);
    const pool = g?.result.ok && poolName ? g.result.config.pools.get(poolName) : undefined;
    if (!pool) continue;
    const ads = pool.bgpAdvertisements.filter((ad) => ad.nodes.has(n.node) && (ad.serviceSelectors.length === 0 || ad.serviceSelectors.some((sel) => sel.matches(labels))));
    let pair: [BGPAdv, BGPAdv] | null = null;
    for (let i = 0; i < ads.length && !pair; i++) {
      for (let j = i + 1; j < ads.length && !pair; j++) if (!compatibleLocalPref(ads[i]!, ads[j]!, pool)) pair = [ads[i]!, ads[j]!];
    }
    if (!pair) continue;
    const k = `${pair[0].name}\u0000${pair[1].name}`;
    const c = conflicts.get(k) ?? { nodes: [], a: pair[0], b: pair[1], pool };
    c.nodes.push(n.node);
    conflicts.set(k, c);
  }
  for (const { nodes, a, b, pool } of conflicts.values()) {
    out.push({
      id: 'bgp-localpref-conflict',
      severity: blocking(),
      message: `BGPAdvertisements ${a.name} and ${b.name} both apply to this Service on ${list(nodes)} and set different LOCAL_PREF (${a.localPref} vs ${b.localPref}) for the same prefixes: ${clashWhy(a, b, pool)}; MetalLB's speakers there announce the Service to nobody (conflictingAdvertisements)`,
      fix: `give BGPAdvertisements ${a.name} and ${b.name} the same spec.localPref, or keep them apart: different aggregationLength, disjoint spec.peers, disjoint nodeSelectors, or serviceSelectors that do not both select this Service`,
    });
  }

  // Configuration traps that touch this Service's pool.
  const trapped = new Set<string>();
  if (poolName) {
    for (const t of bgpTraps(f.state, f.speakerConfigs)) {
      if (!t.pools.includes(poolName)) continue;
      if (t.id !== 'bgp-advertisement-unknown-peer' && t.id !== 'bgp-advertisement-peer-no-session' && t.id !== 'bgppeer-selects-no-node') continue;
      out.push({ id: t.id, severity: 'warning', message: `${t.object}: ${t.message}`, fix: t.fix });
      trapped.add(t.object);
    }
  }

  // Nodes with sessions where the applicable advertisements' spec.peers leave every session out.
  const excluded = announcing.filter((n) => !reachesRouter(n) && n.peers.some((p) => p.session) && n.undelivered.length > 0 && n.peers.filter((p) => p.session).every((p) => p.outcome === 'peersList'));
  const ads = [...new Set(excluded.flatMap((n) => n.undelivered.map((u) => u.advertisement)))].sort();
  const adRefs = ads.map((a) => `${f.metallbNamespace}/BGPAdvertisement/${a}`);
  if (excluded.length > 0 && !adRefs.some((r) => trapped.has(r))) {
    const named = [...new Set(excluded.flatMap((n) => n.undelivered.flatMap((u) => u.specPeers)))].sort();
    const sessions = [...new Set(excluded.flatMap((n) => n.peers.filter((p) => p.session).map((p) => p.peer)))].sort();
    out.push({
      id: 'bgp-advertisement-peer-no-session',
      severity: blocking(),
      message: `${list(excluded.map((n) => n.node))} would advertise the Service, but BGPAdvertisement${ads.length === 1 ? '' : 's'} ${list(ads)} send${ads.length === 1 ? 's' : ''} only to ${list(named)}, which ${named.length === 1 ? 'has' : 'have'} no session there: ${list(sessions)} get${sessions.length === 1 ? 's' : ''} nothing`,
      fix: `add ${list(sessions)} to spec.peers of BGPAdvertisement ${list(ads)}, or make the nodeSelectors of BGPPeer ${list(named)} select these nodes`,
    });
  }
}
