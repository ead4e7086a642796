/**
 * ARP over Ethernet (RFC 826) for IPv4: the Ethernet II header and the 28-byte ARP packet, as one
 * codec in the dns-packet style (`encode`, `decode`, `encodingLength`). This is what the AF_PACKET
 * socket of the ARP responder reads and writes (MetalLB uses github.com/mdlayher/arp for it).
 *
 * Wire layout (bytes): dst MAC 6 | src MAC 6 | EtherType 0x0806 2 | HTYPE 1 2 | PTYPE 0x0800 2 |
 * HLEN 6 1 | PLEN 4 1 | OPER 2 | SHA 6 | SPA 4 | THA 6 | TPA 4, then padding to the 60-byte Ethernet
 * minimum (encode pads with zeros like mdlayher/ethernet; decode ignores trailing bytes).
 * `decode` is strict: anything else is a typed drop, never an exception.
 */
import { ipBytes, ipv4At, macAt, writeMac } from './addr.ts';
import type { ARPDecodeDrop, Decoded } from './result.ts';

/** EtherType of ARP. */
export const ETHERTYPE_ARP = 0x0806;
/** Ethernet header (14) + ARP for Ethernet/IPv4 (28). */
export const ARP_FRAME_BYTES = 42;
/** Minimum Ethernet frame without FCS; encode pads to it. */
export const ETHERNET_MIN_BYTES = 60;

/** RFC 826 ar$op: 1 request, 2 reply. */
export type ARPOperation = 'request' | 'reply';

/** One ARP frame: Ethernet addresses and the ARP fields with RFC 826 names (MACs `aa:bb:…`, IPv4 dotted). */
export interface ARPFrame {
  readonly ethernetDestination: string;
  readonly ethernetSource: string;
  readonly operation: ARPOperation;
  /** ar$sha */
  readonly senderHardwareAddress: string;
  /** ar$spa */
  readonly senderProtocolAddress: string;
  /** ar$tha */
  readonly targetHardwareAddress: string;
  /** ar$tpa */
  readonly targetProtocolAddress: string;
}

/** Bytes `encode` writes for any frame: 60 (42 + zero padding). */
export function encodingLength(_frame?: ARPFrame): number {
  return ETHERNET_MIN_BYTES;
}

/**
 * Encodes `frame` into a new 60-byte buffer (or into `buf` at `offset`). Throws TypeError on a
 * malformed address in `frame` (a programming error: frames are built by this module's callers).
 */
export function encode(frame: ARPFrame, buf: Uint8Array = new Uint8Array(ETHERNET_MIN_BYTES), offset = 0): Uint8Array {
  const b = buf.subarray(offset, offset + ETHERNET_MIN_BYTES);
  if (b.length < ETHERNET_MIN_BYTES) throw new RangeError('ARP encode: buffer too small');
  b.fill(0);
  writeMac(b, 0, frame.ethernetDestination);
  writeMac(b, 6, frame.ethernetSource);
  b[12] = 0x08;
  b[13] = 0x06;
  b[14] = 0;
  b[15] = 1; // HTYPE Ethernet
  b[16] = 0x08;
  b[17] = 0x00; // PTYPE IPv4
  b[18] = 6;
  b[19] = 4;
  b[20] = 0;
  b[21] = frame.operation === 'request' ? 1 : 2;
  writeMac(b, 22, frame.senderHardwareAddress);
  b.set(ipBytes(frame.senderProtocolAddress, 'ipv4'), 28);
  writeMac(b, 32, frame.targetHardwareAddress);
  b.set(ipBytes(frame.targetProtocolAddress, 'ipv4'), 38);
  return buf;
}

/** Decodes an Ethernet frame carrying ARP for Ethernet/IPv4. Never throws; malformed input is a drop. */
export function decode(buf: Uint8Array): Decoded<ARPFrame, ARPDecodeDrop> {
  if (!(buf instanceof Uint8Array) || buf.length < ARP_FRAME_BYTES) return { ok: false, dropped: 'short-frame' };
  if (((buf[12]! << 8) | buf[13]!) !== ETHERTYPE_ARP) return { ok: false, dropped: 'not-arp-ethertype' };
  if (((buf[14]! << 8) | buf[15]!) !== 1) return { ok: false, dropped: 'hardware-type' };
  if (((buf[16]! << 8) | buf[17]!) !== 0x0800) return { ok: false, dropped: 'protocol-type' };
  if (buf[18] !== 6 || buf[19] !== 4) return { ok: false, dropped: 'address-lengths' };
  const op = (buf[20]! << 8) | buf[21]!;
  if (op !== 1 && op !== 2) return { ok: false, dropped: 'operation' };
  return {
    ok: true,
    value: {
      ethernetDestination: macAt(buf, 0),
      ethernetSource: macAt(buf, 6),
      operation: op === 1 ? 'request' : 'reply',
      senderHardwareAddress: macAt(buf, 22),
      senderProtocolAddress: ipv4At(buf, 28),
      targetHardwareAddress: macAt(buf, 32),
      targetProtocolAddress: ipv4At(buf, 38),
    },
  };
}
