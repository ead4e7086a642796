/**
 * Suspicion (memberlist's suspicion.go and state.go suspectNode): a suspected member is declared
 * dead after a Lifeguard timeout that starts at SuspicionMaxTimeoutMult × the minimum and shrinks
 * towards the minimum (SuspicionMult·max(1, log10 n)·ProbeInterval) with each independent
 * confirmation. Pure.
 */
import { encodeMessage } from './messages.ts';
import { type Draft, type Effect, type MemberEntry, numMembers, setMember } from './swim-state.ts';
import { queueBroadcast } from './gossip.ts';
import { refute } from './node-state.ts';

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

/** A suspect message (memberlist's suspectNode): starts a suspicion with the Lifeguard timeout, or counts a confirmation of a running one; this member refutes one about itself. */
export function suspectNode(d: Draft, fx: Effect[], s: { incarnation: number; node: string; from: string }, nowMs: number): void {
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
