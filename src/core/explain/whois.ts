/**
 * `whois IP`: who holds an address — the Service(s) with it in their status (several when shared
 * with `metallb.io/allow-shared-ip`), the pool it belongs to, the Layer 2 winner or the BGP nodes
 * with the prefix containing it per peer, and what ServiceL2Status objects say (node,
 * interfaces). Built from explainService, so it can never disagree with `explain` or the speaker.
 */
import { cidrContains, formatIP, parseIP } from '../ip.ts';
import { namespacedName } from '../kube.ts';
import { EXIT_NO, EXIT_OK, UserError } from '../errors.ts';
import { statusIPs } from '../controller/service.ts';
import { viewForIP, type BGPNodeView } from './bgp.ts';
import { explainService, type ExplainInput, type Explanation } from './explain.ts';
import { externalIPsOf } from './inputs.ts';

/** The findings of hazards.ts: whois repeats them as warnings, they concern the address itself. */
const HAZARD_IDS = new Set(['pool-contains-node-address', 'pool-overlaps-pod-cidr', 'pool-overlaps-service-cidr', 'l2-unintended-interfaces']);

/** One holder of the address. */
export interface WhoisHolder {
  /** `namespace/name`. */
  readonly service: string;
  /** Every address of the Service (the queried one among them). */
  readonly ips: readonly string[];
  readonly pool: string | null;
  /** `layer2`, `bgp`, `layer2+bgp` or `none`. */
  readonly mode: Explanation['mode'];
  /** Layer 2 winner, or null. */
  readonly announcer: string | null;
  readonly bgpAnnouncers: readonly string[];
  /** What ServiceL2Status objects of the Service say: node and interface names. */
  readonly l2Status: ReadonlyArray<{ readonly node: string; readonly interfaces: readonly string[] }>;
  /** Error findings of the Service's explanation (one line each). */
  readonly problems: readonly string[];
  /**
   * Warnings about where and how the address is answered (the dangerous configurations of
   * hazards.ts: a node's own address in the pool, overlaps with the Pod or Service range, ARP/NDP
   * answered on wireless, VPN or overlay interfaces), with their fixes.
   */
  readonly warnings: ReadonlyArray<{ readonly id: string; readonly message: string; readonly fix: string }>;
  /**
   * Over BGP (null when the pool has no BGPAdvertisement): every node's decision and, per peer,
   * the prefixes containing the address it gets (or why none), as in `explain`'s `bgp`.
   */
  readonly bgp: { readonly peers: readonly string[]; readonly nodes: readonly BGPNodeView[] } | null;
}

/** Result of whoisIP. */
export interface WhoisResult {
  /** The address, canonical. */
  readonly ip: string;
  /** The configured pool containing the address, or null. */
  readonly pool: string | null;
  /** Services holding the address in their status, by `namespace/name`. */
  readonly holders: readonly WhoisHolder[];
  /**
   * Services listing the address in `spec.externalIPs`, by `namespace/name`, with their type and
   * what that means: MetalLB neither allocates nor announces external IPs.
   */
  readonly externalIPs: ReadonlyArray<{ readonly service: string; readonly type: string; readonly note: string }>;
}

/** Input of whoisIP: a DiagnosticContext (ExplainInput without the Service) and the address. */
export interface WhoisInput extends Omit<ExplainInput, 'service'> {
  readonly ip: string;
}

/**
 * Answers `whois`. Throws UserError (exit 2) when `ip` is not an IP address. An address nobody
 * holds gives `holders: []` (the pool is still reported); Services listing it in
 * `spec.externalIPs` are reported apart (`externalIPs`): MetalLB does not handle those.
 */
export function whoisIP(input: WhoisInput): WhoisResult {
  const ip = parseIP(input.ip);
  if (!ip) throw new UserError(`"${input.ip}" is not an IP address`);
  const canonical = formatIP(ip);
  let pool: string | null = null;
  for (const p of input.controllerConfig.pools.values()) {
    if (p.cidrs.some((c) => cidrContains(c, ip))) {
      pool = p.name;
      break;
    }
  }
  const holders: WhoisHolder[] = [];
  for (const svc of input.state.services) {
    // Compare canonical forms (Go's ParseIP + String), as the speaker does: `2001:DB8::1` is `2001:db8::1`.
    if (
      !statusIPs(svc).some((s) => {
        const p = parseIP(s);
        return p !== undefined && formatIP(p) === canonical;
      })
    )
      continue;
    const e = explainService({ ...input, service: svc });
    holders.push({
      service: namespacedName(svc),
      ips: e.allocation.ips,
      pool: e.allocation.pool ?? e.l2?.pool ?? e.bgp?.pool ?? null,
      mode: e.mode,
      announcer: e.announcer,
      bgpAnnouncers: e.bgpAnnouncers,
      l2Status: e.l2Status,
      problems: e.findings.filter((f) => f.severity === 'error').map((f) => f.message),
      warnings: e.findings.filter((f) => f.severity === 'warning' && HAZARD_IDS.has(f.id)).map((f) => ({ id: f.id, message: f.message, fix: f.fix })),
      bgp: e.bgp && (e.mode === 'bgp' || e.mode === 'layer2+bgp') ? { peers: e.bgp.peers, nodes: e.bgp.nodes.map((n) => viewForIP(n, ip)) } : null,
    });
  }
  holders.sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
  const externalIPs: Array<{ service: string; type: string; note: string }> = [];
  for (const svc of input.state.services) {
    if (
      !externalIPsOf(svc).some((s) => {
        const p = parseIP(s);
        return p !== undefined && formatIP(p) === canonical;
      })
    )
      continue;
    const type = svc.spec?.type ?? 'ClusterIP';
    externalIPs.push({
      service: namespacedName(svc),
      type,
      note:
        `MetalLB does not handle spec.externalIPs: it neither allocates nor announces ${canonical} for this Service (kube-proxy only forwards packets that already reach a node)`
        + (pool ? `; pool ${pool} contains it, so MetalLB may give it to a LoadBalancer Service too` : ''),
    });
  }
  externalIPs.sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
  return { ip: canonical, pool, holders, externalIPs };
}

/** Exit status of `whois`: 0 when some Service holding the address is announced, else 1. */
export function whoisExitCode(w: WhoisResult): number {
  return w.holders.some((h) => h.announcer !== null || h.bgpAnnouncers.length > 0) ? EXIT_OK : EXIT_NO;
}
