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
 * (`dropped.streamLimit`). Beside this file: what streams may buffer and when they are decoded
 * (membership-memberlist-streams.ts), drop counting and its log (membership-memberlist-drops.ts),
 * the key and config files (membership-memberlist-files.ts), options, stats and table rows
 * (membership-memberlist-options.ts).
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
import net from 'node:net';
import type { Membership, MembershipListener } from '../core/membership/types.ts';
import { LAN_CONFIG, type MemberlistConfig } from '../core/membership/config.ts';
import { HandoffQueue, handoffRoute } from '../core/membership/handoff.ts';
import { DecodeAllowance } from '../core/membership/decode-allowance.ts';
import { DropLog } from './membership-memberlist-drops.ts';
import { type MemberlistOptions, type MemberlistStats, type MemberView, ipToBytes, view } from './membership-memberlist-options.ts';
import { InboundStreamBudget, type StreamReadContext, readStreamMessage, timerDelayMs } from './membership-memberlist-streams.ts';
import { ENCRYPT_OVERHEAD_BYTES, Keyring } from '../core/membership/crypto.ts';
import { MessageType, WireError, decodePacket, encodeMessage, encodePacket, encodePushPull, encodeStream, type Message, type PushNodeState, type WireOptions } from '../core/membership/messages.ts';
import { createSwimState, leavePending, liveMembers, localPushState, nextWakeMs, step, pushPullMerge, type Address, type Effect, type SwimEvent, type SwimState } from '../core/membership/swim.ts';

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

/** Handoff messages handled per setImmediate turn, so UDP pings are read between batches. */
const HANDOFF_BATCH = 64;

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
  private readonly budget = new InboundStreamBudget();
  private readonly streams: StreamReadContext;
  private stopped = false;
  private readonly sockets = new Set<net.Socket>();
  private readonly handoff: HandoffQueue<{ msg: Message; from: Address }>;
  private draining: NodeJS.Immediate | null = null;
  private handoffDropsLogged = 0;
  private internalErrorLogged = false;
  private readonly allowance: DecodeAllowance;
  private readonly drops: DropLog;
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
    this.drops = new DropLog(this.counters.dropped, (message) => this.log(message));
    this.streams = { wire: this.wire, allowance: this.allowance, budget: this.budget, counters: this.counters, guard: (where, fn, onError) => this.guard(where, fn, onError) };
  }

  private log(message: string): void {
    this.opts.log?.(message);
  }

  /** Counts a dropped packet or stream by reason (DropLog: logged at most once a minute per reason). */
  private drop(reason: string, from?: string): void {
    this.drops.count(reason, from);
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

  /** Merges a push/pull's accepted node states, counting those left out (pushPullMerge) first. */
  private merge(m: { readonly nodes: PushNodeState[]; readonly dropped: readonly string[] }): void {
    for (const why of m.dropped) this.drop(why);
    this.apply({ type: 'merge', nodes: m.nodes });
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

  private writeMessage(sock: net.Socket, msg: Uint8Array, withLabel: boolean): void {
    sock.write(encodeStream(msg, this.wire, withLabel));
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
    void readStreamMessage(this.streams, sock, this.config.tcpTimeoutMs, { onType }).then(
      (msg) =>
        this.guard(
          'stream message',
          () => {
            if (!this.state || this.stopped) return sock.destroy();
            if (msg.type === 'pushPull') {
              if (takePushPullSlot()) return sock.destroy();
              this.writeMessage(sock, this.localPushPull(msg.join), false);
              sock.end();
              const merge = pushPullMerge(this.state, msg.nodes);
              if ('error' in merge) this.log(`push/pull from ${sock.remoteAddress}: ${merge.error}`);
              else this.merge(merge);
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
      const reply = await readStreamMessage(this.streams, sock, this.config.tcpTimeoutMs);
      if (reply.type === 'err') throw new Error(`remote error: ${reply.error}`);
      if (reply.type !== 'pushPull') throw new Error(`unexpected reply type ${reply.type}`);
      const merge = pushPullMerge(this.state!, reply.nodes);
      if ('error' in merge) throw new Error(merge.error);
      this.merge(merge);
    } finally {
      sock.destroy();
    }
  }

  private async tcpPing(to: Address, node: string, seqNo: number, timeoutMs: number): Promise<boolean> {
    try {
      const sock = await this.dial(to, timeoutMs);
      try {
        this.writeMessage(sock, encodeMessage({ type: 'ping', seqNo, node, sourceAddr: ipToBytes(this.opts.bindAddr), sourcePort: this.port, sourceNode: this.name }), true);
        const reply = await readStreamMessage(this.streams, sock, timeoutMs);
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
      inboundBufferedBytes: this.budget.buffered,
      inboundReceivedBytes: this.budget.received,
      handlerCpuMaxMs: this.handlerCpuMaxMs,
    };
  }
}

export { DROP_LOG_INTERVAL_MS, DROP_REASON_HINTS } from './membership-memberlist-drops.ts';
export { INBOUND_STREAM_BUDGET_BYTES, MAX_TIMER_DELAY_MS, STREAM_DECODE_GROWTH, STREAM_IDLE_DECODE_MS, timerDelayMs } from './membership-memberlist-streams.ts';
export { MAX_MEMBERLIST_CONFIG_BYTES, memberlistEnabled, readMemberlistConfigFile, readMemberlistKey } from './membership-memberlist-files.ts';
export { type MemberlistOptions, type MemberlistStats, type MemberView, ipToBytes } from './membership-memberlist-options.ts';
