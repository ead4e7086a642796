/**
 * The msgpack subset memberlist v0.5.1 speaks (go-msgpack v2.1.1, `MsgpackHandle` zero config,
 * `WriteExt` off). Encoding is byte-identical to Go's: struct maps with byte-wise sorted keys,
 * strings and byte slices both as the *str* family without str8 (fixstr, str16 0xda, str32 0xdb),
 * unsigned Go fields in the smallest unsigned form, signed Go `int` fields in positive fixint
 * then the signed forms (0xd1/0xd2/0xd3), nil byte slices as 0xc0.
 *
 * Decoding is lenient like Go's decoder (any key order, str8 and bin accepted, unknown keys kept,
 * any integer family) and keeps every str/bin value as raw bytes: the caller converts text fields.
 * Malformed or truncated input throws `MsgpackError`; nothing is read past `end`.
 */

/** A malformed or truncated msgpack value (the packet carrying it is dropped and counted). */
export class MsgpackError extends Error {
  override name = 'MsgpackError';
}

/** The input ended inside a value: on a stream, more bytes may complete it. */
export class MsgpackTruncatedError extends MsgpackError {
  override name = 'MsgpackTruncatedError';
}

/**
 * A field value to encode: `{ str }` text, `{ bytes }` a byte slice (null = Go nil), `{ uint }` an
 * unsigned Go integer, `{ int }` a signed Go `int`, `{ bool }`.
 */
export type MsgpackField = { readonly str: string } | { readonly bytes: Uint8Array | null } | { readonly uint: number } | { readonly int: number } | { readonly bool: boolean };

/** A decoded value: raw bytes for str/bin, numbers for integers (bigint beyond 2^53), maps as Map. */
export type MsgpackValue = null | boolean | number | bigint | Uint8Array | MsgpackValue[] | Map<string, MsgpackValue>;

const te = new TextEncoder();
const td = new TextDecoder('utf-8', { fatal: false });

/** Growable byte writer used by the encoders. */
export class ByteWriter {
  private buf = new Uint8Array(256);
  length = 0;
  private ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }
  u8(v: number): void {
    this.ensure(1);
    this.buf[this.length++] = v & 0xff;
  }
  u16(v: number): void {
    this.ensure(2);
    this.buf[this.length++] = (v >>> 8) & 0xff;
    this.buf[this.length++] = v & 0xff;
  }
  u32(v: number): void {
    this.ensure(4);
    this.buf[this.length++] = (v >>> 24) & 0xff;
    this.buf[this.length++] = (v >>> 16) & 0xff;
    this.buf[this.length++] = (v >>> 8) & 0xff;
    this.buf[this.length++] = v & 0xff;
  }
  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  /** The written bytes (a copy). */
  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

function writeRaw(w: ByteWriter, b: Uint8Array): void {
  const n = b.length;
  if (n < 32) w.u8(0xa0 | n);
  else if (n <= 0xffff) {
    w.u8(0xda);
    w.u16(n);
  } else {
    w.u8(0xdb);
    w.u32(n);
  }
  w.bytes(b);
}

function writeUint(w: ByteWriter, v: number): void {
  if (!Number.isInteger(v) || v < 0) throw new RangeError(`msgpack: ${v} is not an unsigned integer`);
  if (v < 128) w.u8(v);
  else if (v <= 0xff) {
    w.u8(0xcc);
    w.u8(v);
  } else if (v <= 0xffff) {
    w.u8(0xcd);
    w.u16(v);
  } else if (v <= 0xffffffff) {
    w.u8(0xce);
    w.u32(v);
  } else {
    w.u8(0xcf);
    w.u32(Math.floor(v / 2 ** 32));
    w.u32(v >>> 0);
  }
}

function writeInt(w: ByteWriter, v: number): void {
  if (!Number.isInteger(v)) throw new RangeError(`msgpack: ${v} is not an integer`);
  if (v >= 0 && v < 128) w.u8(v);
  else if (v < 0 && v >= -32) w.u8(v & 0xff);
  else if (v >= -128 && v <= 127) {
    w.u8(0xd0);
    w.u8(v);
  } else if (v >= -32768 && v <= 32767) {
    w.u8(0xd1);
    w.u16(v);
  } else if (v >= -(2 ** 31) && v < 2 ** 31) {
    w.u8(0xd2);
    w.u32(v);
  } else {
    w.u8(0xd3);
    const big = BigInt.asUintN(64, BigInt(v));
    w.u32(Number(big >> 32n));
    w.u32(Number(big & 0xffffffffn));
  }
}

