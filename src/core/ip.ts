/**
 * IP address primitives with Go's `net` package semantics (what MetalLB parses and prints).
 *
 * An address is `{ family, value }`: IPv4 as a 32-bit bigint, IPv6 as a 128-bit bigint. An
 * IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is an IPv4 address, as Go's `To4()` and `String()`
 * treat it. Parsing uses ipaddr.js for IPv6 and is as strict as Go's `net.ParseIP`: no leading
 * zeros in IPv4, no zones, no surrounding whitespace.
 */
import ipaddr from 'ipaddr.js';

export type IPFamily = 'ipv4' | 'ipv6';

/** One address. `value` has 32 bits for ipv4 and 128 bits for ipv6. */
export interface IP {
  readonly family: IPFamily;
  readonly value: bigint;
}

/** A CIDR block: `base` is the network address (host bits cleared), `prefix` its length in bits. */
export interface CIDR {
  readonly family: IPFamily;
  readonly base: bigint;
  readonly prefix: number;
}

const V4_MAPPED_PREFIX = 0xffffn << 32n;

/** Number of bits of an address of `family`. */
export function familyBits(family: IPFamily): number {
  return family === 'ipv4' ? 32 : 128;
}

function v4Value(s: string): bigint | undefined {
  // A scan and one BigInt (a regular expression and four BigInt conversions cost a third of
  // `explain` on 5,000 Services): four dot-separated parts of 1-3 digits, no leading zero, <= 255.
  const n = s.length;
  if (n < 7 || n > 15) return undefined;
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return undefined;
      value = value * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return undefined; // leading zero
      part = part * 10 + (c - 48);
      if (++digits > 3 || part > 255) return undefined;
    } else return undefined;
  }
  if (dots !== 3 || digits === 0) return undefined;
  return BigInt(value * 256 + part);
}

/**
 * The 128-bit value of an IPv6 literal, or undefined. Strict like Go: an embedded IPv4 tail must
 * itself be a strict dotted quad; zones (`%eth0`) are rejected.
 */
function v6Value(s: string): bigint | undefined {
  if (!s.includes(':') || s.includes('%') || /\s/.test(s)) return undefined;
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    // The embedded IPv4 tail as its two hex groups, where Go's parser puts its four bytes:
    // ipaddr.js reads `::1.2.3.4` as IPv4-mapped (`::ffff:1.2.3.4`), Go as `::102:304`.
    const v4 = v4Value(tail);
    if (v4 === undefined) return undefined;
    s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  if (!/^[0-9A-Fa-f:]+$/.test(s) || !ipaddr.IPv6.isValid(s)) return undefined;
  let value = 0n;
  for (const byte of ipaddr.IPv6.parse(s).toByteArray()) value = (value << 8n) | BigInt(byte);
  return value;
}

/**
 * Parses an address as Go's `net.ParseIP` does; IPv4-mapped IPv6 becomes IPv4.
 * Returns undefined for anything else (prefix lengths, zones, whitespace, leading zeros).
 */
export function parseIP(s: string): IP | undefined {
  if (typeof s !== 'string') return undefined;
  // The controller's dry run parses the same few thousand texts again and again: the results
  // (immutable) are remembered, up to PARSED_MAX texts of at most 45 characters (the longest
  // address literal).
  if (s.length > 45) return parseUncached(s);
  const known = parsed.get(s);
  if (known !== undefined || parsed.has(s)) return known;
  if (parsed.size >= PARSED_MAX) parsed.clear();
  const ip = parseUncached(s);
  parsed.set(s, ip);
  return ip;
}

const PARSED_MAX = 100_000;
const parsed = new Map<string, IP | undefined>();

function parseUncached(s: string): IP | undefined {
  const v4 = v4Value(s);
  if (v4 !== undefined) return { family: 'ipv4', value: v4 };
  const v6 = v6Value(s);
  if (v6 === undefined) return undefined;
  if (v6 >> 32n === 0xffffn) return { family: 'ipv4', value: v6 & 0xffffffffn };
  return { family: 'ipv6', value: v6 };
}

/** Like parseIP, but also reports whether the literal was written as IPv4-mapped IPv6. */
export function parseIPLiteral(s: string): (IP & { mapped: boolean }) | undefined {
  const ip = parseIP(s);
  if (!ip) return undefined;
  return { ...ip, mapped: ip.family === 'ipv4' && s.includes(':') };
}

