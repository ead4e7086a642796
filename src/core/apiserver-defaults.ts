/**
 * What the API server sets on a new Service that a manifest leaves out and MetalLB reads: its
 * address families (`spec.ipFamilyPolicy`, `spec.ipFamilies`) and its cluster IPs, from which
 * MetalLB's controller takes the family (issue #12 item 6). A manifest of a Service not created yet
 * has none, and MetalLB would clear it ("No ClusterIPs"); `allocate --dry-run` defaults it as the
 * API server would instead, and says so. Pure.
 */
import { formatIP, parseIP, type IPFamily } from './ip.ts';
import type { Service } from './kube.ts';

/** How one Service was defaulted (or why the API server would refuse it). */
export interface DefaultedService {
  /** `namespace/name`. */
  readonly service: string;
  readonly ipFamilyPolicy: string;
  readonly ipFamilies: readonly string[];
  /**
   * Stand-ins for the cluster IPs the API server would allocate, one per family (MetalLB reads only
   * their family): addresses of the cluster's Service range the snapshot shows.
   */
  readonly clusterIPs: readonly string[];
  /** Where the cluster's Service families come from, in words. */
  readonly basis: string;
  /** Set when the API server would refuse to create the Service (it is then left as written). */
  readonly refused?: string;
}

const FAMILY_NAME: Record<IPFamily, string> = { ipv4: 'IPv4', ipv6: 'IPv6' };
const NAME_FAMILY: Record<string, IPFamily> = { IPv4: 'ipv4', IPv6: 'ipv6' };
const FALLBACK: Record<IPFamily, string> = { ipv4: '10.96.0.1', ipv6: 'fd00:10:96::1' };

/** The cluster's Service families as the snapshot shows them: primary first, and a known address of each. */
export interface ServiceNetwork {
  readonly families: readonly IPFamily[];
  readonly sample: Readonly<Partial<Record<IPFamily, string>>>;
  readonly basis: string;
}

/**
 * The cluster's Service families: the primary is the family of the kubernetes Service's cluster IP
 * (default/kubernetes, the first address of the primary Service range), else of most Services'
 * first cluster IP, else IPv4 (the API server's single-stack default); the cluster is dual-stack
 * when some Service has cluster IPs of both families.
 */
export function serviceNetwork(services: readonly Service[]): ServiceNetwork {
  const sample: Partial<Record<IPFamily, string>> = {};
  const firsts: Record<IPFamily, number> = { ipv4: 0, ipv6: 0 };
  let dual = false;
  for (const s of services) {
    const ips = (s.spec?.clusterIPs ?? (s.spec?.clusterIP ? [s.spec.clusterIP] : [])).map((x) => parseIP(x)).filter((x) => x !== undefined);
    if (ips.length === 0) continue;
    firsts[ips[0]!.family]++;
    if (new Set(ips.map((x) => x.family)).size === 2) dual = true;
    for (const ip of ips) sample[ip.family] ??= formatIP(ip);
  }
  const kube = services.find((s) => s.metadata?.name === 'kubernetes' && (s.metadata?.namespace ?? 'default') === 'default');
  const kubeIP = parseIP(kube?.spec?.clusterIPs?.[0] ?? kube?.spec?.clusterIP ?? '');
  let primary: IPFamily;
  let basis: string;
  if (kubeIP) {
    primary = kubeIP.family;
    sample[primary] = formatIP(kubeIP);
    basis = `the kubernetes Service's cluster IP ${formatIP(kubeIP)}`;
  } else if (firsts.ipv4 + firsts.ipv6 > 0) {
    primary = firsts.ipv6 > firsts.ipv4 ? 'ipv6' : 'ipv4';
    basis = `the cluster IPs of ${firsts.ipv4 + firsts.ipv6} Service${firsts.ipv4 + firsts.ipv6 === 1 ? '' : 's'} of the snapshot`;
  } else {
    primary = 'ipv4';
    basis = "no cluster IP in the snapshot: the API server's single-stack IPv4 default";
  }
  const other: IPFamily = primary === 'ipv4' ? 'ipv6' : 'ipv4';
  const families = dual ? [primary, other] : [primary];
  return { families, sample, basis: dual ? `${basis}; dual-stack (a Service has cluster IPs of both families)` : `${basis}; single-stack` };
}

/**
 * The Services with the API server's defaults where a manifest has no spec.clusterIP/clusterIPs
 * (LoadBalancer Services only; others are left as written): ipFamilyPolicy SingleStack when unset;
 * ipFamilies from it and the cluster's families (SingleStack: the primary; PreferDualStack: both
 * when the cluster is dual-stack; RequireDualStack: both, refused on a single-stack cluster); written
 * ipFamilies are kept (a SingleStack Service keeps the first);
 * stand-in cluster IPs of those families. `defaulted` lists what was set, in Service order.
 */
export function withAPIServerDefaults(services: readonly Service[]): { services: Service[]; defaulted: DefaultedService[] } {
  const net = serviceNetwork(services);
  const defaulted: DefaultedService[] = [];
  const out = services.map((svc): Service => {
    const spec = svc.spec;
    if (spec?.type !== 'LoadBalancer' || spec.clusterIP || (spec.clusterIPs ?? []).length > 0) return svc;
    const key = `${svc.metadata?.namespace ?? 'default'}/${svc.metadata?.name ?? ''}`;
    const written = (spec.ipFamilies ?? []).map((f) => NAME_FAMILY[f]).filter((f): f is IPFamily => f !== undefined);
    const policy = spec.ipFamilyPolicy || (written.length === 2 ? '' : 'SingleStack');
    let refused: string | undefined;
    let families: IPFamily[];
    if (policy === '') {
      refused = 'spec.ipFamilies lists two families but spec.ipFamilyPolicy is unset (the API server requires PreferDualStack or RequireDualStack then)';
      families = [];
    } else if (written.length > 0) {
      families = policy === 'SingleStack' ? written.slice(0, 1) : written;
      if (written.length === 2 && policy === 'SingleStack') refused = 'spec.ipFamilies lists two families with ipFamilyPolicy SingleStack';
      if (policy !== 'SingleStack' && written.length === 1 && net.families.length === 2) families = [written[0]!, ...net.families.filter((f) => f !== written[0])];
    } else {
      families = policy === 'SingleStack' ? net.families.slice(0, 1) : [...net.families];
    }
    if (!refused && policy === 'RequireDualStack' && families.length < 2) refused = `ipFamilyPolicy RequireDualStack on a cluster that is single-stack as far as the snapshot shows (${net.basis})`;
    const ipFamilies = families.map((f) => FAMILY_NAME[f]);
    const clusterIPs = families.map((f) => net.sample[f] ?? FALLBACK[f]);
    defaulted.push({ service: key, ipFamilyPolicy: policy || '(unset)', ipFamilies, clusterIPs, basis: net.basis, ...(refused ? { refused } : {}) });
    if (refused) return svc;
    return { ...svc, spec: { ...spec, ipFamilyPolicy: policy, ipFamilies, clusterIP: clusterIPs[0], clusterIPs } };
  });
  return { services: out, defaulted };
}
