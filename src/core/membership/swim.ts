/**
 * The SWIM state machine of a memberlist v0.5.1 member (state.go, net.go, suspicion.go,
 * awareness.go, queue.go), as pure functions: `step(state, event, nowMs)` returns the next state
 * and the effects to carry out (packets to send, TCP pings, push/pulls, join/leave
 * notifications). No sockets, no timers, no clock: the shell (src/speaker/membership-memberlist.ts) feeds events and the
 * current time in milliseconds and calls `step(…, {type: 'tick'})` at `nextWakeMs(state)`.
 *
 * Behaviour followed: round-robin probes over a shuffled member list skipping self/dead/left,
 * ping → ack within ProbeTimeout, else indirect pings through up to IndirectChecks alive
 * members (Nack requested from PMax ≥ 4) plus a TCP fallback ping (PMax ≥ 3), suspect after
 * the (awareness-scaled) probe interval; Lifeguard awareness 0…AwarenessMaxMultiplier−1;
 * suspicion timeouts min = SuspicionMult·max(1, log10 n)·ProbeInterval, max = SuspicionMaxTimeoutMult·min,
 * shortened by independent confirmations; incarnation rules and refutation; dead vs left
 * (From == Node); push/pull merge (remote dead/suspect only start a local suspicion); broadcast
 * queue with one entry per member name, least-transmitted first, RetransmitMult·ceil(log10(n+1))
 * transmissions, piggybacked on pings/acks and gossiped to GossipNodes members every
 * GossipInterval; dead/left members reaped GossipToTheDeadTime after their change when the
 * probe list wraps.
 */
import { BroadcastQueue } from './broadcast-queue.ts';
import type { MemberlistConfig } from './config.ts';
import { METALLB_VSN, encodeCompound, encodeMessage, ipToString, memberStateNames, type Message, type MemberStateName, type PushNodeState } from './messages.ts';

/** A UDP/TCP endpoint. */
export interface Address {
  readonly host: string;
  readonly port: number;
}

/** One member as this member knows it (memberlist's nodeState). */
export interface MemberEntry {
  readonly name: string;
  readonly addr: Uint8Array;
  readonly port: number;
  readonly meta: Uint8Array | null;
  readonly vsn: Uint8Array;
  readonly incarnation: number;
  readonly state: MemberStateName;
  readonly stateChangeMs: number;
}

/** A running suspicion (suspicion.go). */
interface Suspicion {
  readonly node: string;
  readonly startMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly k: number;
  readonly confirmers: readonly string[];
  readonly deadlineMs: number;
  /** stateChangeMs of the member when the suspicion started (memberlist's changeTime check). */
  readonly changeMs: number;
}

/** The running probe of one member. */
interface Probe {
  readonly target: string;
  readonly seqNo: number;
  readonly sentMs: number;
  readonly intervalMs: number;
  readonly phase: 'direct' | 'indirect';
  readonly acked: boolean;
  readonly expectedNacks: number;
  readonly nacks: number;
  readonly tcpOk: boolean;
}

/** An indirect ping this member makes for a requester. */
interface Relay {
  readonly seqNo: number;
  readonly requesterSeqNo: number;
  readonly requester: Address;
  readonly nack: boolean;
  readonly deadlineMs: number;
}

/**
 * The whole member state. A state is linear: `step(state, …)` reuses and updates the tables
 * (members, probe order, suspicions, broadcast queue, relays) of the state it is given, so that
 * an event costs what it touches, not the size of the tables. Keep only the state `step`
 * returned; stepping a state twice throws. Member entries are immutable and may be kept.
 */
export interface SwimState {
  readonly config: MemberlistConfig;
  readonly self: string;
  readonly members: ReadonlyMap<string, MemberEntry>;
  readonly probeOrder: readonly string[];
  readonly probeIndex: number;
  readonly seqNo: number;
  readonly awareness: number;
  readonly suspicions: ReadonlyMap<string, Suspicion>;
  readonly broadcasts: BroadcastQueue;
  readonly probe: Probe | null;
  readonly relays: ReadonlyMap<number, Relay>;
  readonly nextProbeMs: number;
  readonly nextGossipMs: number;
  readonly nextPushPullMs: number;
  readonly leaving: boolean;
  /** Bumped whenever a live (alive or suspect) member is added, changed or leaves that set: while it stays, liveMembers stays. */
  readonly liveEpoch: number;
  readonly rng: number;
  /** Encryption overhead (bytes) subtracted from the packet budget. */
  readonly overheadBytes: number;
}

