/**
 * memberlist v0.5.1's stream framing (net.go sendAndReceiveState/readStream/encryptLocalState,
 * label.go): the label header once per connection, then each message compressed and encrypted
 * in a `10 · uint32 length` envelope; push/pull, fallback ping, ack and error ride on it. Pure:
 * `encodeStream` writes what a connection sends, `readStream` reads what one received so far.
 */
import { decryptPayload, encryptPayload } from './crypto.ts';
import { MAX_STREAM_BYTES, MessageType, WireError, decodeMessage, readPushPull, streamDecompressLimit, type StreamMessage } from './message.ts';
import { MsgpackError, MsgpackTruncatedError, decodeStruct } from './msgpack.ts';
import { type WireOptions, decodeCompress, encodeCompress, labelHeader, utf8 } from './layers.ts';

/**
 * Builds one stream message as memberlist writes it: compress always (if enabled), then the
 * encrypt envelope (type 10, uint32 BE length, blob; AAD = those 5 bytes + label) when a keyring
 * exists and outgoing verification is on. The label header (once per connection) is separate:
 * `labelHeader`.
 */
export function encodeStreamMessage(msg: Uint8Array, opts: WireOptions): Uint8Array {
  let buf = opts.enableCompression ? encodeCompress(msg) : msg;
  if (opts.keyring && opts.gossipVerifyOutgoing) {
    const len = buf.length + 29;
    const head = new Uint8Array(5);
    head[0] = MessageType.encrypt;
    new DataView(head.buffer).setUint32(1, len);
    const label = utf8.encode(opts.label);
    const aad = new Uint8Array(5 + label.length);
    aad.set(head);
    aad.set(label, 5);
    const blob = encryptPayload(opts.keyring, buf, aad);
    const out = new Uint8Array(5 + blob.length);
    out.set(head);
    out.set(blob, 5);
    buf = out;
  }
  return buf;
}

/**
 * The whole length of the stream message at the start of `buf` (after the label header) when the
 * encoding gives it up front: an encrypted message's `10 · uint32 BE length` header, so 5 +
 * length. null when not known yet (fewer than 5 bytes of an encrypted message) or not given by
 * the encoding (plain and compressed messages carry no total length: only decoding finds the end).
 */
export function streamMessageLength(buf: Uint8Array): number | null {
  if (buf.length < 5 || buf[0] !== MessageType.encrypt) return null;
  return 5 + new DataView(buf.buffer, buf.byteOffset, buf.byteLength).getUint32(1);
}

/** Thrown when a stream buffer ends before its message does: read more bytes and retry. */
export class IncompleteError extends Error {
  override name = 'IncompleteError';
}

/**
 * Reads one stream message from the start of `buf` (after the connection's label header).
 * Returns the message, the bytes consumed and the bytes its compress layer unpacked. Throws
 * `IncompleteError` when more bytes are needed, `WireError` when the stream is bad (decrypt
 * failure, unencrypted while encryption is enforced, malformed, oversized; its `unpackedBytes`
 * tells what a failed decompression cost). The compress layer may unpack at most
 * streamDecompressLimit of its input, and at most `maxUnpackBytes` (the sender's decoding
 * allowance) when that is smaller: beyond, WireError('rateLimited').
 */
