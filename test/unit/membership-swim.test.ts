// The SWIM state machine (src/core/membership/swim.ts) as a pure function: events in, effects out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LAN_CONFIG } from '../../src/core/membership/config.ts';
import { METALLB_VSN, decodeMessage, decodeCompound, type Message } from '../../src/core/membership/messages.ts';
import { createSwimState, liveMembers, localPushState, pushPullScaleMs, retransmitLimit, step, suspicionRemainingMs, suspicionTimeoutMs, type Effect, type SwimState } from '../../src/core/membership/swim.ts';

const vsn = Uint8Array.from(METALLB_VSN);
const ip = (n: number): Uint8Array => Uint8Array.from([127, 0, 0, n]);
const alive = (node: string, n: number, incarnation = 1): Message => ({ type: 'alive', incarnation, node, addr: ip(n), port: 7946, meta: null, vsn });
const from = { host: '127.0.0.9', port: 7946 };

function run(s: SwimState, events: { at: number; e: Parameters<typeof step>[1] }[]): { s: SwimState; fx: Effect[] } {
  const fx: Effect[] = [];
  for (const { at, e } of events) {
    const r = step(s, e, at);
    s = r.state;
    fx.push(...r.effects);
  }
  return { s, fx };
}

function sentMessages(fx: Effect[]): Message[] {
  const out: Message[] = [];
  for (const e of fx) {
    if (e.kind !== 'packet') continue;
    const parts = e.payload[0] === 7 ? decodeCompound(e.payload.subarray(1)).parts : [e.payload];
    for (const p of parts) out.push(decodeMessage(p));
  }
  return out;
}

const base = (): SwimState => createSwimState(LAN_CONFIG, { name: 'me', addr: ip(1), port: 7946 }, 0, 7);

test('timeouts scale with cluster size as memberlist computes them', () => {
  const cases: [number, number][] = [
    [1, 4000],
    [3, 4000],
    [10, 4000],
    [20, 5204],
    [100, 8000],
  ];
  for (const [n, min] of cases) assert.equal(suspicionTimeoutMs(4, n, 1000), min, `n=${n}`);
  assert.equal(suspicionRemainingMs(0, 2, 4000, 24000), 24000);
  assert.equal(suspicionRemainingMs(1, 2, 4000, 24000), 11381);
  assert.equal(suspicionRemainingMs(2, 2, 4000, 24000), 4000);
  assert.deepEqual(
    [9, 10, 99, 100].map((n) => retransmitLimit(4, n)),
    [4, 8, 8, 12],
  );
  assert.deepEqual(
    [32, 33, 64, 65].map((n) => pushPullScaleMs(30000, n)),
    [30000, 60000, 60000, 90000],
  );
});

test('alive: unknown members join, older incarnations are ignored, conflicting addresses refused', () => {
  let { s, fx } = run(base(), [{ at: 1, e: { type: 'message', msg: alive('b', 2), from } }]);
  assert.deepEqual(
    liveMembers(s).map((m) => m.name),
    ['b', 'me'],
  );
  assert.ok(fx.some((e) => e.kind === 'notify' && e.event === 'join' && e.member.name === 'b'));
  ({ s } = run(s, [
    { at: 2, e: { type: 'message', msg: alive('b', 2, 5), from } },
    { at: 3, e: { type: 'message', msg: alive('b', 2, 3), from } },
  ]));
  assert.equal(s.members.get('b')!.incarnation, 5);
  ({ s, fx } = run(s, [{ at: 4, e: { type: 'message', msg: alive('b', 3, 9), from } }]));
  assert.equal(s.members.get('b')!.incarnation, 5, 'another address for a live name is a conflict');
});

test('refutation: suspect or dead about oneself raises the incarnation above the accusation', () => {
  const { s, fx } = run(base(), [{ at: 1, e: { type: 'message', msg: { type: 'suspect', incarnation: 4, node: 'me', from: 'x' }, from } }]);
  assert.equal(s.members.get('me')!.incarnation, 5);
  assert.equal(s.members.get('me')!.state, 'alive');
  assert.equal(s.awareness, 1);
  const r = run(s, [
    { at: 2, e: { type: 'message', msg: { type: 'dead', incarnation: 5, node: 'me', from: 'x' }, from } },
    { at: 3, e: { type: 'tick' } },
  ]);
  assert.equal(r.s.members.get('me')!.incarnation, 6);
  void fx;
});

