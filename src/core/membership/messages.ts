/**
 * memberlist v0.5.1 messages and their layering (net.go, util.go, security.go): one codec per
 * message body (type byte + msgpack map, §4 of memberlist-wire.md), compound, CRC, compress,
 * encryption and label layers for UDP packets, and the stream framing of TCP exchanges
 * (push/pull, fallback ping, error). Pure: bytes in, values out; no sockets.
 */
import { crc32 } from 'node:zlib';
import { ByteWriter, MsgpackError, MsgpackTruncatedError, decodeStruct, encodeStruct, field, writeStruct, type MsgpackValue } from './msgpack.ts';
import { LzwError, LzwLimitError, lzwDecode, lzwEncode } from './lzw.ts';
import { type Keyring, decryptPayload, encryptPayload } from './crypto.ts';
import { formatIPBytes } from '../ip.ts';

/** One UTF-8 encoder and decoder for labels (not a new one per packet). */
const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** Message type bytes (memberlist's append-only list). */
export const MessageType = {
  ping: 0,
  indirectPing: 1,
  ack: 2,
  suspect: 3,
  alive: 4,
  dead: 5,
  pushPull: 6,
  compound: 7,
  user: 8,
  compress: 9,
  encrypt: 10,
  nack: 11,
  hasCrc: 12,
  err: 13,
  hasLabel: 244,
} as const;

/** memberlist member states as carried in push/pull (`State` int: the index). */
export type MemberStateName = 'alive' | 'suspect' | 'dead' | 'left';
export const memberStateNames: readonly MemberStateName[] = ['alive', 'suspect', 'dead', 'left'];

/** The version vector memberlist v0.5.1 as configured by MetalLB sends: PMin 1, PMax 5, PCur 2, no delegate. */
export const METALLB_VSN: readonly number[] = [1, 5, 2, 0, 0, 0];

/** Largest UDP datagram read (memberlist's udpPacketBufSize), bytes. */
export const MAX_PACKET_BYTES = 65536;
/**
 * Bytes all compress layers of one UDP datagram may decompress to together: 64 KiB. memberlist
 * builds a packet of at most UDPBufferSize (1400) bytes before compressing it (a ping or ack with
 * piggybacked broadcasts, or a gossip compound, util.go makeCompoundMessage / state.go gossip), so
 * legitimate packets decompress to under 1.5 KB; more is an amplification attack (compress layers
 * nested in compounds). The rest of the datagram is dropped, counted `amplification`.
 */
export const MAX_PACKET_DECOMPRESSED_BYTES = 64 * 1024;
/**
 * Messages (leaves and compound parts) one UDP datagram may carry: 512. memberlist's packets are
 * at most 1400 bytes before compression and the smallest message takes 10+ bytes plus its 2-byte
 * compound length, so a legitimate packet carries under 120. Beyond this the rest of the datagram
 * is dropped, counted `amplification` (once per datagram).
 */
export const MAX_PACKET_MESSAGES = 512;
/** memberlist's MetaMaxSize: an alive message or node state whose Meta is longer is dropped. */
export const META_MAX_BYTES = 512;
/**
 * Longest node name (UTF-8 bytes) accepted in alive, suspect and dead messages (Node, From) and
 * push/pull node states: 512 (Kubernetes node names are at most 253). metallb-ts's addition (memberlist
 * has no bound): with META_MAX_BYTES it keeps every gossip message well under UDPBufferSize, so
 * none can sit in the broadcast queue unsendable.
 */
export const NAME_MAX_BYTES = 512;
/** Largest stream message accepted (memberlist's maxPushStateBytes for encrypted streams), bytes. */
export const MAX_STREAM_BYTES = 20 * 1024 * 1024;
/**
 * Largest expansion accepted for a compressed stream message: STREAM_MAX_LZW_RATIO × its compressed
 * bytes, at least STREAM_LZW_FLOOR_BYTES, at most MAX_STREAM_BYTES (streamDecompressLimit). Go's
 * LZW (12-bit codes) can expand up to ~2,560:1, but a push/pull's node states do not compress
 * nearly that well: measured with Go's encoder, 5,000 nodes each with 512 identical Meta bytes
 * (MetaMaxSize) compress 48:1, without Meta (MetalLB's) 10:1. 256:1 leaves a 5× margin; user
 * state, which MetalLB does not use (no delegate), is the only thing that could exceed it. A
 * ~16 KB stream can then cost at most a 4 MiB decompression rather than 20 MB.
 */
export const STREAM_MAX_LZW_RATIO = 256;
export const STREAM_LZW_FLOOR_BYTES = 1 << 20;
/** The decompressed size a stream's compress layer of `compressedBytes` may reach. */
export function streamDecompressLimit(compressedBytes: number): number {
  return Math.min(MAX_STREAM_BYTES, Math.max(STREAM_LZW_FLOOR_BYTES, STREAM_MAX_LZW_RATIO * compressedBytes));
}
/** Largest push/pull node count accepted. */
export const MAX_PUSH_NODES = 1 << 16;

export interface Ping {
  readonly type: 'ping';
  readonly seqNo: number;
  readonly node: string;
  readonly sourceAddr?: Uint8Array | null;
  readonly sourcePort?: number;
  readonly sourceNode?: string;
}
export interface IndirectPing {
  readonly type: 'indirectPing';
  readonly seqNo: number;
  readonly target: Uint8Array | null;
  readonly port: number;
  readonly node: string;
  readonly nack: boolean;
  readonly sourceAddr?: Uint8Array | null;
  readonly sourcePort?: number;
  readonly sourceNode?: string;
}
export interface Ack {
  readonly type: 'ack';
  readonly seqNo: number;
  readonly payload: Uint8Array | null;
}
export interface Nack {
  readonly type: 'nack';
  readonly seqNo: number;
}
export interface Suspect {
  readonly type: 'suspect';
  readonly incarnation: number;
  readonly node: string;
  readonly from: string;
}
export interface Alive {
  readonly type: 'alive';
  readonly incarnation: number;
  readonly node: string;
  readonly addr: Uint8Array;
  readonly port: number;
  readonly meta: Uint8Array | null;
  readonly vsn: Uint8Array | null;
}
export interface Dead {
  readonly type: 'dead';
  readonly incarnation: number;
  readonly node: string;
  readonly from: string;
}
export interface ErrorResp {
  readonly type: 'err';
  readonly error: string;
}
export interface User {
  readonly type: 'user';
  readonly data: Uint8Array;
}
/** One message a member handles (what compound/compress/CRC/encryption layers carry). */
export type Message = Ping | IndirectPing | Ack | Nack | Suspect | Alive | Dead | ErrorResp | User;

/** One member's state in a push/pull exchange. */
export interface PushNodeState {
  readonly name: string;
  readonly addr: Uint8Array;
  readonly port: number;
  readonly meta: Uint8Array | null;
  readonly incarnation: number;
  readonly state: number;
  readonly vsn: Uint8Array | null;
}
/** A push/pull message: `join` flag, the sender's whole member table, opaque user state. */
export interface PushPull {
  readonly type: 'pushPull';
  readonly join: boolean;
  readonly nodes: readonly PushNodeState[];
  readonly userState: Uint8Array;
}

/** A packet or stream that could not be understood; `reason` is a short counter label. */
export class WireError extends Error {
  override name = 'WireError';
  readonly reason: string;
  /** Bytes a compress layer unpacked before this error (decodeCompress): work charged like a success's. */
  unpackedBytes = 0;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
  }
}

