/**
 * `whois IP`: who holds an address — the Service(s) with it in their status (several when shared
 * with `metallb.io/allow-shared-ip`), the pool it belongs to, the Layer 2 winner or the BGP nodes,
 * and what ServiceL2Status objects say (node, interfaces). Built from explainService, so it can
 * never disagree with `explain` or the speaker.
 */
import type { Config } from '../config/types.ts';
import { cidrContains, formatIP, parseIP } from '../ip.ts';
import { namespacedName, type ClusterState, type KubeObject } from '../kube.ts';
import { UserError } from '../errors.ts';
import { statusIPs } from '../controller/service.ts';
import type { AllocateAllResult } from '../controller/index.ts';
import type { ElectionIndex } from '../election/index.ts';
import { explainService, type Explanation, type SpeakersSource } from './explain.ts';

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
}

/** Result of whoisIP. */
export interface WhoisResult {
  /** The address, canonical. */
  readonly ip: string;
  /** The configured pool containing the address, or null. */
  readonly pool: string | null;
  /** Services holding the address in their status, by `namespace/name`. */
  readonly holders: readonly WhoisHolder[];
}

/** Input of whoisIP. */
export interface WhoisInput {
  readonly state: ClusterState;
  readonly config: Config;
  readonly ip: string;
  readonly speakers: readonly string[] | null;
  readonly speakersSource: SpeakersSource;
  readonly ignoreExcludeLB: boolean;
  readonly dryRun?: AllocateAllResult;
  readonly index?: ElectionIndex;
  readonly loadBalancerClass?: string;
  readonly ignoredObjects?: readonly KubeObject[];
  readonly configRejected?: { readonly message: string } | null;
}

/**
 * Answers `whois`. Throws UserError (exit 2) when `ip` is not an IP address. An address nobody
 * holds gives `holders: []` (the pool is still reported).
 */
export function whoisIP(input: WhoisInput): WhoisResult {
  const ip = parseIP(input.ip);
  if (!ip) throw new UserError(`"${input.ip}" is not an IP address`);
  const canonical = formatIP(ip);
  let pool: string | null = null;
  for (const p of input.config.pools.values()) {
    if (p.cidrs.some((c) => cidrContains(c, ip))) {
      pool = p.name;
      break;
    }
  }
  const holders: WhoisHolder[] = [];
  for (const svc of input.state.services) {
    // Compare canonical forms (Go's ParseIP + String), as the speaker does: `2001:DB8::1` is `2001:db8::1`.
    if (!statusIPs(svc).some((s) => { const p = parseIP(s); return p !== undefined && formatIP(p) === canonical; })) continue;
    const e = explainService({ ...input, service: svc });
    holders.push({
      service: namespacedName(svc), ips: e.allocation.ips, pool: e.allocation.pool ?? e.l2.pool, mode: e.mode,
      announcer: e.announcer, bgpAnnouncers: e.bgpAnnouncers, l2Status: e.l2Status,
      problems: e.findings.filter((f) => f.severity === 'error').map((f) => f.message),
    });
  }
  holders.sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
  return { ip: canonical, pool, holders };
}