test('failed probe: indirect pings and a TCP ping, then suspect; suspicion expires into dead', () => {
  let s = base();
  ({ s } = run(
    s,
    ['b', 'c', 'd'].map((n, i) => ({ at: 1, e: { type: 'message' as const, msg: alive(n, i + 2), from } })),
  ));
  // probe until 'b' is the target; nobody answers
  const fx: Effect[] = [];
  let t = 1;
  let target = '';
  while (!target && t < 20000) {
    const r = step(s, { type: 'tick' }, t);
    s = r.state;
    const ping = sentMessages(r.effects).find((m) => m.type === 'ping');
    if (ping && ping.type === 'ping') target = ping.node;
    t += 10;
  }
  assert.ok(target);
  for (; t < 30000; t += 10) {
    const r = step(s, { type: 'tick' }, t);
    s = r.state;
    fx.push(...r.effects);
    if (s.members.get(target)!.state === 'dead') break;
  }
  for (const end = t + 1000; t < end; t += 10) {
    const r = step(s, { type: 'tick' }, t);
    s = r.state;
    fx.push(...r.effects);
  }
  const msgs = sentMessages(fx);
  assert.ok(
    msgs.some((m) => m.type === 'indirectPing' && m.node === target && m.nack),
    'indirect ping with nack',
  );
  assert.ok(
    fx.some((e) => e.kind === 'tcpPing' && e.node === target),
    'tcp fallback ping',
  );
  assert.ok(fx.some((e) => e.kind === 'notify' && e.event === 'update' && e.member.name === target && e.member.state === 'suspect'));
  assert.equal(s.members.get(target)!.state, 'dead');
  assert.ok(
    msgs.some((m) => m.type === 'dead' && m.node === target && m.from === 'me'),
    'dead gossiped',
  );
});

test('ack answers: to SourceAddr/SourcePort, only for our name; indirect pings relay acks and nacks', () => {
  let { s, fx } = run(base(), [{ at: 1, e: { type: 'message', msg: { type: 'ping', seqNo: 9, node: 'me', sourceAddr: ip(5), sourcePort: 8000, sourceNode: 'e' }, from } }]);
  const ack = fx.find((e) => e.kind === 'packet');
  assert.deepEqual(ack && ack.kind === 'packet' && ack.to, { host: '127.0.0.5', port: 8000 });
  ({ s, fx } = run(s, [{ at: 2, e: { type: 'message', msg: { type: 'ping', seqNo: 9, node: 'other' }, from } }]));
  assert.equal(fx.filter((e) => e.kind === 'packet').length, 0);
  ({ s, fx } = run(s, [
    { at: 3, e: { type: 'message', msg: { type: 'indirectPing', seqNo: 44, target: ip(6), port: 7946, node: 'f', nack: true, sourceAddr: ip(5), sourcePort: 8000, sourceNode: 'e' }, from } },
  ]));
  const relayPing = sentMessages(fx).find((m) => m.type === 'ping');
  assert.ok(relayPing && relayPing.type === 'ping' && relayPing.node === 'f');
  ({ fx } = run(s, [{ at: 600, e: { type: 'tick' } }]));
  assert.ok(
    sentMessages(fx).some((m) => m.type === 'nack' && m.seqNo === 44),
    'nack after the probe timeout',
  );
});