/** Something the shell must do. */
export type Effect =
  | { readonly kind: 'packet'; readonly to: Address; readonly payload: Uint8Array; readonly crc: boolean }
  | { readonly kind: 'tcpPing'; readonly to: Address; readonly node: string; readonly seqNo: number; readonly deadlineMs: number }
  | { readonly kind: 'pushPull'; readonly to: Address }
  | { readonly kind: 'notify'; readonly event: 'join' | 'leave' | 'update'; readonly member: MemberEntry }
  | { readonly kind: 'log'; readonly message: string };

/** Inputs of the state machine. */
export type SwimEvent =
  | { readonly type: 'tick' }
  | { readonly type: 'message'; readonly msg: Message; readonly from: Address }
  | { readonly type: 'merge'; readonly nodes: readonly PushNodeState[] }
  | { readonly type: 'tcpPingResult'; readonly seqNo: number; readonly ok: boolean }
  | { readonly type: 'leave' };

/** Draft: mutable copy used inside one step. */
type Draft = { -readonly [K in keyof SwimState]: SwimState[K] } & {
  members: Map<string, MemberEntry>;
  probeOrder: string[];
  suspicions: Map<string, Suspicion>;
  broadcasts: BroadcastQueue;
  relays: Map<number, Relay>;
};

const VSN = Uint8Array.from(METALLB_VSN);

function rand(d: Draft, n: number): number {
  // xorshift32
  let x = d.rng;
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  d.rng = x >>> 0;
  return n <= 0 ? 0 : d.rng % n;
}

/**
 * A new member: itself alive with incarnation 1 (memberlist's setAlive). `seed` drives the
 * shuffles and random choices; `overheadBytes` is the encryption overhead (29 with a key, else 0).
 */
export function createSwimState(config: MemberlistConfig, self: { name: string; addr: Uint8Array; port: number }, nowMs: number, seed: number, overheadBytes = 0, incarnation = 1): SwimState {
  const me: MemberEntry = { name: self.name, addr: Uint8Array.from(self.addr), port: self.port, meta: null, vsn: VSN, incarnation, state: 'alive', stateChangeMs: nowMs };
  const d: Draft = {
    config,
    self: self.name,
    members: new Map([[self.name, me]]),
    probeOrder: [self.name],
    probeIndex: 0,
    seqNo: 0,
    awareness: 0,
    suspicions: new Map(),
    broadcasts: new BroadcastQueue(),
    probe: null,
    relays: new Map(),
    nextProbeMs: 0,
    nextGossipMs: 0,
    nextPushPullMs: 0,
    leaving: false,
    liveEpoch: 0,
    rng: seed >>> 0 || 0x9e3779b9,
    overheadBytes,
  };
  // memberlist's schedule(): a timer whose interval is 0 (gossip: or GossipNodes 0) never runs.
  d.nextProbeMs = probeEnabled(config) ? nowMs + rand(d, config.probeIntervalMs) : Infinity;
  d.nextGossipMs = gossipEnabled(config) ? nowMs + rand(d, config.gossipIntervalMs) : Infinity;
  d.nextPushPullMs = pushPullEnabled(config) ? nowMs + rand(d, config.pushPullIntervalMs) : Infinity;
  queueBroadcast(d, self.name, encodeMessage(aliveOf(me)));
  return d;
}

/** Probing runs only with ProbeInterval > 0 (memberlist.go schedule()). */
function probeEnabled(c: MemberlistConfig): boolean {
  return c.probeIntervalMs > 0;
}

/** Gossip runs only with GossipInterval > 0 and GossipNodes > 0 (memberlist.go schedule()). */
function gossipEnabled(c: MemberlistConfig): boolean {
  return c.gossipIntervalMs > 0 && c.gossipNodes > 0;
}

/** Periodic push/pull runs only with PushPullInterval > 0 (memberlist.go schedule()); joins still push/pull. */
function pushPullEnabled(c: MemberlistConfig): boolean {
  return c.pushPullIntervalMs > 0;
}

function aliveOf(m: MemberEntry): Message {
  return { type: 'alive', incarnation: m.incarnation, node: m.name, addr: m.addr, port: m.port, meta: m.meta, vsn: m.vsn };
}

/** States already given to `step` (their tables now belong to the state step returned). */
const consumed = new WeakSet<SwimState>();

