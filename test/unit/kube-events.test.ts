/**
 * The Event recorder (src/kube/events.ts) against client-go's tools/record semantics: the
 * correlator's counting, aggregation and spam filter on a fake clock, and the recorder's one-at-a-
 * time writes on a fake sink (bursts of identical events become one Event with a count; a PATCH of
 * an expired Event creates it again; refused writes are dropped, unreachable ones retried).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { COMBINED_PREFIX, EventCorrelator, EventRecorder, makeEvent, type EventSink, type KubeEvent } from '../../src/kube/events.ts';
import { KubeApiError } from '../../src/kube/client.ts';

const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop', uid: 'u-1', resourceVersion: '7' } };
const SRC = { component: 'metallb-controller' };
let clockMs = Date.UTC(2025, 0, 1);
const ev = (message: string, reason = 'IPAllocated', type: 'Normal' | 'Warning' = 'Normal'): KubeEvent => makeEvent(svc, type, reason, message, SRC, BigInt(clockMs) * 1_000_000n);

describe('makeEvent', () => {
  test("MetalLB's controller: component set, no host, so reportingInstance is empty", () => {
    const e = makeEvent(svc, 'Warning', 'AllocationFailed', 'no', SRC, 1_700_000_000_123_456_789n);
    assert.equal(e.metadata.name, `web.${(1_700_000_000_123_456_789n).toString(16)}`);
    assert.equal(e.metadata.namespace, 'shop');
    assert.deepEqual(e.source, { component: 'metallb-controller' });
    assert.equal(e.reportingComponent, 'metallb-controller');
    assert.equal(e.reportingInstance, '');
    assert.deepEqual(e.involvedObject, { apiVersion: 'v1', kind: 'Service', namespace: 'shop', name: 'web', uid: 'u-1', resourceVersion: '7' });
    assert.equal(e.firstTimestamp, '2023-11-14T22:13:20Z');
    assert.equal(e.lastTimestamp, e.firstTimestamp);
    assert.equal(e.count, 1);
  });
});

describe('EventCorrelator', () => {
  const stored = (e: KubeEvent, rv = '1'): KubeEvent => ({ ...e, metadata: { ...e.metadata, resourceVersion: rv } });

  const cases: Array<{ name: string; steps: Array<{ message: string; reason?: string; type?: 'Normal' | 'Warning'; advanceMs?: number }>; want: Array<string> }> = [
    {
      name: 'an identical event patches the first one; another message is a new Event',
      steps: [{ message: 'a' }, { message: 'a' }, { message: 'b' }, { message: 'a', advanceMs: 1000 }],
      want: ['create a', 'patch#1 count=2 a', 'create b', 'patch#1 count=3 a'],
    },
    {
      name: 'the 10th distinct message of one reason within 10 minutes is combined; later ones patch the combined Event',
      steps: [...'abcdefghij'.split('').map((m) => ({ message: m })), { message: 'k' }, { message: 'a' }],
      want: [
        'create a',
        'create b',
        'create c',
        'create d',
        'create e',
        'create f',
        'create g',
        'create h',
        'create i',
        `create ${COMBINED_PREFIX}j`,
        `patch#10 count=2 ${COMBINED_PREFIX}k`,
        `patch#10 count=3 ${COMBINED_PREFIX}a`,
      ],
    },
    {
      name: 'after 10 quiet minutes similar events start over',
      steps: [...'abcdefghi'.split('').map((m) => ({ message: m })), { message: 'j', advanceMs: 601_000 }],
      want: ['create a', 'create b', 'create c', 'create d', 'create e', 'create f', 'create g', 'create h', 'create i', 'create j'],
    },
    {
      name: 'other reasons and types are not similar',
      steps: [{ message: 'a' }, { message: 'a', reason: 'ClearAssignment' }, { message: 'a', type: 'Warning' }],
      want: ['create a', 'create a', 'create a'],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const corr = new EventCorrelator({ now: () => clockMs });
      const names: string[] = [];
      const got: string[] = [];
      for (const st of c.steps) {
        clockMs += st.advanceMs ?? 1;
        const r = corr.correlate(ev(st.message, st.reason, st.type));
        assert.equal(r.skip, false);
        if (r.patch) {
          assert.equal(r.patch.count, r.event.count);
          assert.equal(r.patch.message, r.event.message);
          got.push(`patch#${names.indexOf(r.event.metadata.name) + 1} count=${r.event.count} ${r.event.message}`);
        } else {
          names.push(r.event.metadata.name);
          got.push(`create ${r.event.message}`);
        }
        corr.updateState(stored(r.event));
      }
      assert.deepEqual(got, c.want);
    });
  }

  test('spam filter: 25 events per object and type, then one per 5 minutes', () => {
    const corr = new EventCorrelator({ now: () => clockMs });
    const skipped: number[] = [];
    for (let i = 0; i < 27; i++) {
      clockMs += 10;
      if (corr.correlate(ev(`m${i % 3}`)).skip) skipped.push(i);
    }
    assert.deepEqual(skipped, [25, 26]);
    assert.equal(corr.correlate(ev('x', 'IPAllocated', 'Warning')).skip, false, 'Warning events have their own bucket');
    clockMs += 300_000;
    assert.equal(corr.correlate(ev('m0')).skip, false);
    assert.equal(corr.correlate(ev('m0')).skip, true);
  });
});

/** A sink that stores Events like the API server, slowly, and can fail on demand. */
class FakeSink implements EventSink {
  readonly stored = new Map<string, KubeEvent>();
  readonly calls: string[] = [];
  readonly failures: unknown[] = [];
  private rv = 0;
  private readonly delayMs: number;
  constructor(delayMs = 5) {
    this.delayMs = delayMs;
  }
  private async take(): Promise<void> {
    await new Promise((r) => setTimeout(r, this.delayMs));
    const f = this.failures.shift();
    if (f) throw f;
  }
  async create(e: KubeEvent): Promise<KubeEvent> {
    this.calls.push(`POST ${e.message} count=${e.count}`);
    await this.take();
    const s = { ...e, metadata: { ...e.metadata, resourceVersion: String(++this.rv) } };
    this.stored.set(e.metadata.name, s);
    return s;
  }
  async patch(e: KubeEvent, p: { count: number; lastTimestamp: string; message: string }): Promise<KubeEvent> {
    this.calls.push(`PATCH ${e.metadata.name === [...this.stored.keys()][0] ? 'first' : e.metadata.name} count=${p.count}`);
    await this.take();
    const cur = this.stored.get(e.metadata.name);
    if (!cur) throw new KubeApiError(404, { message: 'not found', code: 404 }, '');
    const s = { ...cur, ...p, metadata: { ...cur.metadata, resourceVersion: String(++this.rv) } };
    this.stored.set(e.metadata.name, s);
    return s;
  }
}

