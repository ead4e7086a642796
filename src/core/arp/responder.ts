/**
 * The ARP/NDP responders' decisions, pure: given a frame that arrived on an interface, the IPs this
 * node announces (with the interfaces allowed for each) and the interface's MAC, the reply frame or
 * the reason for staying silent. Mirrors MetalLB v0.16.1 internal/layer2 (arp.go processRequest,
 * ndp.go processRequest, announcer.go shouldAnnounce) and its gratuitous frames.
 */
import type { InterfaceSet } from '../election/types.ts';
import { ALL_NODES, BROADCAST_MAC, ipFamily } from './addr.ts';
import * as arp from './arp.ts';
import type { ARPFrame } from './arp.ts';
import * as ndp from './ndp.ts';
import type { NeighborAdvertisement } from './ndp.ts';
import type { ARPDecodeDrop, NDPDecodeDrop } from './result.ts';
import { canonicalIP } from '../ip.ts';

/**
 * The IPs this node currently announces: canonical IP → the interface sets of every service
 * announcing it (several services may share an IP). Build it with {@link announcedIPs}.
 */
export type AnnouncedIPs = ReadonlyMap<string, readonly InterfaceSet[]>;

/** Builds {@link AnnouncedIPs} from service → { ips, interfaces } (what L2Announcer.announce received). */
export function announcedIPs(services: Iterable<{ readonly ips: readonly string[]; readonly interfaces: InterfaceSet }>): AnnouncedIPs {
  const out = new Map<string, InterfaceSet[]>();
  for (const s of services) addAnnounced(out, s.ips, s.interfaces);
  return out;
}

/**
 * Adds one service's `ips` (announced on `interfaces`) to `table`, in place: {@link announcedIPs}
 * one service at a time, for a caller that keeps the table between announcements (rebuilding it
 * per announcement is quadratic in the number of services). IPs that do not parse are skipped.
 */
export function addAnnounced(table: Map<string, InterfaceSet[]>, ips: readonly string[], interfaces: InterfaceSet): void {
  for (const raw of ips) {
    const ip = canonicalIP(raw);
    if (!ip) continue;
    const list = table.get(ip);
    if (list) list.push(interfaces);
    else table.set(ip, [interfaces]);
  }
}

/**
 * Takes back what {@link addAnnounced} added for one service (same `ips` and `interfaces`), in
 * place; an IP whose last service goes leaves the table. The table then equals
 * {@link announcedIPs} of the other services (the order of an IP's interface sets aside, which no
 * decision reads).
 */
export function removeAnnounced(table: Map<string, InterfaceSet[]>, ips: readonly string[], interfaces: InterfaceSet): void {
  for (const raw of ips) {
    const ip = canonicalIP(raw);
    if (!ip) continue;
    const list = table.get(ip);
    if (!list) continue;
    const at = list.indexOf(interfaces);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) table.delete(ip);
  }
}

/** MetalLB IPAdvertisement.matchInterface: `all` matches every interface, a list only its names, null none. */
export function matchInterface(set: InterfaceSet, intf: string): boolean {
  if (set === 'all') return true;
  if (set === null) return false;
  return set.includes(intf);
}

/** MetalLB shouldAnnounce: `announce`, or why not (`not-announced`: nobody here owns the IP). */
export type AnnounceCheck = 'announce' | 'not-announced' | 'interface-not-allowed';

/** Whether this node answers for `ip` on interface `intf` (MetalLB announcer.go shouldAnnounce). */
export function shouldAnnounce(announced: AnnouncedIPs, ip: string, intf: string): AnnounceCheck {
  const sets = announced.get(canonicalIP(ip) ?? ip);
  if (!sets) return 'not-announced';
  return sets.some((s) => matchInterface(s, intf)) ? 'announce' : 'interface-not-allowed';
}

/** Where a frame arrived and what this node announces. */
export interface ResponderContext {
  /** Interface name the frame arrived on. */
  readonly interface: string;
  /** That interface's MAC (`aa:bb:…`): the answer's link-layer address. */
  readonly hardwareAddress: string;
  readonly announced: AnnouncedIPs;
}

/** Why the ARP responder stays silent (MetalLB's dropReason, plus the decoder's). */
export type ARPSilence = ARPDecodeDrop | 'arp-reply' | 'ethernet-destination' | 'not-announced' | 'interface-not-allowed';
/** Why the NDP responder stays silent. */
export type NDPSilence = NDPDecodeDrop | 'hop-limit' | 'not-neighbor-solicitation' | 'no-source-link-layer-address' | 'not-announced' | 'interface-not-allowed';

/** An ARP responder decision: the reply frame (object and 60 wire bytes) or the reason for silence. */
export type ARPResponse = { readonly reply: ARPFrame; readonly bytes: Uint8Array; readonly request: ARPFrame } | { readonly dropped: ARPSilence; readonly request?: ARPFrame };

/**
 * Answers an ARP frame (RFC 826 "reply" step, as mdlayher/arp Client.Reply): only a request,
 * addressed to broadcast or to this interface's MAC, for an IP this node announces on this
 * interface. The reply goes to the requester's MAC with SHA = our MAC, SPA = the requested IP,
 * THA/TPA = the requester's.
 */