function draft(s: SwimState): Draft {
  if (consumed.has(s)) throw new Error('swim: this state was already stepped; step the state the last step returned');
  consumed.add(s);
  return { ...s } as Draft;
}

function addrOf(m: MemberEntry): Address {
  return { host: ipToString(m.addr), port: m.port };
}

function pmax(m: MemberEntry): number {
  return m.vsn.length >= 2 ? m.vsn[1]! : 0;
}

/** Number of members known (memberlist's estNumNodes: every entry, dead and left included). */
function numMembers(d: { members: ReadonlyMap<string, MemberEntry> }): number {
  return d.members.size;
}

/** RetransmitMult × ceil(log10(n + 1)). */
export function retransmitLimit(mult: number, n: number): number {
  return mult * Math.ceil(Math.log10(n + 1));
}

/** Lifeguard suspicion minimum: SuspicionMult × max(1, log10(max(1, n))) × ProbeInterval (ms, floor as Go's Duration math). */
export function suspicionTimeoutMs(mult: number, n: number, probeIntervalMs: number): number {
  const scale = Math.max(1, Math.log10(Math.max(1, n)));
  return Math.floor((mult * Math.floor(scale * 1000) * probeIntervalMs) / 1000);
}

/** Suspicion deadline after `c` confirmations of `k` expected (ms after start), never below min. */
export function suspicionRemainingMs(c: number, k: number, minMs: number, maxMs: number): number {
  if (k < 1) return minMs;
  const frac = Math.log(c + 1) / Math.log(k + 1);
  const raw = maxMs / 1000 - frac * (maxMs / 1000 - minMs / 1000);
  return Math.max(minMs, Math.floor(1000 * raw));
}

/** Push/pull interval scaled above 32 members: × (ceil(log2 n − log2 32) + 1). */
export function pushPullScaleMs(intervalMs: number, n: number): number {
  if (n <= 32) return intervalMs;
  const mult = Math.ceil(Math.log2(n) - Math.log2(32)) + 1;
  return mult * intervalMs;
}

function queueBroadcast(d: Draft, node: string, msg: Uint8Array): void {
  d.broadcasts.queue(node, msg);
}

/** Takes broadcasts fitting `limit` bytes (each costing `overhead` more), least-transmitted first. */
function getBroadcasts(d: Draft, overhead: number, limit: number): Uint8Array[] {
  if (d.broadcasts.size === 0) return [];
  return d.broadcasts.take(overhead, limit, retransmitLimit(d.config.retransmitMult, numMembers(d)));
}

/** Sends one message to an address, piggybacking queued broadcasts (memberlist's sendMsg). */
function sendMsg(d: Draft, fx: Effect[], to: Address, msg: Uint8Array): void {
  const avail = d.config.udpBufferSize - msg.length - 2 - d.overheadBytes;
  const extra = getBroadcasts(d, 2, avail);
  fx.push({ kind: 'packet', to, payload: extra.length === 0 ? msg : encodeCompound([msg, ...extra]), crc: false });
}

const isLive = (m: MemberEntry | undefined): boolean => m !== undefined && (m.state === 'alive' || m.state === 'suspect');

function setMember(d: Draft, m: MemberEntry): void {
  if (isLive(d.members.get(m.name)) || isLive(m)) d.liveEpoch++;
  d.members.set(m.name, m);
}

function refute(d: Draft, fx: Effect[], accusedInc: number): void {
  const me = d.members.get(d.self)!;
  // memberlist's nextIncarnation/skipIncarnation: uint32 atomic adds, which wrap (0xFFFFFFFF + 1 = 0).
  let inc = (me.incarnation + 1) >>> 0;
  if (accusedInc >= inc) inc = (accusedInc + 1) >>> 0;
  const next = { ...me, incarnation: inc };
  setMember(d, next);
  d.awareness = Math.min(d.awareness + 1, d.config.awarenessMaxMultiplier - 1);
  queueBroadcast(d, d.self, encodeMessage(aliveOf(next)));
  fx.push({ kind: 'log', message: `refuting an accusation at incarnation ${accusedInc}: now ${inc}` });
}

function equalBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  const x = a ?? new Uint8Array(0);
  const y = b ?? new Uint8Array(0);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