describe('EventRecorder', () => {
  test('a burst of identical events while the first is being written: one Event, count 3', async () => {
    const sink = new FakeSink(20);
    const rec = new EventRecorder(sink, { component: 'metallb-controller' });
    for (let i = 0; i < 3; i++) rec.record(svc, 'Normal', 'IPAllocated', 'Assigned IP ["192.0.2.1"]');
    await rec.idle();
    assert.deepEqual(sink.calls, ['POST Assigned IP ["192.0.2.1"] count=1', 'PATCH first count=2', 'PATCH first count=3']);
    assert.equal(sink.stored.size, 1);
    const [only] = sink.stored.values();
    assert.equal(only!.count, 3);
    assert.equal(only!.reportingInstance, '');
  });

  test('the Event expired meanwhile (PATCH 404): created again, with its count', async () => {
    const sink = new FakeSink(1);
    const rec = new EventRecorder(sink, { component: 'c' });
    rec.record(svc, 'Normal', 'R', 'm');
    await rec.idle();
    sink.stored.clear();
    rec.record(svc, 'Normal', 'R', 'm');
    await rec.idle();
    assert.deepEqual(
      sink.calls.map((c) => c.replace(/PATCH \S+/, 'PATCH')),
      ['POST m count=1', 'PATCH count=2', 'POST m count=2'],
    );
  });

  test('a write the API server refuses is dropped; one that cannot reach it is retried', async () => {
    const sink = new FakeSink(1);
    const errors: string[] = [];
    const rec = new EventRecorder(sink, { component: 'c', sleepMs: 2, onError: (e) => errors.push(e instanceof Error ? e.message : String(e)) });
    sink.failures.push(new KubeApiError(403, { message: 'events is forbidden', code: 403 }, ''));
    rec.record(svc, 'Normal', 'R', 'refused');
    sink.failures.push(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    rec.record(svc, 'Normal', 'R', 'retried');
    await rec.idle();
    assert.deepEqual(sink.calls, ['POST refused count=1', 'POST retried count=1', 'POST retried count=1']);
    assert.deepEqual(errors, ['events is forbidden', 'connect ECONNREFUSED']);
    assert.deepEqual(
      [...sink.stored.values()].map((e) => e.message),
      ['retried'],
    );
  });

  test('more than maxQueued waiting events (besides the one being written): the rest are dropped', async () => {
    const sink = new FakeSink(5);
    const rec = new EventRecorder(sink, { component: 'c', maxQueued: 2 });
    for (let i = 0; i < 5; i++) rec.record(svc, 'Normal', 'R', `m${i}`);
    await rec.idle();
    assert.equal(rec.dropped, 2);
    assert.deepEqual(sink.calls, ['POST m0 count=1', 'POST m1 count=1', 'POST m2 count=1']);
  });
});
