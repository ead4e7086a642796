/**
 * The L2 election: hash vectors, endpoint helpers, the steps the conformance fixtures never reach
 * (service checks, NetworkUnavailable, empty speaker list, dual stack, IPv4-mapped and
 * non-canonical IPs), the trace contents, interfaces and aliveSpeakers. Hand-built Config objects.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { Config, L2Adv, Pool } from '../../src/core/config/types.ts';
import { parseSelector } from '../../src/core/labels.ts';
import { parsePool } from '../../src/core/config/pool.ts';
import {
  aliveSpeakers,
  buildEndpointIndex,
  buildElectionIndex,
  decideL2ForNode,
  electL2,
  electionDigestHex,
  endpointCanServe,
  endpointNodes,
  slicesFor,
  usableEndpoints,
  type L2Election,
} from '../../src/core/election/index.ts';
import { hashOrderOf } from '../../src/core/election/hash.ts';
import { clusterStateFromObjects, EXCLUDE_LB_LABEL, type EndpointSlice, type KubeObject, type Service } from '../../src/core/kube.ts';

// ---- builders ----

function node(name: string, opts: { labels?: Record<string, string>; netUnavailable?: string } = {}): KubeObject {
  const conditions = [{ type: 'Ready', status: 'True' }];
  if (opts.netUnavailable !== undefined) conditions.push({ type: 'NetworkUnavailable', status: opts.netUnavailable });
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...opts.labels } }, status: { conditions } };
}

function service(name: string, ips: string[], opts: { type?: string; policy?: string; labels?: Record<string, string>; ingress?: unknown[] } = {}): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', labels: opts.labels ?? {} },
    spec: { type: opts.type ?? 'LoadBalancer', externalTrafficPolicy: opts.policy ?? 'Cluster' },
    status: { loadBalancer: { ingress: (opts.ingress as never) ?? ips.map((ip) => ({ ip })) } },
  };
}

type Cond = { ready?: boolean; serving?: boolean; terminating?: boolean };
function slice(svc: string, eps: Array<{ node?: string; cond?: Cond; addresses?: string[] }>): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${svc}-x`, namespace: 'default', labels: { 'kubernetes.io/service-name': svc } },
    endpoints: eps.map((e) => ({ addresses: e.addresses ?? ['1.2.3.4'], nodeName: e.node, conditions: e.cond ?? { ready: true } })),
  };
}

function l2(name: string, nodes: string[], opts: { interfaces?: string[]; serviceSelectors?: Record<string, string>[] } = {}): L2Adv {
  const interfaces = opts.interfaces ?? [];
  return {
    name,
    nodes: new Set(nodes),
    interfaces,
    allInterfaces: interfaces.length === 0,
    serviceSelectors: (opts.serviceSelectors ?? []).map((m) => parseSelector({ matchLabels: m })),
    source: { kind: 'L2Advertisement', metadata: { name } },
  };
}

function config(pools: Array<{ name: string; cidrs: string[]; l2: L2Adv[] }>): Config {
  const map = new Map<string, Pool>();
  for (const p of pools) {
    const cr = { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool' as const, metadata: { name: p.name, namespace: 'metallb-system' }, spec: { addresses: p.cidrs } };
    map.set(p.name, { ...parsePool(cr, []), l2Advertisements: p.l2 });
  }
  return { pools: map, peers: new Map(), bfdProfiles: new Map(), poolsByNamespace: new Map(), poolsByServiceSelector: [] };
}

const DEFAULT_POOL = [{ name: 'default', cidrs: ['10.20.30.0/24', '2000::/120'], l2: [l2('ad', ['iris1', 'iris2'])] }];

function elect(svc: Service, opts: { nodes?: KubeObject[]; slices?: EndpointSlice[]; speakers?: string[] | null; ignoreExcludeLB?: boolean; pools?: typeof DEFAULT_POOL } = {}): L2Election {
  const state = clusterStateFromObjects([...(opts.nodes ?? [node('iris1'), node('iris2')]), svc, ...(opts.slices ?? [slice(svc.metadata!.name!, [{ node: 'iris1' }])])]);
  const speakers = opts.speakers === undefined ? ['iris1', 'iris2'] : opts.speakers;
  return electL2({ config: config(opts.pools ?? DEFAULT_POOL), state, service: svc, speakers, ignoreExcludeLB: opts.ignoreExcludeLB ?? false });
}

function decisions(e: L2Election): Record<string, string> {
  return Object.fromEntries(e.nodes.map((n) => [n.node, n.decision]));
}

// ---- hash ----

test('hash vectors from the README', () => {
  const vectors: Array<[string, string, string]> = [
    ['iris1', '10.20.30.1', 'e42ad61a4159fa2d143f5233840565a80f498b6a1e7998d68190d2a357882e2b'],
    ['iris2', '10.20.30.1', 'af6cb4e7605814d2f0ccb427ae44f1981dca8e59f928a994747b78ef36224c1a'],
    ['iris1', '10.20.30.2', '610c5b6d22f60ca55d3f21b86505c255e5a8710679810df960257023f0768b1b'],
    ['iris2', '10.20.30.2', '6429fb4c07eeae897218a34f4c3c10b511ef354ec20ee85af64a31a6f0fca822'],
    ['iris1', '2000::12', 'e7a338fd38998be0d98400d74062210d84dbcbb63c23686eaee049de45ae657a'],
    ['iris2', '2000::12', '78a9d82e3c8e46a617a84ba6448dd1296d771d054a0c1cdb8b9fc70f6f574927'],
  ];
  for (const [n, ip, hex] of vectors) assert.equal(electionDigestHex(n, ip), hex, `${n}#${ip}`);
});

test('hash agrees with node:crypto for every message length (one and several blocks, UTF-8)', () => {
  for (let len = 0; len < 200; len++) {
    const name = Array.from({ length: len }, (_, i) => String.fromCharCode(97 + ((i * 7 + len) % 26))).join('');
    for (const ip of ['1.2.3.4', '2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff']) {
      assert.equal(electionDigestHex(name, ip), crypto.hash('sha256', `${name}#${ip}`), `${len} ${ip}`);
    }
  }
  assert.equal(electionDigestHex('nöde-ü', '10.0.0.1'), crypto.hash('sha256', 'nöde-ü#10.0.0.1'));
});

test('hash order sorts digests as unsigned bytes, ties on the first word included', () => {
  const count = 300;
  const words = new Int32Array(count * 8);
  for (let i = 0; i < words.length; i++) words[i] = (Math.imul(i + 1, 2654435761) ^ (i << 7)) | 0;
  for (let k = 0; k < count; k += 3) words[k * 8] = k % 2 === 0 ? -5 : 7; // many equal first words, some "negative"
  const order = Array.from(hashOrderOf(words, count));
  const hex = (k: number) => Array.from(words.subarray(k * 8, k * 8 + 8), (w) => (w >>> 0).toString(16).padStart(8, '0')).join('');
  const expected = Array.from({ length: count }, (_, k) => k).sort((a, b) => (hex(a) < hex(b) ? -1 : 1));
  assert.deepEqual(order, expected);
});

// ---- endpoints ----

test('endpointCanServe: ready absent or true, else serving true; terminating ignored', () => {
  const cases: Array<[Cond | undefined, boolean]> = [
    [undefined, true],
    [{}, true],
    [{ ready: true }, true],
    [{ ready: true, terminating: true }, true],
    [{ ready: false }, false],
    [{ ready: false, serving: true }, true],
    [{ ready: false, serving: false }, false],
    [{ ready: false, serving: true, terminating: true }, true],
    [{ serving: false }, true],
  ];
  for (const [conditions, want] of cases) assert.equal(endpointCanServe({ conditions }), want, JSON.stringify(conditions));
});

test('endpoint index groups slices by namespace/service-name; endpointNodes ignores endpoints without nodeName', () => {
  const a = slice('svc-a', [{ node: 'n1' }, { node: 'n2', cond: { ready: false } }, { cond: { ready: true } }]);
  const b = slice('svc-a', [{ node: 'n3', cond: { ready: false, serving: true } }]);
  const other = { ...slice('svc-a', [{ node: 'n4' }]), metadata: { name: 'o', namespace: 'prod', labels: { 'kubernetes.io/service-name': 'svc-a' } } };
  const unlabelled = { ...slice('svc-a', [{ node: 'n5' }]), metadata: { name: 'u', namespace: 'default' } };
  const index = buildEndpointIndex({ endpointSlices: [a, b, other, unlabelled] });
  const slices = slicesFor(index, service('svc-a', []));
  assert.deepEqual(slices, [a, b]);
  assert.equal(usableEndpoints(slices).length, 3);
  assert.deepEqual([...endpointNodes(slices)].sort(), ['n1', 'n3']);
});

// ---- service-level steps ----

test('service-level reasons apply to every node', () => {
  const cases: Array<{ name: string; svc: Service; want: string }> = [
    { name: 'not a LoadBalancer', svc: service('s', ['10.20.30.1'], { type: 'ClusterIP' }), want: 'notLoadBalancer' },
    { name: 'no ingress', svc: service('s', []), want: 'noIPAllocated' },
    { name: 'invalid IP', svc: service('s', ['10.20.30.1', '10.20.30.300']), want: 'invalidIP' },
    { name: 'hostname-only ingress', svc: service('s', [], { ingress: [{ hostname: 'lb.example.com' }] }), want: 'invalidIP' },
    { name: 'IP outside every pool', svc: service('s', ['192.168.1.1']), want: 'ipNotAllowed' },
    { name: 'IPs split over two pools', svc: service('s', ['10.20.30.1', '2000::12']), want: 'ipNotAllowed' },
    { name: 'no usable endpoint', svc: service('s', ['10.20.30.1']), want: 'notOwner' },
  ];
  for (const c of cases) {
    const pools =
      c.name === 'IPs split over two pools'
        ? [
            { name: 'v4', cidrs: ['10.20.30.0/24'], l2: [l2('ad', ['iris1', 'iris2'])] },
            { name: 'v6', cidrs: ['2000::/120'], l2: [] },
          ]
        : DEFAULT_POOL;
    const slices = c.name === 'no usable endpoint' ? [slice('s', [{ node: 'iris1', cond: { ready: false, serving: false } }])] : undefined;
    const e = elect(c.svc, { pools, slices });
    assert.deepEqual(decisions(e), { iris1: c.want, iris2: c.want }, c.name);
    assert.equal(e.winner, null, c.name);
    assert.equal(e.serviceReason, c.want, c.name);
    assert.equal(e.checks.at(-1)!.ok, false, c.name);
    assert.deepEqual(e.trace, [], c.name);
  }
});

test('no usable endpoint gives notOwner even on a node no advertisement selects', () => {
  const e = elect(service('s', ['10.20.30.1']), {
    pools: [{ name: 'default', cidrs: ['10.20.30.0/24'], l2: [l2('ad', ['iris1'])] }],
    slices: [],
  });
  assert.deepEqual(decisions(e), { iris1: 'notOwner', iris2: 'notOwner' });
});

// ---- candidate steps ----

test('candidate steps the fixtures never reach', () => {
  const cases: Array<{ name: string; svc: Service; nodes?: KubeObject[]; speakers?: string[] | null; ignore?: boolean; winner: string | null; want: Record<string, string>; candidates: string[] }> = [
    // 10.20.30.1: iris2 first in the hash order.
    { name: 'baseline', svc: service('s', ['10.20.30.1']), winner: 'iris2', want: { iris1: 'notOwner', iris2: 'announce' }, candidates: ['iris1', 'iris2'] },
    {
      name: 'NetworkUnavailable=True drops the hash winner',
      svc: service('s', ['10.20.30.1']),
      nodes: [node('iris1'), node('iris2', { netUnavailable: 'True' })],
      winner: 'iris1',
      want: { iris1: 'announce', iris2: 'notOwner' },
      candidates: ['iris1'],
    },
    {
      name: 'NetworkUnavailable=Unknown keeps',
      svc: service('s', ['10.20.30.1']),
      nodes: [node('iris1'), node('iris2', { netUnavailable: 'Unknown' })],
      winner: 'iris2',
      want: { iris1: 'notOwner', iris2: 'announce' },
      candidates: ['iris1', 'iris2'],
    },
    {
      name: 'NetworkUnavailable=False keeps',
      svc: service('s', ['10.20.30.1']),
      nodes: [node('iris1'), node('iris2', { netUnavailable: 'False' })],
      winner: 'iris2',
      want: { iris1: 'notOwner', iris2: 'announce' },
      candidates: ['iris1', 'iris2'],
    },
    { name: 'empty speaker list: nobody', svc: service('s', ['10.20.30.1']), speakers: [], winner: null, want: { iris1: 'notOwner', iris2: 'notOwner' }, candidates: [] },
    { name: 'memberlist disabled: every Node', svc: service('s', ['10.20.30.1']), speakers: null, winner: 'iris2', want: { iris1: 'notOwner', iris2: 'announce' }, candidates: ['iris1', 'iris2'] },
    { name: 'dead speaker dropped', svc: service('s', ['10.20.30.1']), speakers: ['iris1'], winner: 'iris1', want: { iris1: 'announce', iris2: 'notOwner' }, candidates: ['iris1'] },
    {
      name: 'exclusion label with empty value',
      svc: service('s', ['10.20.30.1']),
      nodes: [node('iris1'), node('iris2', { labels: { [EXCLUDE_LB_LABEL]: '' } })],
      winner: 'iris1',
      want: { iris1: 'announce', iris2: 'notOwner' },
      candidates: ['iris1'],
    },
    {
      name: 'exclusion label ignored',
      svc: service('s', ['10.20.30.1']),
      nodes: [node('iris1'), node('iris2', { labels: { [EXCLUDE_LB_LABEL]: 'true' } })],
      ignore: true,
      winner: 'iris2',
      want: { iris1: 'notOwner', iris2: 'announce' },
      candidates: ['iris1', 'iris2'],
    },
    { name: 'dual stack hashes the first IP (v4 first)', svc: service('s', ['10.20.30.2', '2000::12']), winner: 'iris1', want: { iris1: 'announce', iris2: 'notOwner' }, candidates: ['iris1', 'iris2'] },
    { name: 'dual stack hashes the first IP (v6 first)', svc: service('s', ['2000::12', '10.20.30.2']), winner: 'iris2', want: { iris1: 'notOwner', iris2: 'announce' }, candidates: ['iris1', 'iris2'] },
    { name: 'non-canonical IPv6 is hashed canonical', svc: service('s', ['2000:0:0::0012']), winner: 'iris2', want: { iris1: 'notOwner', iris2: 'announce' }, candidates: ['iris1', 'iris2'] },
    { name: 'IPv4-mapped IPv6 is hashed as IPv4', svc: service('s', ['::ffff:10.20.30.2']), winner: 'iris1', want: { iris1: 'announce', iris2: 'notOwner' }, candidates: ['iris1', 'iris2'] },
  ];
  for (const c of cases) {
    const e = elect(c.svc, { nodes: c.nodes, speakers: c.speakers, ignoreExcludeLB: c.ignore });
    assert.equal(e.winner, c.winner, c.name);
    assert.deepEqual(decisions(e), c.want, c.name);
    assert.deepEqual(e.candidates, c.candidates, c.name);
  }
});

test('dual stack: canonical IPs, the winner announces all of them', () => {
  const e = elect(service('s', ['2000:0::12', '10.20.30.2']));
  assert.deepEqual(e.ips, ['2000::12', '10.20.30.2']);
  assert.equal(e.hashedIP, '2000::12');
  assert.match(decideL2ForNode(e, 'iris2').detail, /announces 2000::12, 10\.20\.30\.2/);
});

test('Local policy keeps nodes with a usable local endpoint (serving counts, nodeName required)', () => {
  const nodes = [node('iris1'), node('iris2'), node('iris3')];
  const pools = [{ name: 'default', cidrs: ['10.20.30.0/24'], l2: [l2('ad', ['iris1', 'iris2', 'iris3'])] }];
  const e = elect(service('s', ['10.20.30.1'], { policy: 'Local' }), {
    nodes,
    pools,
    speakers: ['iris1', 'iris2', 'iris3'],
    slices: [slice('s', [{ node: 'iris1', cond: { ready: false, serving: true } }, { node: 'iris2', cond: { ready: false } }, { cond: { ready: true } }])],
  });
  assert.deepEqual(e.candidates, ['iris1']);
  assert.deepEqual(decisions(e), { iris1: 'announce', iris2: 'notOwner', iris3: 'notOwner' });
  const local = e.trace.at(-1)!;
  assert.equal(local.step, 'localEndpoints');
  assert.deepEqual(
    local.dropped.map((d) => d.node),
    ['iris2', 'iris3'],
  );
});

// ---- trace ----

test('trace: every candidate at every step, with why', () => {
  const nodes = [node('a'), node('b', { netUnavailable: 'True' }), node('c', { labels: { [EXCLUDE_LB_LABEL]: '' } }), node('d'), node('e'), node('f')];
  const pools = [{ name: 'default', cidrs: ['10.20.30.0/24'], l2: [l2('ad-1', ['a', 'b', 'c', 'e']), l2('ad-2', ['f'], { serviceSelectors: [{ app: 'other' }] })] }];
  const e = elect(service('s', ['10.20.30.9'], { policy: 'Local' }), {
    nodes,
    pools,
    speakers: ['a', 'b', 'c', 'd', 'e', 'f', 'ghost'],
    slices: [slice('s', [{ node: 'a' }, { node: 'd' }])],
  });
  assert.deepEqual(
    e.trace.map((s) => s.step),
    ['speakers', 'networkUnavailable', 'excludeLB', 'advertisement', 'localEndpoints'],
  );
  const byStep = Object.fromEntries(e.trace.map((s) => [s.step, s]));
  assert.deepEqual(byStep.speakers.kept, ['a', 'b', 'c', 'd', 'e', 'f', 'ghost']);
  assert.deepEqual(byStep.networkUnavailable.dropped, [{ node: 'b', why: 'condition NetworkUnavailable is True' }]);
  assert.deepEqual(byStep.excludeLB.dropped, [{ node: 'c', why: `labelled ${EXCLUDE_LB_LABEL}` }]);
  assert.deepEqual(
    byStep.advertisement.dropped.map((d) => d.node),
    ['d', 'f', 'ghost'],
  );
  assert.equal(byStep.advertisement.dropped.find((d) => d.node === 'ghost')!.why, 'no Node object of that name');
  assert.deepEqual(byStep.advertisement.kept, ['a', 'e']);
  assert.deepEqual(byStep.localEndpoints.kept, ['a']);
  assert.deepEqual(e.candidates, ['a']);
  assert.equal(e.winner, 'a');
  assert.deepEqual(e.advertisements, ['ad-1']);
  assert.deepEqual(e.hashOrder, [{ node: 'a', digest: electionDigestHex('a', '10.20.30.9') }]);
  assert.deepEqual(decisions(e), { a: 'announce', b: 'notOwner', c: 'notOwner', d: 'noMatchingAdvertisement', e: 'notOwner', f: 'noMatchingAdvertisement' });
  assert.match(decideL2ForNode(e, 'b').detail, /NetworkUnavailable/);
  assert.match(decideL2ForNode(e, 'e').detail, /no usable endpoint on the node/);
  assert.deepEqual(JSON.parse(JSON.stringify(e)), e, 'plain, JSON-serialisable value');
});

test('hashOrder lists every candidate ascending by digest', () => {
  const names = Array.from({ length: 40 }, (_, i) => `node-${i}`);
  const pools = [{ name: 'default', cidrs: ['10.20.30.0/24'], l2: [l2('ad', names)] }];
  const e = elect(service('s', ['10.20.30.77']), { nodes: names.map((n) => node(n)), speakers: null, pools, slices: [slice('s', [{ node: 'node-1' }])] });
  const expected = names.map((n) => ({ node: n, digest: crypto.hash('sha256', `${n}#10.20.30.77`) })).sort((x, y) => (x.digest < y.digest ? -1 : 1));
  assert.deepEqual(e.hashOrder, expected);
  assert.equal(e.winner, expected[0].node);
});

test('interfaces: all wins over lists, lists are unioned and sorted, null without advertisement', () => {
  const pools = [
    {
      name: 'default',
      cidrs: ['10.20.30.0/24'],
      l2: [l2('eth', ['iris1', 'iris2'], { interfaces: ['eth1', 'eth0'] }), l2('bond', ['iris1'], { interfaces: ['bond0', 'eth0'] }), l2('all', ['iris2'])],
    },
  ];
  const nodes = [node('iris1'), node('iris2'), node('iris3')];
  const e = elect(service('s', ['10.20.30.1']), { pools, nodes, speakers: ['iris1', 'iris2', 'iris3'] });
  assert.deepEqual(Object.fromEntries(e.nodes.map((n) => [n.node, n.interfaces])), { iris1: ['bond0', 'eth0', 'eth1'], iris2: 'all', iris3: null });
});

test('decideL2ForNode for a node without a Node object', () => {
  const e = elect(service('s', ['10.20.30.1']));
  assert.equal(decideL2ForNode(e, 'nowhere').decision, 'noMatchingAdvertisement');
  const bad = elect(service('s', ['10.20.30.1'], { type: 'NodePort' }));
  assert.equal(decideL2ForNode(bad, 'nowhere').decision, 'notLoadBalancer');
});

test('a shared index gives the same election as none', () => {
  const svc = service('s', ['10.20.30.1']);
  const state = clusterStateFromObjects([node('iris1'), node('iris2', { netUnavailable: 'True' }), svc, slice('s', [{ node: 'iris1' }])]);
  const speakers = ['iris1', 'iris2'];
  const index = buildElectionIndex(state, speakers);
  const input = { config: config(DEFAULT_POOL), state, service: svc, speakers, ignoreExcludeLB: false };
  const first = electL2({ ...input, index });
  assert.deepEqual(electL2({ ...input, index }), first);
  assert.deepEqual(electL2(input), first);
  assert.deepEqual(electL2({ ...input, index, speakers: [...speakers] }), first);
});

// ---- aliveSpeakers ----

test('aliveSpeakers: Ready speaker pods by node, null without speaker pods', () => {
  const pod = (name: string, nodeName: string, ready: string, labels: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'metallb-system', labels },
    spec: { nodeName },
    status: { conditions: [{ type: 'Ready', status: ready }] },
  });
  const cases: Array<{ name: string; pods: KubeObject[]; want: string[] | null }> = [
    { name: 'no pods', pods: [], want: null },
    { name: 'only other pods', pods: [pod('x', 'n1', 'True', { app: 'web' })], want: null },
    {
      name: 'both label styles, not-ready dropped',
      pods: [
        pod('s1', 'n2', 'True', { component: 'speaker' }),
        pod('s2', 'n1', 'True', { 'app.kubernetes.io/component': 'speaker' }),
        pod('s3', 'n3', 'False', { component: 'speaker' }),
        pod('c', 'n4', 'True', { component: 'controller' }),
      ],
      want: ['n1', 'n2'],
    },
    { name: 'speakers present, none ready', pods: [pod('s3', 'n3', 'False', { component: 'speaker' })], want: [] },
  ];
  for (const c of cases) assert.deepEqual(aliveSpeakers(clusterStateFromObjects(c.pods)), c.want, c.name);
});