/** Prints an address as Go's `net.IP.String()`: dotted quad, or RFC 5952 lower-case IPv6. */
export function formatIP(ip: IP): string {
  if (ip.family === 'ipv4') {
    const v = Number(ip.value); // < 2^32: exact
    return `${Math.floor(v / 16777216) % 256}.${Math.floor(v / 65536) % 256}.${Math.floor(v / 256) % 256}.${v % 256}`;
  }
  const bytes: number[] = [];
  for (let i = 15; i >= 0; i--) bytes.push(Number((ip.value >> BigInt(i * 8)) & 255n));
  return new ipaddr.IPv6(bytes).toRFC5952String();
}

/** Canonical form of an address literal (Go's ParseIP then String), or undefined if invalid. */
export function canonicalIP(s: string): string | undefined {
  const ip = parseIP(s);
  return ip ? formatIP(ip) : undefined;
}

/** The 128-bit IPv6 (IPv4-mapped for ipv4) value, for comparisons across families as Go's bytes.Compare on To16(). */
export function to16(ip: IP): bigint {
  return ip.family === 'ipv4' ? V4_MAPPED_PREFIX | ip.value : ip.value;
}

/** Mask with the top `prefix` bits of a `bits`-bit number set. */
export function prefixMask(prefix: number, bits: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  return all ^ ((1n << BigInt(bits - prefix)) - 1n);
}

/**
 * Parses `addr/len` as Go's `net.ParseCIDR`: the address part must be a plain IP literal, the
 * length a decimal number no larger than the family's bits. Host bits are cleared.
 * IPv4-mapped literals are reported through `mapped` with the prefix as written (0-128).
 */
export function parseCIDRLiteral(s: string): { family: IPFamily; base: bigint; prefix: number; mapped: boolean } | undefined {
  if (typeof s !== 'string') return undefined;
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const addr = s.slice(0, slash);
  const len = s.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(len)) return undefined;
  const prefix = Number(len);
  const v4 = v4Value(addr);
  if (v4 !== undefined) {
    if (prefix > 32) return undefined;
    return { family: 'ipv4', base: v4 & prefixMask(prefix, 32), prefix, mapped: false };
  }
  const v6 = v6Value(addr);
  if (v6 === undefined || prefix > 128) return undefined;
  const base = v6 & prefixMask(prefix, 128);
  return { family: 'ipv6', base, prefix, mapped: v6 >> 32n === 0xffffn };
}

/**
 * Parses a CIDR and normalises it the way MetalLB prints it: IPv4 literals as IPv4; an IPv4-mapped
 * IPv6 CIDR with length >= 96 whose network is still mapped becomes the IPv4 CIDR (length - 96).
 */
export function parseCIDR(s: string): CIDR | undefined {
  const c = parseCIDRLiteral(s);
  if (!c) return undefined;
  if (c.family === 'ipv6' && c.prefix >= 96 && c.base >> 32n === 0xffffn) {
    return { family: 'ipv4', base: c.base & 0xffffffffn, prefix: c.prefix - 96 };
  }
  return { family: c.family, base: c.base, prefix: c.prefix };
}

/** `base/prefix` as Go's `IPNet.String()` prints it. */
export function formatCIDR(c: CIDR): string {
  return `${formatIP({ family: c.family, value: c.base })}/${c.prefix}`;
}

/** Number of addresses in a block (a bigint: IPv6 blocks can hold 2^128). */
export function cidrSize(c: CIDR): bigint {
  return 1n << BigInt(familyBits(c.family) - c.prefix);
}

/** Last address of a block. */
export function cidrLast(c: CIDR): bigint {
  return c.base + cidrSize(c) - 1n;
}

/** Whether `ip` lies in block `c` (same family only). */
export function cidrContains(c: CIDR, ip: IP): boolean {
  return ip.family === c.family && ip.value >= c.base && ip.value <= cidrLast(c);
}

/**
 * The minimal list of CIDR blocks exactly covering the inclusive range [start, end], ascending
 * (what MetalLB's `cidrsPerAddresses` yields for an `a-b` pool entry). Both ends must be of one
 * family and start <= end; otherwise the result is empty.
 */
export function rangeToCIDRs(start: IP, end: IP): CIDR[] {
  if (start.family !== end.family || start.value > end.value) return [];
  const bits = familyBits(start.family);
  const out: CIDR[] = [];
  let cur = start.value;
  while (cur <= end.value) {
    // Largest block aligned at `cur` that does not pass `end`.
    let size = 0;
    while (size < bits) {
      const next = size + 1;
      const blockSize = 1n << BigInt(next);
      if (cur % blockSize !== 0n || cur + blockSize - 1n > end.value) break;
      size = next;
    }
    out.push({ family: start.family, base: cur, prefix: bits - size });
    cur += 1n << BigInt(size);
  }
  return out;
}

