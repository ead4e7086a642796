/**
 * The SWIM member's state and what it shares between its parts (memberlist's Memberlist fields
 * and nodeState, state.go's helpers): the member table, running probe, suspicions, broadcast
 * queue and relays; the effects a step asks of the shell and the events it takes; the random
 * choices (kRandomNodes) and address helpers. Pure.
 */
import type { BroadcastQueue } from './broadcast-queue.ts';
import type { MemberlistConfig } from './config.ts';
import { METALLB_VSN, ipToString, type Message, type MemberStateName, type PushNodeState } from './messages.ts';

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
export interface Suspicion {
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
export interface Probe {
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
export interface Relay {
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
export type Draft = { -readonly [K in keyof SwimState]: SwimState[K] } & {
  members: Map<string, MemberEntry>;
  probeOrder: string[];
  suspicions: Map<string, Suspicion>;
  broadcasts: BroadcastQueue;
  relays: Map<number, Relay>;
};

/** The version vector this member sends (METALLB_VSN as bytes). */
export const VSN = Uint8Array.from(METALLB_VSN);

/** A random integer in [0, n) from the state's xorshift32 generator (0 when n <= 0); advances `d.rng`. */
export function rand(d: Draft, n: number): number {
  // xorshift32
  let x = d.rng;
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  d.rng = x >>> 0;
  return n <= 0 ? 0 : d.rng % n;
}

/** Probing runs only with ProbeInterval > 0 (memberlist.go schedule()). */
export function probeEnabled(c: MemberlistConfig): boolean {
  return c.probeIntervalMs > 0;
}

/** Gossip runs only with GossipInterval > 0 and GossipNodes > 0 (memberlist.go schedule()). */
export function gossipEnabled(c: MemberlistConfig): boolean {
  return c.gossipIntervalMs > 0 && c.gossipNodes > 0;
}

/** Periodic push/pull runs only with PushPullInterval > 0 (memberlist.go schedule()); joins still push/pull. */
export function pushPullEnabled(c: MemberlistConfig): boolean {
  return c.pushPullIntervalMs > 0;
}

/** The alive message that describes member `m` (what is broadcast about it). */
export function aliveOf(m: MemberEntry): Message {
  return { type: 'alive', incarnation: m.incarnation, node: m.name, addr: m.addr, port: m.port, meta: m.meta, vsn: m.vsn };
}

/** The UDP/TCP address of member `m` (its address bytes as text, its port). */
export function addrOf(m: MemberEntry): Address {
  return { host: ipToString(m.addr), port: m.port };
}

/** The highest protocol version member `m` speaks (Vsn[1]; 0 when unknown). */
export function pmax(m: MemberEntry): number {
  return m.vsn.length >= 2 ? m.vsn[1]! : 0;
}

/** Number of members known (memberlist's estNumNodes: every entry, dead and left included). */
export function numMembers(d: { members: ReadonlyMap<string, MemberEntry> }): number {
  return d.members.size;
}

/** True for an alive or suspect member (what memberlist's Members() returns). */
export const isLive = (m: MemberEntry | undefined): boolean => m !== undefined && (m.state === 'alive' || m.state === 'suspect');

/** Writes `m` into the member table; bumps `liveEpoch` when the member is or was alive or suspect. */
export function setMember(d: Draft, m: MemberEntry): void {
  if (isLive(d.members.get(m.name)) || isLive(m)) d.liveEpoch++;
  d.members.set(m.name, m);
}

/** Up to k random members passing `keep`, never self (memberlist's kRandomNodes). */
export function kRandom(d: Draft, k: number, keep: (m: MemberEntry) => boolean): MemberEntry[] {
  const pool = [...d.members.values()].filter((m) => m.name !== d.self && keep(m));
  const out: MemberEntry[] = [];
  while (out.length < k && pool.length > 0) out.push(pool.splice(rand(d, pool.length), 1)[0]!);
  return out;
}

/** The next probe/ping sequence number (memberlist's nextSeqNo). */
export function nextSeq(d: Draft): number {
  d.seqNo = (d.seqNo + 1) >>> 0;
  return d.seqNo;
}

/** The Source* fields of pings this member sends: its own address, port and name. */
export function selfSource(d: Draft): { sourceAddr: Uint8Array; sourcePort: number; sourceNode: string } {
  const me = d.members.get(d.self)!;
  return { sourceAddr: me.addr, sourcePort: me.port, sourceNode: d.self };
}