function withType(type: number, body: (w: ByteWriter) => void): Uint8Array {
  const w = new ByteWriter();
  w.u8(type);
  body(w);
  return w.result();
}

function sourceFields(m: { sourceAddr?: Uint8Array | null; sourcePort?: number; sourceNode?: string }): Record<string, { bytes: Uint8Array } | { uint: number } | { str: string }> {
  const f: Record<string, { bytes: Uint8Array } | { uint: number } | { str: string }> = {};
  if (m.sourceAddr && m.sourceAddr.length > 0) f.SourceAddr = { bytes: m.sourceAddr };
  if (m.sourcePort) f.SourcePort = { uint: m.sourcePort };
  if (m.sourceNode) f.SourceNode = { str: m.sourceNode };
  return f;
}

/** Encodes one message: type byte + msgpack body, byte-identical to memberlist v0.5.1. */
export function encodeMessage(m: Message): Uint8Array {
  switch (m.type) {
    case 'ping':
      return withType(MessageType.ping, (w) => writeStruct(w, { SeqNo: { uint: m.seqNo }, Node: { str: m.node }, ...sourceFields(m) }));
    case 'indirectPing':
      return withType(MessageType.indirectPing, (w) =>
        writeStruct(w, { SeqNo: { uint: m.seqNo }, Target: { bytes: m.target }, Port: { uint: m.port }, Node: { str: m.node }, Nack: { bool: m.nack }, ...sourceFields(m) }),
      );
    case 'ack':
      return withType(MessageType.ack, (w) => writeStruct(w, { SeqNo: { uint: m.seqNo }, Payload: { bytes: m.payload } }));
    case 'nack':
      return withType(MessageType.nack, (w) => writeStruct(w, { SeqNo: { uint: m.seqNo } }));
    case 'suspect':
      return withType(MessageType.suspect, (w) => writeStruct(w, { Incarnation: { uint: m.incarnation }, Node: { str: m.node }, From: { str: m.from } }));
    case 'dead':
      return withType(MessageType.dead, (w) => writeStruct(w, { Incarnation: { uint: m.incarnation }, Node: { str: m.node }, From: { str: m.from } }));
    case 'alive':
      return withType(MessageType.alive, (w) =>
        writeStruct(w, { Incarnation: { uint: m.incarnation }, Node: { str: m.node }, Addr: { bytes: m.addr }, Port: { uint: m.port }, Meta: { bytes: m.meta }, Vsn: { bytes: m.vsn } }),
      );
    case 'err':
      return withType(MessageType.err, (w) => writeStruct(w, { Error: { str: m.error } }));
    case 'user':
      return withType(MessageType.user, (w) => w.bytes(m.data));
  }
}

