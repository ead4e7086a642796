/**
 * Which interfaces get an ARP and/or NDP responder, as MetalLB v0.16.1 announcer.go
 * updateInterfaces: skip names matching the exclusion regexp (the `metallb-excludel2` ConfigMap,
 * mounted at /etc/metallb/excludel2.yaml), interfaces that are down, enslaved to a master (bridge or
 * bond port: /sys/class/net/NAME/master exists) or NOARP; ARP where the interface can broadcast;
 * NDP where it has an IPv6 link-local address. Pure: the shell reads /sys and /proc and passes
 * {@link LinkInfo}s in. L2Advertisement `interfaces` restrict per IP later (responder matchInterface).
 */
import { createRequire } from 'node:module';

// js-yaml (YAML 1.2 core schema, as the `yaml` package's parse) is loaded on first use: `explain`
// reads the excludel2 ConfigMap with the parser that already read the snapshot, not a second one
// of about 70 modules.
const jsYaml = (): typeof import('js-yaml') => createRequire(import.meta.url)('js-yaml') as typeof import('js-yaml');

/** MetalLB's default exclusion list (config/manifests excludel2 ConfigMap). */
export const DEFAULT_EXCLUDE_L2 = [
  '^docker.*',
  '^cbr.*',
  '^dummy.*',
  '^virbr.*',
  '^lxcbr.*',
  '^veth.*',
  '^lo$',
  '^cali.*',
  '^tunl.*',
  '^flannel.*',
  '^kube-ipvs.*',
  '^cni.*',
  '^nodelocaldns.*',
  '^lxc.*',
] as const;

/** What the shell knows about one network interface. */
export interface LinkInfo {
  readonly name: string;
  /** ifindex */
  readonly index: number;
  /** IFF_UP */
  readonly up: boolean;
  /** IFF_BROADCAST */
  readonly broadcast: boolean;
  /** IFF_NOARP (0x80) */
  readonly noarp: boolean;
  /** Name of the master device (bridge, bond) when enslaved, else null. */
  readonly master: string | null;
  /** MAC `aa:bb:…`, or null (no link-layer address). */
  readonly hardwareAddress: string | null;
  /** An IPv6 link-local address usable as source (not tentative), or null. */
  readonly linkLocal: string | null;
}

/** Per interface: whether it gets an ARP and an NDP responder, and why not when it gets none. */
export interface InterfaceChoice {
  readonly name: string;
  readonly index: number;
  readonly arp: boolean;
  readonly ndp: boolean;
  /** `excluded` (regexp), `down`, `enslaved`, `noarp`, `no-hardware-address`, or null when usable. */
  readonly skipped: 'excluded' | 'down' | 'enslaved' | 'noarp' | 'no-hardware-address' | null;
}

/**
 * Compiles an exclusion list the way MetalLB does: `(a)|(b)|…`, or null for an empty list.
 * Throws SyntaxError for an invalid expression (MetalLB exits at startup then). Go RE2 and
 * JavaScript agree on the anchors, classes and `.*` such lists use.
 */
export function excludeRegExp(patterns: readonly string[]): RegExp | null {
  if (!patterns.length) return null;
  return new RegExp(`(${patterns.join(')|(')})`);
}

/**
 * Parses the excludel2.yaml document (`announcedInterfacesToExclude: [regexps]`): the list, or
 * [] for an empty document. Throws Error with the reason when it is not that shape.
 */
export function parseExcludeL2(yamlText: string): string[] {
  const jsyaml = jsYaml();
  const doc: unknown = jsyaml.load(yamlText, { schema: jsyaml.CORE_SCHEMA });
  if (doc === null || doc === undefined) return [];
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error('excludel2.yaml: expected a mapping with announcedInterfacesToExclude');
  const list = (doc as Record<string, unknown>).announcedInterfacesToExclude;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) {
    throw new Error('excludel2.yaml: announcedInterfacesToExclude must be a list of strings');
  }
  return list;
}

/** MetalLB updateInterfaces over `links` with exclusion `exclude`: one choice per link, in order. */
export function selectInterfaces(links: readonly LinkInfo[], exclude: RegExp | null): InterfaceChoice[] {
  return links.map((l) => {
    const none = (skipped: InterfaceChoice['skipped']): InterfaceChoice => ({ name: l.name, index: l.index, arp: false, ndp: false, skipped });
    if (exclude?.test(l.name)) return none('excluded');
    if (!l.up) return none('down');
    if (l.master !== null) return none('enslaved');
    if (l.noarp) return none('noarp');
    if (!l.hardwareAddress) return none('no-hardware-address');
    return { name: l.name, index: l.index, arp: l.broadcast, ndp: l.linkLocal !== null, skipped: null };
  });
}

/**
 * The interface names MetalLB's GetInterfaces reports (every interface not excluded by the regexp,
 * whatever its state): what a ServiceL2Status lists for an `all` advertisement.
 */
export function nodeInterfaces(links: readonly LinkInfo[], exclude: RegExp | null): string[] {
  return links.filter((l) => !exclude?.test(l.name)).map((l) => l.name);
}
