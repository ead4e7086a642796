/**
 * Address helpers for the L2 codecs: MAC (EUI-48) and IPv4/IPv6 addresses between wire bytes and
 * the strings the rest of metallb-ts uses (`aa:bb:cc:dd:ee:ff`, dotted quad, RFC 5952 IPv6).
 * Pure; no I/O.
 */
import { formatIPBytes, parseIP, parseIPBytes } from '../ip.ts';

/** The Ethernet broadcast address. */
export const BROADCAST_MAC = 'ff:ff:ff:ff:ff:ff';
/** The link-local all-nodes multicast address (RFC 4291 2.7.1), destination of unsolicited NAs. */
export const ALL_NODES = 'ff02::1';

const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/** Formats 6 bytes at `offset` of `b` as lower-case `aa:bb:cc:dd:ee:ff`. */
export function macAt(b: Uint8Array, offset: number): string {
  let s = '';
  for (let i = 0; i < 6; i++) s += (i ? ':' : '') + b[offset + i]!.toString(16).padStart(2, '0');
  return s;
}

/** Writes MAC `mac` (`aa:bb:…`, case-insensitive) at `offset`. Throws TypeError on a malformed MAC (a programming error). */
export function writeMac(b: Uint8Array, offset: number, mac: string): void {
  const m = mac.toLowerCase();
  if (!MAC_RE.test(m)) throw new TypeError(`not a MAC address: ${mac}`);
  for (let i = 0; i < 6; i++) b[offset + i] = parseInt(m.slice(i * 3, i * 3 + 2), 16);
}

/** True for `aa:bb:cc:dd:ee:ff` (six hex pairs, either case). */
export function isMac(s: string): boolean {
  return MAC_RE.test(s.toLowerCase());
}

/** Formats 4 bytes at `offset` as a dotted quad (src/core/ip.ts formatIPBytes). */
export function ipv4At(b: Uint8Array, offset: number): string {
  return formatIPBytes(b, offset, 4);
}

/** Formats 16 bytes at `offset` as RFC 5952 IPv6 (IPv4-mapped addresses print as IPv4, as Go's net.IP; src/core/ip.ts formatIPBytes). */
export function ipv6At(b: Uint8Array, offset: number): string {
  return formatIPBytes(b, offset, 16);
}

/**
 * The 4 (IPv4) or 16 (IPv6) wire bytes of an address literal (src/core/ip.ts parseIPBytes); an
 * IPv4-mapped literal is IPv6 here (16 bytes). TypeError when it is not `family`.
 */
export function ipBytes(ip: string, family: 'ipv4' | 'ipv6'): Uint8Array {
  const b = parseIPBytes(ip);
  if (b?.length !== (family === 'ipv4' ? 4 : 16)) throw new TypeError(`not an ${family === 'ipv4' ? 'IPv4' : 'IPv6'} address: ${ip}`);
  return b;
}

/** The address family of a literal, or undefined when it is not an address. */
export function ipFamily(ip: string): 'ipv4' | 'ipv6' | undefined {
  const p = parseIP(ip);
  if (!p) return undefined;
  return p.family === 'ipv4' && !ip.includes(':') ? 'ipv4' : 'ipv6';
}

/**
 * The solicited-node multicast address of an IPv6 address (RFC 4291 2.7.1): ff02::1:ffXX:XXXX
 * with the low 24 bits of `ip`. A node joins it per announced address to receive neighbor
 * solicitations for it (MetalLB ndpResponder.Watch).
 */
export function solicitedNodeMulticast(ip: string): string {
  const b = ipBytes(ip, 'ipv6');
  const out = Uint8Array.of(0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, b[13]!, b[14]!, b[15]!);
  return ipv6At(out, 0);
}

/** True for fe80::/10 (IPv6 link-local unicast). */
export function isLinkLocalV6(ip: string): boolean {
  if (ipFamily(ip) !== 'ipv6') return false;
  const b = ipBytes(ip, 'ipv6');
  return b[0] === 0xfe && (b[1]! & 0xc0) === 0x80;
}
