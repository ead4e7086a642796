/**
 * BGP in `explain` and `whois`: per node the decision, per peer the prefixes with LOCAL_PREF and
 * communities or why nothing — read from the FRRConfiguration the speaker writes, so the two
 * cannot disagree — and the findings (`validate` warnings) for the silent BGP traps.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCliAsync } from '../helpers/cli.ts';
import { clusterStateFromObjects, type KubeObject } from '../../src/core/kube.ts';
import { diagnosticContext, explainService, type PeerView } from '../../src/core/explain/index.ts';
import { bgpSessions } from '../../src/core/bgp/sessions.ts';
import { routesFor } from '../../src/core/bgp/routes.ts';
import { frrConfiguration } from '../../src/core/frrk8s/config.ts';
import { decideBGPForNode, evaluateBGP } from '../../src/core/election/index.ts';

const NS = 'metallb-system';
const node = (name: string, labels: Record<string, string> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } } });
const cr = (kind: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: kind === 'BGPPeer' ? 'metallb.io/v1beta2' : 'metallb.io/v1beta1',
  kind,
  metadata: { name, namespace: NS },
  spec,
});
const peer = (name: string, address: string, extra: Record<string, unknown> = {}) => cr('BGPPeer', name, { myASN: 64500, peerASN: 64501, peerAddress: address, ...extra });
const pool = (name: string, addresses: string[]) => cr('IPAddressPool', name, { addresses });
const bgpAd = (name: string, spec: Record<string, unknown> = {}) => cr('BGPAdvertisement', name, spec);
function svc(name: string, ips: string[], labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', labels },
    spec: { type: 'LoadBalancer', clusterIP: '10.96.0.1', ports: [{ port: 80, protocol: 'TCP' }] },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
  };
}
const slice = (service: string, nodes: string[]): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: `${service}-x`, namespace: 'default', labels: { 'kubernetes.io/service-name': service } },
  endpoints: nodes.map((n, i) => ({ addresses: [`10.244.0.${i + 1}`], nodeName: n, conditions: { ready: true } })),
});
const list = (items: KubeObject[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
async function cli(args: string[], objects: KubeObject[]) {
  const r = await runCliAsync([...args, '-f', '-'], list(objects));
  return { ...r, json: args.includes('json') && r.stdout ? JSON.parse(r.stdout) : undefined };
}

/** Three nodes (zone a: n1, n2; zone b: n3), a dual-stack pool, four peers and two advertisements. */
const CLUSTER: KubeObject[] = [
  node('n1', { zone: 'a' }),
  node('n2', { zone: 'a' }),
  node('n3', { zone: 'b' }),
  pool('pool', ['192.0.2.0/24', '2001:db8::/120']),
  peer('router-a', '10.0.0.1'),
  peer('router-b', 'fd00::1', { peerASN: 64502 }),
  peer('router-c', '10.0.0.3', { peerASN: 64503, nodeSelectors: [{ matchLabels: { zone: 'b' } }] }),
  peer('router-d', '10.0.0.4', { peerASN: 64504, nodeSelectors: [{ matchLabels: { zone: 'nowhere' } }] }),
  bgpAd('main', { localPref: 100, communities: ['65000:1', 'large:1:2:3'] }),
  bgpAd('typo', { aggregationLength: 24, aggregationLengthV6: 120, peers: ['router-x'] }),
  svc('web', ['192.0.2.10', '2001:db8::10']),
  slice('web', ['n1']),
];