test('push/pull merge: remote dead starts only a suspicion, left becomes left; local state lists everyone', () => {
  const nodes = [
    { name: 'b', addr: ip(2), port: 7946, meta: null, incarnation: 1, state: 0, vsn },
    { name: 'c', addr: ip(3), port: 7946, meta: null, incarnation: 1, state: 0, vsn },
  ];
  let { s } = run(base(), [{ at: 1, e: { type: 'merge', nodes } }]);
  ({ s } = run(s, [
    {
      at: 2,
      e: {
        type: 'merge',
        nodes: [
          { ...nodes[0]!, state: 2 },
          { ...nodes[1]!, state: 3 },
        ],
      },
    },
  ]));
  assert.equal(s.members.get('b')!.state, 'suspect');
  assert.equal(s.members.get('c')!.state, 'left');
  assert.deepEqual(
    localPushState(s)
      .map((n) => [n.name, n.state])
      .sort(),
    [
      ['b', 1],
      ['c', 3],
      ['me', 0],
    ],
  );
});

test('intervals of 0 switch timers off as memberlist schedule() does: no probe, gossip or push/pull, no busy wake', async () => {
  const { nextWakeMs } = await import('../../src/core/membership/swim.ts');
  const cases: { name: string; config: Partial<typeof LAN_CONFIG>; probes: boolean; gossips: boolean; pushPulls: boolean }[] = [
    { name: 'defaults', config: {}, probes: true, gossips: true, pushPulls: true },
    { name: 'ProbeInterval 0', config: { probeIntervalMs: 0 }, probes: false, gossips: true, pushPulls: true },
    { name: 'GossipInterval 0', config: { gossipIntervalMs: 0 }, probes: true, gossips: false, pushPulls: true },
    { name: 'GossipNodes 0', config: { gossipNodes: 0 }, probes: true, gossips: false, pushPulls: true },
    { name: 'PushPullInterval 0', config: { pushPullIntervalMs: 0 }, probes: true, gossips: true, pushPulls: false },
    { name: 'all off', config: { probeIntervalMs: 0, gossipIntervalMs: 0, pushPullIntervalMs: 0 }, probes: false, gossips: false, pushPulls: false },
  ];
  for (const c of cases) {
    let s = createSwimState({ ...LAN_CONFIG, ...c.config }, { name: 'me', addr: ip(1), port: 7946 }, 0, 7);
    ({ s } = run(s, [
      { at: 0, e: { type: 'message', msg: alive('b', 2), from } },
      { at: 0, e: { type: 'message', msg: alive('c', 3), from } },
    ]));
    // b and c answer every ping, so probes end without suspicion
    const fx: Effect[] = [];
    let wakes = 0;
    for (let t = 0; t < 70_000 && wakes < 10_000; wakes++) {
      const at = Math.max(t, nextWakeMs(s));
      if (!Number.isFinite(at) || at >= 70_000) break;
      const r = step(s, { type: 'tick' }, at);
      s = r.state;
      fx.push(...r.effects);
      for (const m of sentMessages(r.effects)) {
        if (m.type === 'ping') ({ s } = run(s, [{ at: at + 1, e: { type: 'message', msg: { type: 'ack', seqNo: m.seqNo, payload: null }, from } }]));
      }
      t = at + 1;
    }
    assert.ok(wakes < 10_000, `${c.name}: the clock moves (no busy wake at the same instant)`);
    const msgs = sentMessages(fx);
    assert.equal(
      msgs.some((m) => m.type === 'ping'),
      c.probes,
      `${c.name}: probes`,
    );
    assert.equal(
      fx.some((e) => e.kind === 'packet' && !sentMessages([e]).some((m) => m.type === 'ping' || m.type === 'ack')),
      c.gossips,
      `${c.name}: gossip packets`,
    );
    assert.equal(
      fx.some((e) => e.kind === 'pushPull'),
      c.pushPulls,
      `${c.name}: push/pulls`,
    );
    if (!c.probes && !c.gossips && !c.pushPulls) assert.equal(nextWakeMs(s), Infinity, `${c.name}: nothing to wake for`);
  }
});

