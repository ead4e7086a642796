/**
 * The memberlist member's shell: one UDP socket and one TCP listener on the same address and
 * port (memberlist's NetTransport), timers, and the stream exchanges (join/push-pull, fallback
 * ping). All protocol decisions are in src/core/membership/swim.ts; this file moves bytes
 * (src/core/membership/messages.ts encodes them) and counts what it drops.
 *
 * Malformed, truncated, oversized, undecryptable or mislabelled packets and streams are dropped
 * and counted in `stats().dropped` by reason; nothing a peer sends throws out of a handler.
 *
 * Load limits, as memberlist v0.5.1's net.go: ping, indirect ping, ack and nack are handled as
 * they arrive; alive, suspect and dead messages wait in the handoff queues
 * (src/core/membership/handoff.ts, HandoffQueueDepth each, dropped when full:
 * `dropped.handoffQueueFull`) drained in setImmediate batches, so a gossip flood cannot delay
 * acks. Inbound push/pulls hold one of maxPushPullRequests (128) slots from when the message type
 * is known until the socket closes; the 128th concurrent one is refused (`dropped.pushPullLimit`).
 * Every inbound stream has an absolute deadline of TCPTimeout from accept (memberlist's
 * SetDeadline; a slow-loris cannot renew it), and at most MAX_INBOUND_STREAMS (512) are open at
 * once (metallb-ts's addition: memberlist has no such bound), the excess closed on accept
 * (`dropped.streamLimit`). Each stream may buffer MAX_STREAM_BYTES (memberlist's limit), and all
 * inbound streams together INBOUND_STREAM_BUDGET_BYTES (metallb-ts's addition): when a chunk would
 * take the total over, the streams holding the most bytes are closed until it fits
 * (`dropped.streamBudget`). A stream is decoded only when that can make progress (see readMessage),
 * so a large or trickled stream costs linear, not quadratic, work.
 *
 * Decoding work per source address (metallb-ts's addition; memberlist trusts its peers): a token
 * bucket (src/core/membership/decode-allowance.ts, 1 MiB/s, 2 MiB burst) charged with each
 * datagram's bytes plus what its compress layers unpacked, failed or not, and with each stream
 * message's unpacked bytes; a source whose bucket is empty has its datagrams and stream messages
 * dropped before decoding (`dropped.rateLimited`), and what it has left bounds what its next one
 * may unpack. Each drop reason is logged at most once a minute (DROP_LOG_INTERVAL_MS) with the
 * count since the last line; `stats().handlerCpuMaxMs` is the most CPU one handler took.
 */
