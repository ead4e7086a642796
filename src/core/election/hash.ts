/**
 * The L2 election hash order (MetalLB v0.16.1 `speaker/layer2_controller.go` ShouldAnnounce):
 * candidates are sorted by `SHA-256(node + "#" + ip)`, ascending, comparing the 32-byte digests as
 * unsigned bytes; the first node wins. `ip` is the first ingress IP in Go's canonical form.
 *
 * The digest is computed in JavaScript (sha256-compress.ts) rather than with node:crypto: the
 * election hashes one short message per candidate per service, and per-call overhead of the native
 * API dominates there. Keys are prepared once per node (`nodeHashKey`) and once per IP
 * (`ipHashKey`) so that hashing one candidate is word arithmetic only: no string or byte copying.
 *
 * A digest is held as 8 int32 words (big-endian words of the digest, signed view); comparing the
 * words as unsigned 32-bit numbers in order is the same as comparing the digest bytes.
 */
import { compress } from './sha256-compress.ts';

const IV = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
const encoder = new TextEncoder();

/** Messages up to this many bytes fit one padded block (55 + 0x80 + 8 length bytes = 64). */
const ONE_BLOCK_MAX = 55;

/** Per-node key material: UTF-8 bytes of `node + "#"` and the same packed as 16 big-endian words. */
export interface NodeHashKey {
  readonly node: string;
  /** UTF-8 bytes of `node#`. */
  readonly bytes: Uint8Array;
  /** `bytes` packed big-endian into 16 words, zero-filled (only meaningful when bytes.length <= 55). */
  readonly words: Int32Array;
}

/**
 * Per-IP key material: UTF-8 bytes of the IP followed by the 0x80 padding byte, packed into words
 * at each of the 4 possible byte alignments (shifted[k] starts at byte offset k of a word).
 */
export interface IPHashKey {
  readonly ip: string;
  readonly bytes: Uint8Array;
  readonly shifted: readonly Int32Array[];
}

function packWords(bytes: Uint8Array, offset: number, into: Int32Array): void {
  for (let i = 0; i < bytes.length; i++) {
    const p = offset + i;
    const w = p >> 2;
    if (w >= into.length) break;
    into[w] |= bytes[i] << (24 - 8 * (p & 3));
  }
}

/** Prepares a node name for hashing. Cheap enough to call once per node per state. */
export function nodeHashKey(node: string): NodeHashKey {
  const bytes = encoder.encode(node + '#');
  const words = new Int32Array(16);
  packWords(bytes, 0, words);
  return { node, bytes, words };
}

/** Prepares an IP string (already in canonical form) for hashing. Once per service. */
export function ipHashKey(ip: string): IPHashKey {
  const bytes = encoder.encode(ip);
  const withPad = new Uint8Array(bytes.length + 1);
  withPad.set(bytes);
  withPad[bytes.length] = 0x80;
  const shifted: Int32Array[] = [];
  for (let k = 0; k < 4; k++) {
    const w = new Int32Array(16);
    packWords(withPad, k, w);
    shifted.push(w);
  }
  return { ip, bytes, shifted };
}

const block = new Int32Array(16);
const state = new Int32Array(8);

/**
 * SHA-256 of arbitrary bytes, as 8 int32 words written to `out[offset..offset+8)`.
 * Used for messages longer than one block; also the reference the fast path is tested against.
 */
export function sha256WordsInto(msg: Uint8Array, out: Int32Array, offset: number): void {
  const len = msg.length;
  const total = (((len + 8) >>> 6) + 1) * 64;
  const buf = new Uint8Array(total);
  buf.set(msg);
  buf[len] = 0x80;
  const bits = len * 8; // messages here are far below 2^32 bits
  buf[total - 4] = bits >>> 24;
  buf[total - 3] = (bits >>> 16) & 255;
  buf[total - 2] = (bits >>> 8) & 255;
  buf[total - 1] = bits & 255;
  state.set(IV);
  for (let b = 0; b < total; b += 64) {
    for (let i = 0; i < 16; i++) {
      const p = b + i * 4;
      block[i] = (buf[p] << 24) | (buf[p + 1] << 16) | (buf[p + 2] << 8) | buf[p + 3];
    }
    compress(state, block);
  }
  for (let i = 0; i < 8; i++) out[offset + i] = state[i];
}

/**
 * SHA-256 of `node#ip` as 8 int32 words into `out[offset..offset+8)`: the election key of a node.
 * One compression on the fast path (message up to 55 bytes), the general path otherwise.
 */