test('push/pull node states are validated like alive messages: port 0 masked with ours, bad ports and addresses refused', () => {
  const st = (name: string, addr: Uint8Array, port: number) => ({ name, addr, port, meta: null, incarnation: 1, state: 0, vsn });
  const { s, fx } = run(base(), [
    {
      at: 1,
      e: {
        type: 'merge',
        nodes: [st('zero', ip(2), 0), st('big', ip(3), 70000), st('short', Uint8Array.from([127, 0, 4]), 7946), st('empty', new Uint8Array(0), 7946), st('ok6', new Uint8Array(16).fill(1), 7947)],
      },
    },
  ]);
  assert.equal(s.members.get('zero')!.port, 7946, 'port 0 becomes our own port, as for a UDP alive');
  assert.ok(!s.members.has('big') && !s.members.has('short') && !s.members.has('empty'));
  assert.equal(s.members.get('ok6')!.port, 7947);
  assert.equal(fx.filter((e) => e.kind === 'log' && e.message.startsWith('ignoring alive')).length, 3);
  // the same through UDP
  const r = run(base(), [
    { at: 1, e: { type: 'message', msg: { ...(alive('zero', 2) as Extract<Message, { type: 'alive' }>), port: 0 }, from } },
    { at: 1, e: { type: 'message', msg: { ...(alive('short', 3) as Extract<Message, { type: 'alive' }>), addr: Uint8Array.from([1, 2]) }, from } },
  ]);
  assert.equal(r.s.members.get('zero')!.port, 7946);
  assert.ok(!r.s.members.has('short'));
  // nothing ever goes to port 0
  let t = 2;
  let x = s;
  const out: Effect[] = [];
  for (; t < 20_000; t += 50) {
    const q = step(x, { type: 'tick' }, t);
    x = q.state;
    out.push(...q.effects);
  }
  for (const e of out) if (e.kind === 'packet' || e.kind === 'tcpPing' || e.kind === 'pushPull') assert.ok(e.to.port >= 1 && e.to.port <= 65535, `${e.kind} to port ${e.to.port}`);
});

test("incarnations are uint32 and wrap as memberlist's atomic adds do", () => {
  let { s } = run(base(), [{ at: 1, e: { type: 'message', msg: { type: 'dead', incarnation: 0xffffffff, node: 'me', from: 'x' }, from } }]);
  assert.equal(s.members.get('me')!.incarnation, 0, 'accused at 0xFFFFFFFF: skipIncarnation wraps to 0');
  ({ s } = run(s, [{ at: 2, e: { type: 'message', msg: { type: 'suspect', incarnation: 0xfffffffe, node: 'me', from: 'x' }, from } }]));
  assert.equal(s.members.get('me')!.incarnation, 0xffffffff);
  ({ s } = run(s, [{ at: 3, e: { type: 'message', msg: { type: 'suspect', incarnation: 0xffffffff, node: 'me', from: 'x' }, from } }]));
  assert.equal(s.members.get('me')!.incarnation, 0, 'nextIncarnation wraps too');
  // every alive we gossip about ourselves decodes (a uint32 encoder would throw on 2^32)
  const r = step(s, { type: 'tick' }, 5000);
  for (const m of sentMessages(r.effects)) if (m.type === 'alive') assert.ok(m.incarnation <= 0xffffffff);
});

test('broadcast queue keeps TransmitLimitedQueue semantics: same picks as a sort-everything reference over random use', async () => {
  const { BroadcastQueue } = await import('../../src/core/membership/broadcast-queue.ts');
  // the reference: memberlist's ordering (transmits asc, length desc, id desc), greedy fill, per-node invalidation
  type B = { node: string; msg: Uint8Array; transmits: number; id: number };
  let ref: B[] = [];
  let id = 0;
  const refQueue = (node: string, msg: Uint8Array): void => {
    ref = ref.filter((b) => b.node !== node);
    ref.push({ node, msg, transmits: 0, id: ++id });
  };
  const refTake = (overhead: number, limit: number, tl: number): Uint8Array[] => {
    const order = [...ref].sort((a, b) => a.transmits - b.transmits || b.msg.length - a.msg.length || b.id - a.id);
    const out: Uint8Array[] = [];
    const sent = new Set<number>();
    let used = 0;
    for (const b of order) {
      if (used + overhead + b.msg.length > limit) continue;
      used += overhead + b.msg.length;
      out.push(b.msg);
      sent.add(b.id);
    }
    ref = ref.flatMap((b) => (!sent.has(b.id) ? [b] : b.transmits + 1 >= tl ? [] : [{ ...b, transmits: b.transmits + 1 }]));
    return out;
  };
  const q = new BroadcastQueue();
  let x = 12345;
  const r = (n: number): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
  for (let i = 0; i < 20_000; i++) {
    if (r(3) > 0) {
      const node = `n${r(300)}`;
      const msg = new Uint8Array(1 + r(60)).fill(i & 0xff);
      q.queue(node, msg);
      refQueue(node, msg);
    } else {
      const limit = r(400);
      const tl = 1 + r(6);
      assert.deepEqual(q.take(2, limit, tl), refTake(2, limit, tl), `take ${i}`);
      assert.equal(q.size, ref.length);
    }
  }
});