export function respondARP(frame: Uint8Array, ctx: ResponderContext): ARPResponse {
  const d = arp.decode(frame);
  if (!d.ok) return { dropped: d.dropped };
  const req = d.value;
  if (req.operation !== 'request') return { dropped: 'arp-reply', request: req };
  if (req.ethernetDestination !== BROADCAST_MAC && req.ethernetDestination !== ctx.hardwareAddress.toLowerCase()) {
    return { dropped: 'ethernet-destination', request: req };
  }
  const check = shouldAnnounce(ctx.announced, req.targetProtocolAddress, ctx.interface);
  if (check !== 'announce') return { dropped: check, request: req };
  const mac = ctx.hardwareAddress.toLowerCase();
  const reply: ARPFrame = {
    ethernetDestination: req.senderHardwareAddress,
    ethernetSource: mac,
    operation: 'reply',
    senderHardwareAddress: mac,
    senderProtocolAddress: req.targetProtocolAddress,
    targetHardwareAddress: req.senderHardwareAddress,
    targetProtocolAddress: req.senderProtocolAddress,
  };
  return { reply, bytes: arp.encode(reply), request: req };
}

/** An NDP responder decision: the neighbor advertisement, its destination and bytes, or silence. */
export type NDPResponse =
  | { readonly reply: NeighborAdvertisement; readonly destination: string; readonly bytes: Uint8Array; readonly targetAddress: string }
  | { readonly dropped: NDPSilence; readonly targetAddress?: string };

/**
 * Answers an ICMPv6 message from `source` (RFC 4861 7.2.4, as MetalLB ndp.go): only a neighbor
 * solicitation that carries a source link-layer address option (MetalLB ignores the others,
 * including DAD probes from ::), for an IP announced on this interface. The advertisement goes to
 * the solicitation's source with S=1, O=0 and the target link-layer option = our MAC.
 * `hopLimit` (the IPv6 hop limit it arrived with, when the socket reports it) must be 255
 * (RFC 4861 7.1.1: proof that the solicitation was not forwarded by a router).
 */
export function respondNDP(message: Uint8Array, source: string, ctx: ResponderContext, hopLimit?: number): NDPResponse {
  if (hopLimit !== undefined && hopLimit >= 0 && hopLimit !== 255) return { dropped: 'hop-limit' };
  const d = ndp.decode(message, source);
  if (!d.ok) return { dropped: d.dropped };
  const m = d.value;
  if (m.type !== 'neighbor-solicitation') return { dropped: 'not-neighbor-solicitation', targetAddress: m.targetAddress };
  if (!m.sourceLinkLayerAddress) return { dropped: 'no-source-link-layer-address', targetAddress: m.targetAddress };
  const check = shouldAnnounce(ctx.announced, m.targetAddress, ctx.interface);
  if (check !== 'announce') return { dropped: check, targetAddress: m.targetAddress };
  const reply: NeighborAdvertisement = {
    type: 'neighbor-advertisement',
    router: false,
    solicited: true,
    override: false,
    targetAddress: m.targetAddress,
    targetLinkLayerAddress: ctx.hardwareAddress.toLowerCase(),
  };
  return { reply, destination: source, bytes: ndp.encode(reply), targetAddress: m.targetAddress };
}

/**
 * The gratuitous ARP frames for `ip` from `hardwareAddress` (MetalLB arp.go Gratuitous): a request
 * and a reply, both broadcast, SPA = TPA = ip, THA = broadcast. (RFC 5227 ARP announcements use a
 * zero THA; MetalLB and therefore metallb-ts use broadcast.)
 */
export function gratuitousARP(ip: string, hardwareAddress: string): ARPFrame[] {
  const mac = hardwareAddress.toLowerCase();
  return (['request', 'reply'] as const).map((operation) => ({
    ethernetDestination: BROADCAST_MAC,
    ethernetSource: mac,
    operation,
    senderHardwareAddress: mac,
    senderProtocolAddress: ip,
    targetHardwareAddress: BROADCAST_MAC,
    targetProtocolAddress: ip,
  }));
}

/** The unsolicited neighbor advertisement for `ip` (MetalLB ndp.go Gratuitous): to ff02::1, S=0, O=1. */
export function unsolicitedNA(ip: string, hardwareAddress: string): { readonly destination: string; readonly message: NeighborAdvertisement } {
  return {
    destination: ALL_NODES,
    message: { type: 'neighbor-advertisement', router: false, solicited: false, override: true, targetAddress: ip, targetLinkLayerAddress: hardwareAddress.toLowerCase() },
  };
}

/** `ipv4` (ARP) or `ipv6` (NDP) for an announced address; undefined for garbage. */
export function protocolFor(ip: string): 'arp' | 'ndp' | undefined {
  const f = ipFamily(ip);
  return f === 'ipv4' ? 'arp' : f === 'ipv6' ? 'ndp' : undefined;
}