import dgram from 'node:dgram';
import { closeSync, constants as fsConstants, fstatSync, openSync, readFileSync, readSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import type { Membership, MembershipListener } from '../core/membership/types.ts';
import { LAN_CONFIG, parseMemberlistConfigFile, type MemberlistConfig, type MemberlistFileResult } from '../core/membership/config.ts';
import { HandoffQueue, handoffRoute } from '../core/membership/handoff.ts';
import { DecodeAllowance, type DecodeAllowanceLimits } from '../core/membership/decode-allowance.ts';
import { InputError } from '../core/errors.ts';
import { parseIPBytes } from '../core/ip.ts';
import { ENCRYPT_OVERHEAD_BYTES, Keyring, metallbSecretKey } from '../core/membership/crypto.ts';
import {
  IncompleteError,
  MAX_STREAM_BYTES,
  MessageType,
  WireError,
  decodePacket,
  decodeStreamMessage,
  encodeMessage,
  encodePacket,
  encodePushPull,
  encodeStreamMessage,
  ipToString,
  labelHeader,
  nodeLimitReason,
  streamMessageLength,
  type Message,
  type PushNodeState,
  type StreamMessage,
  type WireOptions,
} from '../core/membership/messages.ts';
import {
  createSwimState,
  leavePending,
  liveMembers,
  localPushState,
  nextWakeMs,
  step,
  verifyProtocol,
  type Address,
  type Effect,
  type MemberEntry,
  type SwimEvent,
  type SwimState,
} from '../core/membership/swim.ts';

/** Options of a memberlist member (MetalLB: name = node name, bind = pod IP, port 7946). */
export interface MemberlistOptions {
  readonly name: string;
  readonly bindAddr: string;
  /** 0 picks a free port (tests). */
  readonly bindPort: number;
  readonly config?: MemberlistConfig;
  /** The encryption key(s), primary first; null/absent = unencrypted. */
  readonly keys?: readonly Uint8Array[] | null;
  readonly label?: string;
  /** Starting incarnation (tests of restarts); memberlist starts at 1. */
  readonly incarnation?: number;
  readonly seed?: number;
  readonly log?: (message: string) => void;
  /** Decoding work each source address may cause (default DEFAULT_DECODE_LIMITS: 1 MiB/s, 2 MiB burst). */
  readonly decodeLimits?: DecodeAllowanceLimits;
}

/** A drop reason is logged at most once per this many ms (with the count since the last line). */
export const DROP_LOG_INTERVAL_MS = 60_000;

/**
 * What each drop reason means, for the log line and the README. Reasons not listed are logged
 * with their name only.
 */
export const DROP_REASON_HINTS: Readonly<Record<string, string>> = {
  decrypt: 'cannot be decrypted, or is not encrypted while a key is set: a wrong or missing memberlist key?',
  label: 'carries another label (or none)',
  malformed: 'not memberlist wire format',
  truncated: 'ends before its message does',
  crc: 'fails its CRC',
  unknownType: 'an unknown message type',
  oversized: 'larger than memberlist accepts',
  oversizedMeta: 'a node meta larger than 512 bytes',
  oversizedName: 'a node name longer than 512 bytes',
  amplification: 'unpacks beyond 64 KiB or 512 messages in one packet',
  rateLimited: 'its source address exceeded its decoding allowance',
  streamLimit: 'one inbound stream too many (512 open)',
  streamBudget: 'inbound streams buffer more than 64 MiB together',
  pushPullLimit: 'one push/pull too many in flight (128)',
  timeout: 'a stream that did not finish in time',
};

/** Reasons logged elsewhere (aggregated already), not by the once-a-minute drop log. */
const DROPS_LOGGED_ELSEWHERE = new Set(['handoffQueueFull', 'internalError']);

/**
 * memberlist's maxPushPullRequests (net.go): an inbound push/pull that would be the 128th in
 * flight is refused (memberlist: `numConcurrent >= maxPushPullRequests`), so at most 127 run.
 */
export const MAX_PUSH_PULL_REQUESTS = 128;

/**
 * Inbound TCP streams open at once (any type, before their type is known too); more are closed
 * on accept. 4 × MAX_PUSH_PULL_REQUESTS: room for the push/pulls plus fallback pings, while a peer
 * opening thousands of trickling connections holds at most 512 sockets and their buffers, each
 * closed TCPTimeout after accept. metallb-ts's addition; memberlist accepts without bound.
 */
export const MAX_INBOUND_STREAMS = 4 * MAX_PUSH_PULL_REQUESTS;

/**
 * Bytes all inbound streams together may buffer before their message is decoded: 64 MiB.
 * memberlist's per-stream limit (MAX_STREAM_BYTES, its maxPushStateBytes: 20 MB) alone would let
 * MAX_INBOUND_STREAMS hostile streams hold about 10 GB until their TCPTimeout deadline, while a
 * real push/pull is a few KB (a 50-member cluster's table) and at most 127 run at once. When a
 * chunk would take the total over, the inbound stream holding the most bytes is closed (the
 * receiving stream itself when it would be the largest) until the chunk fits, counted as
 * `dropped.streamBudget`: flooding streams cannot crowd out a small push/pull or fallback ping.
 * What is counted is the capacity of the streams' buffers, allocated only for bytes received
 * (never for a length an encrypted stream's header announces), growing by doubling but never past
 * the budget left; it is released when the stream's message is decoded or it fails or closes.
 * Streams this
 * member opens (its own push/pulls and fallback pings) are bounded by MAX_STREAM_BYTES only.
 * metallb-ts's addition; memberlist has no such bound.
 */
export const INBOUND_STREAM_BUDGET_BYTES = 64 * 1024 * 1024;

/**
 * Pause without new bytes (ms) after which a stream whose length is unknown is decoded again
 * (a whole message that arrived in pieces too small to trigger STREAM_DECODE_GROWTH); the pause
 * doubles after each such attempt that finds the message incomplete, so a peer trickling bytes
 * gets about log2(TCPTimeout / 20 ms) of these attempts.
 */
export const STREAM_IDLE_DECODE_MS = 20;

/**
 * A stream whose length is unknown is decoded on its first bytes, then again once its buffered
 * bytes have grown by this factor since the last attempt that found it incomplete: the attempts
 * over a stream of n bytes cost O(n) together, however small its chunks.
 */
export const STREAM_DECODE_GROWTH = 1.5;

/**
 * The longest delay Node's timers take: 2^31 − 1 ms (about 24.8 days). A longer one (a Go duration
 * such as TCPTimeout "720h", which Go's timers take) would make Node warn (TimeoutOverflowWarning)
 * and fire after 1 ms, closing every stream at once.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * A delay (ms, from a config duration) as Node's setTimeout can take it: at most
 * MAX_TIMER_DELAY_MS (a timer that far out is, as in Go, effectively never), at least 1 ms (Node's
 * own floor; NaN also gives 1 ms, as Node would).
 */
export function timerDelayMs(ms: number): number {
  return ms >= MAX_TIMER_DELAY_MS ? MAX_TIMER_DELAY_MS : ms > 1 ? ms : 1;
}

/** Bytes one stream may buffer: a message of MAX_STREAM_BYTES plus room for its framing. */
const STREAM_READ_LIMIT = MAX_STREAM_BYTES + 1024;

/** An inbound stream's share of INBOUND_STREAM_BUDGET_BYTES; `evict` closes it (synchronously releasing `bytes`). */
interface BudgetHolder {
  bytes: number;
  evict(): void;
}

/** Handoff messages handled per setImmediate turn, so UDP pings are read between batches. */
const HANDOFF_BATCH = 64;

/** One row of the member table (`metallb-ts members`, the debug endpoint). */
export interface MemberView {
  readonly name: string;
  readonly addr: string;
  readonly port: number;
  readonly state: 'alive' | 'suspect' | 'dead' | 'left';
  readonly incarnation: number;
}

/**
 * Counters of the member (packets/streams in and out, stream decode attempts, drops by reason)
 * and gauges. Drop reasons include the wire errors (`malformed`, `truncated`, `decrypt`,
 * `amplification`, …), `rateLimited`, `handoffQueueFull`, `pushPullLimit`, `streamLimit`,
 * `streamBudget`, `unsupportedType` (an err message in a packet).
 */
export interface MemberlistStats {
  packetsIn: number;
  packetsOut: number;
  streamsIn: number;
  streamsOut: number;
  dropped: Record<string, number>;
  /** Inbound push/pulls holding a slot now (≤ MAX_PUSH_PULL_REQUESTS − 1). */
  pushPullsInFlight: number;
  /** Inbound streams open now (≤ MAX_INBOUND_STREAMS). */
  inboundStreams: number;
  /** Buffer capacity (bytes) inbound streams hold now, not yet decoded (≤ INBOUND_STREAM_BUDGET_BYTES). */
  inboundBufferedBytes: number;
  /** Bytes inbound streams have received and not yet decoded (≤ inboundBufferedBytes). */
  inboundReceivedBytes: number;
  /** Stream message decode attempts (in and out), each over the bytes buffered so far. */
  streamDecodeAttempts: number;
  /**
   * The most CPU time (ms, this thread's, so not the time the scheduler kept the process waiting)
   * one packet or stream-data handler took since `takeHandlerCpuMax()` last read it: the longest
   * the member's decoding held the event loop.
   */
  handlerCpuMaxMs: number;
}

/**
 * Parses an IP literal to its raw bytes (4 for IPv4, 16 for IPv6, IPv4-mapped IPv6 included;
 * src/core/ip.ts parseIPBytes). Throws RangeError for anything else.
 */
export function ipToBytes(ip: string): Uint8Array {
  const b = parseIPBytes(ip);
  if (!b) throw new RangeError(`not an IP address: ${ip}`);
  return b;
}

function view(m: MemberEntry): MemberView {
  return { name: m.name, addr: ipToString(m.addr), port: m.port, state: m.state, incarnation: m.incarnation };
}

/**
 * A memberlist v0.5.1-compatible member. `start()` binds; `join()` push/pulls with the given
 * addresses; `leave()` gossips the graceful leave; `stop()` leaves (1 s, as MetalLB) and closes;
 * `kill()` closes without leaving (tests: a crash). Implements the speaker's `Membership`.
 */
export class MemberlistMember implements Membership {
  readonly name: string;
  readonly config: MemberlistConfig;
  private readonly wire: WireOptions;
  private readonly opts: MemberlistOptions;
  private udp: dgram.Socket | null = null;
  private tcp: net.Server | null = null;
  private state: SwimState | null = null;
  private timer: NodeJS.Timeout | null = null;
  private listeners: MembershipListener[] = [];
  private lastAlive = '';
  private lastLiveEpoch = -1;
  private pushPullsIn = 0;
  private inboundStreams = 0;
  /** Sum of `budgetHolders[].bytes`. */
  private inboundBuffered = 0;
  /** Bytes received by inbound streams not yet decoded (inboundReceivedBytes). */
  private inboundReceived = 0;
  private readonly budgetHolders = new Set<BudgetHolder>();
  private stopped = false;
  private readonly sockets = new Set<net.Socket>();
  private readonly handoff: HandoffQueue<{ msg: Message; from: Address }>;
  private draining: NodeJS.Immediate | null = null;
  private handoffDropsLogged = 0;
  private internalErrorLogged = false;
  private readonly allowance: DecodeAllowance;
  /** Per reason: when it was last logged and its count then. */
  private readonly dropLogged = new Map<string, { atMs: number; count: number }>();
  private handlerCpuMaxMs = 0;
  port = 0;
  readonly counters: Omit<MemberlistStats, 'pushPullsInFlight' | 'inboundStreams' | 'inboundBufferedBytes' | 'inboundReceivedBytes' | 'handlerCpuMaxMs'> = {
    packetsIn: 0,
    packetsOut: 0,
    streamsIn: 0,
    streamsOut: 0,
    dropped: {},
    streamDecodeAttempts: 0,
  };

  constructor(opts: MemberlistOptions) {
    this.opts = opts;
    this.name = opts.name;
    this.config = opts.config ?? LAN_CONFIG;
    const keys = opts.keys && opts.keys.length > 0 ? new Keyring(opts.keys) : null;
    this.wire = {
      keyring: keys,
      label: opts.label ?? '',
      enableCompression: this.config.enableCompression,
      gossipVerifyIncoming: this.config.gossipVerifyIncoming,
      gossipVerifyOutgoing: this.config.gossipVerifyOutgoing,
    };
    this.handoff = new HandoffQueue(this.config.handoffQueueDepth);
    this.allowance = new DecodeAllowance(opts.decodeLimits);
  }

  private log(message: string): void {
    this.opts.log?.(message);
  }

  /**
   * Counts a dropped packet or stream by reason and logs it, at most once per reason per
   * DROP_LOG_INTERVAL_MS, with how many were dropped since the last line and the last source.
   */
  private drop(reason: string, from?: string): void {
    const count = (this.counters.dropped[reason] ?? 0) + 1;
    this.counters.dropped[reason] = count;
    if (DROPS_LOGGED_ELSEWHERE.has(reason)) return;
    const now = Date.now();
    const last = this.dropLogged.get(reason);
    if (last && now - last.atMs < DROP_LOG_INTERVAL_MS) return;
    this.dropLogged.set(reason, { atMs: now, count });
    const n = count - (last?.count ?? 0);
    const hint = DROP_REASON_HINTS[reason];
    this.log(
      `memberlist: dropped ${n === 1 ? 'a packet or stream' : `${n} packets or streams`} (reason ${reason}${hint ? `: ${hint}` : ''})${from ? `, the last from ${from}` : ''}${last ? ` since ${new Date(last.atMs).toISOString()}` : ''}; this reason is logged at most once a minute, all are counted in metallb_speaker_memberlist_dropped_total`,
    );
  }

  /** Binds UDP and TCP on bindAddr:bindPort (same port), then starts the timers. */
  async start(): Promise<void> {
    const tcp = net.createServer((c) => this.guard('stream accept', () => this.onStream(c)));
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(this.opts.bindPort, this.opts.bindAddr, () => resolve());
    });
    tcp.on('error', (e) => this.log(`tcp listener: ${e.message}`));
    this.tcp = tcp;
    this.port = (tcp.address() as net.AddressInfo).port;
    const udp = dgram.createSocket({ type: net.isIPv6(this.opts.bindAddr) ? 'udp6' : 'udp4' });
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(this.port, this.opts.bindAddr, () => resolve());
    }).catch((e: Error) => {
      tcp.close();
      throw new Error(`memberlist: cannot bind udp ${this.opts.bindAddr}:${this.port}: ${e.message}`);
    });
    udp.on('error', (e) => this.log(`udp socket: ${e.message}`));
    udp.on('message', (buf, rinfo) => this.receivePacket(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength), { host: rinfo.address, port: rinfo.port }));
    this.udp = udp;
    const overhead = this.wire.keyring && this.wire.gossipVerifyOutgoing ? ENCRYPT_OVERHEAD_BYTES : 0;
    this.state = createSwimState(
      this.config,
      { name: this.name, addr: ipToBytes(this.opts.bindAddr), port: this.port },
      Date.now(),
      this.opts.seed ?? (Math.random() * 2 ** 32) >>> 0,
      overhead,
      this.opts.incarnation ?? 1,
    );
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped || !this.state) return;
    if (this.timer) clearTimeout(this.timer);
    // at most 1 s ahead whatever the configured intervals (nextWakeMs may be Infinity: every timer off)
    const delay = timerDelayMs(Math.min(1000, nextWakeMs(this.state) - Date.now()));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.guard('timer', () => this.apply({ type: 'tick' }));
      if (!this.timer) this.schedule(); // re-armed even when the tick threw
    }, delay);
    this.timer.unref();
  }

  private apply(event: SwimEvent): void {
    this.applyAll([event]);
  }

  /** Steps through the events in order, then notifies listeners and re-arms the timer once. */
  private applyAll(events: readonly SwimEvent[]): void {
    if (!this.state || this.stopped || events.length === 0) return;
    for (const event of events) {
      const { state, effects } = step(this.state, event, Date.now());
      this.state = state;
      for (const e of effects) this.effect(e);
      if (this.stopped) return;
    }
    this.checkAlive();
    this.schedule();
  }

  private effect(e: Effect): void {
    switch (e.kind) {
      case 'packet':
        this.sendPacket(e.to, encodePacket(e.payload, this.wire, e.crc));
        return;
      case 'tcpPing':
        void this.tcpPing(e.to, e.node, e.seqNo, timerDelayMs(e.deadlineMs - Date.now())).then((ok) => this.guard('tcp ping result', () => this.apply({ type: 'tcpPingResult', seqNo: e.seqNo, ok })));
        return;
      case 'pushPull':
        void this.pushPull(e.to, false).catch((err: Error) => this.log(`push/pull with ${e.to.host}:${e.to.port} failed: ${err.message}`));
        return;
      case 'notify':
        this.log(
          `member ${e.member.name} ${e.event === 'join' ? 'joined' : e.event === 'leave' ? (e.member.state === 'left' ? 'left' : 'is dead') : `is ${e.member.state}`} (incarnation ${e.member.incarnation})`,
        );
        return;
      case 'log':
        this.log(e.message);
        return;
    }
  }

  /**
   * Sends one datagram. dgram's send throws synchronously for some destinations (port 0 or out of
   * range: ERR_SOCKET_BAD_PORT; a closed socket) and reports others to the callback: both are
   * counted `dropped.sendError`, neither throws.
   */
  private sendPacket(to: Address, buf: Uint8Array): void {
    if (!this.udp) return;
    this.counters.packetsOut++;
    try {
      this.udp.send(buf, to.port, to.host, (err) => {
        if (err) this.drop('sendError');
      });
    } catch {
      this.drop('sendError');
    }
  }

  /**
   * Runs a socket or timer handler: an exception it throws (a bug; bad input is counted where it
   * is read) is counted `dropped.internalError` and logged (the first time only), never thrown
   * into the event loop, which would end the process; `onError` then cleans up (closes a stream).
   */
  private guard(where: string, fn: () => void, onError?: () => void): void {
    const cpu = process.threadCpuUsage();
    try {
      fn();
    } catch (e) {
      this.drop('internalError');
      try {
        onError?.();
      } catch {
        // best effort (closing a socket)
      }
      if (!this.internalErrorLogged) {
        this.internalErrorLogged = true;
        this.log(`memberlist: internal error in ${where} (counted as dropped.internalError; later ones are not logged): ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      }
    } finally {
      const used = process.threadCpuUsage(cpu);
      const ms = (used.user + used.system) / 1000;
      if (ms > this.handlerCpuMaxMs) this.handlerCpuMaxMs = ms;
    }
  }

  /** handlerCpuMaxMs, then reset to 0 (a scrape reads the maximum since the last one). */
  takeHandlerCpuMax(): number {
    const ms = this.handlerCpuMaxMs;
    this.handlerCpuMaxMs = 0;
    return ms;
  }

  /**
   * The UDP socket's message handler (public so tests can deliver many datagrams within one
   * event-loop turn): decodes `buf` (the datagram's bytes) as memberlist's packetListen/ingestPacket
   * do, answers ping/indirect ping/ack/nack at once and queues alive/suspect/dead/user messages
   * in the handoff queues (memberlist's handleCommand). Never throws for bad input: drops count.
   */
  receivePacket(buf: Uint8Array, from: Address): void {
    this.guard('packet handler', () => this.handlePacket(buf, from));
  }

  private handlePacket(buf: Uint8Array, from: Address): void {
    if (!this.state || this.stopped) return;
    this.counters.packetsIn++;
    const now = Date.now();
    const allowance = this.allowance.available(from.host, now);
    if (allowance <= 0) {
      this.drop('rateLimited', from.host);
      return;
    }
    let decoded: ReturnType<typeof decodePacket>;
    try {
      decoded = decodePacket(buf, this.wire, allowance);
    } catch (e) {
      if (e instanceof WireError) {
        this.allowance.charge(from.host, buf.length + e.unpackedBytes, now);
        this.drop(e.reason, from.host);
        return;
      }
      throw e;
    }
    this.allowance.charge(from.host, buf.length + decoded.unpackedBytes, now);
    for (const d of decoded.dropped) this.drop(d.reason, from.host);
    const inline: SwimEvent[] = [];
    let queued = false;
    for (const msg of decoded.messages) {
      const route = handoffRoute(msg.type);
      if (route === 'inline') inline.push({ type: 'message', msg, from });
      else if (route === 'unsupported') this.drop('unsupportedType');
      else if (this.handoff.push({ msg, from }, route) === 'dropped') this.drop('handoffQueueFull');
      else queued = true;
    }
    this.applyAll(inline);
    if (queued && !this.draining) this.draining = setImmediate(() => this.guard('handoff', () => this.drainHandoff()));
  }

  /** memberlist's packetHandler: up to HANDOFF_BATCH queued messages, newest alive first; again next turn if more wait. */
  private drainHandoff(): void {
    this.draining = null;
    const dropped = this.counters.dropped.handoffQueueFull ?? 0;
    if (dropped > this.handoffDropsLogged) {
      this.log(`handler queue full, dropped ${dropped - this.handoffDropsLogged} alive/suspect/dead messages (HandoffQueueDepth ${this.handoff.depth})`);
      this.handoffDropsLogged = dropped;
    }
    const batch: SwimEvent[] = [];
    for (let i = 0; i < HANDOFF_BATCH; i++) {
      const h = this.handoff.next();
      if (!h) break;
      if (h.msg.type !== 'user') batch.push({ type: 'message', msg: h.msg, from: h.from });
    }
    if (this.handoff.size > 0 && !this.stopped) this.draining = setImmediate(() => this.guard('handoff', () => this.drainHandoff()));
    this.applyAll(batch);
  }

  /**
   * A push/pull's node states without those whose Meta exceeds META_MAX_BYTES (memberlist's
   * aliveNode drops them too) or whose name exceeds NAME_MAX_BYTES: each counted
   * `dropped.oversizedMeta` / `dropped.oversizedName`.
   */
  private acceptableNodes(nodes: readonly PushNodeState[]): PushNodeState[] {
    const out: PushNodeState[] = [];
    for (const n of nodes) {
      const why = nodeLimitReason(n.name, n.meta);
      if (why) this.drop(why);
      else out.push(n);
    }
    return out;
  }

  private checkAlive(): void {
    // The alive set only changes when the table's live epoch does: skip the O(n) rebuild otherwise.
    if (!this.state || this.state.liveEpoch === this.lastLiveEpoch) return;
    this.lastLiveEpoch = this.state.liveEpoch;
    const alive = this.alive();
    const key = alive.join('\n');
    if (key === this.lastAlive) return;
    this.lastAlive = key;
    for (const cb of this.listeners) cb({ alive });
  }

  // --- streams -------------------------------------------------------------------------------

  /**
   * Charges `n` more bytes of `holder` to INBOUND_STREAM_BUDGET_BYTES. While they do not fit, the
   * holder with the most bytes is evicted — `holder` itself when it would be that large (ties
   * included) — and false is returned once `holder` was. Each eviction frees a stream's bytes, so
   * the loop ends.
   */
  private chargeBudget(holder: BudgetHolder, n: number): boolean {
    while (this.inboundBuffered + n > INBOUND_STREAM_BUDGET_BYTES) {
      let largest: BudgetHolder | null = null;
      for (const h of this.budgetHolders) if (h !== holder && (!largest || h.bytes > largest.bytes)) largest = h;
      if (!largest || holder.bytes + n >= largest.bytes) {
        holder.evict();
        return false;
      }
      largest.evict();
    }
    holder.bytes += n;
    this.inboundBuffered += n;
    return true;
  }

  /**
   * Reads one stream message from a socket (after an optional label header), with a deadline.
   * `inbound` marks a stream a peer opened: its bytes count against INBOUND_STREAM_BUDGET_BYTES
   * (rejects with WireError `streamBudget` when evicted), and `inbound.onType` sees the first byte
   * after the label (the message type, or compress/encrypt) as soon as it arrives; returning a
   * reason aborts the read with WireError(reason).
   *
   * Bytes accumulate in one buffer grown geometrically (amortised linear copying). A decode is
   * attempted only when it can make progress: for an encrypted stream (its length is given up
   * front, when this member has a key) once every byte is there; otherwise on the first bytes,
   * whenever the buffered bytes have grown STREAM_DECODE_GROWTH times since the last attempt
   * that found the message incomplete, and after a pause of STREAM_IDLE_DECODE_MS without new
   * bytes (doubling after each such attempt). Attempts are counted in `streamDecodeAttempts`.
   */
  private readMessage(sock: net.Socket, timeoutMs: number, inbound?: { onType: (type: number) => string | null }): Promise<StreamMessage> {
    return new Promise((resolve, reject) => {
      let buf = new Uint8Array(0); // capacity buf.length; the stream's bytes are buf[0, size)
      let size = 0;
      let labelChecked = false;
      let onType = inbound?.onType;
      let lastTried = 0; // size at the last attempt that found the message incomplete; 0: none yet
      let idleMs = STREAM_IDLE_DECODE_MS;
      let idle: NodeJS.Timeout | null = null;
      let finished = false;
      const holder: BudgetHolder | null = inbound ? { bytes: 0, evict: () => done(new WireError('streamBudget', 'inbound stream budget exceeded')) } : null;
      if (holder) this.budgetHolders.add(holder);
      const done = (err: Error | null, msg?: StreamMessage): void => {
        if (finished) return;
        finished = true;
        clearTimeout(t);
        if (idle) clearTimeout(idle);
        if (holder) {
          this.inboundBuffered -= holder.bytes;
          this.inboundReceived -= size;
          holder.bytes = 0;
          this.budgetHolders.delete(holder);
        }
        buf = new Uint8Array(0);
        sock.off('data', onDataGuarded);
        sock.off('end', onEnd);
        sock.off('close', onEnd);
        sock.off('error', onErr);
        if (err) reject(err);
        else resolve(msg!);
      };
      const t = setTimeout(() => done(new WireError('timeout', 'stream read timed out')), timerDelayMs(timeoutMs));
      t.unref();
      const onEnd = (): void => done(new WireError('truncated', 'stream closed before a whole message'));
      const onErr = (e: Error): void => done(e);
      /**
       * Grows the buffer to hold at least `min` bytes (bytes actually received, never a length a
       * header announces): doubling, up to STREAM_READ_LIMIT and, for an inbound stream, the
       * budget left, which is charged the capacity added. False when the stream was evicted.
       */
      const grow = (min: number): boolean => {
        let capacity = Math.min(STREAM_READ_LIMIT, Math.max(min, 2 * buf.length));
        if (holder) {
          const left = INBOUND_STREAM_BUDGET_BYTES - this.inboundBuffered;
          if (capacity - buf.length > left) capacity = Math.max(min, buf.length + left);
          if (!this.chargeBudget(holder, capacity - buf.length)) return false;
        }
        const next = new Uint8Array(capacity);
        next.set(buf.subarray(0, size));
        buf = next;
        return true;
      };
      const attempt = (): void => {
        if (idle) {
          clearTimeout(idle);
          idle = null;
        }
        this.counters.streamDecodeAttempts++;
        const source = sock.remoteAddress ?? '';
        const now = Date.now();
        const allowance = this.allowance.available(source, now);
        if (allowance <= 0) return done(new WireError('rateLimited', 'the source exceeded its decoding allowance'));
        try {
          const { msg, unpackedBytes } = decodeStreamMessage(buf.subarray(0, size), this.wire, allowance);
          this.allowance.charge(source, unpackedBytes, now);
          done(null, msg);
        } catch (e) {
          if (e instanceof IncompleteError) {
            lastTried = size;
            return;
          }
          if (e instanceof WireError) this.allowance.charge(source, e.unpackedBytes, now);
          done(e instanceof Error ? e : new Error(String(e)));
        }
      };
      const onIdle = (): void => {
        idle = null;
        if (finished || size <= lastTried) return;
        idleMs *= 2;
        attempt();
      };
      // an exception out of onData (a bug) fails this stream and is counted `internalError`
      const onDataGuarded = (chunk: Buffer): void =>
        this.guard('stream data', () => {
          try {
            onData(chunk);
          } catch (e) {
            done(new WireError('internal', `internal error: ${e instanceof Error ? e.message : String(e)}`));
            throw e;
          }
        });
      const onData = (chunk: Buffer): void => {
        if (size + chunk.length > STREAM_READ_LIMIT) return done(new WireError('oversized', 'stream message too large'));
        if (size + chunk.length > buf.length && !grow(size + chunk.length)) return;
        buf.set(chunk, size);
        size += chunk.length;
        if (holder) this.inboundReceived += chunk.length;
        if (!labelChecked) {
          if (buf[0] === MessageType.hasLabel) {
            if (size < 2 || size < 2 + buf[1]!) return;
            const n = buf[1]!;
            const label = new TextDecoder().decode(buf.subarray(2, 2 + n));
            if (n === 0 || label !== this.wire.label) return done(new WireError('label', `unacceptable stream label "${label}"`));
            buf.copyWithin(0, 2 + n, size);
            size -= 2 + n;
            if (holder) this.inboundReceived -= 2 + n;
          } else if (this.wire.label !== '') return done(new WireError('label', 'stream without the label'));
          labelChecked = true;
        }
        if (size === 0) return;
        if (onType) {
          const refused = onType(buf[0]!);
          onType = undefined;
          if (refused) return done(new WireError(refused, `refused: ${refused}`));
        }
        // without a key an encrypted stream fails at once in decodeStreamMessage: no need to wait
        const needed = this.wire.keyring ? streamMessageLength(buf.subarray(0, size)) : null;
        if (needed !== null) {
          if (size >= needed || needed > STREAM_READ_LIMIT) return attempt(); // whole, or announced too large (decode says oversized)
          return; // the buffer grows as bytes arrive, not to the announced length
        }
        if (lastTried === 0 || size >= lastTried * STREAM_DECODE_GROWTH) return attempt();
        if (idle) idle.refresh();
        else {
          idle = setTimeout(onIdle, timerDelayMs(idleMs));
          idle.unref();
        }
      };
      sock.on('data', onDataGuarded);
      sock.on('end', onEnd);
      sock.on('close', onEnd);
      sock.on('error', onErr);
    });
  }

  private writeMessage(sock: net.Socket, msg: Uint8Array, withLabel: boolean): void {
    const body = encodeStreamMessage(msg, this.wire);
    const head = withLabel ? labelHeader(this.wire.label) : new Uint8Array(0);
    sock.write(head.length ? Buffer.concat([head, body]) : body);
  }

  private localPushPull(join: boolean): Uint8Array {
    return encodePushPull({ join, nodes: localPushState(this.state!), userState: new Uint8Array(0) });
  }

  private onStream(sock: net.Socket): void {
    this.counters.streamsIn++;
    sock.on('error', () => {});
    if (this.inboundStreams >= MAX_INBOUND_STREAMS) {
      this.drop('streamLimit', sock.remoteAddress);
      sock.destroy();
      return;
    }
    this.inboundStreams++;
    this.sockets.add(sock);
    // memberlist's conn.SetDeadline(now + TCPTimeout): absolute, trickling bytes do not renew it.
    // The error reaches a pending read (counted `timeout`) before the close does.
    const deadline = setTimeout(() => sock.destroy(new WireError('timeout', 'stream deadline')), timerDelayMs(this.config.tcpTimeoutMs));
    deadline.unref();
    let pushPullSlot = false;
    sock.on('close', () => {
      clearTimeout(deadline);
      this.sockets.delete(sock);
      this.inboundStreams--;
      if (pushPullSlot) this.pushPullsIn--;
    });
    // memberlist counts a push/pull from when its type is known (for a compressed or encrypted
    // stream: once decoded) until the handler is done; here until the socket closes, which the
    // peer does after reading our reply, or the deadline does.
    const takePushPullSlot = (): string | null => {
      if (pushPullSlot) return null;
      if (this.pushPullsIn + 1 >= MAX_PUSH_PULL_REQUESTS) {
        this.drop('pushPullLimit', sock.remoteAddress);
        return 'pushPullLimit';
      }
      this.pushPullsIn++;
      pushPullSlot = true;
      return null;
    };
    const onType = (type: number): string | null => (type === MessageType.pushPull ? takePushPullSlot() : null);
    void this.readMessage(sock, this.config.tcpTimeoutMs, { onType }).then(
      (msg) =>
        this.guard(
          'stream message',
          () => {
            if (!this.state || this.stopped) return sock.destroy();
            if (msg.type === 'pushPull') {
              if (takePushPullSlot()) return sock.destroy();
              this.writeMessage(sock, this.localPushPull(msg.join), false);
              sock.end();
              const err = verifyProtocol(this.state, msg.nodes);
              if (err) this.log(`push/pull from ${sock.remoteAddress}: ${err}`);
              else this.apply({ type: 'merge', nodes: this.acceptableNodes(msg.nodes) });
            } else if (msg.type === 'ping') {
              if (msg.node !== '' && msg.node !== this.name) {
                this.log(`got stream ping for unexpected node ${msg.node}`);
                return sock.end();
              }
              this.writeMessage(sock, encodeMessage({ type: 'ack', seqNo: msg.seqNo, payload: null }), false);
              sock.end();
            } else {
              this.drop('unexpectedStream');
              sock.end();
            }
          },
          () => sock.destroy(),
        ),
      (e: Error) =>
        this.guard(
          'stream error',
          () => {
            const reason = e instanceof WireError ? e.reason : 'streamError';
            if (reason === 'pushPullLimit' || reason === 'internal') return sock.destroy(); // counted when refused / as internalError
            this.drop(reason, sock.remoteAddress);
            if (reason === 'streamBudget') return sock.destroy();
            if (e instanceof WireError && e.reason !== 'timeout' && e.reason !== 'truncated' && !sock.destroyed) {
              try {
                this.writeMessage(sock, encodeMessage({ type: 'err', error: e.message }), false);
              } catch {
                // the peer is gone
              }
            }
            sock.end();
          },
          () => sock.destroy(),
        ),
    );
  }

  private dial(to: Address, timeoutMs: number): Promise<net.Socket> {
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host: to.host, port: to.port, localAddress: this.opts.bindAddr });
      const t = setTimeout(() => {
        sock.destroy();
        reject(new Error('dial timeout'));
      }, timerDelayMs(timeoutMs));
      t.unref();
      sock.once('connect', () => {
        clearTimeout(t);
        this.counters.streamsOut++;
        this.sockets.add(sock);
        sock.on('close', () => this.sockets.delete(sock));
        resolve(sock);
      });
      sock.once('error', (e) => {
        clearTimeout(t);
        reject(e);
      });
    });
  }

  /** Push/pull with one address: send our table, read theirs, merge it. Rejects on any failure. */
  async pushPull(to: Address, join: boolean): Promise<void> {
    if (!this.state) throw new Error('not started');
    const sock = await this.dial(to, this.config.tcpTimeoutMs);
    try {
      this.writeMessage(sock, this.localPushPull(join), true);
      const reply = await this.readMessage(sock, this.config.tcpTimeoutMs);
      if (reply.type === 'err') throw new Error(`remote error: ${reply.error}`);
      if (reply.type !== 'pushPull') throw new Error(`unexpected reply type ${reply.type}`);
      const err = verifyProtocol(this.state!, reply.nodes);
      if (err) throw new Error(err);
      this.apply({ type: 'merge', nodes: this.acceptableNodes(reply.nodes) });
    } finally {
      sock.destroy();
    }
  }

  private async tcpPing(to: Address, node: string, seqNo: number, timeoutMs: number): Promise<boolean> {
    try {
      const sock = await this.dial(to, timeoutMs);
      try {
        this.writeMessage(sock, encodeMessage({ type: 'ping', seqNo, node, sourceAddr: ipToBytes(this.opts.bindAddr), sourcePort: this.port, sourceNode: this.name }), true);
        const reply = await this.readMessage(sock, timeoutMs);
        return reply.type === 'ack' && reply.seqNo === seqNo;
      } finally {
        sock.destroy();
      }
    } catch {
      return false;
    }
  }

  /**
   * Joins through the given addresses (push/pull with Join set, each in turn); resolves with the
   * number that answered. Like memberlist's Join, it fails only when none did.
   */
  async join(addrs: readonly Address[]): Promise<number> {
    let ok = 0;
    const errors: string[] = [];
    for (const a of addrs) {
      try {
        await this.pushPull(a, true);
        ok++;
      } catch (e) {
        errors.push(`${a.host}:${a.port}: ${(e as Error).message}`);
      }
    }
    if (ok === 0 && addrs.length > 0) throw new Error(`memberlist join failed: ${errors.join('; ')}`);
    return ok;
  }

  /** Gossips a graceful leave (dead about itself, From = itself) and waits until sent or `timeoutMs`. */
  async leave(timeoutMs = 1000): Promise<void> {
    if (!this.state || this.stopped) return;
    this.apply({ type: 'leave' });
    const until = Date.now() + timeoutMs;
    const others = liveMembers(this.state).some((m) => m.name !== this.name);
    while (others && leavePending(this.state!) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  }

  /** Leaves (1 s, as MetalLB's speaker) and closes the sockets. Idempotent, never rejects. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    await this.leave(1000).catch(() => {});
    this.kill();
  }

  /** Closes everything without leaving (a crash, for tests). */
  kill(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.draining) clearImmediate(this.draining);
    this.draining = null;
    this.handoff.clear();
    this.udp?.close();
    this.tcp?.close();
    for (const s of this.sockets) s.destroy();
  }

  /** Names of the members `Members()` would return (alive and suspect), sorted. */
  alive(): string[] {
    return this.state ? liveMembers(this.state).map((m) => m.name) : [];
  }

  onChange(cb: MembershipListener): void {
    this.listeners.push(cb);
  }

  /** Every member known, dead and left included, by name. */
  members(): MemberView[] {
    return this.state ? [...this.state.members.values()].map(view).sort((a, b) => (a.name < b.name ? -1 : 1)) : [];
  }

  /** A copy of the counters. */
  stats(): MemberlistStats {
    return {
      ...this.counters,
      dropped: { ...this.counters.dropped },
      pushPullsInFlight: this.pushPullsIn,
      inboundStreams: this.inboundStreams,
      inboundBufferedBytes: this.inboundBuffered,
      inboundReceivedBytes: this.inboundReceived,
      handlerCpuMaxMs: this.handlerCpuMaxMs,
    };
  }
}

/**
 * The memberlist key as MetalLB v0.16.1's speaker gets it: the file `secretkey` under
 * `--ml-secret-key-path`, read as is (no trimming; a trailing newline is part of the secret),
 * then `metallbSecretKey`. Returns null for an empty secret (MetalLB then runs unencrypted and
 * warns). Throws (MetalLB exits 1) when the file cannot be read.
 */
export function readMemberlistKey(secretKeyPath: string): Uint8Array | null {
  const secret = new Uint8Array(readFileSync(join(secretKeyPath, 'secretkey')));
  return secret.length === 0 ? null : metallbSecretKey(secret);
}

/** MetalLB turns memberlist on only when both `--ml-bindaddr` and `--ml-labels` are set. */
export function memberlistEnabled(bindAddr: string | undefined, labels: string | undefined): boolean {
  return Boolean(bindAddr) && Boolean(labels);
}

/** The largest memberlist config file read: 1 MiB (MetalLB's has 19 short fields: a few hundred bytes). */
export const MAX_MEMBERLIST_CONFIG_BYTES = 1024 * 1024;

function fileKind(st: Stats): string {
  return st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a FIFO' : st.isCharacterDevice() ? 'a character device' : st.isBlockDevice() ? 'a block device' : st.isSocket() ? 'a socket' : 'not a regular file';
}

/**
 * MetalLB's optional memberlist config file (speakerlist.go tryToLoadMemberListConfig): null when
 * `path` does not exist (ENOENT, as Go's os.IsNotExist: memberlist's defaults apply; the caller
 * logs that); otherwise calls `onLoading(path)` (MetalLB logs "loading memberlist config from
 * file" there) and parses it with parseMemberlistConfigFile, returning the config and its
 * warnings (unknown fields, which MetalLB ignores silently).
 *
 * Unlike MetalLB's os.ReadFile, `path` (symlinks followed, as a ConfigMap mount has them) must be a
 * regular file of at most MAX_MEMBERLIST_CONFIG_BYTES: a directory, FIFO or device (`/dev/zero`,
 * which would read without end; a FIFO, which would block the speaker) is refused before it is
 * opened. Throws InputError (exit 2, one line naming the file) when the file is not a regular file,
 * is too large, cannot be read (no permission…) or is invalid; MetalLB's speaker stops then too.
 */
export function readMemberlistConfigFile(path: string, onLoading?: (path: string) => void): MemberlistFileResult | null {
  const cannot = (why: string): never => {
    throw new InputError(path, `cannot read the memberlist config file: ${why}`);
  };
  const tooLarge = `larger than ${MAX_MEMBERLIST_CONFIG_BYTES} bytes (1 MiB)`;
  let st: Stats;
  try {
    st = statSync(path);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ENOENT') return null;
    return cannot(err.code ?? err.message);
  }
  if (!st.isFile()) cannot(`${fileKind(st)}, not a regular file`);
  if (st.size > MAX_MEMBERLIST_CONFIG_BYTES) cannot(tooLarge);
  let text: string;
  let fd: number | null = null;
  try {
    // O_NONBLOCK: should the path have become a FIFO since the stat, opening it must not block.
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const st2 = fstatSync(fd);
    if (!st2.isFile()) cannot(`${fileKind(st2)}, not a regular file`);
    const buf = Buffer.alloc(MAX_MEMBERLIST_CONFIG_BYTES + 1);
    let size = 0;
    for (;;) {
      const n = readSync(fd, buf, size, buf.length - size, null);
      if (n === 0) break;
      size += n;
      if (size > MAX_MEMBERLIST_CONFIG_BYTES) cannot(tooLarge); // grown since the stat
    }
    text = buf.subarray(0, size).toString('utf8');
  } catch (e) {
    if (e instanceof InputError) throw e;
    const err = e as NodeJS.ErrnoException;
    return cannot(err.code ?? err.message);
  } finally {
    if (fd !== null) closeSync(fd);
  }
  onLoading?.(path);
  return parseMemberlistConfigFile(text, path);
}
