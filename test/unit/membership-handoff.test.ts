// memberlist's handoff queues (src/core/membership/handoff.ts) and their use by the member:
// ping/ack inline, alive high priority, suspect/dead/user low priority, LIFO, bounded, drops counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { HandoffQueue, handoffRoute, type HandoffRoute } from '../../src/core/membership/handoff.ts';
import { LAN_CONFIG } from '../../src/core/membership/config.ts';
import { METALLB_VSN, decodePacket, encodeMessage, encodePacket, type Message } from '../../src/core/membership/messages.ts';
import { MemberlistMember } from '../../src/speaker/membership-memberlist.ts';

test('routes follow memberlist handleCommand', () => {
  const cases: [Message['type'], HandoffRoute][] = [
    ['ping', 'inline'],
    ['indirectPing', 'inline'],
    ['ack', 'inline'],
    ['nack', 'inline'],
    ['alive', 'high'],
    ['suspect', 'low'],
    ['dead', 'low'],
    ['user', 'low'],
    ['err', 'unsupported'],
  ];
  for (const [type, route] of cases) assert.equal(handoffRoute(type), route, type);
});

test('next(): newest first (LIFO), the high queue before the low one', () => {
  const q = new HandoffQueue<string>(10);
  for (const [item, prio] of [
    ['s1', 'low'],
    ['a1', 'high'],
    ['s2', 'low'],
    ['a2', 'high'],
    ['d3', 'low'],
  ] as const)
    assert.equal(q.push(item, prio), 'accepted');
  assert.deepEqual(q.sizes(), { high: 2, low: 3 });
  const out: string[] = [];
  for (let x = q.next(); x !== undefined; x = q.next()) out.push(x);
  assert.deepEqual(out, ['a2', 'a1', 'd3', 's2', 's1']);
  assert.equal(q.size, 0);
});

test('each queue holds at most depth items; the excess is dropped and counted, the other queue unaffected', () => {
  const cases: { name: string; depth: number; low: number; high: number; droppedLow: number; droppedHigh: number }[] = [
    { name: 'below the bound', depth: 4, low: 3, high: 2, droppedLow: 0, droppedHigh: 0 },
    { name: 'low overflows', depth: 4, low: 7, high: 4, droppedLow: 3, droppedHigh: 0 },
    { name: 'both overflow', depth: 2, low: 5, high: 6, droppedLow: 3, droppedHigh: 4 },
    { name: 'depth 0 drops all', depth: 0, low: 2, high: 1, droppedLow: 2, droppedHigh: 1 },
  ];
  for (const c of cases) {
    const q = new HandoffQueue<number>(c.depth);
    const lowResults = Array.from({ length: c.low }, (_, i) => q.push(i, 'low'));
    const highResults = Array.from({ length: c.high }, (_, i) => q.push(100 + i, 'high'));
    assert.equal(lowResults.filter((r) => r === 'dropped').length, c.droppedLow, c.name);
    assert.equal(highResults.filter((r) => r === 'dropped').length, c.droppedHigh, c.name);
    assert.equal(q.droppedCount, c.droppedLow + c.droppedHigh, c.name);
    assert.deepEqual(q.sizes(), { high: c.high - c.droppedHigh, low: c.low - c.droppedLow }, c.name);
    // the first ones stay: a full queue refuses newcomers, it does not evict
    if (c.low > 0 && c.depth > 0) {
      const rest: number[] = [];
      for (let x = q.next(); x !== undefined; x = q.next()) if (x < 100) rest.push(x);
      assert.equal(rest.at(-1), 0, c.name);
    }
  }
  assert.throws(() => new HandoffQueue(-1), RangeError);
});

test('a member drops what exceeds HandoffQueueDepth in one burst, counts it, and keeps answering pings', async () => {
  const logs: string[] = [];
  const member = new MemberlistMember({ name: 'me', bindAddr: '127.0.0.1', bindPort: 0, config: LAN_CONFIG, seed: 1, log: (m) => logs.push(m) });
  await member.start();
  const client = dgram.createSocket('udp4');
  await new Promise<void>((r) => client.bind(0, '127.0.0.1', () => r()));
  try {
    const wire = { keyring: null, label: '', enableCompression: false, gossipVerifyIncoming: true, gossipVerifyOutgoing: true };
    const from = { host: '127.0.0.1', port: client.address().port };
    const vsn = Uint8Array.from(METALLB_VSN);
    // 1100 suspects and one alive of a new member, delivered within one event-loop turn
    for (let i = 0; i < 1100; i++) member.receivePacket(encodePacket(encodeMessage({ type: 'suspect', incarnation: 1, node: `ghost-${i}`, from: 'x' }), wire, false), from);
    member.receivePacket(encodePacket(encodeMessage({ type: 'alive', incarnation: 1, node: 'newcomer', addr: Uint8Array.from([127, 0, 0, 1]), port: 1, meta: null, vsn }), wire, false), from);
    assert.equal(member.stats().dropped.handoffQueueFull, 1100 - LAN_CONFIG.handoffQueueDepth, 'the low-priority excess is dropped');
    assert.deepEqual(member.alive(), ['me'], 'queued, not yet handled');
    // a ping in the same turn is answered at once, ahead of the queue
    const acked = new Promise<Message>((resolve) => client.once('message', (buf) => resolve(decodePacket(new Uint8Array(buf), wire).messages[0]!)));
    member.receivePacket(encodePacket(encodeMessage({ type: 'ping', seqNo: 77, node: 'me' }), wire, false), from);
    const ack = await acked;
    assert.equal(ack.type, 'ack');
    assert.equal(ack.type === 'ack' && ack.seqNo, 77);
    // drained in later turns: the alive (high priority) went through despite the full low queue
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(member.alive(), ['me', 'newcomer']);
    assert.equal(member.stats().dropped.handoffQueueFull, 76, 'nothing more dropped while draining');
    assert.ok(
      logs.some((l) => /^handler queue full, dropped 76 /.test(l)),
      logs.join('\n'),
    );
  } finally {
    client.close();
    member.kill();
  }
});