function aliveNode(d: Draft, fx: Effect[], a: Extract<Message, { type: 'alive' }>, nowMs: number): void {
  if (d.leaving && a.node === d.self) return;
  if (a.vsn && a.vsn.length >= 3) {
    const [pMin, pMax] = [a.vsn[0]!, a.vsn[1]!];
    if (pMin === 0 || pMax === 0 || pMin > pMax) return;
    // An alive whose protocol range excludes our current version (or whose current version we
    // do not speak) would make every later push/pull fail verifyProtocol: ignore it. memberlist
    // v0.5.1 accepts it; this is a deliberate hardening.
    const mine = d.members.get(d.self)!.vsn;
    if (a.node !== d.self && mine.length >= 3 && (a.vsn[2]! < mine[0]! || a.vsn[2]! > mine[1]! || mine[2]! < pMin || mine[2]! > pMax)) {
      fx.push({ kind: 'log', message: `ignoring alive for ${a.node}: protocol versions [${pMin}, ${pMax}] current ${a.vsn[2]} incompatible with ours [${mine[0]}, ${mine[1]}] current ${mine[2]}` });
      return;
    }
  }
  if (!a.addr || (a.addr.length !== 4 && a.addr.length !== 16)) {
    fx.push({ kind: 'log', message: `ignoring alive for ${a.node}: address of ${a.addr ? a.addr.length : 0} bytes (4 or 16 expected)` });
    return;
  }
  if (!Number.isInteger(a.port) || a.port < 1 || a.port > 65535) {
    fx.push({ kind: 'log', message: `ignoring alive for ${a.node}: invalid port ${a.port}` });
    return;
  }
  if (!Number.isInteger(a.incarnation) || a.incarnation < 0 || a.incarnation > 0xffffffff) return;
  let state = d.members.get(a.node);
  let updatesNode = false;
  if (!state) {
    state = { name: a.node, addr: a.addr, port: a.port, meta: a.meta, vsn: a.vsn ?? new Uint8Array(0), incarnation: 0, state: 'dead', stateChangeMs: nowMs };
    setMember(d, state);
    // memberlist's aliveNode: append, then swap with the member at a random offset (O(1)).
    const n = d.probeOrder.length;
    const at = rand(d, n);
    d.probeOrder.push(a.node);
    [d.probeOrder[at], d.probeOrder[n]] = [d.probeOrder[n]!, d.probeOrder[at]!];
  } else if (!equalBytes(state.addr, a.addr) || state.port !== a.port) {
    const canReclaim = d.config.deadNodeReclaimTimeMs > 0 && nowMs - state.stateChangeMs > d.config.deadNodeReclaimTimeMs;
    if (state.state === 'left' || (state.state === 'dead' && canReclaim)) updatesNode = true;
    else {
      fx.push({ kind: 'log', message: `conflicting address for ${a.node}: ${ipToString(state.addr)}:${state.port} known, ${ipToString(a.addr)}:${a.port} claimed` });
      return;
    }
  }
  const isLocal = a.node === d.self;
  if (a.incarnation <= state.incarnation && !isLocal && !updatesNode) return;
  if (a.incarnation < state.incarnation && isLocal) return;
  d.suspicions.delete(a.node);
  const oldState = state.state;
  const oldMeta = state.meta;
  if (isLocal) {
    if (a.incarnation === state.incarnation && equalBytes(a.meta, state.meta) && equalBytes(a.vsn, state.vsn)) return;
    refute(d, fx, a.incarnation);
    return;
  }
  queueBroadcast(d, a.node, encodeMessage(a));
  const next: MemberEntry = {
    ...state,
    incarnation: a.incarnation,
    meta: a.meta,
    addr: a.addr,
    port: a.port,
    vsn: a.vsn && a.vsn.length > 0 ? a.vsn : state.vsn,
    state: 'alive',
    stateChangeMs: state.state !== 'alive' ? nowMs : state.stateChangeMs,
  };
  setMember(d, next);
  if (oldState === 'dead' || oldState === 'left') fx.push({ kind: 'notify', event: 'join', member: next });
  else if (!equalBytes(oldMeta, next.meta)) fx.push({ kind: 'notify', event: 'update', member: next });
}

/**
 * An alive from a packet or from a push/pull node state (one path, one validation): port 0 is
 * masked with our own port as memberlist's handleAlive does for protocol versions < 2; then
 * aliveNode refuses addresses that are not 4 or 16 bytes and ports outside 1…65535.
 */
function handleAlive(d: Draft, fx: Effect[], msg: Extract<Message, { type: 'alive' }>, nowMs: number): void {
  const a = msg.port === 0 ? { ...msg, port: d.members.get(d.self)!.port } : msg;
  aliveNode(d, fx, a, nowMs);
}