test('per node and peer: the prefixes each peer gets are exactly those of the FRRConfiguration neighbor the speaker writes', () => {
  const state = clusterStateFromObjects(CLUSTER);
  const ctx = diagnosticContext(state);
  const service = state.services[0]!;
  const e = explainService({ ...ctx, service });
  assert.equal(e.mode, 'bgp');
  assert.deepEqual(e.bgpAnnouncers, ['n1', 'n2', 'n3']);
  assert.ok(e.bgp);
  for (const n of e.bgp.nodes) {
    const g = ctx.speakerConfigs.byNode.get(n.node)!;
    assert.ok(g.result.ok);
    const config = g.result.config;
    const d = decideBGPForNode(evaluateBGP({ config, state, service, ignoreExcludeLB: false }), n.node);
    const sessions = bgpSessions(config, state.nodes.find((x) => x.metadata?.name === n.node)?.metadata?.labels);
    const frr = frrConfiguration({ node: n.node, namespace: NS, sessions, routes: routesFor(d), bfdProfiles: [], secretHandling: 'passThrough' });
    const neighbors = (frr.spec.bgp.routers ?? []).flatMap((r) => r.neighbors ?? []);
    for (const p of n.peers) {
      const nb = neighbors.find((x) => x.address === p.address);
      assert.ok(nb || !p.session, `${n.node} ${p.peer}`);
      if (nb)
        assert.deepEqual(
          p.prefixes.map((x) => x.prefix),
          nb.toAdvertise.allowed.prefixes ?? [],
          `${n.node} ${p.peer}`,
        );
    }
  }
  const byPeer = (node: string): Record<string, PeerView> => Object.fromEntries(e.bgp!.nodes.find((x) => x.node === node)!.peers.map((p) => [p.peer, p]));
  const n1 = byPeer('n1');
  assert.deepEqual(Object.keys(n1), ['router-a', 'router-b'], 'n1 lists its sessions (router-c and router-d have none there; nothing names them)');
  assert.deepEqual(n1['router-a']!.prefixes, [{ prefix: '192.0.2.10/32', localPref: 100, communities: ['65000:1', 'large:1:2:3'] }]);
  assert.deepEqual([n1['router-a']!.outcome, n1['router-a']!.filtered, n1['router-a']!.family], ['advertised', ['2001:db8::10/128'], 'ipv4']);
  assert.deepEqual(
    n1['router-b']!.prefixes.map((x) => x.prefix),
    ['2001:db8::10/128'],
  );
  assert.deepEqual(Object.keys(byPeer('n3')), ['router-a', 'router-b', 'router-c']);
  const undelivered = e.bgp.nodes[0]!.undelivered;
  assert.deepEqual(undelivered, [{ advertisement: 'typo', prefixes: ['192.0.2.0/24', '2001:db8::/120'], specPeers: ['router-x'] }]);
});

test("why a peer gets nothing: no session, the advertisement's peers list, the address family", () => {
  const rows: Array<{ name: string; objects: KubeObject[]; node: string; peer: string; outcome: string; why: RegExp }> = [
    {
      name: 'named by the advertisement but no session on the node',
      objects: [
        node('n1', { zone: 'a' }),
        pool('p', ['192.0.2.0/28']),
        peer('r1', '10.0.0.1'),
        peer('r2', '10.0.0.2', { nodeSelectors: [{ matchLabels: { zone: 'b' } }] }),
        bgpAd('ad', { peers: ['r1', 'r2'] }),
        svc('web', ['192.0.2.1']),
        slice('web', ['n1']),
      ],
      node: 'n1',
      peer: 'r2',
      outcome: 'noSession',
      why: /^no session on this node: its nodeSelectors do not select it$/,
    },
    {
      name: "a session the advertisement's peers list leaves out",
      objects: [node('n1'), pool('p', ['192.0.2.0/28']), peer('r1', '10.0.0.1'), peer('r2', '10.0.0.2'), bgpAd('ad', { peers: ['r1'] }), svc('web', ['192.0.2.1']), slice('web', ['n1'])],
      node: 'n1',
      peer: 'r2',
      outcome: 'peersList',
      why: /^the BGPAdvertisement for this Service sends only to other peers: ad \(spec\.peers: r1\)$/,
    },
    {
      name: 'an IPv4 neighbor and an IPv6 Service',
      objects: [node('n1'), pool('p', ['2001:db8::/120']), peer('r1', '10.0.0.1'), bgpAd('ad'), svc('web', ['2001:db8::1']), slice('web', ['n1'])],
      node: 'n1',
      peer: 'r1',
      outcome: 'addressFamily',
      why: /^IPv4 neighbor without dualStackAddressFamily: it gets IPv4 prefixes only, 2001:db8::1\/128 not sent$/,
    },
  ];
  for (const row of rows) {
    const state = clusterStateFromObjects(row.objects);
    const e = explainService({ ...diagnosticContext(state), service: state.services[0]! });
    const p = e.bgp?.nodes.find((n) => n.node === row.node)?.peers.find((x) => x.peer === row.peer);
    assert.ok(p, `${row.name}: ${JSON.stringify(e.bgp?.nodes)}`);
    assert.equal(p.outcome, row.outcome, row.name);
    assert.deepEqual(p.prefixes, [], row.name);
    assert.match(p.why ?? '', row.why, row.name);
  }
  // dualStackAddressFamily lets the IPv4 neighbor have the IPv6 prefix, as the FRRConfiguration filter does.
  const state = clusterStateFromObjects([node('n1'), pool('p', ['2001:db8::/120']), peer('r1', '10.0.0.1', { dualStackAddressFamily: true }), bgpAd('ad'), svc('web', ['2001:db8::1']), slice('web', ['n1'])]);
  const e = explainService({ ...diagnosticContext(state), service: state.services[0]! });
  assert.deepEqual(
    e.bgp!.nodes[0]!.peers[0]!.prefixes.map((x) => x.prefix),
    ['2001:db8::1/128'],
  );
  assert.equal(e.bgp!.nodes[0]!.peers[0]!.family, 'both');
  assert.deepEqual(e.bgpAnnouncers, ['n1']);
});

