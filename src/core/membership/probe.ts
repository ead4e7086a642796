/**
 * Probing (memberlist's state.go probe/probeNode/resetNodes): round-robin over a shuffled member
 * list, ping then ack within ProbeTimeout, else indirect pings through IndirectChecks members and a
 * TCP fallback ping, then suspicion; Lifeguard awareness raised on missed nacks; dead and left
 * members reaped when the list wraps. Pure.
 */
import { encodeCompound, encodeMessage } from './messages.ts';
import { type Draft, type Effect, addrOf, kRandom, nextSeq, pmax, rand, selfSource } from './swim-state.ts';
import { sendMsg } from './gossip.ts';
import { suspectNode } from './suspicion.ts';

/** Starts the next probe (memberlist's probe): the next live member of the shuffled list gets a ping; the list is reshuffled and reaped when it wraps. */
export function startProbe(d: Draft, fx: Effect[], nowMs: number): void {
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
export function resetMembers(d: Draft, nowMs: number): void {
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

/** Advances the running probe: after ProbeTimeout the indirect pings and TCP fallback, after the probe interval suspicion (or the TCP-only warning). */
export function probeTimers(d: Draft, fx: Effect[], nowMs: number): void {
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
