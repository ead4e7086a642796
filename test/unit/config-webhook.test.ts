import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/core/kube.ts';
import { clusterStateFromObjects } from '../../src/core/kube.ts';
import { admissionReview, clusterValidation, validateFRR, validateNative, resetTransient } from '../../src/core/config/index.ts';

const NS = 'metallb-system';
const obj = (kind: string, name: string, spec: Record<string, unknown> = {}, namespace = NS): KubeObject => ({
  apiVersion: kind === 'BGPPeer' ? 'metallb.io/v1beta2' : 'metallb.io/v1beta1',
  kind,
  metadata: { name, namespace },
  spec,
});
const node = (name: string, labels: Record<string, string> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });

// Webhooks with the REAL whole-cluster validation (the conformance fixtures use a stub).
const cases: Array<{ name: string; operation: 'create' | 'update' | 'delete'; object: KubeObject; stored: KubeObject[]; mode?: string; allowed: boolean; reason?: RegExp }> = [
  {
    name: 'pool overlapping a stored pool',
    operation: 'create',
    object: obj('IPAddressPool', 'b', { addresses: ['10.0.0.128/25'] }),
    stored: [obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/24'] })],
    allowed: false,
    reason: /overlaps/,
  },
  {
    name: 'pool update replacing itself does not overlap itself',
    operation: 'update',
    object: obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/25'] }),
    stored: [obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/24'] })],
    allowed: true,
  },
  {
    name: 'stored objects outside MetalLB namespace are not read',
    operation: 'create',
    object: obj('IPAddressPool', 'b', { addresses: ['10.0.0.0/24'] }),
    stored: [obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/24'] }, 'other')],
    allowed: true,
  },
  {
    name: 'create outside the namespace',
    operation: 'create',
    object: obj('IPAddressPool', 'b', { addresses: ['10.0.0.0/24'] }, 'default'),
    stored: [],
    allowed: false,
    reason: /must be created in metallb-system/,
  },
  { name: 'update outside the namespace is validated only', operation: 'update', object: obj('IPAddressPool', 'b', { addresses: ['10.0.0.0/24'] }, 'default'), stored: [], allowed: true },
  { name: 'BGPPeer with disableMP anywhere', operation: 'create', object: obj('BGPPeer', 'p', { disableMP: true }, 'default'), stored: [], allowed: true },
  {
    name: 'BGPPeer referencing a BFD profile not yet created (reset clears it)',
    operation: 'create',
    object: obj('BGPPeer', 'p', { myASN: 1, peerASN: 2, peerAddress: '1.2.3.4', bfdProfile: 'later', passwordSecret: { name: 'later' } }),
    stored: [],
    mode: 'native',
    allowed: true,
  },
  {
    name: 'BGPPeer duplicate for FRR on a shared node',
    operation: 'create',
    mode: 'frr',
    object: obj('BGPPeer', 'p2', { myASN: 1, peerASN: 2, peerAddress: '1.2.3.4', nodeSelectors: [{ matchLabels: { a: 'b' } }] }),
    stored: [obj('BGPPeer', 'p1', { myASN: 1, peerASN: 3, peerAddress: '1.2.3.4' }), node('n1', { a: 'b' })],
    allowed: false,
    reason: /already exists/,
  },
  {
    name: 'BGPPeer same address for FRR on disjoint nodes',
    operation: 'create',
    mode: 'frr',
    object: obj('BGPPeer', 'p2', { myASN: 1, peerASN: 2, peerAddress: '1.2.3.4', nodeSelectors: [{ matchLabels: { a: 'b' } }] }),
    stored: [obj('BGPPeer', 'p1', { myASN: 1, peerASN: 3, peerAddress: '1.2.3.4', nodeSelectors: [{ matchLabels: { a: 'c' } }] }), node('n1', { a: 'b' }), node('n2', { a: 'c' })],
    allowed: true,
  },
  {
    name: 'BGPAdvertisement aggregation length too short for a stored pool',
    operation: 'create',
    object: obj('BGPAdvertisement', 'adv', { aggregationLength: 16 }),
    stored: [obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/24'] })],
    allowed: false,
    reason: /aggregation length/,
  },
  { name: 'BGPAdvertisement literal community with a colon is still parsed', operation: 'create', object: obj('BGPAdvertisement', 'adv', { communities: ['1:2:3'] }), stored: [], allowed: false },
  { name: 'BGPAdvertisement alias name is cleared by the reset', operation: 'create', object: obj('BGPAdvertisement', 'adv', { communities: ['later-alias'] }), stored: [], allowed: true },
  { name: 'BFDProfile with out-of-range values is admitted', operation: 'create', object: obj('BFDProfile', 'b', { detectMultiplier: 1 }), stored: [], allowed: true },
  { name: 'BFDProfile delete while used', operation: 'delete', object: obj('BFDProfile', 'b'), stored: [obj('BGPPeer', 'p', { bfdProfile: 'b' })], allowed: false, reason: /used by BGPPeer p/ },
  { name: 'BFDProfile delete, user in another namespace', operation: 'delete', object: obj('BFDProfile', 'b'), stored: [obj('BGPPeer', 'p', { bfdProfile: 'b' }, 'other')], allowed: true },
  { name: 'pool delete', operation: 'delete', object: obj('IPAddressPool', 'a'), stored: [], allowed: true },
];
for (const c of cases) {
  test(`admissionReview: ${c.name}`, () => {
    const d = admissionReview({ metallbNamespace: NS, operation: c.operation, object: c.object, stored: c.stored, clusterValidation: clusterValidation(c.mode) });
    assert.equal(d.allowed, c.allowed, d.reason);
    if (c.reason) assert.match(d.reason, c.reason);
  });
}

test('admissionReview hands the merged list to the validation', () => {
  const seen: string[][] = [];
  const d = admissionReview({
    metallbNamespace: NS,
    operation: 'update',
    object: obj('L2Advertisement', 'b', { interfaces: ['eth1'] }),
    stored: [obj('L2Advertisement', 'a'), obj('L2Advertisement', 'b'), obj('IPAddressPool', 'p', { addresses: ['10.0.0.0/24'] }), node('n')],
    clusterValidation: (objs) => {
      seen.push(objs.map((o) => `${o.kind}/${o.metadata?.name}`));
    },
  });
  assert.equal(d.allowed, true);
  assert.deepEqual(seen, [['L2Advertisement/a', 'L2Advertisement/b', 'IPAddressPool/p']]);
  assert.deepEqual((d.validated![1] as { spec: { interfaces: string[] } }).spec.interfaces, ['eth1']);
});

test('resetTransient does not modify its input', () => {
  const p = obj('BGPPeer', 'p', { bfdProfile: 'x', passwordSecret: { name: 's' } });
  const a = obj('BGPAdvertisement', 'a', { communities: ['alias', '1:2'] });
  const out = resetTransient([p, a]);
  assert.deepEqual(out[0].spec, {});
  assert.deepEqual(out[1].spec, { communities: ['1:2'] });
  assert.equal((p.spec as Record<string, unknown>).bfdProfile, 'x');
  assert.deepEqual(resetTransient([obj('BGPAdvertisement', 'a', { communities: ['alias'] })])[0].spec, {});
});

const st = (...o: KubeObject[]) => clusterStateFromObjects(o);
const nativeCases: Array<[string, KubeObject[], boolean]> = [
  ['plain peer', [obj('BGPPeer', 'p', { myASN: 1, peerASN: 2, peerAddress: '1.2.3.4', holdTime: '90s', password: 'x' })], true],
  ['keepalive 0s passes', [obj('BGPPeer', 'p', { keepaliveTime: '0s' })], true],
  ['keepalive set', [obj('BGPPeer', 'p', { keepaliveTime: '10s' })], false],
  ['connectTime 0s', [obj('BGPPeer', 'p', { connectTime: '0s' })], false],
  ['localASN', [obj('BGPPeer', 'p', { localASN: 5 })], false],
  ['any BFD profile', [obj('BFDProfile', 'b')], false],
  ['IPv6 pool not advertised', [obj('IPAddressPool', 'v6', { addresses: ['2001:db8::/64'] }), obj('BGPAdvertisement', 'a', { ipAddressPools: ['other'] })], true],
  ['IPv6 pool advertised by an all-pools adv', [obj('IPAddressPool', 'v6', { addresses: ['2001:db8::/64'] }), obj('BGPAdvertisement', 'a', { ipAddressPools: ['other'] }), obj('BGPAdvertisement', 'b')], false],
  ['mapped IPv6 counts as IPv4', [obj('IPAddressPool', 'm', { addresses: ['::ffff:10.0.0.0/104'] }), obj('BGPAdvertisement', 'b')], true],
  ['large community alias', [obj('Community', 'c', { communities: [{ name: 'x', value: 'large:1:2:3' }] })], false],
  ['alias name ignored', [obj('BGPAdvertisement', 'a', { communities: ['alias'] })], true],
];
for (const [name, objs, ok] of nativeCases) {
  test(`validateNative: ${name}`, () => (ok ? assert.doesNotThrow : assert.throws)(() => validateNative(st(...objs))));
}

const frrCases: Array<[string, KubeObject[], boolean]> = [
  ['different routerIDs, no nodes', [obj('BGPPeer', 'a', { peerAddress: '1.1.1.1', routerID: '1.2.3.4' }), obj('BGPPeer', 'b', { peerAddress: '1.1.1.2' })], false],
  ['same address in two VRFs', [obj('BGPPeer', 'a', { peerAddress: '1.1.1.1', myASN: 1 }), obj('BGPPeer', 'b', { peerAddress: '1.1.1.1', vrf: 'red', myASN: 2 })], true],
  ['different myASN same VRF', [obj('BGPPeer', 'a', { peerAddress: '1.1.1.1', myASN: 1 }), obj('BGPPeer', 'b', { peerAddress: '1.1.1.2', myASN: 2 })], false],
  [
    'conflict on disjoint nodes',
    [
      obj('BGPPeer', 'a', { peerAddress: '1.1.1.1', nodeSelectors: [{ matchLabels: { x: '1' } }] }),
      obj('BGPPeer', 'b', { peerAddress: '1.1.1.1', nodeSelectors: [{ matchLabels: { x: '2' } }] }),
      node('n1', { x: '1' }),
      node('n2', { x: '2' }),
    ],
    true,
  ],
  ['invalid selector evaluated', [obj('BGPPeer', 'a', { peerAddress: '1.1.1.1', nodeSelectors: [{ matchLabels: { '-': '1' } }] }), obj('BGPPeer', 'b', { peerAddress: '1.1.1.2' }), node('n1')], false],
];
for (const [name, objs, ok] of frrCases) {
  test(`validateFRR: ${name}`, () => (ok ? assert.doesNotThrow : assert.throws)(() => validateFRR(st(...objs))));
}