/**
 * Writes a Go struct as memberlist does: a map of the given fields (omit-empty ones already left
 * out by the caller) with keys in byte-wise sorted order.
 */
export function writeStruct(w: ByteWriter, fields: Record<string, MsgpackField>): void {
  const keys = Object.keys(fields).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const n = keys.length;
  if (n < 16) w.u8(0x80 | n);
  else if (n <= 0xffff) {
    w.u8(0xde);
    w.u16(n);
  } else {
    w.u8(0xdf);
    w.u32(n);
  }
  for (const k of keys) {
    writeRaw(w, te.encode(k));
    const f = fields[k]!;
    if ('str' in f) writeRaw(w, te.encode(f.str));
    else if ('bytes' in f) {
      if (f.bytes === null) w.u8(0xc0);
      else writeRaw(w, f.bytes);
    } else if ('uint' in f) writeUint(w, f.uint);
    else if ('int' in f) writeInt(w, f.int);
    else w.u8(f.bool ? 0xc3 : 0xc2);
  }
}

/** Encodes one struct to bytes (see `writeStruct`). */
export function encodeStruct(fields: Record<string, MsgpackField>): Uint8Array {
  const w = new ByteWriter();
  writeStruct(w, fields);
  return w.result();
}

/** Limits that keep a hostile peer from making the decoder allocate or recurse without bound. */
const MAX_DEPTH = 8;
const MAX_ITEMS = 1 << 16;

/**
 * Reads one msgpack value from `buf` at `offset`. Returns the value and the offset after it.
 * Throws `MsgpackError` on truncation, unsupported types (ext, floats are accepted and returned
 * as numbers), nesting deeper than 8, or maps/arrays longer than 65 536 entries.
 */
