/**
 * memberlist v0.5.1 messages (net.go's message types and structs): one codec per message body
 * (type byte + msgpack map, §4 of memberlist-wire.md), the push/pull body (its header, node
 * states and user state) and the limits memberlist and metallb-ts put on them. The layers around
 * them are in layers.ts (compound, CRC, compress, label), packet.ts (UDP packets) and stream.ts
 * (TCP stream framing); messages.ts gathers all four. Pure: bytes in, values out; no sockets.
 */
import { ByteWriter, MsgpackError, MsgpackTruncatedError, decodeStruct, encodeStruct, field, writeStruct, type MsgpackValue } from './msgpack.ts';
import { formatIPBytes } from '../ip.ts';

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

/** `type` then what `body` writes: one message's bytes. */
export function withType(type: number, body: (w: ByteWriter) => void): Uint8Array {
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

/** A decoded stream message: push/pull, ping (fallback), ack, error, user or another type. */
export type StreamMessage = PushPull | Message;

/**
 * Reads a push/pull body from `b` (type byte at 0): header, node states, user state. Returns the
 * message and the offset after it. Throws MsgpackError (MsgpackTruncatedError when `b` ends too
 * soon) or WireError(`malformed`) for counts out of range.
 */
export function readPushPull(b: Uint8Array): { msg: PushPull; offset: number } {
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
 * Formats a raw IP (4 or 16 bytes) as text: dotted quad, RFC 5952 IPv6, IPv4-mapped IPv6 as a
 * dotted quad; '' for any other length (src/core/ip.ts formatIPBytes).
 */
export function ipToString(ip: Uint8Array): string {
  return formatIPBytes(ip);
}
export { encodeStruct };