export function electionDigestInto(node: NodeHashKey, ip: IPHashKey, out: Int32Array, offset: number): void {
  const p = node.bytes.length;
  const len = p + ip.bytes.length;
  if (len > ONE_BLOCK_MAX) {
    const msg = new Uint8Array(len);
    msg.set(node.bytes);
    msg.set(ip.bytes, p);
    sha256WordsInto(msg, out, offset);
    return;
  }
  const nw = node.words;
  const sh = ip.shifted[p & 3];
  const q = p >> 2;
  for (let i = 0; i < q; i++) block[i] = nw[i];
  // Word q may hold the last bytes of `node#` and the first of the IP.
  for (let i = q; i < 15; i++) block[i] = nw[i] | sh[i - q];
  block[15] = len * 8;
  state.set(IV);
  compress(state, block);
  for (let i = 0; i < 8; i++) out[offset + i] = state[i];
}

/** Lower-case hex of 8 digest words starting at `offset`. */
export function digestHex(words: Int32Array, offset: number): string {
  let s = '';
  for (let i = 0; i < 8; i++) s += (words[offset + i] >>> 0).toString(16).padStart(8, '0');
  return s;
}

/**
 * Lower-case hex of the digests (8 words each) in `words`, taken in the order `order`, in one pass:
 * one string of 64×order.length characters; the k-th digest of the order is
 * `hex.slice(64k, 64k + 64)`.
 */
export function digestsHex(words: Int32Array, order: Int32Array): string {
  const bytes = new Uint8Array(order.length * 32);
  const view = new DataView(bytes.buffer);
  for (let k = 0; k < order.length; k++) {
    const from = order[k] * 8;
    for (let w = 0; w < 8; w++) view.setInt32(k * 32 + w * 4, words[from + w], false);
  }
  return Buffer.from(bytes.buffer, 0, bytes.length).toString('hex');
}

/** SHA-256 hex digest of `node#ip` (convenience for tests and explanations; not the hot path). */
export function electionDigestHex(node: string, ip: string): string {
  const out = new Int32Array(8);
  electionDigestInto(nodeHashKey(node), ipHashKey(ip), out, 0);
  return digestHex(out, 0);
}

/** Negative, zero or positive as digest a (at offset i) sorts before, equal to, after digest b (at j). */
export function compareDigests(a: Int32Array, i: number, b: Int32Array, j: number): number {
  for (let k = 0; k < 8; k++) {
    const x = a[i + k] >>> 0;
    const y = b[j + k] >>> 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

let scratchKeys = new Uint32Array(1024);
let scratchKeys2 = new Uint32Array(1024);
let scratchOrder2 = new Int32Array(1024);
const radixCounts = new Int32Array(256);

/**
 * The hash order of `count` digests held in `words` (8 words each): the digest indexes sorted
 * ascending by digest bytes. An LSD radix sort (4 passes of 8 bits) on the first word, then the
 * rare runs whose first words tie are repaired with a full compare. O(count).
 */
export function hashOrderOf(words: Int32Array, count: number): Int32Array {
  if (scratchKeys.length < count) {
    scratchKeys = new Uint32Array(count * 2);
    scratchKeys2 = new Uint32Array(count * 2);
    scratchOrder2 = new Int32Array(count * 2);
  }
  // Four passes: the sorted result ends in `order` (fresh) and `keys` (scratch).
  let keys = scratchKeys;
  let order = new Int32Array(count);
  let keys2 = scratchKeys2;
  let order2 = scratchOrder2.length >= count ? scratchOrder2 : new Int32Array(count);
  for (let k = 0; k < count; k++) {
    keys[k] = words[k * 8];
    order[k] = k;
  }
  const counts = radixCounts;
  for (let shift = 0; shift < 32; shift += 8) {
    counts.fill(0);
    for (let k = 0; k < count; k++) counts[(keys[k] >>> shift) & 255]++;
    let sum = 0;
    for (let b = 0; b < 256; b++) {
      const c = counts[b];
      counts[b] = sum;
      sum += c;
    }
    for (let k = 0; k < count; k++) {
      const key = keys[k];
      const dst = counts[(key >>> shift) & 255]++;
      keys2[dst] = key;
      order2[dst] = order[k];
    }
    const tk = keys;
    keys = keys2;
    keys2 = tk;
    const to = order;
    order = order2;
    order2 = to;
  }
  for (let k = 0; k + 1 < count; ) {
    let end = k + 1;
    while (end < count && keys[end] === keys[k]) end++;
    if (end - k > 1) {
      const run = Array.from(order.subarray(k, end));
      run.sort((x, y) => compareDigests(words, x * 8, words, y * 8));
      order.set(run, k);
    }
    k = end;
  }
  return order;
}
