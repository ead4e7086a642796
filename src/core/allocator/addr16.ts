/**
 * Addresses as the allocator's index keys: 128-bit `to16` values (an IPv4 address is its
 * IPv4-mapped IPv6 form `::ffff:a.b.c.d`), so IPv4 and IPv6 share one ordered key space.
 */
import type { IP, IPFamily } from '../ip.ts';

/** `::ffff:0:0`: OR-ed onto an IPv4 value to give its 128-bit key. */
export const V4_MAPPED = 0xffffn << 32n;

/** Family of a 128-bit key: IPv4 when it is IPv4-mapped. */
export function familyOf16(v: bigint): IPFamily {
  return v >> 32n === 0xffffn ? 'ipv4' : 'ipv6';
}

/** The address a 128-bit key stands for (IPv4 keys back to their 32-bit value). */
export function ipOf16(v: bigint): IP {
  return familyOf16(v) === 'ipv4' ? { family: 'ipv4', value: v & 0xffffffffn } : { family: 'ipv6', value: v };
}

/**
 * The one rule of MetalLB's `ipConfusesBuggyFirmwares` (avoidBuggyIPs): an IPv4 address whose
 * last octet is 0 or 255. `v`: the address's value (32-bit, or its 128-bit key); IPv4 only.
 */
export function lastOctetConfusesBuggyFirmware(v: bigint): boolean {
  const last = v & 255n;
  return last === 0n || last === 255n;
}

/** MetalLB's `ipConfusesBuggyFirmwares` on a 128-bit key: an IPv4 address ending in `.0` or `.255`. */
export function isBuggy16(v: bigint): boolean {
  return familyOf16(v) === 'ipv4' && lastOctetConfusesBuggyFirmware(v);
}
