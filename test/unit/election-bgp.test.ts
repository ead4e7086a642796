/**
 * The BGP decision (MetalLB v0.16.1 bgp_controller.go ShouldAnnounce): table of per-node verdicts,
 * then what an announcing node applies (prefixes, LOCAL_PREF, communities, peers).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BGPAdv, Config, Peer, Pool } from '../../src/core/config/types.ts';
import { parseSelector } from '../../src/core/labels.ts';
import { parsePool } from '../../src/core/config/pool.ts';
import { decideBGP, evaluateBGP } from '../../src/core/election/index.ts';
import { clusterStateFromObjects, EXCLUDE_LB_LABEL, type EndpointSlice, type KubeObject, type Service } from '../../src/core/kube.ts';

function node(name: string, opts: { labels?: Record<string, string>; netUnavailable?: boolean } = {}): KubeObject {
  const conditions = [{ type: 'Ready', status: 'True' }];
  if (opts.netUnavailable) conditions.push({ type: 'NetworkUnavailable', status: 'True' });
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...opts.labels } }, status: { conditions } };
}

function service(ips: string[], opts: { policy?: string; labels?: Record<string, string> } = {}): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 's', namespace: 'default', labels: opts.labels ?? {} },
    spec: { type: 'LoadBalancer', externalTrafficPolicy: opts.policy ?? 'Cluster' },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
  };
}

function slice(eps: Array<{ node: string; ready?: boolean; addresses?: string[] }>): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 's-x', namespace: 'default', labels: { 'kubernetes.io/service-name': 's' } },
    endpoints: eps.map((e) => ({ addresses: e.addresses ?? ['1.2.3.4'], nodeName: e.node, conditions: { ready: e.ready ?? true } })),
  };
}

function bgpAdv(name: string, nodes: string[], opts: Partial<Omit<BGPAdv, 'nodes' | 'serviceSelectors'>> & { serviceSelectors?: Record<string, string>[] } = {}): BGPAdv {
  return {
    name,
    nodes: new Set(nodes),
    aggregationLength: opts.aggregationLength ?? 32,
    aggregationLengthV6: opts.aggregationLengthV6 ?? 128,
    localPref: opts.localPref ?? 0,
    communities: opts.communities ?? [],
    peers: opts.peers ?? [],
    serviceSelectors: (opts.serviceSelectors ?? []).map((m) => parseSelector({ matchLabels: m })),
    source: { kind: 'BGPAdvertisement', metadata: { name } },
  };
}

function peer(name: string, nodeSelectors: Record<string, string>[] = []): Peer {
  return {
    name,
    myASN: 64500,
    asn: 64501,
    dynamicASN: '',
    address: '192.0.2.1',
    port: 179,
    nodeSelectors: nodeSelectors.map((m) => parseSelector({ matchLabels: m })),
    password: '',
    bfdProfile: '',
    ebgpMultiHop: false,
    vrf: '',
    enableGracefulRestart: false,
    dualStackAddressFamily: false,
    disableMP: false,
    localASN: 0,
    secretPassword: '',
    source: { kind: 'BGPPeer', metadata: { name } },
  } as Peer;
}

function config(ads: BGPAdv[], peers: Peer[] = [peer('p1'), peer('p2')]): Config {
  const cr = { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool' as const, metadata: { name: 'default', namespace: 'metallb-system' }, spec: { addresses: ['10.20.30.0/24', '2000::/120'] } };
  const pool: Pool = { ...parsePool(cr, []), bgpAdvertisements: ads };
  return { pools: new Map([['default', pool]]), peers: new Map(peers.map((p) => [p.name, p])), bfdProfiles: new Map(), poolsByNamespace: new Map(), poolsByServiceSelector: [] };
}

const NODES = ['n1', 'n2', 'n3'];

test('BGP verdict per node', () => {
  const cases: Array<{ name: string; ads: BGPAdv[]; svc?: Service; nodes?: KubeObject[]; slices?: EndpointSlice[]; ignore?: boolean; want: Record<string, string> }> = [
    { name: 'every node advertises', ads: [bgpAdv('a', NODES)], want: { n1: 'announce', n2: 'announce', n3: 'announce' } },
    { name: 'advertisement not selecting a node', ads: [bgpAdv('a', ['n1', 'n2'])], want: { n1: 'announce', n2: 'announce', n3: 'notOwner' } },
    {
      name: 'service selector not matching',
      ads: [bgpAdv('a', ['n1'], { serviceSelectors: [{ app: 'x' }] }), bgpAdv('b', ['n2'])],
      want: { n1: 'noMatchingAdvertisement', n2: 'announce', n3: 'notOwner' },
    },
    {
      name: 'service selector matching',
      ads: [bgpAdv('a', NODES, { serviceSelectors: [{ app: 'web' }] })],
      svc: service(['10.20.30.1'], { labels: { app: 'web' } }),
      want: { n1: 'announce', n2: 'announce', n3: 'announce' },
    },
    {
      name: 'conflicting LOCAL_PREF',
      ads: [bgpAdv('a', ['n1', 'n2'], { localPref: 100 }), bgpAdv('b', ['n2', 'n3'], { localPref: 200 })],
      want: { n1: 'announce', n2: 'conflictingAdvertisements', n3: 'announce' },
    },
    {
      name: 'different LOCAL_PREF to disjoint peers is fine',
      ads: [bgpAdv('a', NODES, { localPref: 100, peers: ['p1'] }), bgpAdv('b', NODES, { localPref: 200, peers: ['p2'] })],
      want: { n1: 'announce', n2: 'announce', n3: 'announce' },
    },
    {
      name: 'NetworkUnavailable and exclusion',
      ads: [bgpAdv('a', NODES)],
      nodes: [node('n1', { netUnavailable: true }), node('n2', { labels: { [EXCLUDE_LB_LABEL]: '' } }), node('n3')],
      want: { n1: 'nodeNetworkUnavailable', n2: 'nodeLabeledExcludeBalancers', n3: 'announce' },
    },
    {
      name: 'exclusion ignored',
      ads: [bgpAdv('a', NODES)],
      ignore: true,
      nodes: [node('n1'), node('n2', { labels: { [EXCLUDE_LB_LABEL]: '' } }), node('n3')],
      want: { n1: 'announce', n2: 'announce', n3: 'announce' },
    },
    {
      name: 'Local policy needs a local usable endpoint',
      ads: [bgpAdv('a', NODES)],
      svc: service(['10.20.30.1'], { policy: 'Local' }),
      slices: [slice([{ node: 'n1' }, { node: 'n2', ready: false }])],
      want: { n1: 'announce', n2: 'noLocalEndpoints', n3: 'noLocalEndpoints' },
    },
    { name: 'no endpoint anywhere', ads: [bgpAdv('a', NODES)], slices: [slice([{ node: 'n1', ready: false }])], want: { n1: 'noEndpoints', n2: 'noEndpoints', n3: 'noEndpoints' } },
    { name: 'endpoints without addresses do not count', ads: [bgpAdv('a', NODES)], slices: [slice([{ node: 'n1', addresses: [] }])], want: { n1: 'noEndpoints', n2: 'noEndpoints', n3: 'noEndpoints' } },
    { name: 'IP outside the pools', ads: [bgpAdv('a', NODES)], svc: service(['192.168.0.1']), want: { n1: 'ipNotAllowed', n2: 'ipNotAllowed', n3: 'ipNotAllowed' } },
  ];
  for (const c of cases) {
    const svc = c.svc ?? service(['10.20.30.1']);
    const state = clusterStateFromObjects([...(c.nodes ?? NODES.map((n) => node(n))), svc, ...(c.slices ?? [slice([{ node: 'n1' }])])]);
    const ev = evaluateBGP({ config: config(c.ads), state, service: svc, ignoreExcludeLB: c.ignore ?? false });
    assert.deepEqual(Object.fromEntries(ev.nodes.map((n) => [n.node, n.decision])), c.want, c.name);
  }
});

test('BGP: what an announcing node applies', () => {
  const ads = [
    bgpAdv('agg', NODES, { aggregationLength: 24, aggregationLengthV6: 64, localPref: 100, communities: ['large:1:2:3', '65000:2', '65000:1'] }),
    bgpAdv('only-p2', ['n1'], { peers: ['p2', 'p3'], localPref: 100 }),
  ];
  const peers = [peer('p1'), peer('p2'), peer('p3', [{ 'kubernetes.io/hostname': 'n2' }])];
  const svc = service(['10.20.30.77', '2000::12']);
  const state = clusterStateFromObjects([...NODES.map((n) => node(n)), svc, slice([{ node: 'n1' }])]);
  const d = decideBGP({ config: config(ads, peers), state, service: svc, ignoreExcludeLB: false, node: 'n1' });
  assert.equal(d.decision, 'announce');
  assert.deepEqual(d.advertisements, [
    {
      name: 'agg',
      prefixes: ['10.20.30.0/24', '2000::/64'],
      aggregationLength: 24,
      aggregationLengthV6: 64,
      localPref: 100,
      // MetalLB orders a legacy community a:b as the large community (a<<16|b):0:0.
      communities: ['large:1:2:3', '65000:1', '65000:2'],
      peers: ['p1', 'p2'],
    },
    { name: 'only-p2', prefixes: ['10.20.30.77/32', '2000::12/128'], aggregationLength: 32, aggregationLengthV6: 128, localPref: 100, communities: [], peers: ['p2'] },
  ]);
  const n2 = decideBGP({ config: config(ads, peers), state, service: svc, ignoreExcludeLB: false, node: 'n2' });
  assert.deepEqual(
    n2.advertisements.map((a) => [a.name, a.peers]),
    [['agg', ['p1', 'p2', 'p3']]],
  );
  const ghost = decideBGP({ config: config(ads, peers), state, service: svc, ignoreExcludeLB: false, node: 'ghost' });
  assert.equal(ghost.decision, 'notOwner');
});