const U16 = 0xffff;
const U32 = 0xffffffff;

const KNOWN_MESSAGE_TYPES: ReadonlySet<number> = new Set([
  MessageType.ping,
  MessageType.indirectPing,
  MessageType.ack,
  MessageType.nack,
  MessageType.suspect,
  MessageType.dead,
  MessageType.alive,
  MessageType.err,
]);

const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/**
 * Why a node with this name and meta must be dropped (alive/suspect/dead messages, push/pull node
 * states): 'oversizedMeta' beyond META_MAX_BYTES (memberlist's aliveNode drops those too),
 * 'oversizedName' beyond NAME_MAX_BYTES; null when acceptable.
 */
export function nodeLimitReason(name: string, meta: Uint8Array | null, from = ''): 'oversizedMeta' | 'oversizedName' | null {
  if (meta && meta.length > META_MAX_BYTES) return 'oversizedMeta';
  if (name.length > NAME_MAX_BYTES || utf8Bytes(name) > NAME_MAX_BYTES) return 'oversizedName';
  if (from.length > NAME_MAX_BYTES || utf8Bytes(from) > NAME_MAX_BYTES) return 'oversizedName';
  return null;
}

/**
 * Decodes one message body of a simple type (not compound/compress/CRC). Throws WireError:
 * `unknownType` (before reading the body), `malformed`, and for alive/suspect/dead messages
 * `oversizedMeta` / `oversizedName` (nodeLimitReason).
 */
export function decodeMessage(buf: Uint8Array): Message {
  const m = decodeMessageBody(buf);
  if (m.type === 'alive' || m.type === 'suspect' || m.type === 'dead') {
    const why = nodeLimitReason(m.node, m.type === 'alive' ? m.meta : null, m.type === 'alive' ? '' : m.from);
    if (why) throw new WireError(why, `${m.type} message: ${why === 'oversizedMeta' ? `meta over ${META_MAX_BYTES}` : `name over ${NAME_MAX_BYTES}`} bytes`);
  }
  return m;
}

