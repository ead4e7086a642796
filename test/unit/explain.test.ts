/**
 * explainService / whoisIP: decisions agree with the election fixtures, and every finding fires on
 * the situation it names (and not on a healthy service).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { clusterStateFromObjects, type KubeObject } from '../../src/core/kube.ts';
import { diagnosticContext, explainService, isAnnounced, whoisIP } from '../../src/core/explain/index.ts';
import { referencePath } from '../helpers/reference.ts';

const SHARED = referencePath('conformance', 'election');

function node(name: string, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } }, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
}
function pool(name: string, addresses: string[], extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'metallb-system' }, spec: { addresses, ...extra } };
}
function l2(name: string, spec: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name, namespace: 'metallb-system' }, spec };
}
function svc(name: string, opts: { ip?: string; annotations?: Record<string, string>; policy?: string; ports?: number[]; type?: string; created?: string } = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', annotations: opts.annotations ?? {}, ...(opts.created ? { creationTimestamp: opts.created } : {}) },
    spec: {
      type: opts.type ?? 'LoadBalancer',
      clusterIP: '10.96.0.10',
      selector: { app: name },
      externalTrafficPolicy: opts.policy ?? 'Cluster',
      ports: (opts.ports ?? [80]).map((port) => ({ port, protocol: 'TCP' })),
    },
    status: { loadBalancer: { ingress: opts.ip ? [{ ip: opts.ip }] : [] } },
  };
}
function slice(service: string, nodes: string[]): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${service}-x`, namespace: 'default', labels: { 'kubernetes.io/service-name': service } },
    endpoints: nodes.map((n, i) => ({ addresses: [`10.244.0.${i + 1}`], nodeName: n, conditions: { ready: true } })),
  };
}

function explain(objects: KubeObject[], name: string, opts: { speakers?: string[]; ignoreExcludeLB?: boolean } = {}) {
  const state = clusterStateFromObjects(objects);
  const ctx = diagnosticContext(state, opts);
  const service = state.services.find((s) => s.metadata?.name === name)!;
  return explainService({ ...ctx, service });
}

function ids(e: ReturnType<typeof explain>): string[] {
  return e.findings.map((f) => f.id);
}

test('explain agrees with every seed-small-cluster expectation and names the exclusion trap', () => {
  const fixture = parse(readFileSync(join(SHARED, 'seed-small-cluster.yaml'), 'utf8'));
  for (const c of fixture.cases) {
    // The fixture trims Services to what the speaker reads; the controller also needs a cluster IP.
    let n = 0;
    for (const r of c.resources) if (r.kind === 'Service') r.spec.clusterIP ??= `10.96.0.${++n}`;
    const state = clusterStateFromObjects(c.resources);
    const ctx = diagnosticContext(state, { speakers: c.speakers ?? undefined, ignoreExcludeLB: c.ignoreExcludeLB });
    for (const exp of c.expected) {
      const [ns, name] = exp.service.split('/');
      const service = state.services.find((s) => s.metadata?.namespace === ns && s.metadata?.name === name)!;
      const e = explainService({ ...ctx, service });
      assert.equal(e.announcer, exp.winner, `${c.name} ${exp.service}`);
      for (const [n, decision] of Object.entries(exp.nodes)) {
        assert.equal(e.nodes.find((x) => x.node === n)?.decision, decision, `${c.name} ${exp.service} on ${n}`);
      }
      const trap = ids(e).includes('nodeselector-only-excluded');
      const hasEndpoints = !ids(e).includes('no-ready-endpoints');
      assert.equal(trap, c.name === 'control-plane-advertise-excluded' && hasEndpoints, `${c.name} ${exp.service}: trap finding`);
      if (exp.winner)
        assert.deepEqual(
          e.findings.filter((f) => f.severity === 'error'),
          [],
          `${c.name} ${exp.service}`,
        );
    }
  }
});

test('a healthy service has no findings, and the winner is first in the hash order', () => {
  const e = explain([node('a'), node('b'), pool('p', ['192.0.2.0/28']), l2('ad'), svc('web', { ip: '192.0.2.1' }), slice('web', ['a'])], 'web');
  assert.deepEqual(e.findings, []);
  assert.equal(e.allocation.status, 'assigned');
  assert.equal(e.allocation.pool, 'p');
  assert.equal(e.announcer, e.hashOrder[0]?.node);
  assert.ok(isAnnounced(e));
});

test('a service without a status IP is explained with the IP the allocator would give it', () => {
  const e = explain([node('a'), pool('p', ['192.0.2.0/30']), l2('ad'), svc('new'), slice('new', ['a'])], 'new');
  assert.equal(e.allocation.status, 'predicted');
  assert.deepEqual(e.allocation.ips, ['192.0.2.0']);
  assert.equal(e.announcer, 'a');
  assert.ok(ids(e).includes('ip-predicted'));
});

test('an exhausted pool leaves the service pending and names the pools tried', () => {
  const e = explain([node('a'), pool('tiny', ['192.0.2.1/32']), l2('ad'), svc('old', { ip: '192.0.2.1' }), slice('old', ['a']), svc('late'), slice('late', ['a'])], 'late');
  assert.equal(e.allocation.status, 'pending');
  assert.equal(e.announcer, null);
  const f = e.findings.find((x) => x.id === 'pool-exhausted');
  assert.ok(f, JSON.stringify(e.findings));
  assert.match(f.message, /tiny/);
  assert.equal(isAnnounced(e), false);
});

test('a sharing conflict names the other service', () => {
  const e = explain(
    [
      node('a'),
      pool('p', ['192.0.2.0/28']),
      l2('ad'),
      svc('first', { ip: '192.0.2.5', annotations: { 'metallb.io/allow-shared-ip': 'k' } }),
      slice('first', ['a']),
      svc('second', { annotations: { 'metallb.io/loadBalancerIPs': '192.0.2.5', 'metallb.io/allow-shared-ip': 'k' } }),
      slice('second', ['a']),
    ],
    'second',
  );
  const f = e.findings.find((x) => x.id === 'sharing-conflict');
  assert.ok(f, JSON.stringify(e.findings));
  assert.match(f.message, /default\/first/);
});

test('externalTrafficPolicy Local with endpoints only on non-candidates', () => {
  const e = explain(
    [
      node('a', { role: 'lb' }),
      node('b'),
      pool('p', ['192.0.2.0/28']),
      l2('ad', { nodeSelectors: [{ matchLabels: { role: 'lb' } }] }),
      svc('local', { ip: '192.0.2.3', policy: 'Local' }),
      slice('local', ['b']),
    ],
    'local',
  );
  assert.equal(e.announcer, null);
  assert.ok(ids(e).includes('local-no-endpoint-on-candidate'), JSON.stringify(e.findings));
});

test('the exclusion label with an empty value is reported; --ignore-exclude-lb lets the node announce', () => {
  const objects = [node('cp', { 'node.kubernetes.io/exclude-from-external-load-balancers': '' }), pool('p', ['192.0.2.0/28']), l2('ad'), svc('web', { ip: '192.0.2.2' }), slice('web', ['cp'])];
  const e = explain(objects, 'web');
  assert.equal(e.announcer, null);
  assert.ok(ids(e).includes('nodeselector-only-excluded'));
  assert.ok(ids(e).includes('exclusion-label-empty-value'));
  const ignored = explain(objects, 'web', { ignoreExcludeLB: true });
  assert.equal(ignored.announcer, 'cp');
  assert.deepEqual(ids(ignored), []);
});

test('a ServiceL2Status naming another node is a disagreement', () => {
  const status: KubeObject = {
    apiVersion: 'metallb.io/v1beta1',
    kind: 'ServiceL2Status',
    metadata: { name: 'l2-x', namespace: 'metallb-system' },
    status: { node: 'ghost', serviceName: 'web', serviceNamespace: 'default', interfaces: [{ name: 'eth0' }] },
  };
  const e = explain([node('a'), pool('p', ['192.0.2.0/28']), l2('ad'), svc('web', { ip: '192.0.2.1' }), slice('web', ['a']), status], 'web');
  assert.ok(ids(e).includes('l2status-disagrees'));
});

test('an IP in no pool, a non-LoadBalancer service, no endpoints, no advertisement', () => {
  const base = [node('a'), pool('p', ['192.0.2.0/28']), slice('x', ['a'])];
  assert.ok(ids(explain([...base, l2('ad'), svc('x', { ip: '198.51.100.1' })], 'x')).includes('ip-not-in-pool'));
  assert.ok(ids(explain([...base, l2('ad'), svc('x', { type: 'ClusterIP' })], 'x')).includes('not-load-balancer'));
  assert.ok(ids(explain([node('a'), pool('p', ['192.0.2.0/28']), l2('ad'), svc('x', { ip: '192.0.2.1' })], 'x')).includes('no-ready-endpoints'));
  assert.ok(ids(explain([...base, svc('x', { ip: '192.0.2.1' })], 'x')).includes('no-advertisement'));
});

test('whois finds every holder of a shared IP and the pool of a free one', () => {
  const state = clusterStateFromObjects([
    node('a'),
    pool('p', ['192.0.2.0/28']),
    l2('ad'),
    svc('s1', { ip: '192.0.2.7', ports: [80], annotations: { 'metallb.io/allow-shared-ip': 'k' } }),
    svc('s2', { ip: '192.0.2.7', ports: [443], annotations: { 'metallb.io/allow-shared-ip': 'k' } }),
    slice('s1', ['a']),
    slice('s2', ['a']),
  ]);
  const ctx = diagnosticContext(state);
  const w = whoisIP({ ...ctx, ip: '192.0.2.7' });
  assert.deepEqual(
    w.holders.map((h) => h.service),
    ['default/s1', 'default/s2'],
  );
  assert.equal(w.holders[0]!.announcer, 'a');
  assert.equal(w.pool, 'p');
  const free = whoisIP({ ...ctx, ip: '192.0.2.9' });
  assert.deepEqual(free.holders, []);
  assert.equal(free.pool, 'p');
  assert.throws(() => whoisIP({ ...ctx, ip: 'not-an-ip' }), /not an IP address/);
});

test('a configuration every speaker rejects for a repeated selector: nobody announces anything new; the fix hint says who would', () => {
  const sel = { matchLabels: { 'kubernetes.io/hostname': 'a' } };
  const e = explain([node('a'), node('b'), pool('p', ['192.0.2.0/28']), l2('ad', { nodeSelectors: [sel, sel] }), svc('web', { ip: '192.0.2.1' }), slice('web', ['a', 'b'])], 'web');
  assert.equal(e.announcer, null);
  assert.equal(isAnnounced(e), false);
  assert.equal(e.l2, null);
  assert.deepEqual(
    e.nodes.map((n) => n.decision),
    ['configRejected', 'configRejected'],
  );
  assert.equal(e.findings[0]?.id, 'config-rejected');
  assert.match(e.findings[0]!.message, /^every speaker rejects the configuration: .*duplicate definition of nodeSelectors.*keeps running the configuration it accepted last, which a snapshot cannot show/);
  assert.deepEqual(e.ifFixed, { assuming: 'the repeated entries removed', mode: 'layer2', announcer: 'a', bgpAnnouncers: [] });
  assert.match(e.findings[0]!.fix, /once fixed \(the repeated entries removed\): a would announce it/);
  // A configuration the controller rejects stays an error naming the object.
  assert.throws(() => explain([node('a'), pool('p', ['192.0.2.0/28']), pool('q', ['192.0.2.8/29']), svc('web', { ip: '192.0.2.1' })], 'web'), /IPAddressPool\/q/);
});

test('a Service of another loadBalancerClass is left alone by every speaker, unless MetalLB runs with that class', () => {
  const cls: KubeObject = { ...svc('cls', { ip: '192.0.2.3' }) };
  (cls as any).spec.loadBalancerClass = 'example.com/other';
  const objects = [node('a'), pool('p', ['192.0.2.0/28']), l2('ad'), cls, slice('cls', ['a'])];
  const e = explain(objects, 'cls');
  assert.equal(e.announcer, null);
  assert.equal(e.allocation.status, 'ignored');
  assert.deepEqual(
    e.nodes.map((n) => n.decision),
    ['ignored'],
  );
  assert.ok(ids(e).includes('other-load-balancer-class'));
  assert.equal(isAnnounced(e), false);
  const state = clusterStateFromObjects(objects);
  const ctx = diagnosticContext(state, { loadBalancerClass: 'example.com/other' });
  const handled = explainService({ ...ctx, service: state.services[0]! });
  assert.equal(handled.announcer, 'a');
  assert.equal(whoisIP({ ...diagnosticContext(state), ip: '192.0.2.3' }).holders[0]!.announcer, null);
});

test("metallb.io objects outside MetalLB's namespace are ignored, and the finding says where the pool is", () => {
  const rogue = { ...pool('rogue', ['172.16.0.0/24']), metadata: { name: 'rogue', namespace: 'kube-system' } };
  const twin = { ...pool('p', ['10.9.0.0/24']), metadata: { name: 'p', namespace: 'other' } };
  const e = explain([node('a'), pool('p', ['192.0.2.0/28']), rogue, twin, l2('ad'), svc('r', { ip: '172.16.0.1' }), slice('r', ['a'])], 'r');
  const f = e.findings.find((x) => x.id === 'ip-not-in-pool');
  assert.ok(f, JSON.stringify(e.findings));
  assert.match(f.message, /kube-system\/IPAddressPool\/rogue/);
  assert.equal(e.announcer, null);
});

test('BGP: a node without a session to any peer does not count as announcing', () => {
  const bgpAdv: KubeObject = { apiVersion: 'metallb.io/v1beta1', kind: 'BGPAdvertisement', metadata: { name: 'b', namespace: 'metallb-system' }, spec: {} };
  const peer: KubeObject = {
    apiVersion: 'metallb.io/v1beta2',
    kind: 'BGPPeer',
    metadata: { name: 'router', namespace: 'metallb-system' },
    spec: { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.1', nodeSelectors: [{ matchLabels: { 'kubernetes.io/hostname': 'ghost' } }] },
  };
  const e = explain([node('a'), node('b'), pool('p', ['192.0.2.0/28']), bgpAdv, peer, svc('web', { ip: '192.0.2.1' }), slice('web', ['a'])], 'web');
  assert.equal(e.mode, 'bgp');
  assert.deepEqual(e.bgpAnnouncers, []);
  const f = e.findings.find((x) => x.id === 'bgp-no-peer-session');
  assert.ok(f, JSON.stringify(e.findings));
  assert.equal(f.severity, 'error');
  assert.match(f.message, /^a, b would advertise the Service but have no BGP session/);
  const g = e.findings.find((x) => x.id === 'bgppeer-selects-no-node');
  assert.ok(g, JSON.stringify(e.findings));
  assert.match(g.fix, /BGPPeer router/);
  const peered = explain(
    [node('a'), node('b'), pool('p', ['192.0.2.0/28']), bgpAdv, { ...peer, spec: { ...(peer as any).spec, nodeSelectors: undefined } }, svc('web', { ip: '192.0.2.1' }), slice('web', ['a'])],
    'web',
  );
  assert.deepEqual(peered.bgpAnnouncers, ['a', 'b']);
  assert.deepEqual(ids(peered), []);
});

test('--speakers naming nodes that do not exist is reported', () => {
  const objects = [node('a'), pool('p', ['192.0.2.0/28']), l2('ad'), svc('web', { ip: '192.0.2.1' }), slice('web', ['a'])];
  const e = explain(objects, 'web', { speakers: ['ghost'] });
  assert.equal(e.announcer, null);
  assert.ok(ids(e).includes('unknown-speaker-nodes'));
  assert.ok(ids(e).includes('no-live-speakers'));
  const partly = explain(objects, 'web', { speakers: ['a', 'ghost'] });
  assert.equal(partly.announcer, 'a');
  assert.deepEqual(ids(partly), ['unknown-speaker-nodes']);
});

test('a trimmed Service without clusterIP gets its own finding', () => {
  const trimmed = svc('web', { ip: '192.0.2.1' });
  delete (trimmed as any).spec.clusterIP;
  const e = explain([node('a'), pool('p', ['192.0.2.0/28']), l2('ad'), trimmed, slice('web', ['a'])], 'web');
  assert.equal(e.findings[0]?.id, 'no-cluster-ip');
});

test('Local policy with the only endpoint on an excluded node says so', () => {
  const e = explain(
    [
      node('n1'),
      node('n2', { 'node.kubernetes.io/exclude-from-external-load-balancers': '' }),
      pool('p', ['192.0.2.0/28']),
      l2('ad'),
      svc('local', { ip: '192.0.2.1', policy: 'Local' }),
      slice('local', ['n2']),
    ],
    'local',
  );
  const f = e.findings.find((x) => x.id === 'local-no-endpoint-on-candidate');
  assert.ok(f, JSON.stringify(e.findings));
  assert.match(f.message, /n2 \(labelled/);
  assert.match(f.fix, /--ignore-exclude-lb/);
});

test('whois compares canonical forms: a status written 2001:DB8:1:0::1 holds 2001:db8:1::1', () => {
  const dual = svc('dual', { ip: '2001:DB8:1:0::1' });
  const state = clusterStateFromObjects([node('a'), pool('p6', ['2001:db8:1::/120']), l2('ad'), dual, slice('dual', ['a'])]);
  const w = whoisIP({ ...diagnosticContext(state), ip: '2001:db8:1::1' });
  assert.deepEqual(
    w.holders.map((h) => h.service),
    ['default/dual'],
  );
});
