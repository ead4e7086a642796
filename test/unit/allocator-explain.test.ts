/** Failing allocator operations explain themselves: MetalLB's message plus a structured reason. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Allocator, AllocationError, explainFailure, type AllocationFailure, type AllocRequest } from '../../src/core/allocator/index.ts';
import { parsePool } from '../../src/core/config/index.ts';
import { parseIP } from '../../src/core/ip.ts';
import type { IPAddressPool } from '../../src/core/kube.ts';

function pool(name: string, spec: IPAddressPool['spec']) {
  return parsePool({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'm' }, spec }, []);
}

function setup(): Allocator {
  const a = new Allocator();
  a.setPools([
    pool('full', { addresses: ['10.0.0.1/32'] }),
    pool('manual', { addresses: ['10.0.1.0/30'], autoAssign: false }),
    pool('team', { addresses: ['10.0.2.0/30'], serviceAllocation: { namespaces: ['team-ns'] } }),
    pool('red', { addresses: ['10.0.3.0/30'], serviceAllocation: { serviceSelectors: [{ matchLabels: { color: 'red' } }] } }),
    pool('v6only', { addresses: ['2001:db8::/126'] }),
  ]);
  a.assign({ key: 'default/holder', namespace: 'default', ports: [{ protocol: 'TCP', port: 80 }], sharingKey: 'k' }, [parseIP('10.0.0.1')!]);
  return a;
}

const req = (key: string, extra: Partial<AllocRequest> = {}): AllocRequest => ({ key, namespace: key.split('/')[0], ...extra });

const cases: Array<{ name: string; run: (a: Allocator) => unknown; message: string | RegExp; check: (f: AllocationFailure) => void }> = [
  {
    name: 'unknown pool',
    run: (a) => a.allocateFromPool(req('default/s'), 'ipv4', 'nope'),
    message: 'unknown pool "nope"',
    check: (f) => assert.deepEqual(f, { kind: 'unknownPool', pool: 'nope' }),
  },
  {
    name: 'pool full',
    run: (a) => a.allocateFromPool(req('default/s'), 'ipv4', 'full'),
    message: 'no available IPs in pool full',
    check: (f) => assert.deepEqual(f, { kind: 'noAvailableIPs', pool: 'full', refusal: { reason: 'noAvailableIPs', inUse: 1 } }),
  },
  {
    name: 'wrong family from a pool',
    run: (a) => a.allocateFromPool(req('default/s'), 'ipv4', 'v6only'),
    message: '["<nil>"] is not allowed in config',
    check: (f) => assert.deepEqual(f, { kind: 'poolLacksFamily', pool: 'v6only', family: 'ipv4', ips: ['<nil>'], available: ['ipv6'] }),
  },
  {
    name: 'address outside every pool',
    run: (a) => a.assign(req('default/s'), [parseIP('192.0.2.1')!]),
    message: '["192.0.2.1"] is not allowed in config',
    check: (f) => assert.deepEqual(f, { kind: 'notAllowedInConfig', ips: ['192.0.2.1'] }),
  },
  {
    name: 'namespace not allowed',
    run: (a) => a.assign(req('other/s'), [parseIP('10.0.2.1')!]),
    message: 'pool team not compatible for ip assignment',
    check: (f) => assert.deepEqual(f, { kind: 'poolIncompatible', pool: 'team', refusal: { reason: 'namespaceNotAllowed', namespace: 'other', namespaces: ['team-ns'] } }),
  },
  {
    name: 'service selector mismatch',
    run: (a) => a.assign(req('default/s', { labels: { color: 'blue' } }), [parseIP('10.0.3.1')!]),
    message: 'pool red not compatible for ip assignment',
    check: (f) => assert.deepEqual(f, { kind: 'poolIncompatible', pool: 'red', refusal: { reason: 'serviceSelectorMismatch', selectors: ['color=red'] } }),
  },
  {
    name: 'sharing key conflict names the other service and the keys',
    run: (a) => a.assign(req('default/s', { sharingKey: 'other' }), [parseIP('10.0.0.1')!]),
    message: 'can\'t change sharing key for "default/s", address also in use by default/holder',
    check: (f) => {
      assert.equal(f.kind, 'sharingConflict');
      if (f.kind !== 'sharingConflict') return;
      assert.equal(f.sharing.conflict, 'keys');
      assert.deepEqual(f.sharing.services, ['default/holder']);
      assert.deepEqual(f.sharing.existing, { sharingKey: 'k', backendKey: '' });
      assert.equal(f.sharing.keyProblem, 'sharing key "other" does not match existing sharing key "k"');
    },
  },
  {
    name: 'port conflict names the port and the service holding it',
    run: (a) => a.assign(req('default/s', { sharingKey: 'k', ports: [{ protocol: 'TCP', port: 80 }] }), [parseIP('10.0.0.1')!]),
    message: 'port TCP/80 is already in use on "10.0.0.1"',
    check: (f) => {
      assert.equal(f.kind, 'sharingConflict');
      if (f.kind !== 'sharingConflict') return;
      assert.equal(f.sharing.conflict, 'port');
      assert.equal(f.sharing.port, 'TCP/80');
      assert.deepEqual(f.sharing.services, ['default/holder']);
    },
  },
  {
    name: 'allocate lists every pool and why it refused',
    run: (a) => a.allocate(req('default/s', { labels: { color: 'blue' } }), 'ipv4'),
    message: 'no available IPs',
    check: (f) => {
      assert.equal(f.kind, 'noPoolAvailable');
      if (f.kind !== 'noPoolAvailable') return;
      const why = Object.fromEntries(f.attempts.map((x) => [x.pool, `${x.phase}:${x.refusal?.reason}`]));
      assert.deepEqual(why, {
        red: 'pinned:serviceSelectorMismatch',
        team: 'pinned:namespaceNotAllowed',
        full: 'generic:noAvailableIPs',
        manual: 'generic:autoAssignDisabled',
        v6only: 'generic:wrongFamily',
      });
      assert.match(explainFailure(f), /manual: autoAssign is false/);
    },
  },
  {
    name: 'dual-stack single-stack policy',
    run: (a) => a.allocateFromPool(req('default/s'), 'dual', 'v6only'),
    message: 'no available IPs in pool v6only for dual IPFamily',
    check: (f) => assert.equal(f.kind, 'noIPsForFamily'),
  },
];

for (const c of cases) {
  test(`failure explains itself: ${c.name}`, () => {
    const a = setup();
    const before = a.notificationCount;
    let err: unknown;
    try {
      c.run(a);
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof AllocationError, 'throws AllocationError');
    if (typeof c.message === 'string') assert.equal(err.message, c.message);
    else assert.match(err.message, c.message);
    c.check(err.reason);
    assert.equal(a.notificationCount, before, 'a failed operation emits no notification');
    assert.deepEqual(a.ipsOf('default/s'), []);
  });
}

test('allocate reports equally eligible pools (MetalLB picks in random map order)', () => {
  const a = new Allocator();
  a.setPools([pool('b', { addresses: ['10.1.0.0/30'] }), pool('a', { addresses: ['10.2.0.0/30'] }), pool('c', { addresses: ['2001:db8::/126'] })]);
  const r = a.allocate(req('default/s'), 'ipv4');
  assert.equal(r.pool, 'a');
  assert.deepEqual(r.ips, ['10.2.0.0']);
  assert.deepEqual(r.tiedPools, ['b']);
});

test('allocate ties respect priority classes', () => {
  const a = new Allocator();
  a.setPools([
    pool('p10', { addresses: ['10.1.0.0/30'], serviceAllocation: { priority: 10, namespaces: ['ns'] } }),
    pool('p5', { addresses: ['10.2.0.0/30'], serviceAllocation: { priority: 5, namespaces: ['ns'] } }),
    pool('p5b', { addresses: ['10.3.0.0/30'], serviceAllocation: { priority: 5, namespaces: ['ns'] } }),
  ]);
  const r = a.allocate(req('ns/s'), 'ipv4');
  assert.equal(r.pool, 'p5');
  assert.deepEqual(r.tiedPools, ['p5b']);
});
