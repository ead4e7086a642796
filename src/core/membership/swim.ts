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
 *
 * Its parts, along memberlist's seams: swim-state.ts (the state, effects, events and shared
 * helpers), probe.ts (probing), suspicion.ts (suspicion), node-state.ts (alive and dead rules),
 * gossip.ts (broadcasts and gossip); here the step itself, message dispatch and push/pull merge.
 */
import { BroadcastQueue } from './broadcast-queue.ts';
import type { MemberlistConfig } from './config.ts';
import { encodeMessage, ipToString, memberStateNames, nodeLimitReason, type Message, type PushNodeState } from './messages.ts';
import {
  type Address,
  type Draft,
  type Effect,
  type MemberEntry,
  type SwimEvent,
  type SwimState,
  VSN,
  addrOf,
  aliveOf,
  gossipEnabled,
  isLive,
  kRandom,
  nextSeq,
  numMembers,
  probeEnabled,
  pushPullEnabled,
  rand,
  selfSource,
} from './swim-state.ts';
import { gossip, pushPullScaleMs, queueBroadcast, sendMsg } from './gossip.ts';
import { deadNode, handleAlive } from './node-state.ts';
import { suspectNode } from './suspicion.ts';
import { probeTimers, startProbe } from './probe.ts';

export type { Address, Effect, MemberEntry, SwimEvent, SwimState } from './swim-state.ts';
export { pushPullScaleMs, retransmitLimit } from './gossip.ts';
export { suspicionRemainingMs, suspicionTimeoutMs } from './suspicion.ts';

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

/** States already given to `step` (their tables now belong to the state step returned). */
const consumed = new WeakSet<SwimState>();

function draft(s: SwimState): Draft {
  if (consumed.has(s)) throw new Error('swim: this state was already stepped; step the state the last step returned');
  consumed.add(s);
  return { ...s } as Draft;
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

/**
 * What a push/pull's remote node states give this member (memberlist's mergeRemoteState after
 * verifyProtocol): `error` when a protocol version is incompatible (nothing is merged), else the
 * states to merge (the `merge` event) and, in order, the reasons of those left out because their
 * Meta exceeds META_MAX_BYTES (memberlist's aliveNode drops them too) or their name
 * NAME_MAX_BYTES (nodeLimitReason), for the shell to count.
 */
export function pushPullMerge(s: SwimState, remote: readonly PushNodeState[]): { readonly error: string } | { readonly nodes: PushNodeState[]; readonly dropped: ('oversizedMeta' | 'oversizedName')[] } {
  const error = verifyProtocol(s, remote);
  if (error) return { error };
  const nodes: PushNodeState[] = [];
  const dropped: ('oversizedMeta' | 'oversizedName')[] = [];
  for (const n of remote) {
    const why = nodeLimitReason(n.name, n.meta);
    if (why) dropped.push(why);
    else nodes.push(n);
  }
  return { nodes, dropped };
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
