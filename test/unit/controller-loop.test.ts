// The controller loop without a server: the work queue (dedupe, re-add while processing, backoff),
// the restart order (addresses in a status are re-registered before anything new is allocated),
// configuration handling, deletes, 409 conflicts, failed writes, lb-class, events and pool status,
// on an in-memory API (FakeCluster) whose watch events arrive late, like a real one's.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPAddressPool, Service } from '../../src/core/kube.ts';
import { ExponentialBackoff, WorkQueue, type Clock } from '../../src/controller/queue.ts';
import { ControllerMetrics } from '../../src/controller/metrics.ts';
import { FakeCluster, NS, run, settle, tick } from '../helpers/controller-cluster.ts';

// ------------------------------------------------------------------------------------ fixtures

function pool(name: string, addresses: string[], extra: Record<string, unknown> = {}): IPAddressPool {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: NS, generation: 1 }, spec: { addresses, ...extra } } as IPAddressPool;
}

let created = 0;
function svc(ns: string, name: string, opts: { ips?: string[]; annotations?: Record<string, string>; lbClass?: string; type?: string; ts?: string } = {}): Service {
  created++;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: ns,
      uid: `uid-${ns}-${name}`,
      creationTimestamp: opts.ts ?? `2024-01-01T00:00:${String(created % 60).padStart(2, '0')}Z`,
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      type: opts.type ?? 'LoadBalancer',
      clusterIP: `10.96.0.${created % 250}`,
      clusterIPs: [`10.96.0.${created % 250}`],
      ports: [{ port: 80, protocol: 'TCP' }],
      ...(opts.lbClass ? { loadBalancerClass: opts.lbClass } : {}),
    },
    status: opts.ips ? { loadBalancer: { ingress: opts.ips.map((ip) => ({ ip })) } } : { loadBalancer: {} },
  } as Service;
}

// ------------------------------------------------------------------------------------ queue

describe('WorkQueue', () => {
  test('a waiting key is queued once; a key re-added while processing comes back after done', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    q.add('a');
    assert.equal(q.length, 2);
    assert.equal(await q.get(), 'a');
    q.add('a'); // while processing
    assert.equal(await q.get(), 'b');
    assert.equal(q.tryGet(), undefined, 'a is not handed out while being processed');
    q.done('a');
    assert.equal(await q.get(), 'a');
    q.done('a');
    q.done('b');
    assert.ok(q.idle);
  });

  test('get waits for an add; shutDown releases waiters with null', async () => {
    const q = new WorkQueue();
    const p = q.get();
    q.add('x');
    assert.equal(await p, 'x');
    const p2 = q.get();
    q.shutDown();
    assert.equal(await p2, null);
    q.add('y');
    assert.equal(q.length, 0, 'nothing is queued after shutDown');
  });

  test('backoff doubles per failure from the base up to the cap; forget resets it', () => {
    const b = new ExponentialBackoff(5, 1000);
    assert.deepEqual(
      [1, 2, 3, 4].map(() => b.when('k')),
      [5, 10, 20, 40],
    );
    for (let i = 0; i < 10; i++) b.when('k');
    assert.equal(b.when('k'), 1000);
    assert.equal(b.when('other'), 5, 'per key');
    b.forget('k');
    assert.equal(b.when('k'), 5);
  });

  test('addRateLimited queues the key after its delay on the clock', () => {
    const timers: Array<{ fn: () => void; ms: number }> = [];
    const clock: Clock = {
      setTimeout: (fn, ms) => {
        timers.push({ fn, ms });
        return timers.length;
      },
      clearTimeout: () => {},
    };
    const retries: number[] = [];
    const q = new WorkQueue({ clock, backoff: new ExponentialBackoff(5, 1000), hooks: { onRetry: (_k, ms) => retries.push(ms) } });
    q.addRateLimited('k');
    assert.equal(q.length, 0);
    assert.equal(q.idle, false, 'a scheduled retry keeps the queue busy');
    timers[0]!.fn();
    assert.equal(q.tryGet(), 'k');
    q.done('k');
    q.addRateLimited('k');
    assert.deepEqual(retries, [5, 10]);
  });
});

// ------------------------------------------------------------------------------------ loop