export function decodeStreamMessage(buf: Uint8Array, opts: WireOptions, maxUnpackBytes = Infinity): { msg: StreamMessage; consumed: number; unpackedBytes: number } {
  if (buf.length < 1) throw new IncompleteError('empty');
  let b = buf;
  let consumed: number | null = null;
  if (b[0] === MessageType.encrypt) {
    if (!opts.keyring) throw new WireError('decrypt', 'remote state is encrypted and encryption is not configured');
    if (b.length < 5) throw new IncompleteError('encrypt header');
    const len = new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(1);
    if (len > MAX_STREAM_BYTES) throw new WireError('oversized', `remote node state is larger than limit (${len})`);
    if (b.length < 5 + len) throw new IncompleteError('encrypted body');
    const label = utf8.encode(opts.label);
    const aad = new Uint8Array(5 + label.length);
    aad.set(b.subarray(0, 5));
    aad.set(label, 5);
    try {
      b = decryptPayload(opts.keyring, b.subarray(5, 5 + len), aad);
    } catch (e) {
      throw new WireError('decrypt', `failed to decrypt remote state: ${(e as Error).message}`);
    }
    consumed = 5 + len;
  } else if (opts.keyring && opts.gossipVerifyIncoming) {
    throw new WireError('decrypt', 'encryption is configured but remote state is not encrypted');
  }
  let unpackedBytes = 0;
  try {
    if (b[0] === MessageType.compress) {
      let allowanceBinds = false;
      let decoded: { msg: Uint8Array; offset: number };
      try {
        decoded = decodeCompress(b.subarray(1), (n) => {
          const cap = streamDecompressLimit(n);
          allowanceBinds = maxUnpackBytes < cap;
          return Math.max(0, Math.min(cap, maxUnpackBytes));
        });
      } catch (e) {
        if (!(allowanceBinds && e instanceof WireError && e.reason === 'oversized')) throw e;
        const limited = new WireError('rateLimited', `${e.message} (the sender's decoding allowance)`);
        limited.unpackedBytes = e.unpackedBytes;
        throw limited;
      }
      consumed ??= 1 + decoded.offset;
      unpackedBytes = decoded.msg.length;
      b = decoded.msg;
    }
    if (b.length < 1) throw new WireError('truncated', 'empty stream message');
    if (b[0] === MessageType.pushPull) {
      const { msg, offset } = readPushPull(b);
      return { msg, consumed: consumed ?? offset, unpackedBytes };
    }
    if (b[0] === MessageType.user) throw new WireError('unsupported', 'user stream messages are not supported');
    const { offset } = decodeStruct(b, 1);
    return { msg: decodeMessage(b.subarray(0, offset)), consumed: consumed ?? offset, unpackedBytes };
  } catch (e) {
    if (e instanceof MsgpackTruncatedError) {
      if (consumed !== null) throw new WireError('truncated', 'stream message truncated');
      throw new IncompleteError(e.message);
    }
    if (e instanceof MsgpackError) throw new WireError('malformed', e.message);
    throw e;
  }
}

/**
 * The bytes a connection sends for one message (memberlist's sendAndReceiveState /
 * sendPingAndWaitForAck): the label header first when `withLabel` (once per connection, by the
 * side that dials), then encodeStreamMessage (compressed when enabled, then encrypted).
 */
export function encodeStream(msg: Uint8Array, opts: WireOptions, withLabel: boolean): Uint8Array {
  const body = encodeStreamMessage(msg, opts);
  const head = withLabel ? labelHeader(opts.label) : new Uint8Array(0);
  if (head.length === 0) return body;
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/**
 * The label header at the start of a connection's bytes (memberlist's
 * RemoveLabelHeaderFromStream): how many bytes it takes (0 when there is none and `label` is
 * empty), or null while `buf` ends inside it (or is empty). Throws WireError('label') for an empty
 * label, another label, or none while `label` is set.
 */
export function readStreamLabel(buf: Uint8Array, label: string): number | null {
  if (buf.length === 0) return null;
  if (buf[0] === MessageType.hasLabel) {
    if (buf.length < 2 || buf.length < 2 + buf[1]!) return null;
    const n = buf[1]!;
    const got = utf8Decoder.decode(buf.subarray(2, 2 + n));
    if (n === 0 || got !== label) throw new WireError('label', `unacceptable stream label "${got}"`);
    return 2 + n;
  }
  if (label !== '') throw new WireError('label', 'stream without the label');
  return 0;
}

const utf8Decoder = new TextDecoder();

/** What the bytes a connection received so far hold. */
export type StreamRead =
  /** More bytes are needed; `labelBytes` is the label header's length once it is whole (null before). */
  | { readonly kind: 'incomplete'; readonly labelBytes: number | null }
  /** The connection's first message: `consumed` bytes after the `labelBytes` of the label header; `unpackedBytes` its compress layer unpacked. */
  | { readonly kind: 'message'; readonly msg: StreamMessage; readonly labelBytes: number; readonly consumed: number; readonly unpackedBytes: number };

/**
 * Reads the first message of a connection from the bytes it received so far, from its first
 * byte: the label header (readStreamLabel), then one stream message (decodeStreamMessage, with
 * `maxUnpackBytes` as its decoding allowance). Bytes after the message are left alone. Pure and
 * total over any bytes: it returns `incomplete` or `message`, or throws WireError (its `reason`
 * the counter label) and nothing else.
 */
export function readStream(buf: Uint8Array, opts: WireOptions, maxUnpackBytes = Infinity): StreamRead {
  const labelBytes = readStreamLabel(buf, opts.label);
  if (labelBytes === null) return { kind: 'incomplete', labelBytes: null };
  if (buf.length === labelBytes) return { kind: 'incomplete', labelBytes };
  try {
    const { msg, consumed, unpackedBytes } = decodeStreamMessage(buf.subarray(labelBytes), opts, maxUnpackBytes);
    return { kind: 'message', msg, labelBytes, consumed, unpackedBytes };
  } catch (e) {
    if (e instanceof IncompleteError) return { kind: 'incomplete', labelBytes };
    throw e;
  }
}