function suspectNode(d: Draft, fx: Effect[], s: { incarnation: number; node: string; from: string }, nowMs: number): void {
  const state = d.members.get(s.node);
  if (!state) return;
  if (s.incarnation < state.incarnation) return;
  const running = d.suspicions.get(s.node);
  if (running) {
    if (running.confirmers.length - 1 < running.k && !running.confirmers.includes(s.from)) {
      const confirmers = [...running.confirmers, s.from];
      const c = confirmers.length - 1;
      d.suspicions.set(s.node, { ...running, confirmers, deadlineMs: running.startMs + suspicionRemainingMs(c, running.k, running.minMs, running.maxMs) });
      queueBroadcast(d, s.node, encodeMessage({ type: 'suspect', ...s }));
    }
    return;
  }
  if (state.state !== 'alive') return;
  if (s.node === d.self) {
    refute(d, fx, s.incarnation);
    return;
  }
  queueBroadcast(d, s.node, encodeMessage({ type: 'suspect', ...s }));
  const next: MemberEntry = { ...state, incarnation: s.incarnation, state: 'suspect', stateChangeMs: nowMs };
  setMember(d, next);
  const n = numMembers(d);
  let k = d.config.suspicionMult - 2;
  if (n - 2 < k) k = 0;
  const minMs = suspicionTimeoutMs(d.config.suspicionMult, n, d.config.probeIntervalMs);
  const maxMs = d.config.suspicionMaxTimeoutMult * minMs;
  d.suspicions.set(s.node, { node: s.node, startMs: nowMs, minMs, maxMs, k, confirmers: [s.from], deadlineMs: nowMs + (k < 1 ? minMs : maxMs), changeMs: nowMs });
  fx.push({ kind: 'notify', event: 'update', member: next });
}

function deadNode(d: Draft, fx: Effect[], m: { incarnation: number; node: string; from: string }, nowMs: number): void {
  const state = d.members.get(m.node);
  if (!state) return;
  if (m.incarnation < state.incarnation) return;
  d.suspicions.delete(m.node);
  if (state.state === 'dead' || state.state === 'left') return;
  if (m.node === d.self && !d.leaving) {
    refute(d, fx, m.incarnation);
    return;
  }
  queueBroadcast(d, m.node, encodeMessage({ type: 'dead', ...m }));
  const next: MemberEntry = { ...state, incarnation: m.incarnation, state: m.node === m.from ? 'left' : 'dead', stateChangeMs: nowMs };
  setMember(d, next);
  fx.push({ kind: 'notify', event: 'leave', member: next });
}

/** Up to k random members passing `keep`, never self (memberlist's kRandomNodes). */
function kRandom(d: Draft, k: number, keep: (m: MemberEntry) => boolean): MemberEntry[] {
  const pool = [...d.members.values()].filter((m) => m.name !== d.self && keep(m));
  const out: MemberEntry[] = [];
  while (out.length < k && pool.length > 0) out.push(pool.splice(rand(d, pool.length), 1)[0]!);
  return out;
}

function nextSeq(d: Draft): number {
  d.seqNo = (d.seqNo + 1) >>> 0;
  return d.seqNo;
}

function selfSource(d: Draft): { sourceAddr: Uint8Array; sourcePort: number; sourceNode: string } {
  const me = d.members.get(d.self)!;
  return { sourceAddr: me.addr, sourcePort: me.port, sourceNode: d.self };
}

function startProbe(d: Draft, fx: Effect[], nowMs: number): void {
  let checked = 0;
  for (;;) {
    if (checked >= d.probeOrder.length) return;
    if (d.probeIndex >= d.probeOrder.length) {
      resetMembers(d, nowMs);
      d.probeIndex = 0;
      checked++;
      continue;
    }
    const m = d.members.get(d.probeOrder[d.probeIndex]!);
    d.probeIndex++;
    if (!m || m.name === d.self || m.state === 'dead' || m.state === 'left') {
      checked++;
      continue;
    }
    const seqNo = nextSeq(d);
    const intervalMs = d.config.probeIntervalMs * (d.awareness + 1);
    const ping = encodeMessage({ type: 'ping', seqNo, node: m.name, ...selfSource(d) });
    if (m.state === 'alive') sendMsg(d, fx, addrOf(m), ping);
    else {
      const suspect = encodeMessage({ type: 'suspect', incarnation: m.incarnation, node: m.name, from: d.self });
      fx.push({ kind: 'packet', to: addrOf(m), payload: encodeCompound([ping, suspect]), crc: pmax(m) >= 5 });
    }
    d.probe = { target: m.name, seqNo, sentMs: nowMs, intervalMs, phase: 'direct', acked: false, expectedNacks: 0, nacks: 0, tcpOk: false };
    return;
  }
}