/** decodeMessage without the node limits. */
function decodeMessageBody(buf: Uint8Array): Message {
  if (buf.length < 1) throw new WireError('truncated', 'empty message');
  const t = buf[0]!;
  if (t === MessageType.user) return { type: 'user', data: buf.slice(1) };
  if (!KNOWN_MESSAGE_TYPES.has(t)) throw new WireError('unknownType', `unknown message type ${t}`);
  let f: Map<string, MsgpackValue>;
  try {
    f = decodeStruct(buf, 1).fields;
  } catch (e) {
    if (e instanceof MsgpackError) throw new WireError('malformed', `message type ${t}: ${e.message}`);
    throw e;
  }
  try {
    switch (t) {
      case MessageType.ping:
        return {
          type: 'ping',
          seqNo: field.uint(f, 'SeqNo', U32),
          node: field.str(f, 'Node'),
          sourceAddr: field.bytes(f, 'SourceAddr'),
          sourcePort: field.uint(f, 'SourcePort', U16),
          sourceNode: field.str(f, 'SourceNode'),
        };
      case MessageType.indirectPing:
        return {
          type: 'indirectPing',
          seqNo: field.uint(f, 'SeqNo', U32),
          target: field.bytes(f, 'Target'),
          port: field.uint(f, 'Port', U16),
          node: field.str(f, 'Node'),
          nack: field.bool(f, 'Nack'),
          sourceAddr: field.bytes(f, 'SourceAddr'),
          sourcePort: field.uint(f, 'SourcePort', U16),
          sourceNode: field.str(f, 'SourceNode'),
        };
      case MessageType.ack:
        return { type: 'ack', seqNo: field.uint(f, 'SeqNo', U32), payload: field.bytes(f, 'Payload') };
      case MessageType.nack:
        return { type: 'nack', seqNo: field.uint(f, 'SeqNo', U32) };
      case MessageType.suspect:
        return { type: 'suspect', incarnation: field.uint(f, 'Incarnation', U32), node: field.str(f, 'Node'), from: field.str(f, 'From') };
      case MessageType.dead:
        return { type: 'dead', incarnation: field.uint(f, 'Incarnation', U32), node: field.str(f, 'Node'), from: field.str(f, 'From') };
      case MessageType.alive:
        return {
          type: 'alive',
          incarnation: field.uint(f, 'Incarnation', U32),
          node: field.str(f, 'Node'),
          addr: field.bytes(f, 'Addr') ?? new Uint8Array(0),
          port: field.uint(f, 'Port', U16),
          meta: field.bytes(f, 'Meta'),
          vsn: field.bytes(f, 'Vsn'),
        };
      case MessageType.err:
        return { type: 'err', error: field.str(f, 'Error') };
      default:
        throw new WireError('unknownType', `unknown message type ${t}`);
    }
  } catch (e) {
    if (e instanceof MsgpackError) throw new WireError('malformed', `message type ${t}: ${e.message}`);
    throw e;
  }
}

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

function writeNodeState(w: ByteWriter, n: PushNodeState): void {
  writeStruct(w, { Name: { str: n.name }, Addr: { bytes: n.addr }, Port: { uint: n.port }, Meta: { bytes: n.meta }, Incarnation: { uint: n.incarnation }, State: { int: n.state }, Vsn: { bytes: n.vsn } });
}

/** Encodes a push/pull message (type 6, header, node states, user state), uncompressed, unencrypted. */
export function encodePushPull(pp: Omit<PushPull, 'type'>): Uint8Array {
  const w = new ByteWriter();
  w.u8(MessageType.pushPull);
  writeStruct(w, { Join: { bool: pp.join }, Nodes: { int: pp.nodes.length }, UserStateLen: { int: pp.userState.length } });
  for (const n of pp.nodes) writeNodeState(w, n);
  w.bytes(pp.userState);
  return w.result();
}

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

/** A decoded stream message: push/pull, ping (fallback), ack, error, user or another type. */
export type StreamMessage = PushPull | Message;

/** Thrown when a stream buffer ends before its message does: read more bytes and retry. */
export class IncompleteError extends Error {
  override name = 'IncompleteError';
}

function readPushPull(b: Uint8Array): { msg: PushPull; offset: number } {
  const { fields: h, offset: afterHeader } = decodeStruct(b, 1);
  const nodes = field.int(h, 'Nodes');
  const userLen = field.int(h, 'UserStateLen');
  if (nodes < 0 || nodes > MAX_PUSH_NODES) throw new WireError('malformed', `push/pull: ${nodes} nodes`);
  if (userLen < 0 || userLen > MAX_STREAM_BYTES) throw new WireError('malformed', `push/pull: user state ${userLen} bytes`);
  let p = afterHeader;
  const states: PushNodeState[] = [];
  for (let i = 0; i < nodes; i++) {
    const { fields: f, offset } = decodeStruct(b, p);
    p = offset;
    states.push({
      name: field.str(f, 'Name'),
      addr: field.bytes(f, 'Addr') ?? new Uint8Array(0),
      port: field.uint(f, 'Port', U16),
      meta: field.bytes(f, 'Meta'),
      incarnation: field.uint(f, 'Incarnation', U32),
      state: field.int(f, 'State'),
      vsn: field.bytes(f, 'Vsn'),
    });
  }
  if (p + userLen > b.length) throw new MsgpackTruncatedError('push/pull: user state truncated');
  const userState = b.slice(p, p + userLen);
  return { msg: { type: 'pushPull', join: field.bool(h, 'Join'), nodes: states, userState }, offset: p + userLen };
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
 * Formats a raw IP (4 or 16 bytes) as text: dotted quad, RFC 5952 IPv6, IPv4-mapped IPv6 as a
 * dotted quad; '' for any other length (src/core/ip.ts formatIPBytes).
 */
export function ipToString(ip: Uint8Array): string {
  return formatIPBytes(ip);
}

export { encodeStruct };
