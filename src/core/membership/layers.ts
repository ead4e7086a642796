/**
 * The layers memberlist v0.5.1 wraps messages in (util.go, net.go): compound (several messages in
 * one packet), CRC, compress (LZW) and the label header, and the options a member sends and checks
 * them with. Pure.
 */
import { crc32 } from 'node:zlib';
import { ByteWriter, MsgpackError, MsgpackTruncatedError, decodeStruct, field, writeStruct, type MsgpackValue } from './msgpack.ts';
import { LzwError, LzwLimitError, lzwDecode, lzwEncode } from './lzw.ts';
import type { Keyring } from './crypto.ts';
import { MessageType, WireError, withType } from './message.ts';

/** One UTF-8 encoder for labels (not a new one per packet). */
export const utf8 = new TextEncoder();

/** Compound (type 7): count byte, uint16 BE length per part, parts. At most 255 parts. */
export function encodeCompound(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length > 255) throw new RangeError('compound: at most 255 parts');
  const w = new ByteWriter();
  w.u8(MessageType.compound);
  w.u8(parts.length);
  for (const p of parts) w.u16(p.length);
  for (const p of parts) w.bytes(p);
  return w.result();
}

/** Splits a compound body (after the type byte); `truncated` counts parts lost to a short packet. */
export function decodeCompound(body: Uint8Array): { parts: Uint8Array[]; truncated: number } {
  if (body.length < 1) throw new WireError('truncated', 'missing compound length byte');
  const n = body[0]!;
  let p = 1;
  if (body.length < 1 + n * 2) throw new WireError('truncated', 'truncated compound length slice');
  const lengths: number[] = [];
  for (let i = 0; i < n; i++) {
    lengths.push((body[p]! << 8) | body[p + 1]!);
    p += 2;
  }
  const parts: Uint8Array[] = [];
  let truncated = 0;
  for (let i = 0; i < n; i++) {
    const len = lengths[i]!;
    if (p + len > body.length) {
      truncated = n - i;
      break;
    }
    parts.push(body.subarray(p, p + len));
    p += len;
  }
  return { parts, truncated };
}

/** CRC layer: type 12, CRC-32 (IEEE) big-endian of `msg`, then `msg`. */
export function encodeCrc(msg: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + msg.length);
  out[0] = MessageType.hasCrc;
  new DataView(out.buffer).setUint32(1, crc32(msg) >>> 0);
  out.set(msg, 5);
  return out;
}

/** Compress layer: type 9 + `{Algo: 0, Buf: lzw(msg)}`. */
export function encodeCompress(msg: Uint8Array): Uint8Array {
  return withType(MessageType.compress, (w) => writeStruct(w, { Algo: { uint: 0 }, Buf: { bytes: lzwEncode(msg) } }));
}

/**
 * Reads a compress body (after the type byte) and returns the decompressed message. Output beyond
 * `maxOutputBytes` throws WireError(`limitReason`); a corrupt LZW stream WireError('malformed').
 * Either carries `unpackedBytes`, the bytes decompressed before the failure, so a caller charges
 * a failed decompression as much as a successful one.
 */
export function decodeCompress(body: Uint8Array, maxOutputBytes: number | ((compressedBytes: number) => number), limitReason = 'oversized'): { msg: Uint8Array; offset: number } {
  let f: Map<string, MsgpackValue>;
  let offset: number;
  try {
    ({ fields: f, offset } = decodeStruct(body, 0));
  } catch (e) {
    if (e instanceof MsgpackTruncatedError) throw e;
    if (e instanceof MsgpackError) throw new WireError('malformed', `compress: ${e.message}`);
    throw e;
  }
  let algo: number;
  let buf: Uint8Array | null;
  try {
    algo = field.uint(f, 'Algo', 255);
    buf = field.bytes(f, 'Buf');
  } catch (e) {
    throw new WireError('malformed', `compress: ${(e as Error).message}`);
  }
  if (algo !== 0) throw new WireError('malformed', `compress: unknown algorithm ${algo}`);
  try {
    const input = buf ?? new Uint8Array(0);
    return { msg: lzwDecode(input, typeof maxOutputBytes === 'number' ? maxOutputBytes : maxOutputBytes(input.length)), offset };
  } catch (e) {
    const err = new WireError(e instanceof LzwLimitError ? limitReason : 'malformed', `compress: ${(e as Error).message}`);
    if (e instanceof LzwError) err.unpackedBytes = e.outputBytes;
    throw err;
  }
}

/** Label header `244 · len · label` (empty label: nothing). */
export function labelHeader(label: string): Uint8Array {
  if (label === '') return new Uint8Array(0);
  const b = utf8.encode(label);
  if (b.length > 255) throw new RangeError('label: at most 255 bytes');
  const out = new Uint8Array(2 + b.length);
  out[0] = MessageType.hasLabel;
  out[1] = b.length;
  out.set(b, 2);
  return out;
}

/** Packet/stream options of a member: keyring (null = plaintext), label, compression, verify flags. */
export interface WireOptions {
  readonly keyring: Keyring | null;
  readonly label: string;
  readonly enableCompression: boolean;
  readonly gossipVerifyIncoming: boolean;
  readonly gossipVerifyOutgoing: boolean;
}