test('a 20,000-state push/pull merge and the gossip after it take a bounded number of operations; events not touching the table copy nothing', () => {
  const N = 20_000;
  const nodes = Array.from({ length: N }, (_, i) => ({ name: `m${i}`, addr: Uint8Array.from([10, (i >> 16) & 255, (i >> 8) & 255, i & 255]), port: 7946, meta: null, incarnation: 1, state: 0, vsn }));
  const s0 = base();
  const q = s0.broadcasts;
  const before = q.ops;
  const { s, fx } = run(s0, [{ at: 1, e: { type: 'merge', nodes } }]);
  const mergeOps = q.ops - before;
  assert.equal(s.members.size, N + 1);
  assert.equal(fx.filter((e) => e.kind === 'notify' && e.event === 'join').length, N);
  assert.deepEqual([...s.probeOrder].sort(), [...s.members.keys()].sort(), 'probe order holds every member once');
  assert.equal(s.broadcasts.size, N + 1);
  // O(n log n): a heap push is ≤ log2(n) steps; the quadratic queue did ~n²/2 = 2·10^8
  assert.ok(mergeOps <= N * 20, `merge: ${mergeOps} queue operations`);
  // one gossip round: GossipNodes packets of bounded size, independent of the queue length
  const t0 = q.ops;
  const g = step(s, { type: 'tick' }, s.nextGossipMs);
  assert.ok(q.ops - t0 <= 20_000, `gossip: ${q.ops - t0} queue operations`);
  assert.ok(g.effects.some((e) => e.kind === 'packet'));
  // an indirect ping (not touching the member table) reuses the tables: no per-event copy
  let cur = g.state;
  const members = cur.members;
  for (let i = 0; i < 1000; i++) {
    const t1 = q.ops;
    cur = step(cur, { type: 'message', msg: { type: 'indirectPing', seqNo: i, target: ip(200), port: 9, node: 'x', nack: true }, from }, s.nextGossipMs + 1).state;
    assert.ok(q.ops - t1 <= 2000, `indirect ping ${i}: ${q.ops - t1} queue operations`);
  }
  assert.equal(cur.members, members);
  assert.equal(cur.relays.size, 1000);
});

test('a state is linear: stepping it twice throws rather than seeing the newer tables', () => {
  const s = base();
  step(s, { type: 'tick' }, 1);
  assert.throws(() => step(s, { type: 'tick' }, 2), /already stepped/);
  // an event that throws leaves its state steppable (the shell counts the error and goes on)
  const t = base();
  assert.throws(() => step(t, { type: 'message', msg: null as unknown as Message, from }, 1), TypeError);
  const r = step(t, { type: 'message', msg: alive('b', 2), from }, 2);
  assert.equal(r.state.members.get('b')!.state, 'alive');
});