interface TrapCase {
  name: string;
  objects: KubeObject[];
  id: string;
  /** severity of the explain finding */
  severity: 'error' | 'warning';
  /** the fix names the object */
  fix: RegExp;
  /** the validate warning's object */
  object: string;
  exit: number;
}

const base = [node('n1', { zone: 'a' }), node('n2', { zone: 'a' }), pool('p', ['192.0.2.0/28'])];
const trapCases: TrapCase[] = [
  {
    name: 'an advertisement whose peers names no BGPPeer',
    objects: [...base, peer('router', '10.0.0.1'), bgpAd('ad', { peers: ['ruoter'] }), svc('web', ['192.0.2.1']), slice('web', ['n1'])],
    id: 'bgp-advertisement-unknown-peer',
    severity: 'warning',
    fix: /^correct spec\.peers of BGPAdvertisement ad \(existing BGPPeers: router\)/,
    object: `${NS}/BGPAdvertisement/ad`,
    exit: 1,
  },
  {
    name: 'an advertisement naming a peer none of its nodes has a session with',
    objects: [
      ...base,
      node('n3', { zone: 'b' }),
      peer('router', '10.0.0.1', { nodeSelectors: [{ matchLabels: { zone: 'b' } }] }),
      peer('other', '10.0.0.2'),
      bgpAd('ad', { peers: ['router'], nodeSelectors: [{ matchLabels: { zone: 'a' } }] }),
      svc('web', ['192.0.2.1']),
      slice('web', ['n1']),
    ],
    id: 'bgp-advertisement-peer-no-session',
    severity: 'warning',
    fix: /^make the nodeSelectors of BGPPeer router and BGPAdvertisement ad overlap/,
    object: `${NS}/BGPAdvertisement/ad`,
    exit: 1,
  },
  {
    name: 'a BGPPeer whose nodeSelectors select no node',
    objects: [...base, peer('router', '10.0.0.1', { nodeSelectors: [{ matchLabels: { zone: 'c' } }] }), bgpAd('ad'), svc('web', ['192.0.2.1']), slice('web', ['n1'])],
    id: 'bgppeer-selects-no-node',
    severity: 'warning',
    fix: /^correct spec\.nodeSelectors of BGPPeer router /,
    object: `${NS}/BGPPeer/router`,
    exit: 1,
  },
  {
    name: 'a pool advertised over BGP without any peer session',
    objects: [...base, bgpAd('ad'), svc('web', ['192.0.2.1']), slice('web', ['n1'])],
    id: 'bgp-no-peer-session',
    severity: 'error',
    fix: /^create a BGPPeer for your router$/,
    object: `${NS}/IPAddressPool/p`,
    exit: 1,
  },
  {
    name: 'LOCAL_PREF conflict between two advertisements with serviceSelectors',
    objects: [
      ...base,
      peer('router', '10.0.0.1'),
      bgpAd('gold', { localPref: 100, serviceSelectors: [{ matchLabels: { tier: 'gold' } }] }),
      bgpAd('web', { localPref: 200, serviceSelectors: [{ matchLabels: { app: 'web' } }] }),
      svc('web', ['192.0.2.1'], { app: 'web', tier: 'gold' }),
      slice('web', ['n1']),
    ],
    id: 'bgp-localpref-conflict',
    severity: 'error',
    fix: /^give BGPAdvertisements gold and web the same spec\.localPref/,
    object: `${NS}/BGPAdvertisement/web`,
    exit: 1,
  },
  {
    name: 'an IPv6 Service whose only peers are IPv4 neighbors without dualStackAddressFamily',
    objects: [node('n1'), pool('p6', ['2001:db8::/120']), peer('router', '10.0.0.1'), bgpAd('ad'), svc('web', ['2001:db8::1']), slice('web', ['n1'])],
    id: 'bgp-family-filtered',
    severity: 'error',
    fix: /^set spec\.dualStackAddressFamily: true on BGPPeer router, or add an IPv6 BGPPeer$/,
    object: `${NS}/IPAddressPool/p6`,
    exit: 1,
  },
];

