/**
 * The outcome of decoding bytes from the wire: the value, or why the frame was dropped. Decoders
 * never throw on input; the shell counts drops by reason (see {@link countDrop}).
 */

/** Why an ARP frame was dropped by the decoder. */
export type ARPDecodeDrop =
  | 'short-frame' // fewer than 14 + 28 bytes
  | 'not-arp-ethertype' // EtherType is not 0x0806 (a VLAN tag included)
  | 'hardware-type' // HTYPE is not 1 (Ethernet)
  | 'protocol-type' // PTYPE is not 0x0800 (IPv4)
  | 'address-lengths' // HLEN/PLEN are not 6/4
  | 'operation'; // neither request (1) nor reply (2)

/** Why an ICMPv6 message was dropped by the NDP decoder (RFC 4861 7.1.1 / 7.1.2 validity checks). */
export type NDPDecodeDrop =
  | 'short-message' // shorter than 24 bytes (type, code, checksum, flags, target)
  | 'not-neighbor-discovery' // type is neither 135 (NS) nor 136 (NA)
  | 'code' // ICMP code is not 0
  | 'target-multicast' // the target address is a multicast address
  | 'option-length-zero' // an option with length 0
  | 'option-truncated' // an option runs past the end of the message
  | 'link-layer-option-size' // a source/target link-layer option whose address is not 6 bytes (Ethernet)
  | 'unspecified-source-with-lla'; // NS from :: carrying a source link-layer option (RFC 4861 7.1.1)

/** A decode result: `{ ok: true, value }` or `{ ok: false, dropped }`. */
export type Decoded<T, Drop extends string> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly dropped: Drop };

/** Counts of dropped frames by reason (plain object: JSON and metrics friendly). */
export type DropCounts = Record<string, number>;

/** Adds one to `counts[reason]` (mutates `counts`; the shell owns it) and returns `counts`. */
export function countDrop(counts: DropCounts, reason: string): DropCounts {
  counts[reason] = (counts[reason] ?? 0) + 1;
  return counts;
}