/** Whether an IPv4 address ends in .0 or .255 (MetalLB's `avoidBuggyIPs`). IPv6 never does. */
export function isBuggyIP(ip: IP): boolean {
  if (ip.family !== 'ipv4') return false;
  const last = ip.value & 255n;
  return last === 0n || last === 255n;
}

// --- wire bytes -------------------------------------------------------------------------------
// The one text/bytes codec of the tree: the ARP and NDP codecs (src/core/arp/addr.ts), memberlist
// (node addresses in its messages) and the speaker's socket calls read and write addresses here.

/** The 4 (ipv4) or 16 (ipv6) network-order bytes of an address, as Go's `To4()` / `To16()` give them. */
export function ipToBytes(ip: IP): Uint8Array {
  if (ip.family === 'ipv4') {
    const v = Number(ip.value); // < 2^32: exact
    return Uint8Array.of(Math.floor(v / 16777216) % 256, Math.floor(v / 65536) % 256, Math.floor(v / 256) % 256, v % 256);
  }
  const out = new Uint8Array(16);
  let v = ip.value;
  for (let i = 15; i >= 0; i--) {
    out[i] = Number(v & 255n);
    v >>= 8n;
  }
  return out;
}

/**
 * The address in `length` (4 or 16) bytes of `b` at `offset`, as Go's `net.IP` reads them: 16
 * bytes of an IPv4-mapped address (`::ffff:a.b.c.d`) are that IPv4 address. Undefined for any other
 * length or when the bytes run past the end of `b`.
 */
export function ipFromBytes(b: Uint8Array, offset = 0, length = b.length - offset): IP | undefined {
  if ((length !== 4 && length !== 16) || offset < 0 || offset + length > b.length) return undefined;
  if (length === 4) return { family: 'ipv4', value: BigInt(b[offset]! * 16777216 + b[offset + 1]! * 65536 + b[offset + 2]! * 256 + b[offset + 3]!) };
  let mapped = b[offset + 10] === 0xff && b[offset + 11] === 0xff;
  for (let i = 0; mapped && i < 10; i++) mapped = b[offset + i] === 0;
  if (mapped) return { family: 'ipv4', value: BigInt(b[offset + 12]! * 16777216 + b[offset + 13]! * 65536 + b[offset + 14]! * 256 + b[offset + 15]!) };
  let value = 0n;
  for (let i = 0; i < 16; i++) value = (value << 8n) | BigInt(b[offset + i]!);
  return { family: 'ipv6', value };
}

/**
 * The text of an address given as wire bytes (Go's `net.IP.String()`): 4 bytes as a dotted quad,
 * 16 bytes as RFC 5952 IPv6 (IPv4-mapped as a dotted quad); '' for any other length (an absent
 * address field in a memberlist message).
 */
export function formatIPBytes(b: Uint8Array, offset = 0, length = b.length - offset): string {
  if (length !== 16 || offset < 0 || offset + 16 > b.length) {
    const ip = ipFromBytes(b, offset, length);
    return ip ? formatIP(ip) : '';
  }
  let mapped = b[offset + 10] === 0xff && b[offset + 11] === 0xff;
  for (let i = 0; mapped && i < 10; i++) mapped = b[offset + i] === 0;
  if (mapped) return `${b[offset + 12]}.${b[offset + 13]}.${b[offset + 14]}.${b[offset + 15]}`;
  // RFC 5952 straight from the bytes (no bigint: memberlist formats a peer's address per message):
  // lower-case hex groups without leading zeros, "::" for the longest run of two or more zero
  // groups, the first when tied. test/unit/ip-bytes.test.ts checks it against ipaddr.js.
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b[offset + i]! * 256 + b[offset + i + 1]!);
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  return best < 0 ? hex(groups) : `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLen))}`;
}

/**
 * The wire bytes of an address literal as written (Go's `net.ParseIP` then `To4()` for a dotted
 * quad): 4 bytes for IPv4, 16 for IPv6, an IPv4-mapped literal (`::ffff:1.2.3.4`) included.
 * Undefined when `s` is not an address (parseIP's rules: no zones, no leading zeros).
 */
export function parseIPBytes(s: string): Uint8Array | undefined {
  const ip = parseIP(s);
  if (!ip) return undefined;
  return ip.family === 'ipv4' && s.includes(':') ? ipToBytes({ family: 'ipv6', value: V4_MAPPED_PREFIX | ip.value }) : ipToBytes(ip);
}
