/**
 * NDP (RFC 4861) neighbor solicitation (type 135) and neighbor advertisement (type 136) as ICMPv6
 * messages, the bytes an IPPROTO_ICMPV6 raw socket reads and writes (the kernel adds the IPv6
 * header; MetalLB uses github.com/mdlayher/ndp). dns-packet style: `encode`, `decode`,
 * `encodingLength`. Options handled: source link-layer address (1) and target link-layer address
 * (2) for Ethernet (6-byte address, option length 1 = 8 bytes); others are validated and skipped.
 *
 * Layout: type 1 | code 1 | checksum 2 | NA flags R S O + reserved (NS: reserved) 4 | target 16 | options.
 * `encode` leaves the checksum 0 (the kernel fills it on raw ICMPv6 sockets) unless given the IPv6
 * source and destination (see {@link icmpv6Checksum}). `decode` applies RFC 4861 7.1.1/7.1.2 checks
 * that can be made on the message (hop limit 255 is the socket's business) and never throws.
 */
import { ipBytes, ipv6At, macAt, writeMac } from './addr.ts';
import type { Decoded, NDPDecodeDrop } from './result.ts';

export const ICMPV6_NEIGHBOR_SOLICITATION = 135;
export const ICMPV6_NEIGHBOR_ADVERTISEMENT = 136;
const OPTION_SOURCE_LLA = 1;
const OPTION_TARGET_LLA = 2;
const HEADER_BYTES = 24;

/** RFC 4861 4.3. `sourceLinkLayerAddress`: the sender's MAC from option 1, or null without it. */
export interface NeighborSolicitation {
  readonly type: 'neighbor-solicitation';
  readonly targetAddress: string;
  readonly sourceLinkLayerAddress: string | null;
}

/** RFC 4861 4.4. Flags: R router, S solicited (answers an NS), O override (replace cached entries). */
export interface NeighborAdvertisement {
  readonly type: 'neighbor-advertisement';
  readonly router: boolean;
  readonly solicited: boolean;
  readonly override: boolean;
  readonly targetAddress: string;
  readonly targetLinkLayerAddress: string | null;
}

/** A decoded NDP message. */
export type NDPMessage = NeighborSolicitation | NeighborAdvertisement;

/** Bytes `encode` writes: 24, plus 8 for the link-layer option when present. */
export function encodingLength(msg: NDPMessage): number {
  const lla = msg.type === 'neighbor-solicitation' ? msg.sourceLinkLayerAddress : msg.targetLinkLayerAddress;
  return HEADER_BYTES + (lla ? 8 : 0);
}

/**
 * Encodes `msg`. With `addresses` (the IPv6 source and destination) the checksum is computed,
 * otherwise it is 0 for the kernel to fill. Throws TypeError on a malformed address (programming error).
 */
export function encode(msg: NDPMessage, addresses?: { readonly source: string; readonly destination: string }): Uint8Array {
  const b = new Uint8Array(encodingLength(msg));
  const lla = msg.type === 'neighbor-solicitation' ? msg.sourceLinkLayerAddress : msg.targetLinkLayerAddress;
  if (msg.type === 'neighbor-solicitation') {
    b[0] = ICMPV6_NEIGHBOR_SOLICITATION;
  } else {
    b[0] = ICMPV6_NEIGHBOR_ADVERTISEMENT;
    b[4] = (msg.router ? 0x80 : 0) | (msg.solicited ? 0x40 : 0) | (msg.override ? 0x20 : 0);
  }
  b.set(ipBytes(msg.targetAddress, 'ipv6'), 8);
  if (lla) {
    b[24] = msg.type === 'neighbor-solicitation' ? OPTION_SOURCE_LLA : OPTION_TARGET_LLA;
    b[25] = 1;
    writeMac(b, 26, lla);
  }
  if (addresses) {
    const c = icmpv6Checksum(addresses.source, addresses.destination, b);
    b[2] = c >> 8;
    b[3] = c & 0xff;
  }
  return b;
}

/**
 * Decodes an ICMPv6 neighbor solicitation or advertisement. `sourceAddress` (the IPv6 source, when
 * known) enables RFC 4861 7.1.1's check that a solicitation from :: carries no source link-layer
 * option. Never throws.
 */
export function decode(buf: Uint8Array, sourceAddress?: string): Decoded<NDPMessage, NDPDecodeDrop> {
  if (!(buf instanceof Uint8Array) || buf.length < HEADER_BYTES) return { ok: false, dropped: 'short-message' };
  const type = buf[0];
  if (type !== ICMPV6_NEIGHBOR_SOLICITATION && type !== ICMPV6_NEIGHBOR_ADVERTISEMENT) return { ok: false, dropped: 'not-neighbor-discovery' };
  if (buf[1] !== 0) return { ok: false, dropped: 'code' };
  if (buf[8] === 0xff) return { ok: false, dropped: 'target-multicast' };
  let source: string | null = null;
  let target: string | null = null;
  for (let off = HEADER_BYTES; off < buf.length; ) {
    if (off + 2 > buf.length) return { ok: false, dropped: 'option-truncated' };
    const optType = buf[off]!;
    const optBytes = buf[off + 1]! * 8;
    if (optBytes === 0) return { ok: false, dropped: 'option-length-zero' };
    if (off + optBytes > buf.length) return { ok: false, dropped: 'option-truncated' };
    if (optType === OPTION_SOURCE_LLA || optType === OPTION_TARGET_LLA) {
      if (optBytes !== 8) return { ok: false, dropped: 'link-layer-option-size' };
      const mac = macAt(buf, off + 2);
      if (optType === OPTION_SOURCE_LLA) source ??= mac;
      else target ??= mac;
    }
    off += optBytes;
  }
  const targetAddress = ipv6At(buf, 8);
  if (type === ICMPV6_NEIGHBOR_SOLICITATION) {
    if (sourceAddress === '::' && source !== null) return { ok: false, dropped: 'unspecified-source-with-lla' };
    return { ok: true, value: { type: 'neighbor-solicitation', targetAddress, sourceLinkLayerAddress: source } };
  }
  const f = buf[4]!;
  return {
    ok: true,
    value: {
      type: 'neighbor-advertisement',
      router: (f & 0x80) !== 0,
      solicited: (f & 0x40) !== 0,
      override: (f & 0x20) !== 0,
      targetAddress,
      targetLinkLayerAddress: target,
    },
  };
}

/**
 * The ICMPv6 checksum (RFC 4443 2.3) over the IPv6 pseudo-header (source, destination, length,
 * next header 58) and `icmp` with its checksum field taken as zero. Returns the 16-bit value.
 */
export function icmpv6Checksum(source: string, destination: string, icmp: Uint8Array): number {
  const pseudo = new Uint8Array(40);
  pseudo.set(ipBytes(source, 'ipv6'), 0);
  pseudo.set(ipBytes(destination, 'ipv6'), 16);
  const len = icmp.length;
  pseudo[32] = (len >>> 24) & 255;
  pseudo[33] = (len >>> 16) & 255;
  pseudo[34] = (len >>> 8) & 255;
  pseudo[35] = len & 255;
  pseudo[39] = 58;
  let sum = 0;
  const add = (b: Uint8Array, skipChecksum: boolean) => {
    for (let i = 0; i < b.length; i += 2) {
      if (skipChecksum && i === 2) continue;
      sum += (b[i]! << 8) | (i + 1 < b.length ? b[i + 1]! : 0);
    }
  };
  add(pseudo, false);
  add(icmp, true);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}
