import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/core/kube.ts';
import { clusterStateFromObjects, EXCLUDE_LB_LABEL } from '../../src/core/kube.ts';
import { configWarnings } from '../../src/core/config/index.ts';

const NS = 'metallb-system';
const obj = (kind: string, name: string, spec: Record<string, unknown> = {}, labels?: Record<string, string>): KubeObject => ({
  apiVersion: 'metallb.io/v1beta1',
  kind,
  metadata: { name, namespace: NS, ...(labels ? { labels } : {}) },
  spec,
});
const node = (name: string, labels: Record<string, string> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });
const svc = (name: string, annotations: Record<string, string>): KubeObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default', annotations }, spec: { type: 'LoadBalancer' } });
const pool = (name: string, addresses = ['10.0.0.0/24'], labels?: Record<string, string>) => obj('IPAddressPool', name, { addresses }, labels);

const cases: Array<{ name: string; objects: KubeObject[]; want: Array<[id: string, object: string]>; fix?: RegExp }> = [
  { name: 'clean configuration', objects: [pool('p'), obj('L2Advertisement', 'l2'), node('n1')], want: [] },
  {
    name: 'advertisement names a missing pool (and the pool is not advertised)',
    objects: [pool('p'), obj('L2Advertisement', 'l2', { ipAddressPools: ['pp'] })],
    want: [
      ['advertisement-unknown-pool', 'metallb-system/L2Advertisement/l2'],
      ['pool-not-advertised', 'metallb-system/IPAddressPool/p'],
    ],
  },
  {
    name: 'pool with no advertisement',
    objects: [pool('p'), pool('q', ['10.1.0.0/24'], { adv: 'yes' }), obj('BGPAdvertisement', 'b', { ipAddressPoolSelectors: [{ matchLabels: { adv: 'yes' } }] })],
    want: [['pool-not-advertised', 'metallb-system/IPAddressPool/p']],
  },
  {
    name: 'pool-not-advertised on an invalid configuration uses the raw attachment rule',
    objects: [pool('p'), pool('p2', ['10.0.0.0/25']), obj('L2Advertisement', 'l2', { ipAddressPools: ['p2'] })],
    want: [['pool-not-advertised', 'metallb-system/IPAddressPool/p']],
  },
  {
    name: 'node selector selects only excluded nodes (empty label value counts)',
    objects: [pool('p'), obj('L2Advertisement', 'l2', { nodeSelectors: [{ matchLabels: { role: 'edge' } }] }), node('n1', { role: 'edge', [EXCLUDE_LB_LABEL]: '' }), node('n2')],
    want: [['nodeselector-only-excluded', 'metallb-system/L2Advertisement/l2']],
  },
  {
    name: 'node selector selects some usable node',
    objects: [pool('p'), obj('L2Advertisement', 'l2', { nodeSelectors: [{ matchLabels: { role: 'edge' } }] }), node('n1', { role: 'edge', [EXCLUDE_LB_LABEL]: 'true' }), node('n2', { role: 'edge' })],
    want: [],
  },
  {
    name: 'node selector selects nothing',
    objects: [pool('p'), obj('BGPAdvertisement', 'b', { nodeSelectors: [{ matchLabels: { role: 'edge' } }] }), node('n1')],
    want: [['nodeselector-no-nodes', 'metallb-system/BGPAdvertisement/b']],
  },
  { name: 'no Node objects: node selectors not judged', objects: [pool('p'), obj('L2Advertisement', 'l2', { nodeSelectors: [{ matchLabels: { role: 'edge' } }] })], want: [] },
  { name: 'deprecated annotation', objects: [svc('s', { 'metallb.universe.tf/address-pool': 'p' })], want: [['deprecated-annotation', 'default/Service/s']], fix: /metallb\.io\/address-pool/ },
  { name: 'misspelled annotation', objects: [svc('s', { 'metallb.io/adress-pool': 'p' })], want: [['unknown-annotation', 'default/Service/s']], fix: /metallb\.io\/address-pool/ },
  { name: 'wrong case annotation', objects: [svc('s', { 'metallb.io/loadbalancerIPs': '1.2.3.4' })], want: [['unknown-annotation', 'default/Service/s']], fix: /loadBalancerIPs/ },
  { name: 'known annotations and unrelated ones', objects: [svc('s', { 'metallb.io/allow-shared-ip': 'k', 'metallb.io/ip-allocated-from-pool': 'p', 'example.com/a': 'b' })], want: [] },
  {
    name: 'an unknown metallb.io annotation far from any known one is still named',
    objects: [svc('s', { 'metallb.io/something-else-entirely': 'x' })],
    want: [['unknown-annotation', 'default/Service/s']],
    fix: /^remove it; MetalLB reads only metallb\.io\/address-pool, metallb\.io\/loadBalancerIPs, metallb\.io\/allow-shared-ip$/,
  },
  {
    name: 'a misspelled deprecated annotation is unknown, not deprecated, and the did-you-mean is the metallb.io key',
    objects: [svc('s', { 'metallb.universe.tf/adress-pool': 'p' })],
    want: [['unknown-annotation', 'default/Service/s']],
    fix: /^did you mean metallb\.io\/address-pool\?/,
  },
  {
    name: 'the did-you-mean never proposes ip-allocated-from-pool, which MetalLB only writes',
    objects: [svc('s', { 'metallb.io/ip-allocated-from-pools': 'p' })],
    want: [['unknown-annotation', 'default/Service/s']],
    fix: /^did you mean metallb\.io\/address-pool\?/,
  },
  {
    name: 'a deprecated annotation shadowed by its metallb.io twin is ignored',
    objects: [svc('s', { 'metallb.io/address-pool': 'a', 'metallb.universe.tf/address-pool': 'b' })],
    want: [['deprecated-annotation', 'default/Service/s']],
    fix: /^remove metallb\.universe\.tf\/address-pool$/,
  },
];
for (const c of cases) {
  test(`configWarnings: ${c.name}`, () => {
    const ws = configWarnings(clusterStateFromObjects(c.objects));
    assert.deepEqual(
      ws.map((w) => [w.id, w.object]),
      c.want,
    );
    for (const w of ws) {
      assert.ok(w.message.length > 0 && w.fix.length > 0);
    }
    if (c.fix) assert.match(ws[0].fix, c.fix);
  });
}
