// Hostile memberlist datagrams for the hardening tests (issue #15): the decompression
// amplification packet and random garbage.
import { randomBytes } from 'node:crypto';
import { lzwEncode } from '../../../src/core/membership/lzw.ts';
import { MessageType, encodeCompound, encodeStruct } from '../../../src/core/membership/messages.ts';

/**
 * One compress part (type 9, `{Algo: 0, Buf}`) whose LZW stream unpacks `unpackBytes` zero bytes
 * and then ends without its end code: a decoder unpacks (almost) all of it before failing.
 */
export function failingCompressPart(unpackBytes: number): Uint8Array {
  const lzw = lzwEncode(new Uint8Array(unpackBytes));
  const cut = lzw.subarray(0, lzw.length - 2); // the end code (and the last code's tail) removed
  const body = encodeStruct({ Algo: { uint: 0 }, Buf: { bytes: cut } });
  const out = new Uint8Array(1 + body.length);
  out[0] = MessageType.compress;
  out.set(body, 1);
  return out;
}

/**
 * The amplification datagram of issue #15: a compound of as many failing compress parts as fit in
 * `maxBytes` (default 65,000: one UDP datagram), each unpacking about `unpackBytes` (default
 * 64,000) before it fails. Without charging failed decompressions, one such packet of ~150 parts
 * unpacked about 10 MB. Returns the packet and its number of parts.
 */
export function amplificationPacket(maxBytes = 65_000, unpackBytes = 64_000): { packet: Uint8Array; parts: number } {
  const part = failingCompressPart(unpackBytes);
  const n = Math.min(255, Math.floor((maxBytes - 2) / (part.length + 2)));
  return { packet: encodeCompound(Array(n).fill(part)), parts: n };
}

/** Random bytes of a random length in [minBytes, maxBytes]. */
export function garbagePacket(minBytes = 1, maxBytes = 65_000): Uint8Array {
  const n = minBytes + Math.floor(Math.random() * (maxBytes - minBytes + 1));
  return new Uint8Array(randomBytes(n));
}