test('the silent BGP traps: an explain finding with a fix naming the object, and a validate warning', { concurrency: 3 }, async (t) => {
  await Promise.all(
    trapCases.map((c) =>
      t.test(c.name, async () => {
        const e = await cli(['explain', 'svc/web', '-o', 'json'], c.objects);
        assert.equal(e.status, c.exit, e.stderr);
        const f = e.json.findings.find((x: any) => x.id === c.id);
        assert.ok(f, JSON.stringify(e.json.findings, null, 1));
        assert.equal(f.severity, c.severity);
        assert.match(f.fix, c.fix);
        const v = await cli(['validate', '-o', 'json'], c.objects);
        assert.equal(v.status, 0, 'warnings only');
        const w = v.json.warnings.find((x: any) => x.id === c.id);
        assert.ok(w, JSON.stringify(v.json.warnings, null, 1));
        assert.equal(w.object, c.object);
        assert.ok(w.fix.length > 0);
        assert.equal((await cli(['validate', '--strict'], c.objects)).status, 1);
      }),
    ),
  );
});

test('an advertisement whose peers have no session on the node that announces: that node reaches no router, and the finding says whom to add', () => {
  const objects = [
    node('n1', { zone: 'a' }),
    node('n2', { zone: 'b' }),
    pool('p', ['192.0.2.0/28']),
    peer('router-a', '10.0.0.1', { nodeSelectors: [{ matchLabels: { zone: 'a' } }] }),
    peer('router-b', '10.0.0.2', { nodeSelectors: [{ matchLabels: { zone: 'b' } }] }),
    bgpAd('only-a', { peers: ['router-a'] }),
    { ...svc('web', ['192.0.2.1']), spec: { ...(svc('web', ['192.0.2.1']) as any).spec, externalTrafficPolicy: 'Local' } },
    slice('web', ['n2']),
  ];
  const state = clusterStateFromObjects(objects);
  const e = explainService({ ...diagnosticContext(state), service: state.services[0]! });
  assert.deepEqual(e.bgpAnnouncers, []);
  const n2 = e.bgp!.nodes.find((n) => n.node === 'n2')!;
  assert.equal(n2.decision, 'announce');
  assert.deepEqual(
    n2.peers.map((p) => [p.peer, p.outcome]),
    [
      ['router-a', 'noSession'],
      ['router-b', 'peersList'],
    ],
  );
  assert.deepEqual(n2.undelivered, [{ advertisement: 'only-a', prefixes: ['192.0.2.1/32'], specPeers: ['router-a'] }]);
  const f = e.findings.find((x) => x.id === 'bgp-advertisement-peer-no-session');
  assert.ok(f, JSON.stringify(e.findings));
  assert.equal(f.severity, 'error');
  assert.equal(f.message, 'n2 would advertise the Service, but BGPAdvertisement only-a sends only to router-a, which has no session there: router-b gets nothing');
  assert.equal(f.fix, 'add router-b to spec.peers of BGPAdvertisement only-a, or make the nodeSelectors of BGPPeer router-a select these nodes');
});

test('a LOCAL_PREF conflict says which two advertisements clash and why', async () => {
  const c = trapCases.find((x) => x.id === 'bgp-localpref-conflict')!;
  const e = (await cli(['explain', 'svc/web', '-o', 'json'], c.objects)).json;
  const f = e.findings.find((x: any) => x.id === 'bgp-localpref-conflict');
  assert.equal(
    f.message,
    'BGPAdvertisements gold and web both apply to this Service on n1, n2 and set different LOCAL_PREF (100 vs 200) for the same prefixes: '
      + "pool p, the same IPv4 aggregationLength /32, both send to every peer, and both select n1, n2; MetalLB's speakers there announce the Service to nobody (conflictingAdvertisements)",
  );
  assert.deepEqual(
    e.bgp.nodes.map((n: any) => n.decision),
    ['conflictingAdvertisements', 'conflictingAdvertisements'],
  );
});

