// Config durations far beyond Node's timer limit (2^31-1 ms, about 24.8 days), which Go accepts:
// the shell clamps every timer (timerDelayMs), the state machine's times stay finite numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LAN_CONFIG, type MemberlistConfig } from '../../src/core/membership/config.ts';
import { METALLB_VSN, type Message } from '../../src/core/membership/messages.ts';
import { createSwimState, nextWakeMs, step, type Effect, type SwimState } from '../../src/core/membership/swim.ts';
import { MAX_TIMER_DELAY_MS, MemberlistMember, timerDelayMs } from '../../src/speaker/membership-memberlist.ts';

/** Go's longest duration, 2562047h (time.ParseDuration's limit), in ms. */
const GO_MAX_MS = 2562047 * 3_600_000;

test('timerDelayMs: at most 2^31-1 ms, at least 1 ms (NaN too)', () => {
  assert.equal(MAX_TIMER_DELAY_MS, 2_147_483_647);
  const cases: [number, number][] = [
    [720 * 3_600_000, MAX_TIMER_DELAY_MS],
    [GO_MAX_MS, MAX_TIMER_DELAY_MS],
    [Infinity, MAX_TIMER_DELAY_MS],
    [MAX_TIMER_DELAY_MS, MAX_TIMER_DELAY_MS],
    [MAX_TIMER_DELAY_MS - 1, MAX_TIMER_DELAY_MS - 1],
    [10_000, 10_000],
    [1.5, 1.5],
    [1, 1],
    [0.000001, 1],
    [0, 1],
    [-5, 1],
    [-Infinity, 1],
    [NaN, 1],
  ];
  for (const [ms, want] of cases) assert.equal(timerDelayMs(ms), want, String(ms));
});

test("swim with every duration at Go's maximum: wake times stay numbers (never NaN), probes, suspicions and push/pulls still run", () => {
  const huge: MemberlistConfig = {
    ...LAN_CONFIG,
    tcpTimeoutMs: GO_MAX_MS,
    probeIntervalMs: GO_MAX_MS,
    probeTimeoutMs: GO_MAX_MS,
    gossipIntervalMs: GO_MAX_MS,
    pushPullIntervalMs: GO_MAX_MS,
    gossipToTheDeadTimeMs: GO_MAX_MS,
    queueCheckIntervalMs: GO_MAX_MS,
    suspicionMult: 2 ** 31,
    suspicionMaxTimeoutMult: 2 ** 31,
  };
  const now = 1.7e12;
  let s: SwimState = createSwimState(huge, { name: 'me', addr: Uint8Array.from([127, 0, 0, 1]), port: 7946 }, now, 7);
  const fx: Effect[] = [];
  const alive = (node: string, n: number): Message => ({ type: 'alive', incarnation: 1, node, addr: Uint8Array.from([127, 0, 0, n]), port: 7946, meta: null, vsn: Uint8Array.from(METALLB_VSN) });
  let t = now;
  const apply = (e: Parameters<typeof step>[1]): void => {
    const r = step(s, e, t);
    s = r.state;
    fx.push(...r.effects);
    const w = nextWakeMs(s);
    assert.ok(!Number.isNaN(w) && w > now, `wake ${w}`);
  };
  apply({ type: 'message', msg: alive('a', 2), from: { host: '127.0.0.2', port: 7946 } });
  apply({ type: 'message', msg: alive('b', 3), from: { host: '127.0.0.3', port: 7946 } });
  // a suspicion from another member: its deadline is far but finite
  apply({ type: 'message', msg: { type: 'suspect', incarnation: 1, node: 'a', from: 'b' }, from: { host: '127.0.0.3', port: 7946 } });
  assert.ok(Number.isFinite(nextWakeMs(s)));
  // jump to each wake time a few times: the timers fire (probe, gossip, push/pull) without NaN or a stall
  for (let i = 0; i < 6; i++) {
    t = Math.max(t, nextWakeMs(s));
    apply({ type: 'tick' });
  }
  assert.ok(
    fx.some((e) => e.kind === 'pushPull'),
    'a periodic push/pull ran',
  );
  assert.ok(
    fx.some((e) => e.kind === 'packet'),
    'probes/gossip were sent',
  );
});

test("a member whose durations are all Go's maximum joins another over loopback; no Node timer overflows", async () => {
  const huge: MemberlistConfig = {
    ...LAN_CONFIG,
    tcpTimeoutMs: GO_MAX_MS,
    probeIntervalMs: GO_MAX_MS,
    probeTimeoutMs: GO_MAX_MS,
    gossipIntervalMs: GO_MAX_MS,
    pushPullIntervalMs: GO_MAX_MS,
    gossipToTheDeadTimeMs: GO_MAX_MS,
    queueCheckIntervalMs: GO_MAX_MS,
  };
  const warnings: string[] = [];
  const onWarning = (w: Error): void => {
    if (w.name.startsWith('Timeout')) warnings.push(`${w.name}: ${w.message}`);
  };
  process.on('warning', onWarning);
  const a = new MemberlistMember({ name: 'a', bindAddr: '127.0.0.1', bindPort: 0, config: huge });
  const b = new MemberlistMember({ name: 'b', bindAddr: '127.0.0.1', bindPort: 0, config: huge });
  try {
    await a.start();
    await b.start();
    assert.equal(await b.join([{ host: '127.0.0.1', port: a.port }]), 1);
    assert.equal(await a.join([{ host: '127.0.0.1', port: b.port }]), 1);
    assert.deepEqual(
      [a.alive(), b.alive()],
      [
        ['a', 'b'],
        ['a', 'b'],
      ],
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(warnings, []);
    assert.deepEqual([a.stats().dropped, b.stats().dropped], [{}, {}]);
  } finally {
    process.off('warning', onWarning);
    a.kill();
    b.kill();
  }
});
