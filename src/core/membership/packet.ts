/**
 * memberlist v0.5.1's UDP packets (net.go sendMsg/ingestPacket/handleCommand, util.go): a message
 * (or a compound of several) wrapped in compress, CRC, encryption and label layers, and the
 * reverse with the limits that keep one datagram's decoding work bounded. Pure.
 */
import { crc32 } from 'node:zlib';
import { MsgpackTruncatedError } from './msgpack.ts';
import { decryptPayload, encryptPayload } from './crypto.ts';
import { MAX_PACKET_BYTES, MAX_PACKET_DECOMPRESSED_BYTES, MAX_PACKET_MESSAGES, MessageType, WireError, decodeMessage, type Message } from './message.ts';
import { type WireOptions, decodeCompound, decodeCompress, encodeCompress, encodeCrc, labelHeader, utf8 } from './layers.ts';

const utf8Decoder = new TextDecoder();

/**
 * Builds a UDP packet from one message (already a compound if several): compress when shorter
 * (if enabled), CRC header when `crc` (destination's PMax ≥ 5 and known), encrypt (version 1,
 * AAD = label) when a keyring exists and outgoing verification is on, label header.
 */
export function encodePacket(msg: Uint8Array, opts: WireOptions, crc: boolean): Uint8Array {
  let buf = msg;
  if (opts.enableCompression) {
    const c = encodeCompress(buf);
    if (c.length < buf.length) buf = c;
  }
  if (crc) buf = encodeCrc(buf);
  if (opts.keyring && opts.gossipVerifyOutgoing) buf = encryptPayload(opts.keyring, buf, utf8.encode(opts.label));
  const head = labelHeader(opts.label);
  if (head.length === 0) return buf;
  const out = new Uint8Array(head.length + buf.length);
  out.set(head);
  out.set(buf, head.length);
  return out;
}

function stripLabel(buf: Uint8Array, label: string): Uint8Array {
  if (buf.length >= 1 && buf[0] === MessageType.hasLabel) {
    if (buf.length < 2) throw new WireError('truncated', 'label header truncated');
    const n = buf[1]!;
    if (n === 0) throw new WireError('label', 'label header cannot be empty when present');
    if (buf.length < 2 + n) throw new WireError('truncated', 'label header truncated');
    const got = utf8Decoder.decode(buf.subarray(2, 2 + n));
    if (got !== label) throw new WireError('label', `discarding packet with unacceptable label "${got}"`);
    return buf.subarray(2 + n);
  }
  if (label !== '') throw new WireError('label', 'discarding packet without the label');
  return buf;
}

/**
 * Peels a received UDP packet into its messages (label → decrypt → CRC → compound/compress,
 * recursively). Throws WireError for a packet that must be dropped as a whole; parts of a
 * compound that fail are reported in `dropped` while the good parts are returned. Once the
 * packet's compress layers together exceed MAX_PACKET_DECOMPRESSED_BYTES (`maxUnpackBytes` when
 * smaller: the sender's decoding allowance) or its layers and messages exceed MAX_PACKET_MESSAGES,
 * decoding stops: the messages found so far are returned and one WireError('amplification') is
 * reported in `dropped`. Every byte a compress layer unpacks is charged against that allowance,
 * whether the layer then decodes or fails (a part that unpacks 60 KB and then turns out corrupt
 * spends the packet's allowance as a good one would); `unpackedBytes` is the total.
 */
export function decodePacket(packet: Uint8Array, opts: WireOptions, maxUnpackBytes = MAX_PACKET_DECOMPRESSED_BYTES): { messages: Message[]; dropped: WireError[]; unpackedBytes: number } {
  if (packet.length > MAX_PACKET_BYTES) throw new WireError('oversized', `packet of ${packet.length} bytes`);
  let buf = stripLabel(packet, opts.label);
  if (opts.keyring) {
    try {
      buf = decryptPayload(opts.keyring, buf, utf8.encode(opts.label));
    } catch (e) {
      if (opts.gossipVerifyIncoming) throw new WireError('decrypt', `decrypt packet failed: ${(e as Error).message}`);
    }
  }
  const messages: Message[] = [];
  const dropped: WireError[] = [];
  const allowance = Math.max(0, Math.min(MAX_PACKET_DECOMPRESSED_BYTES, maxUnpackBytes));
  let decompressLeft = allowance;
  let messagesLeft = MAX_PACKET_MESSAGES;
  let amplified = false;
  const dispatch = (b: Uint8Array, depth: number): void => {
    if (amplified) return;
    if (depth > 4) throw new WireError('malformed', 'nested too deeply');
    if (b.length < 1) throw new WireError('truncated', 'missing message type byte');
    if (--messagesLeft < 0) {
      amplified = true;
      throw new WireError('amplification', `more than ${MAX_PACKET_MESSAGES} messages in one packet`);
    }
    const t = b[0]!;
    if (t === MessageType.hasCrc) {
      if (b.length < 5) throw new WireError('truncated', 'truncated CRC header');
      const want = new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(1);
      const rest = b.subarray(5);
      if (crc32(rest) >>> 0 !== want) throw new WireError('crc', 'CRC mismatch');
      dispatch(rest, depth + 1);
    } else if (t === MessageType.compound) {
      const { parts, truncated } = decodeCompound(b.subarray(1));
      if (truncated > 0) dropped.push(new WireError('truncated', `compound request had ${truncated} truncated messages`));
      for (const p of parts) {
        if (amplified) break;
        try {
          dispatch(p, depth + 1);
        } catch (e) {
          if (e instanceof WireError) dropped.push(e);
          else throw e;
        }
      }
    } else if (t === MessageType.compress) {
      let msg: Uint8Array;
      try {
        msg = decodeCompress(b.subarray(1), decompressLeft, 'amplification').msg;
      } catch (e) {
        if (e instanceof MsgpackTruncatedError) throw new WireError('truncated', 'compress: truncated');
        if (e instanceof WireError) decompressLeft -= e.unpackedBytes;
        if (e instanceof WireError && e.reason === 'amplification') amplified = true;
        throw e;
      }
      decompressLeft -= msg.length;
      dispatch(msg, depth + 1);
    } else {
      messages.push(decodeMessage(b));
    }
  };
  try {
    dispatch(buf, 0);
  } catch (e) {
    // the packet's outermost layer failed: the whole packet is dropped, as before, unless
    // an amplification cut it short after good messages (those are kept)
    if (e instanceof WireError) e.unpackedBytes = allowance - decompressLeft;
    if (!(e instanceof WireError && e.reason === 'amplification')) throw e;
    dropped.push(e);
  }
  return { messages, dropped, unpackedBytes: allowance - decompressLeft };
}
