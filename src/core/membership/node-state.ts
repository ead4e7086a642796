/**
 * The member table's rules for alive and dead messages (memberlist's state.go aliveNode, deadNode,
 * refute): incarnation ordering, refuting claims about itself, dead versus left (From == Node),
 * join and leave notifications. Suspect messages: suspicion.ts. Pure.
 */
import { encodeMessage, ipToString, type Message } from './messages.ts';
import { type Draft, type Effect, type MemberEntry, aliveOf, rand, setMember } from './swim-state.ts';
import { queueBroadcast } from './gossip.ts';

/** Refutes a claim that this member is suspect or dead: a higher incarnation than `accusedInc`, broadcast alive; raises awareness. */
export function refute(d: Draft, fx: Effect[], accusedInc: number): void {
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

/** Byte-wise equality of two optional byte arrays (null equals null). */
export function equalBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  const x = a ?? new Uint8Array(0);
  const y = b ?? new Uint8Array(0);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** An alive message (memberlist's aliveNode): joins, updates or refutes by incarnation; validates versions, address and port. */
export function aliveNode(d: Draft, fx: Effect[], a: Extract<Message, { type: 'alive' }>, nowMs: number): void {
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
export function handleAlive(d: Draft, fx: Effect[], msg: Extract<Message, { type: 'alive' }>, nowMs: number): void {
  const a = msg.port === 0 ? { ...msg, port: d.members.get(d.self)!.port } : msg;
  aliveNode(d, fx, a, nowMs);
}

/** A dead message (memberlist's deadNode): marks the member dead, or left when From == Node; this member refutes one about itself unless leaving. */
export function deadNode(d: Draft, fx: Effect[], m: { incarnation: number; node: string; from: string }, nowMs: number): void {
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
