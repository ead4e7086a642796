/**
 * Gossip (memberlist's queue.go TransmitLimitedQueue use and state.go gossip/pushPullTrigger):
 * broadcasts queued per member, piggybacked on pings and acks (sendMsg) and gossiped to
 * GossipNodes members each GossipInterval, each sent RetransmitMult·ceil(log10(n+1)) times; the
 * push/pull interval scaled above 32 members. Pure.
 */
import { encodeCompound } from './messages.ts';
import { type Address, type Draft, type Effect, addrOf, kRandom, numMembers, pmax } from './swim-state.ts';

/** RetransmitMult × ceil(log10(n + 1)). */
export function retransmitLimit(mult: number, n: number): number {
  return mult * Math.ceil(Math.log10(n + 1));
}

/** Push/pull interval scaled above 32 members: × (ceil(log2 n − log2 32) + 1). */
export function pushPullScaleMs(intervalMs: number, n: number): number {
  if (n <= 32) return intervalMs;
  const mult = Math.ceil(Math.log2(n) - Math.log2(32)) + 1;
  return mult * intervalMs;
}

/** Queues a broadcast about `node`, replacing any queued one about the same member (memberlist's named broadcasts). */
export function queueBroadcast(d: Draft, node: string, msg: Uint8Array): void {
  d.broadcasts.queue(node, msg);
}

/** Takes broadcasts fitting `limit` bytes (each costing `overhead` more), least-transmitted first. */
export function getBroadcasts(d: Draft, overhead: number, limit: number): Uint8Array[] {
  if (d.broadcasts.size === 0) return [];
  return d.broadcasts.take(overhead, limit, retransmitLimit(d.config.retransmitMult, numMembers(d)));
}

/** Sends one message to an address, piggybacking queued broadcasts (memberlist's sendMsg). */
export function sendMsg(d: Draft, fx: Effect[], to: Address, msg: Uint8Array): void {
  const avail = d.config.udpBufferSize - msg.length - 2 - d.overheadBytes;
  const extra = getBroadcasts(d, 2, avail);
  fx.push({ kind: 'packet', to, payload: extra.length === 0 ? msg : encodeCompound([msg, ...extra]), crc: false });
}

/** One gossip round: queued broadcasts to GossipNodes random members (alive, suspect, or dead within GossipToTheDeadTime), in compounds of at most 255. */
export function gossip(d: Draft, fx: Effect[], nowMs: number): void {
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