test('healthy BGP: no finding, no warning, exit 0', async () => {
  const objects = [...base, peer('router', '10.0.0.1'), bgpAd('ad'), svc('web', ['192.0.2.1']), slice('web', ['n1'])];
  const e = await cli(['explain', 'svc/web', '-o', 'json'], objects);
  assert.equal(e.status, 0);
  assert.deepEqual(e.json.findings, []);
  assert.deepEqual(e.json.bgpAnnouncers, ['n1', 'n2']);
  const v = await cli(['validate', '-o', 'json'], objects);
  assert.deepEqual(v.json, { errors: [], warnings: [], reported: [] });
});

test('text: identical per-node rows grouped, long lists cut with a count, complete with -o wide', async () => {
  const nodes = Array.from({ length: 12 }, (_, i) => node(`n${String(i).padStart(2, '0')}`, { zone: i < 10 ? 'a' : 'b' }));
  const objects = [
    ...nodes,
    pool('p', ['192.0.2.0/28']),
    peer('router-a', '10.0.0.1', { nodeSelectors: [{ matchLabels: { zone: 'a' } }] }),
    peer('router-b', '10.0.0.2', { nodeSelectors: [{ matchLabels: { zone: 'b' } }] }),
    bgpAd('ad', { localPref: 50 }),
    svc('web', ['192.0.2.1']),
    slice('web', ['n00']),
  ];
  const r = await cli(['explain', 'svc/web'], objects);
  assert.equal(r.status, 0, r.stderr);
  const section = r.stdout.slice(r.stdout.indexOf('BGP, per node and peer:'));
  assert.match(section, /^ {2}n00, n01, n02, n03, n04, n05, n06, n07 and 2 more: announce to router-a$/m);
  assert.match(section, /^ {4}router-a \(10\.0\.0\.1\): 192\.0\.2\.1\/32 \(localPref 50\)$/m);
  assert.match(section, /^ {4}router-b: nothing: no session on these nodes \(nodeSelectors\)$/m);
  assert.match(section, /^ {2}n10, n11: announce to router-b$/m);
  assert.ok(!/^NODE\s+DECISION/m.test(r.stdout), 'in BGP mode the grouped rows replace the per-node table');
  const wide = await cli(['explain', 'svc/web', '-o', 'wide'], objects);
  assert.match(wide.stdout, /^ {2}n00, n01, n02, n03, n04, n05, n06, n07, n08, n09: announce to router-a$/m);
});

test('whois of a BGP address: the per node and peer view of the prefix containing it', async () => {
  const v6 = await cli(['whois', '2001:db8::10', '-o', 'json'], CLUSTER);
  assert.equal(v6.status, 0, v6.stderr);
  const h = v6.json.holders[0];
  assert.equal(h.service, 'default/web');
  const n1 = h.bgp.nodes.find((n: any) => n.node === 'n1');
  const a = n1.peers.find((p: any) => p.peer === 'router-a');
  assert.deepEqual([a.outcome, a.prefixes, a.filtered], ['addressFamily', [], ['2001:db8::10/128']]);
  const b = n1.peers.find((p: any) => p.peer === 'router-b');
  assert.deepEqual(b.prefixes, [{ prefix: '2001:db8::10/128', localPref: 100, communities: ['65000:1', 'large:1:2:3'] }]);
  assert.equal(b.why, null, 'nothing of this address is filtered for router-b');
  assert.deepEqual(n1.undelivered, [{ advertisement: 'typo', prefixes: ['2001:db8::/120'], specPeers: ['router-x'] }]);
  const text = await cli(['whois', '2001:db8::10'], CLUSTER);
  assert.match(text.stdout, /^BGP for 2001:db8::10 \(default\/web\), per node and peer:$/m);
  assert.match(text.stdout, /^ {2}n1, n2: announce to router-b$/m);
  assert.match(text.stdout, /^ {4}router-a \(10\.0\.0\.1\): nothing: IPv4 neighbor without dualStackAddressFamily: it gets IPv4 prefixes only, 2001:db8::10\/128 not sent$/m);
  assert.match(text.stdout, /^ {4}BGPAdvertisement typo: 2001:db8::\/120 to no peer: its spec\.peers \(router-x\) names no BGPPeer with a session on these nodes$/m);
  const v4 = (await cli(['whois', '192.0.2.10', '-o', 'json'], CLUSTER)).json;
  const a4 = v4.holders[0].bgp.nodes[0].peers.find((p: any) => p.peer === 'router-a');
  assert.deepEqual([a4.outcome, a4.prefixes.map((x: any) => x.prefix), a4.why], ['advertised', ['192.0.2.10/32'], null]);
});