describe('ControllerLoop', () => {
  test('restart: addresses already in a status are re-registered before anything new is allocated', async () => {
    const c = new FakeCluster();
    c.put(pool('p', ['192.0.2.1-192.0.2.2']));
    // the pending Service is older and sorts first by name: a naive order would give it .1
    c.put(svc('default', 'a-new', { ts: '2020-01-01T00:00:00Z' }));
    c.put(svc('default', 'z-old', { ips: ['192.0.2.1'], annotations: { 'metallb.io/ip-allocated-from-pool': 'p' } }));
    await tick(1);
    const loop = await run(c);
    assert.deepEqual(c.ipsOf('default/z-old'), ['192.0.2.1']);
    assert.deepEqual(c.ipsOf('default/a-new'), ['192.0.2.2']);
    assert.equal(c.poolOf('default/a-new'), 'p');
    assert.deepEqual(c.serviceWrites, ['default/a-new'], 'the kept Service is not rewritten');
    assert.ok(loop.initialLoadDone && loop.ready);
    assert.deepEqual(
      c.events.map((e) => [e.service, e.type, e.reason, e.message]),
      [['default/a-new', 'Normal', 'IPAllocated', 'Assigned IP ["192.0.2.2"]']],
    );
    await loop.stop();
  });

  test('no configuration: Services are left alone until a pool appears', async () => {
    const c = new FakeCluster();
    c.put(svc('default', 'web'));
    await tick(1);
    const loop = await run(c);
    assert.equal(c.serviceWrites.length, 0);
    assert.ok(loop.ready, 'ready once the first configuration was processed, even an empty one');
    c.put(pool('p', ['192.0.2.10/32']));
    await settle(loop);
    assert.deepEqual(c.ipsOf('default/web'), ['192.0.2.10']);
    await loop.stop();
  });

  test('an invalid configuration keeps the previous one; config_stale is set', async () => {
    const c = new FakeCluster();
    const metrics = new ControllerMetrics({ processMetrics: false });
    c.put(pool('p', ['192.0.2.0/30']));
    c.put(svc('default', 'web'));
    await tick(1);
    const loop = await run(c, { metrics });
    const before = c.ipsOf('default/web');
    assert.equal(before.length, 1);
    c.put(pool('p', ['not-an-address']));
    await settle(loop);
    assert.deepEqual(c.ipsOf('default/web'), before);
    assert.equal(loop.stats.configErrors, 1);
    const text = await metrics.registry.metrics();
    assert.match(text, /^metallb_k8s_client_config_stale_bool 1$/m);
    assert.match(text, /^metallb_k8s_client_config_loaded_bool 1$/m);
    await loop.stop();
  });

  test('deleting a Service releases its address and a pending Service takes it', async () => {
    const c = new FakeCluster();
    c.put(pool('one', ['192.0.2.7/32']));
    c.put(svc('default', 'first', { ts: '2020-01-01T00:00:00Z' }));
    c.put(svc('default', 'second', { ts: '2021-01-01T00:00:00Z' }));
    await tick(1);
    const loop = await run(c);
    assert.deepEqual(c.ipsOf('default/first'), ['192.0.2.7']);
    assert.deepEqual(c.ipsOf('default/second'), []);
    assert.ok(c.events.some((e) => e.service === 'default/second' && e.reason === 'AllocationFailed' && e.type === 'Warning'));
    c.remove('services', 'default/first');
    await settle(loop);
    assert.deepEqual(c.ipsOf('default/second'), ['192.0.2.7']);
    await loop.stop();
  });

  test('a 409 conflict is retried on a fresh read', async () => {
    const c = new FakeCluster();
    c.put(pool('p', ['192.0.2.0/30']));
    c.put(svc('default', 'web'));
    c.failNext.set('default/web', ['conflict']);
    await tick(1);
    const loop = await run(c);
    assert.equal(loop.stats.conflicts, 1);
    assert.equal(c.ipsOf('default/web').length, 1);
    assert.equal(c.services.get('default/web')!.metadata!.labels!.touched, 'yes', "the other writer's change is kept");
    await loop.stop();
  });

  test('a failed write is retried after the backoff', async () => {
    const c = new FakeCluster();
    c.put(pool('p', ['192.0.2.0/30']));
    c.put(svc('default', 'web'));
    c.failNext.set('default/web', ['error', 'error']);
    await tick(1);
    const loop = await run(c);
    assert.equal(loop.stats.writeErrors, 2);
    assert.equal(c.ipsOf('default/web').length, 1);
    assert.ok(loop.initialLoadDone, 'the full pass was retried until clean');
    await loop.stop();
  });

  test('Services of another loadBalancerClass are left alone; --lb-class selects them', async () => {
    const c = new FakeCluster();
    c.put(pool('p', ['192.0.2.0/30']));
    c.put(svc('default', 'mine'));
    c.put(svc('default', 'theirs', { lbClass: 'example.com/other' }));
    await tick(1);
    let loop = await run(c);
    assert.equal(c.ipsOf('default/mine').length, 1);
    assert.deepEqual(c.ipsOf('default/theirs'), []);
    await loop.stop();
    const c2 = new FakeCluster();
    c2.put(pool('p', ['192.0.2.0/30']));
    c2.put(svc('default', 'mine'));
    c2.put(svc('default', 'theirs', { lbClass: 'example.com/other' }));
    await tick(1);
    loop = await run(c2, { lbClass: 'example.com/other' });
    assert.deepEqual(c2.ipsOf('default/mine'), []);
    assert.equal(c2.ipsOf('default/theirs').length, 1);
    await loop.stop();
  });

  test('a Service that stops being a LoadBalancer loses its address, which goes to a pending one', async () => {
    const c = new FakeCluster();
    c.put(pool('one', ['192.0.2.9/32']));
    c.put(svc('default', 'a', { ts: '2020-01-01T00:00:00Z' }));
    c.put(svc('default', 'b', { ts: '2021-01-01T00:00:00Z' }));
    await tick(1);
    const loop = await run(c);
    assert.deepEqual(c.ipsOf('default/a'), ['192.0.2.9']);
    const a = c.services.get('default/a')!;
    c.put({ ...a, spec: { ...a.spec, type: 'ClusterIP' } });
    await settle(loop);
    assert.deepEqual(c.ipsOf('default/a'), []);
    assert.deepEqual(c.ipsOf('default/b'), ['192.0.2.9']);
    await loop.stop();
  });

  test('pool status counters and allocator gauges follow the allocations', async () => {
    const c = new FakeCluster();
    const metrics = new ControllerMetrics({ processMetrics: false });
    c.put(pool('v4', ['192.0.2.0/29']));
    c.put(pool('v6', ['2001:db8::/126']));
    for (let i = 0; i < 3; i++) c.put(svc('default', `s${i}`, { annotations: { 'metallb.io/address-pool': 'v4' } }));
    await tick(1);
    const loop = await run(c, { metrics });
    const v4 = c.pools.get(`${NS}/v4`)!.status as Record<string, number>;
    assert.deepEqual(v4, { assignedIPv4: 3, assignedIPv6: 0, availableIPv4: 5, availableIPv6: 0 });
    const v6 = c.pools.get(`${NS}/v6`)!.status as Record<string, number>;
    assert.deepEqual(v6, { assignedIPv4: 0, assignedIPv6: 0, availableIPv4: 0, availableIPv6: 4 });
    const text = await metrics.registry.metrics();
    assert.match(text, /^metallb_allocator_addresses_in_use_total\{pool="v4"\} 3$/m);
    assert.match(text, /^metallb_allocator_addresses_total\{pool="v4"\} 8$/m);
    assert.match(text, /^metallb_allocator_ipv6_addresses_total\{pool="v6"\} 4$/m);
    assert.match(text, /^metallb_allocator_services_allocated_total\{pool="v4"\} 3$/m);
    const writes = c.poolWrites.length;
    c.remove('services', 'default/s0');
    await settle(loop);
    assert.equal((c.pools.get(`${NS}/v4`)!.status as Record<string, number>).assignedIPv4, 2);
    assert.ok(c.poolWrites.length > writes);
    assert.match(await metrics.registry.metrics(), /^metallb_allocator_addresses_in_use_total\{pool="v4"\} 2$/m);
    await loop.stop();
  });

  test('a Service created after start is converged on its own event; sharing Services get one address', async () => {
    const c = new FakeCluster();
    c.put(pool('p', ['192.0.2.0/30']));
    await tick(1);
    const loop = await run(c);
    const shared = { 'metallb.io/allow-shared-ip': 'k' };
    const a = svc('default', 'a', { annotations: shared });
    const b = svc('default', 'b', { annotations: shared });
    b.spec!.ports = [{ port: 443, protocol: 'TCP' }];
    c.put(a);
    c.put(b);
    await settle(loop);
    assert.equal(c.ipsOf('default/a').length, 1);
    assert.deepEqual(c.ipsOf('default/b'), c.ipsOf('default/a'));
    await loop.stop();
  });

  test('Service writes in flight start at 2 and grow by one per 16 done, up to --write-concurrency, each growth reported to onWriteLimit: 20 Services never have more than 3 at once, 400 reach 16', async () => {
    /** A FakeCluster whose writes take 2 ms, counting the most in flight at once. */
    class SlowWrites extends FakeCluster {
      inFlight = 0;
      most = 0;
      override async writeService(base: Service, desired: Service): Promise<Service> {
        this.most = Math.max(this.most, ++this.inFlight);
        try {
          await new Promise((r) => setTimeout(r, 2));
          return await super.writeService(base, desired);
        } finally {
          this.inFlight--;
        }
      }
    }
    for (const [n, most, limits] of [
      [20, 3, [3]],
      [400, 16, [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]],
    ] as const) {
      const c = new SlowWrites();
      c.put(pool('p', ['10.1.0.0/20']));
      for (let i = 0; i < n; i++) c.put(svc('default', `s${String(i).padStart(3, '0')}`));
      await tick(1);
      const reported: number[] = [];
      const loop = await run(c, { writeConcurrency: 16, onWriteLimit: (limit) => reported.push(limit) });
      assert.equal([...c.services.keys()].filter((k) => c.ipsOf(k).length === 1).length, n, `every one of ${n} Services got an address`);
      if (n === 20) assert.ok(c.most <= most, `${c.most} writes in flight at once with ${n} Services`);
      else assert.equal(c.most, most, `${n} Services: up to --write-concurrency`);
      assert.deepEqual(reported, limits, `${n} Services: the limits reported`);
      await loop.stop();
    }
  });
});