/** Drops dead/left members older than GossipToTheDeadTime and reshuffles (memberlist's resetNodes). */
function resetMembers(d: Draft, nowMs: number): void {
  for (const m of [...d.members.values()]) {
    if ((m.state === 'dead' || m.state === 'left') && nowMs - m.stateChangeMs > d.config.gossipToTheDeadTimeMs && m.name !== d.self) {
      d.members.delete(m.name);
      d.suspicions.delete(m.name);
    }
  }
  const order = d.probeOrder.filter((n) => d.members.has(n));
  for (let i = order.length - 1; i > 0; i--) {
    const j = rand(d, i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  d.probeOrder = order;
}

function probeTimers(d: Draft, fx: Effect[], nowMs: number): void {
  const p = d.probe;
  if (!p) return;
  const target = d.members.get(p.target);
  if (p.acked || !target) {
    d.probe = null;
    return;
  }
  if (p.phase === 'direct' && nowMs >= p.sentMs + d.config.probeTimeoutMs) {
    const helpers = kRandom(d, d.config.indirectChecks, (m) => m.name !== p.target && m.state === 'alive');
    let expectedNacks = 0;
    for (const h of helpers) {
      const nack = pmax(h) >= 4;
      if (nack) expectedNacks++;
      sendMsg(d, fx, addrOf(h), encodeMessage({ type: 'indirectPing', seqNo: p.seqNo, target: target.addr, port: target.port, node: target.name, nack, ...selfSource(d) }));
    }
    if (pmax(target) >= 3 && !d.config.disableTcpPings) {
      fx.push({ kind: 'tcpPing', to: addrOf(target), node: target.name, seqNo: p.seqNo, deadlineMs: p.sentMs + p.intervalMs });
    }
    d.probe = { ...p, phase: 'indirect', expectedNacks };
  }
  const q = d.probe!;
  if (q.phase === 'indirect' && nowMs >= q.sentMs + q.intervalMs) {
    d.probe = null;
    if (q.tcpOk) {
      fx.push({ kind: 'log', message: `was able to connect to ${q.target} over TCP but UDP probes failed, network may be misconfigured` });
      return;
    }
    const delta = q.expectedNacks > 0 ? Math.max(0, q.expectedNacks - q.nacks) : 1;
    d.awareness = Math.min(d.awareness + delta, d.config.awarenessMaxMultiplier - 1);
    if (target.state === 'alive') fx.push({ kind: 'log', message: `suspect ${q.target} has failed, no acks received` });
    suspectNode(d, fx, { incarnation: target.incarnation, node: target.name, from: d.self }, nowMs);
  }
}

function gossip(d: Draft, fx: Effect[], nowMs: number): void {
  const targets = kRandom(d, d.config.gossipNodes, (m) => m.state === 'alive' || m.state === 'suspect' || (m.state === 'dead' && nowMs - m.stateChangeMs <= d.config.gossipToTheDeadTimeMs));
  const avail = d.config.udpBufferSize - 2 - d.overheadBytes;
  for (const t of targets) {
    const msgs = getBroadcasts(d, 2, avail);
    if (msgs.length === 0) return;
    const crc = pmax(t) >= 5;
    if (msgs.length === 1) fx.push({ kind: 'packet', to: addrOf(t), payload: msgs[0]!, crc });
    else for (let i = 0; i < msgs.length; i += 255) fx.push({ kind: 'packet', to: addrOf(t), payload: encodeCompound(msgs.slice(i, i + 255)), crc });
  }
}

function handleMessage(d: Draft, fx: Effect[], msg: Message, from: Address, nowMs: number): void {
  switch (msg.type) {
    case 'ping': {
      if (msg.node !== '' && msg.node !== d.self) {
        fx.push({ kind: 'log', message: `got ping for unexpected node '${msg.node}' from ${from.host}:${from.port}` });
        return;
      }
      const to = msg.sourceAddr && msg.sourceAddr.length > 0 && msg.sourcePort ? { host: ipToString(msg.sourceAddr), port: msg.sourcePort } : from;
      sendMsg(d, fx, to, encodeMessage({ type: 'ack', seqNo: msg.seqNo, payload: null }));
      return;
    }
    case 'indirectPing': {
      if (!msg.target || (msg.target.length !== 4 && msg.target.length !== 16)) return;
      const seqNo = nextSeq(d);
      const requester = msg.sourceAddr && msg.sourceAddr.length > 0 && msg.sourcePort ? { host: ipToString(msg.sourceAddr), port: msg.sourcePort } : from;
      d.relays.delete(seqNo); // a reused (wrapped) sequence number goes to the end, keeping deadline order
      d.relays.set(seqNo, { seqNo, requesterSeqNo: msg.seqNo, requester, nack: msg.nack, deadlineMs: nowMs + d.config.probeTimeoutMs });
      sendMsg(d, fx, { host: ipToString(msg.target), port: msg.port || d.members.get(d.self)!.port }, encodeMessage({ type: 'ping', seqNo, node: msg.node, ...selfSource(d) }));
      return;
    }
    case 'ack': {
      const relay = d.relays.get(msg.seqNo);
      if (relay) {
        d.relays.delete(msg.seqNo);
        sendMsg(d, fx, relay.requester, encodeMessage({ type: 'ack', seqNo: relay.requesterSeqNo, payload: null }));
        return;
      }
      if (d.probe && d.probe.seqNo === msg.seqNo && !d.probe.acked) {
        d.probe = { ...d.probe, acked: true };
        d.awareness = Math.max(0, d.awareness - 1);
      }
      return;
    }
    case 'nack':
      if (d.probe && d.probe.seqNo === msg.seqNo) d.probe = { ...d.probe, nacks: d.probe.nacks + 1 };
      return;
    case 'alive':
      handleAlive(d, fx, msg, nowMs);
      return;
    case 'suspect':
      suspectNode(d, fx, msg, nowMs);
      return;
    case 'dead':
      deadNode(d, fx, msg, nowMs);
      return;
    case 'user':
    case 'err':
      return;
  }
}

/**
 * Checks protocol compatibility of a push/pull before merging (memberlist's verifyProtocol):
 * every alive member's PCur must lie in [max PMin, min PMax] over local and remote members.
 * Returns an error sentence or null.
 */
export function verifyProtocol(s: SwimState, remote: readonly PushNodeState[]): string | null {
  let maxMin = 0;
  let minMax = 255;
  const curs: number[] = [];
  const consider = (vsn: Uint8Array | null, alive: boolean): void => {
    if (!alive || !vsn || vsn.length < 3) return;
    maxMin = Math.max(maxMin, vsn[0]!);
    minMax = Math.min(minMax, vsn[1]!);
    curs.push(vsn[2]!);
  };
  for (const m of s.members.values()) consider(m.vsn, m.state === 'alive');
  for (const r of remote) consider(r.vsn, r.state === 0);
  for (const c of curs) if (c < maxMin || c > minMax) return `incompatible protocol version ${c} (supported range [${maxMin}, ${minMax}])`;
  return null;
}

/** The push/pull node states this member sends: its whole table, itself included. */
export function localPushState(s: SwimState): PushNodeState[] {
  return [...s.members.values()].map((m) => ({ name: m.name, addr: m.addr, port: m.port, meta: m.meta, incarnation: m.incarnation, state: memberStateNames.indexOf(m.state), vsn: m.vsn }));
}

/**
 * The next time (ms) `step(tick)` has work; Infinity when nothing is pending (every periodic
 * timer off, no probe, suspicion or relay running).
 */
export function nextWakeMs(s: SwimState): number {
  let t = Math.min(s.nextGossipMs, s.nextProbeMs, s.nextPushPullMs);
  if (s.probe) t = Math.min(t, s.probe.phase === 'direct' ? s.probe.sentMs + s.config.probeTimeoutMs : s.probe.sentMs + s.probe.intervalMs);
  for (const x of s.suspicions.values()) t = Math.min(t, x.deadlineMs);
  for (const r of s.relays.values()) {
    t = Math.min(t, r.deadlineMs); // the first relay ends first (deadline order, see step)
    break;
  }
  return t;
}

/** Members memberlist's `Members()` returns: not dead, not left (suspect members count), by name. */
export function liveMembers(s: SwimState): MemberEntry[] {
  const hit = liveCache.get(s.members);
  if (hit && hit.epoch === s.liveEpoch && hit.size === s.members.size) return hit.list.slice();
  const list = [...s.members.values()].filter(isLive).sort((a, b) => (a.name < b.name ? -1 : 1));
  liveCache.set(s.members, { epoch: s.liveEpoch, size: s.members.size, list });
  return list.slice();
}

/** liveMembers by member table (tables are shared along a state lineage) and liveEpoch: no sort per call while nothing changed. */
const liveCache = new WeakMap<ReadonlyMap<string, MemberEntry>, { epoch: number; size: number; list: MemberEntry[] }>();

/** True while this member's own leave (dead about itself) is still queued for gossip. */
export function leavePending(s: SwimState): boolean {
  return s.leaving && s.broadcasts.has(s.self);
}

/** Advances the state machine by one event at time `nowMs`. */
export function step(state: SwimState, event: SwimEvent, nowMs: number): { state: SwimState; effects: Effect[] } {
  const d = draft(state);
  try {
    return stepDraft(d, event, nowMs);
  } catch (e) {
    // The shell counts and survives a failing event: the given state stays steppable (its tables
    // may hold part of the event, as after a partial merge).
    consumed.delete(state);
    throw e;
  }
}

function stepDraft(d: Draft, event: SwimEvent, nowMs: number): { state: SwimState; effects: Effect[] } {
  const fx: Effect[] = [];
  switch (event.type) {
    case 'message':
      handleMessage(d, fx, event.msg, event.from, nowMs);
      break;
    case 'merge':
      for (const r of event.nodes) {
        if (r.state === 0) {
          handleAlive(d, fx, { type: 'alive', incarnation: r.incarnation, node: r.name, addr: r.addr, port: r.port, meta: r.meta, vsn: r.vsn }, nowMs);
        } else if (r.state === 3) deadNode(d, fx, { incarnation: r.incarnation, node: r.name, from: r.name }, nowMs);
        else if (r.state === 1 || r.state === 2) suspectNode(d, fx, { incarnation: r.incarnation, node: r.name, from: d.self }, nowMs);
      }
      break;
    case 'tcpPingResult':
      if (d.probe && d.probe.seqNo === event.seqNo && event.ok) d.probe = { ...d.probe, tcpOk: true };
      break;
    case 'leave': {
      if (!d.leaving) {
        d.leaving = true;
        const me = d.members.get(d.self)!;
        deadNode(d, fx, { incarnation: me.incarnation, node: d.self, from: d.self }, nowMs);
      }
      break;
    }
    case 'tick': {
      // Relays are kept in deadline order (inserted at now + ProbeTimeout): stop at the first
      // one still running, so a tick costs the relays it ends, not all of them. (After the
      // clock steps back, a later relay can wait for an earlier one: at most ProbeTimeout.)
      for (const [seq, r] of d.relays) {
        if (nowMs < r.deadlineMs) break;
        d.relays.delete(seq);
        if (r.nack) sendMsg(d, fx, r.requester, encodeMessage({ type: 'nack', seqNo: r.requesterSeqNo }));
      }
      for (const [name, sp] of d.suspicions) {
        if (nowMs >= sp.deadlineMs) {
          d.suspicions.delete(name);
          const m = d.members.get(name);
          if (m && m.state === 'suspect' && m.stateChangeMs === sp.changeMs) {
            fx.push({ kind: 'log', message: `marking ${name} as failed, suspect timeout reached (${sp.confirmers.length - 1} peer confirmations)` });
            deadNode(d, fx, { incarnation: m.incarnation, node: name, from: d.self }, nowMs);
          }
        }
      }
      probeTimers(d, fx, nowMs);
      if (!d.probe && nowMs >= d.nextProbeMs && !d.leaving && probeEnabled(d.config)) {
        startProbe(d, fx, nowMs);
        d.nextProbeMs = nowMs + d.config.probeIntervalMs;
      }
      if (nowMs >= d.nextGossipMs && gossipEnabled(d.config)) {
        gossip(d, fx, nowMs);
        d.nextGossipMs = nowMs + d.config.gossipIntervalMs;
      }
      if (nowMs >= d.nextPushPullMs && pushPullEnabled(d.config)) {
        d.nextPushPullMs = nowMs + pushPullScaleMs(d.config.pushPullIntervalMs, numMembers(d));
        const peer = kRandom(d, 1, (m) => m.state === 'alive')[0];
        if (peer && !d.leaving) fx.push({ kind: 'pushPull', to: addrOf(peer) });
      }
      break;
    }
  }
  return { state: d, effects: fx };
}
