/** allocateAll (dry run over a snapshot) and the Service field helpers. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateAll, backendKey, requestedIPs, sharingKey, reconcileService, newController, setControllerPools } from '../../src/core/controller/index.ts';
import { parsePool } from '../../src/core/config/index.ts';
import type { Config, Pool } from '../../src/core/config/types.ts';
import type { IPAddressPool, Service } from '../../src/core/kube.ts';

function pool(name: string, spec: IPAddressPool['spec']): Pool {
  return parsePool({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'm' }, spec }, []);
}

function config(...pools: Pool[]): Config {
  return { pools: new Map(pools.map((p) => [p.name, p])), peers: new Map(), bfdProfiles: new Map(), poolsByNamespace: new Map(), poolsByServiceSelector: [] };
}

function svc(
  ns: string,
  name: string,
  opts: {
    ip?: string;
    ips?: string[];
    created?: string;
    lbClass?: string;
    type?: string;
    annotations?: Record<string, string>;
    ports?: number[];
    lbIP?: string;
    clusterIPs?: string[];
    policy?: string;
  } = {},
): Service {
  const ips = opts.ips ?? (opts.ip ? [opts.ip] : undefined);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: ns, name, ...(opts.created ? { creationTimestamp: opts.created } : {}), ...(opts.annotations ? { annotations: opts.annotations } : {}) },
    spec: {
      type: opts.type ?? 'LoadBalancer',
      clusterIPs: opts.clusterIPs ?? ['10.96.0.10'],
      ...(opts.policy ? { ipFamilyPolicy: opts.policy } : {}),
      ...(opts.lbClass ? { loadBalancerClass: opts.lbClass } : {}),
      ...(opts.lbIP ? { loadBalancerIP: opts.lbIP } : {}),
      ports: (opts.ports ?? [80]).map((port) => ({ protocol: 'TCP', port })),
    },
    ...(ips ? { status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } } } : {}),
  };
}

const two = config(pool('small', { addresses: ['192.0.2.0/31'] }));

test('status addresses are re-registered before pending services allocate (restart safety)', () => {
  const services = [svc('a', 'new1'), svc('z', 'old', { ip: '192.0.2.0' }), svc('a', 'new2')];
  const r = allocateAll(two, services);
  assert.deepEqual(
    r.services.map((s) => [s.service, s.ips, s.error === null]),
    [
      ['z/old', ['192.0.2.0'], true],
      ['a/new1', ['192.0.2.1'], true],
      ['a/new2', [], false],
    ],
  );
  const failed = r.services[2];
  assert.equal(failed.error, 'no available IPs');
  assert.equal(failed.reason?.kind, 'noPoolAvailable');
  assert.match(failed.nondeterministic ?? '', /a\/new1/);
  assert.match(r.services[1].nondeterministic ?? '', /a\/new2/);
  assert.equal(r.services[0].nondeterministic, undefined);
  assert.deepEqual(r.pools, [{ name: 'small', size: 2, inUse: 2, assignedIPv4: 2, assignedIPv6: 0, availableIPv4: 0, availableIPv6: 0 }]);
});

test('pending services are ordered by creationTimestamp, then namespace/name', () => {
  const services = [svc('b', 'young', { created: '2024-05-01T00:00:00Z' }), svc('a', 'no-timestamp'), svc('c', 'old', { created: '2023-01-01T00:00:00Z' })];
  const r = allocateAll(config(pool('p', { addresses: ['192.0.2.0/29'] })), services);
  assert.deepEqual(
    r.services.map((s) => `${s.service}=${s.ips[0]}`),
    ['c/old=192.0.2.0', 'b/young=192.0.2.1', 'a/no-timestamp=192.0.2.2'],
  );
});

test('the result does not depend on the snapshot order', () => {
  const make = () => [
    svc('x', 's1', { ip: '192.0.2.3' }),
    svc('x', 's2'),
    svc('y', 's3', { created: '2020-01-01T00:00:00Z' }),
    svc('y', 's4', { lbIP: '192.0.2.5' }),
    svc('x', 's5', { annotations: { 'metallb.io/address-pool': 'q' } }),
  ];
  const cfg = config(pool('p', { addresses: ['192.0.2.0/29'] }), pool('q', { addresses: ['198.51.100.0/30'], autoAssign: false }));
  const a = allocateAll(cfg, make());
  const b = allocateAll(cfg, make().reverse());
  assert.deepEqual(a, b);
  assert.deepEqual(Object.fromEntries(a.services.map((s) => [s.service, `${s.pool}:${s.ips.join(',')}`])), {
    'x/s1': 'p:192.0.2.3',
    'y/s3': 'p:192.0.2.0',
    'x/s2': 'p:192.0.2.1',
    'x/s5': 'q:198.51.100.0',
    'y/s4': 'p:192.0.2.5',
  });
});

test('loadBalancerClass and non-LoadBalancer services are skipped', () => {
  const services = [svc('a', 'mine'), svc('a', 'other', { lbClass: 'example.com/lb' }), svc('a', 'cip', { type: 'ClusterIP' })];
  const cfg = config(pool('p', { addresses: ['192.0.2.0/30'] }));
  assert.deepEqual(
    allocateAll(cfg, services).services.map((s) => s.service),
    ['a/mine'],
  );
  assert.deepEqual(
    allocateAll(cfg, services, { loadBalancerClass: 'example.com/lb' }).services.map((s) => s.service),
    ['a/other'],
  );
});

test('equally eligible pools are decided by name and flagged', () => {
  const cfg = config(pool('zeta', { addresses: ['192.0.2.0/30'] }), pool('alpha', { addresses: ['198.51.100.0/30'] }));
  const [s] = allocateAll(cfg, [svc('a', 's')]).services;
  assert.equal(s.pool, 'alpha');
  assert.match(s.nondeterministic ?? '', /alpha, zeta/);
});

test('two statuses claiming one address: the first in order keeps it, both are flagged', () => {
  const cfg = config(pool('p', { addresses: ['192.0.2.0/30'] }));
  const r = allocateAll(cfg, [svc('b', 's', { ip: '192.0.2.2' }), svc('a', 's', { ip: '192.0.2.2' })]);
  const by = Object.fromEntries(r.services.map((s) => [s.service, s]));
  assert.deepEqual(by['a/s'].ips, ['192.0.2.2']);
  assert.deepEqual(by['b/s'].ips, ['192.0.2.0']);
  assert.match(by['b/s'].nondeterministic ?? '', /also claimed by a\/s/);
  assert.match(by['a/s'].nondeterministic ?? '', /also claimed by b\/s/);
});

test('sharing services converge in passes and share one address', () => {
  const cfg = config(pool('p', { addresses: ['192.0.2.0/30'] }));
  const share = { 'metallb.io/allow-shared-ip': 'web' };
  const r = allocateAll(cfg, [svc('a', 'http', { annotations: share, ports: [80] }), svc('a', 'https', { annotations: share, ports: [443] })]);
  assert.deepEqual(
    r.services.map((s) => s.ips),
    [['192.0.2.0'], ['192.0.2.0']],
  );
  // The allocation keys changed ("" -> "web"): MetalLB's reprocessAll runs a second pass, in which
  // nothing asks for a third.
  assert.equal(r.passes, 2);
  assert.equal(r.passLimitReached, undefined);
  assert.equal(r.pools[0].inUse, 1);
});

test('huge IPv6 pool sizes are strings', () => {
  const r = allocateAll(config(pool('v6', { addresses: ['2001:db8::/64'] })), []);
  assert.equal(r.pools[0].size, '9223372036854775807');
});

const helperCases: Array<[string, () => unknown, unknown]> = [
  ['backend key only with Local policy', () => backendKey({ kind: 'Service', spec: { externalTrafficPolicy: 'Cluster', selector: { a: 'b' } } }), ''],
  ['backend key sorted selector', () => backendKey({ kind: 'Service', spec: { externalTrafficPolicy: 'Local', selector: { z: '1', a: '2' } } }), 'a=2,z=1'],
  [
    'sharing key: stable annotation wins even when empty',
    () => sharingKey({ kind: 'Service', metadata: { annotations: { 'metallb.io/allow-shared-ip': '', 'metallb.universe.tf/allow-shared-ip': 'old' } } }),
    '',
  ],
  ['sharing key: deprecated annotation', () => sharingKey({ kind: 'Service', metadata: { annotations: { 'metallb.universe.tf/allow-shared-ip': 'old' } } }), 'old'],
  ['requested: both set is an error', () => requestedIPs({ kind: 'Service', metadata: { annotations: { 'metallb.io/loadBalancerIPs': '1.2.3.4' } }, spec: { loadBalancerIP: '1.2.3.5' } }).ok, false],
  [
    'requested: list trimmed',
    () => {
      const r = requestedIPs({ kind: 'Service', metadata: { annotations: { 'metallb.io/loadBalancerIPs': '1.2.3.4, 2001:db8::1' } } });
      return r.ok ? r.family : r.error;
    },
    'dual',
  ],
  [
    'requested: same family twice',
    () => {
      const r = requestedIPs({ kind: 'Service', metadata: { annotations: { 'metallb.io/loadBalancerIPs': '1.2.3.4,1.2.3.5' } } });
      return r.ok ? 'ok' : r.error;
    },
    'IPFamilyForAddresses: same address family ["1.2.3.4" "1.2.3.5"]',
  ],
];
for (const [name, fn, want] of helperCases) {
  test(`service helper: ${name}`, () => assert.deepEqual(fn(), want));
}

test('reconcile failure carries the allocator reason and MetalLB event text', () => {
  const ctrl = newController();
  setControllerPools(ctrl, [pool('p', { addresses: ['192.0.2.0/32'] })]);
  reconcileService(ctrl, 'a/one', svc('a', 'one'));
  const out = reconcileService(ctrl, 'a/two', svc('a', 'two'));
  assert.equal(out.result, 'errorNoRetry');
  assert.deepEqual(
    out.events.map((e) => [e.type, e.reason, e.message]),
    [['Warning', 'AllocationFailed', 'Failed to allocate IP for "a/two": no available IPs']],
  );
  assert.equal(out.failure?.reason?.kind, 'noPoolAvailable');
  assert.equal(out.updated, false);
});

// ------------------------------------------------------------------------------- restart order

test('a shrunk pool: Services still inside keep their addresses, those outside get what is left (restart order)', () => {
  // lab was 192.0.2.0/29; now /30. c..f hold the four addresses left; a and b hold .4 and .5.
  const cfg = config(pool('lab', { addresses: ['192.0.2.0/30'] }));
  const services = [
    svc('default', 'a-moved', { ip: '192.0.2.4' }),
    svc('default', 'b-moved', { ip: '192.0.2.5' }),
    svc('default', 'c-kept', { ip: '192.0.2.0' }),
    svc('default', 'd-kept', { ip: '192.0.2.1' }),
    svc('default', 'e-kept', { ip: '192.0.2.2' }),
    svc('default', 'f-kept', { ip: '192.0.2.3' }),
  ];
  const r = allocateAll(cfg, services);
  const by = Object.fromEntries(r.services.map((s) => [s.service.slice('default/'.length), s]));
  assert.deepEqual(
    r.services.map((s) => s.service.slice('default/'.length)),
    ['c-kept', 'd-kept', 'e-kept', 'f-kept', 'a-moved', 'b-moved'],
    'among Services with one address, those keeping theirs come first',
  );
  for (const k of ['c-kept', 'd-kept', 'e-kept', 'f-kept']) {
    assert.deepEqual(
      by[k]!.ips,
      services.find((s) => s.metadata!.name === k)!.status!.loadBalancer!.ingress!.map((i) => i.ip),
      `${k} keeps its address`,
    );
    assert.deepEqual(by[k]!.events, []);
    assert.match(
      by[k]!.nondeterministic ?? '',
      /^after a restart MetalLB may process default\/a-moved, default\/b-moved \(which must re-allocate\) before this Service; one of them may then take 192\.0\.2\.\d and this Service lose it$/,
    );
    assert.doesNotMatch(by[k]!.nondeterministic ?? '', /also claimed/, "no status claims another one's address");
  }
  for (const k of ['a-moved', 'b-moved']) {
    assert.deepEqual(by[k]!.ips, []);
    assert.equal(by[k]!.error, 'no available IPs');
    assert.deepEqual(
      by[k]!.events.map((e) => e.reason),
      ['ClearAssignment', 'AllocationFailed'],
    );
    assert.equal(by[k]!.events[0]!.cause?.kind, 'notAllowedInConfig');
    assert.match(
      by[k]!.nondeterministic ?? '',
      /^its status address is no longer allowed; after a restart MetalLB processes Services with 1 status.loadBalancer.ingress entry in random order, and coming before default\/c-kept, default\/d-kept, default\/e-kept and 1 more it may take 192\.0\.2\.0, 192\.0\.2\.1, 192\.0\.2\.2 and 1 more from them$/,
    );
  }
  assert.equal(r.passes, 1);
});

test('a shrunk pool with room left: the moved Service takes a free address, nothing is flagged', () => {
  const cfg = config(pool('lab', { addresses: ['192.0.2.0/30'] }));
  const r = allocateAll(cfg, [svc('default', 'a-moved', { ip: '192.0.2.4' }), svc('default', 'c-kept', { ip: '192.0.2.2' })]);
  assert.deepEqual(
    r.services.map((s) => [s.service, s.ips, s.nondeterministic]),
    [
      ['default/c-kept', ['192.0.2.2'], undefined],
      ['default/a-moved', ['192.0.2.0'], undefined],
    ],
  );
});

// ------------------------------------------------------------------------------ nondeterminism

const nondeterminismCases: Array<{ name: string; pools: Pool[]; services: Service[]; flagged: Record<string, RegExp | undefined> }> = [
  {
    name: 'pools pinned by selector at one priority: deterministic (the last by name)',
    pools: [
      pool('a', { addresses: ['10.0.1.0/30'], serviceAllocation: { serviceSelectors: [{ matchLabels: {} }] } }),
      pool('b', { addresses: ['10.0.2.0/30'], serviceAllocation: { serviceSelectors: [{ matchLabels: {} }] } }),
    ],
    services: [svc('x', 'one')],
    flagged: { 'x/one': undefined },
  },
  {
    // KNOWN.md K1: the pool is certain, but which of two pending Services takes its first address is not.
    name: 'two pending Services sharing a pool: the restart order (Go map order) decides who gets which address',
    pools: [
      pool('a', { addresses: ['10.0.1.0/30'], serviceAllocation: { serviceSelectors: [{ matchLabels: {} }] } }),
      pool('b', { addresses: ['10.0.2.0/30'], serviceAllocation: { serviceSelectors: [{ matchLabels: {} }] } }),
    ],
    services: [svc('x', 'one'), svc('x', 'two')],
    flagged: { 'x/one': /in random \(Go map\) order; in another such order this Service gets 10\.0\.2\.1/, 'x/two': /in another such order this Service gets 10\.0\.2\.0/ },
  },
  {
    name: 'two generic pools: each allocation is a map-order choice',
    pools: [pool('g1', { addresses: ['10.0.1.0/30'] }), pool('g2', { addresses: ['10.0.2.0/30'] })],
    services: [svc('x', 'one', { created: '2020-01-01T00:00:00Z' })],
    flagged: { 'x/one': /pools g1, g2 could each be chosen/ },
  },
  {
    name: 'a later Service walking a pool a random choice touched is affected; one in another pool is not',
    pools: [
      pool('g1', { addresses: ['10.0.1.0/30'] }),
      pool('g2', { addresses: ['10.0.2.0/30'] }),
      pool('manual', { addresses: ['10.0.1.0/30'], autoAssign: false }),
      pool('other', { addresses: ['10.0.3.0/30'], autoAssign: false }),
    ],
    services: [
      svc('x', 'first', { created: '2020-01-01T00:00:00Z' }),
      svc('x', 'second', { created: '2020-01-02T00:00:00Z', annotations: { 'metallb.io/address-pool': 'g2' } }),
      svc('x', 'third', { created: '2020-01-03T00:00:00Z', annotations: { 'metallb.io/address-pool': 'other' } }),
      svc('x', 'fourth', { created: '2020-01-04T00:00:00Z', lbIP: '10.0.2.3' }),
    ],
    flagged: {
      'x/first': /pools g1, g2 could each be chosen/,
      'x/second': /its addresses depend on x\/first's random pool choice/,
      'x/third': undefined,
      'x/fourth': undefined,
    },
  },
  {
    name: 'a requested address the random Service could have taken is affected',
    pools: [pool('g1', { addresses: ['10.0.1.0/30'] }), pool('g2', { addresses: ['10.0.2.0/30'] })],
    services: [svc('x', 'first', { created: '2020-01-01T00:00:00Z' }), svc('x', 'wants', { created: '2020-01-02T00:00:00Z', lbIP: '10.0.2.0' })],
    flagged: { 'x/first': /could each be chosen/, 'x/wants': /depend on x\/first's random pool choice/ },
  },
];
for (const c of nondeterminismCases) {
  test(`nondeterministic: ${c.name}`, () => {
    const r = allocateAll(config(...c.pools), c.services);
    for (const [key, want] of Object.entries(c.flagged)) {
      const s = r.services.find((o) => o.service === key)!;
      if (want === undefined) assert.equal(s.nondeterministic, undefined, `${key}: ${s.nondeterministic}`);
      else assert.match(s.nondeterministic ?? '<none>', want, key);
    }
  });
}

// ------------------------------------------------------------------------- passes and messages

test('reprocessing stops at maxPasses and says so', () => {
  const cfg = config(pool('p', { addresses: ['192.0.2.0/30'] }));
  const share = { 'metallb.io/allow-shared-ip': 'web' };
  const r = allocateAll(cfg, [svc('a', 'http', { annotations: share, ports: [80] })], { maxPasses: 1 });
  assert.equal(r.passes, 1);
  assert.equal(r.passLimitReached, true);
});

test('PreferDualStack: adding the missing family from a pool without it says ["<addr>" "<nil>"] is not allowed', () => {
  const cfg = config(pool('v4', { addresses: ['192.0.2.0/30'] }));
  const s = svc('a', 'dual', { ip: '192.0.2.1', clusterIPs: ['10.96.0.10', 'fd00::10'], policy: 'PreferDualStack' });
  const [out] = allocateAll(cfg, [s]).services;
  assert.deepEqual(out!.ips, ['192.0.2.1']);
  assert.deepEqual(
    out!.events.map((e) => [e.type, e.reason, e.message]),
    [['Normal', 'AdditionalAssignFailed', 'cannot assign additional IP in PreferDualStack: ["192.0.2.1" "<nil>"] is not allowed in config']],
  );
  assert.deepEqual(out!.events[0]!.cause, { kind: 'poolLacksFamily', pool: 'v4', family: 'ipv6', ips: ['192.0.2.1', '<nil>'], available: ['ipv4'] });
  assert.equal(out!.error, null);
});