test('an alive whose protocol range is incompatible with ours is ignored and logged (push/pulls stay compatible)', async () => {
  const { verifyProtocol } = await import('../../src/core/membership/swim.ts');
  const bad = { ...(alive('evil', 2) as Extract<Message, { type: 'alive' }>), vsn: Uint8Array.from([5, 5, 5, 0, 0, 0]) };
  const cur = { ...(alive('newer', 3) as Extract<Message, { type: 'alive' }>), vsn: Uint8Array.from([1, 5, 4, 0, 0, 0]) };
  let { s, fx } = run(base(), [
    { at: 1, e: { type: 'message', msg: bad, from } },
    { at: 1, e: { type: 'message', msg: cur, from } },
  ]);
  assert.ok(!s.members.has('evil'));
  assert.equal(s.members.get('newer')!.vsn[2], 4, 'a compatible range with another current version is accepted');
  assert.equal(fx.filter((e) => e.kind === 'log' && e.message.includes('incompatible with ours')).length, 1);
  ({ s, fx } = run(s, [{ at: 2, e: { type: 'merge', nodes: [{ name: 'evil', addr: ip(2), port: 7946, meta: null, incarnation: 1, state: 0, vsn: bad.vsn! }] } }]));
  assert.ok(!s.members.has('evil'));
  assert.equal(verifyProtocol(s, [{ name: 'g', addr: ip(7), port: 7946, meta: null, incarnation: 1, state: 0, vsn }]), null);
});

test('liveMembers follows every change of a live member (cached between changes); liveEpoch moves with them', () => {
  let { s } = run(base(), [
    { at: 1, e: { type: 'message', msg: alive('b', 2), from } },
    { at: 1, e: { type: 'message', msg: alive('c', 3), from } },
  ]);
  const e0 = s.liveEpoch;
  assert.deepEqual(
    liveMembers(s).map((m) => m.name),
    ['b', 'c', 'me'],
  );
  ({ s } = run(s, [{ at: 2, e: { type: 'message', msg: { type: 'ping', seqNo: 1, node: 'me' }, from } }]));
  assert.equal(s.liveEpoch, e0, 'a ping changes no member');
  ({ s } = run(s, [{ at: 3, e: { type: 'message', msg: alive('b', 2, 7), from } }]));
  assert.equal(liveMembers(s).find((m) => m.name === 'b')!.incarnation, 7, 'an updated entry, not a cached one');
  ({ s } = run(s, [{ at: 4, e: { type: 'message', msg: { type: 'suspect', incarnation: 7, node: 'b', from: 'c' }, from } }]));
  assert.equal(liveMembers(s).find((m) => m.name === 'b')!.state, 'suspect');
  ({ s } = run(s, [{ at: 5, e: { type: 'message', msg: { type: 'dead', incarnation: 7, node: 'b', from: 'c' }, from } }]));
  assert.deepEqual(
    liveMembers(s).map((m) => m.name),
    ['c', 'me'],
  );
  assert.ok(s.liveEpoch > e0);
  const l = liveMembers(s);
  l.pop();
  assert.equal(liveMembers(s).length, 2, 'callers get their own array');
});

test('indirect-ping relays end in deadline order; a tick ends the expired ones and the next wake is the oldest running', async () => {
  const { nextWakeMs } = await import('../../src/core/membership/swim.ts');
  let s = createSwimState({ ...LAN_CONFIG, probeIntervalMs: 0, gossipIntervalMs: 0, pushPullIntervalMs: 0 }, { name: 'me', addr: ip(1), port: 7946 }, 0, 7);
  const ip2 = (i: number) => ({ type: 'message' as const, msg: { type: 'indirectPing' as const, seqNo: i, target: Uint8Array.from([127, 5, i >> 8, i & 255]), port: 9, node: 'x', nack: true }, from });
  for (let i = 0; i < 300; i++) s = step(s, ip2(i), 1000 + i).state;
  assert.equal(s.relays.size, 300);
  const timeout = LAN_CONFIG.probeTimeoutMs;
  assert.equal(nextWakeMs(s), 1000 + timeout);
  const r = step(s, { type: 'tick' }, 1000 + timeout + 99);
  assert.equal(sentMessages(r.effects).filter((m) => m.type === 'nack').length, 100, 'relays 0…99 ended with a nack');
  assert.equal(r.state.relays.size, 200);
  assert.equal(nextWakeMs(r.state), 1000 + timeout + 100);
});