export function decodeValue(buf: Uint8Array, offset = 0, depth = 0): { value: MsgpackValue; offset: number } {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let p = offset;
  const need = (n: number): void => {
    if (p + n > buf.length) throw new MsgpackTruncatedError('msgpack: truncated');
  };
  const raw = (n: number): Uint8Array => {
    need(n);
    const out = buf.subarray(p, p + n);
    p += n;
    return out;
  };
  if (depth > MAX_DEPTH) throw new MsgpackError('msgpack: nested too deeply');
  need(1);
  const t = buf[p++]!;
  const mapOf = (n: number): Map<string, MsgpackValue> => {
    if (n > MAX_ITEMS) throw new MsgpackError('msgpack: map too long');
    const m = new Map<string, MsgpackValue>();
    for (let i = 0; i < n; i++) {
      const k = decodeValue(buf, p, depth + 1);
      p = k.offset;
      const v = decodeValue(buf, p, depth + 1);
      p = v.offset;
      const key = k.value instanceof Uint8Array ? td.decode(k.value) : String(k.value);
      m.set(key, v.value);
    }
    return m;
  };
  const arrOf = (n: number): MsgpackValue[] => {
    if (n > MAX_ITEMS) throw new MsgpackError('msgpack: array too long');
    const a: MsgpackValue[] = [];
    for (let i = 0; i < n; i++) {
      const v = decodeValue(buf, p, depth + 1);
      p = v.offset;
      a.push(v.value);
    }
    return a;
  };
  let value: MsgpackValue;
  if (t < 0x80) value = t;
  else if (t >= 0xe0) value = t - 256;
  else if ((t & 0xf0) === 0x80) value = mapOf(t & 0x0f);
  else if ((t & 0xf0) === 0x90) value = arrOf(t & 0x0f);
  else if ((t & 0xe0) === 0xa0) value = raw(t & 0x1f);
  else {
    switch (t) {
      case 0xc0:
        value = null;
        break;
      case 0xc2:
        value = false;
        break;
      case 0xc3:
        value = true;
        break;
      case 0xc4:
      case 0xd9:
        need(1);
        value = raw(buf[p++]!);
        break;
      case 0xc5:
      case 0xda:
        need(2);
        {
          const n = view.getUint16(p);
          p += 2;
          value = raw(n);
        }
        break;
      case 0xc6:
      case 0xdb:
        need(4);
        {
          const n = view.getUint32(p);
          p += 4;
          value = raw(n);
        }
        break;
      case 0xca:
        need(4);
        value = view.getFloat32(p);
        p += 4;
        break;
      case 0xcb:
        need(8);
        value = view.getFloat64(p);
        p += 8;
        break;
      case 0xcc:
        need(1);
        value = buf[p]!;
        p += 1;
        break;
      case 0xcd:
        need(2);
        value = view.getUint16(p);
        p += 2;
        break;
      case 0xce:
        need(4);
        value = view.getUint32(p);
        p += 4;
        break;
      case 0xcf:
        need(8);
        {
          const v = view.getBigUint64(p);
          p += 8;
          value = v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
        }
        break;
      case 0xd0:
        need(1);
        value = view.getInt8(p);
        p += 1;
        break;
      case 0xd1:
        need(2);
        value = view.getInt16(p);
        p += 2;
        break;
      case 0xd2:
        need(4);
        value = view.getInt32(p);
        p += 4;
        break;
      case 0xd3:
        need(8);
        {
          const v = view.getBigInt64(p);
          p += 8;
          value = v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
        }
        break;
      case 0xdc:
        need(2);
        {
          const n = view.getUint16(p);
          p += 2;
          value = arrOf(n);
        }
        break;
      case 0xdd:
        need(4);
        {
          const n = view.getUint32(p);
          p += 4;
          value = arrOf(n);
        }
        break;
      case 0xde:
        need(2);
        {
          const n = view.getUint16(p);
          p += 2;
          value = mapOf(n);
        }
        break;
      case 0xdf:
        need(4);
        {
          const n = view.getUint32(p);
          p += 4;
          value = mapOf(n);
        }
        break;
      default:
        throw new MsgpackError(`msgpack: unsupported type byte 0x${t.toString(16)}`);
    }
  }
  return { value, offset: p };
}

/** Reads one struct (a map) at `offset`; throws `MsgpackError` when the value is not a map. */
export function decodeStruct(buf: Uint8Array, offset = 0): { fields: Map<string, MsgpackValue>; offset: number } {
  const { value, offset: end } = decodeValue(buf, offset);
  if (!(value instanceof Map)) throw new MsgpackError('msgpack: expected a map');
  return { fields: value, offset: end };
}

/** Field accessors with Go's decoding leniency: missing → zero value; wrong type → MsgpackError. */
export const field = {
  bytes(m: Map<string, MsgpackValue>, k: string): Uint8Array | null {
    const v = m.get(k);
    if (v === undefined || v === null) return null;
    if (v instanceof Uint8Array) return v.slice();
    throw new MsgpackError(`msgpack: ${k} is not bytes`);
  },
  str(m: Map<string, MsgpackValue>, k: string): string {
    const v = m.get(k);
    if (v === undefined || v === null) return '';
    if (v instanceof Uint8Array) return td.decode(v);
    throw new MsgpackError(`msgpack: ${k} is not a string`);
  },
  uint(m: Map<string, MsgpackValue>, k: string, max: number): number {
    const v = m.get(k);
    if (v === undefined || v === null) return 0;
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max) return v;
    throw new MsgpackError(`msgpack: ${k} is not an unsigned integer up to ${max}`);
  },
  int(m: Map<string, MsgpackValue>, k: string): number {
    const v = m.get(k);
    if (v === undefined || v === null) return 0;
    if (typeof v === 'number' && Number.isInteger(v)) return v;
    throw new MsgpackError(`msgpack: ${k} is not an integer`);
  },
  bool(m: Map<string, MsgpackValue>, k: string): boolean {
    const v = m.get(k);
    if (v === undefined || v === null) return false;
    if (typeof v === 'boolean') return v;
    throw new MsgpackError(`msgpack: ${k} is not a bool`);
  },
};
