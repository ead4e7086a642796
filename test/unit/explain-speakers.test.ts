/**
 * Per-speaker configurations in the diagnostics: the controller allocates with its own
 * configuration (pools, communities), each speaker decides with the configuration it builds for
 * its node (speakerConfig), and a configuration a speaker rejects is not applied by it. The three
 * differential files of test/reference/differential/speaker-*.yaml run through the CLI with the answers
 * MetalLB v0.16.1's own code gives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { runCliAsync } from '../helpers/cli.ts';
import { clusterStateFromObjects, type KubeObject } from '../../src/core/kube.ts';
import { diagnosticContext, explainService, speakerConfigs } from '../../src/core/explain/index.ts';
import { speakerConfig } from '../../src/core/speaker/config.ts';
import { electL2 } from '../../src/core/election/index.ts';
import { referencePath } from '../helpers/reference.ts';

const DIFF = referencePath('differential');

/** The resources of a differential file's case (Services get the cluster IP the API server always sets). */
function differential(file: string): { resources: KubeObject[]; real: any; description: string } {
  const doc = parse(readFileSync(join(DIFF, file), 'utf8'));
  const c = doc.cases[0];
  const resources = (c.resources as KubeObject[]).map((r) => (r.kind === 'Service' ? { ...r, spec: { clusterIP: '10.96.0.10', ...(r as any).spec } } : r));
  return { resources, real: doc.realMetalLB, description: c.description };
}

const list = (items: KubeObject[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

async function cli(args: string[], objects: KubeObject[]) {
  const r = await runCliAsync([...args, '-f', '-'], list(objects));
  return { ...r, json: args.includes('json') && r.stdout ? JSON.parse(r.stdout) : undefined };
}

interface DiffCase {
  file: string;
  exit: number;
  announcer: string | null;
  l2: Record<string, string>;
  /** BGP decision of each speaker that accepts (realMetalLB bgp / decisionsOfAcceptingSpeakers). */
  bgp: (real: any) => Record<string, string>;
  configs: Array<{ nodes: string[]; status: string; error?: RegExp }>;
  why: RegExp;
  rejectedBy: { controller: boolean; speakers: 'all' | string[] };
  rejectedByText: RegExp;
}

const cases: DiffCase[] = [
  {
    file: 'speaker-cause-a-unselected-bgp-ad-invalid-for-pool.yaml',
    exit: 0,
    announcer: 'node-b',
    l2: { 'node-a': 'notOwner', 'node-b': 'announce' },
    bgp: (real) => real.bgp['default/web'],
    configs: [{ nodes: ['node-a', 'node-b'], status: 'accepted' }],
    why: /^Why: +node-b announces 10\.0\.0\.10/m,
    rejectedBy: { controller: false, speakers: [] },
    rejectedByText: /no running component: only the admission webhook refuses it/,
  },
  {
    file: 'speaker-fixture-duplicate-node-selectors.yaml',
    exit: 1,
    announcer: null,
    l2: { 'node-a': 'configRejected', 'node-b': 'configRejected' },
    bgp: () => ({}),
    configs: [{ nodes: ['node-a', 'node-b'], status: 'rejected', error: /duplicate definition of nodeSelectors/ }],
    // The root cause first; the fix hint is labelled as such on the Fix line, never the answer.
    why: /^Why: +every speaker rejects the configuration: .*duplicate definition of nodeSelectors.*\. None applies it: each keeps running the configuration it accepted last, which a snapshot cannot show, so who announces the Service now cannot be told from here\nFix: +.*; once fixed \(the repeated entries removed\): node-b would announce it$/m,
    rejectedBy: { controller: false, speakers: 'all' },
    rejectedByText: /every speaker \(the controller accepts it\)/,
  },
  {
    file: 'speaker-gap-config-rejected-on-some-speakers.yaml',
    exit: 1,
    announcer: null,
    l2: { 'node-a': 'configRejected', 'node-b': 'notOwner' },
    bgp: (real) => ({ ...real.decisionsOfAcceptingSpeakers['default/web'].bgp, 'node-a': 'configRejected' }),
    configs: [
      { nodes: ['node-a'], status: 'rejected', error: /invalid local preference 200/ },
      { nodes: ['node-b'], status: 'accepted' },
    ],
    why: /^Why: +the speaker of node-a \(1 of 2 nodes\) rejects the configuration: .*invalid local preference 200.*node-a is first in the hash order of 10\.0\.0\.12 but announces nothing new.*nobody answers for 10\.0\.0\.12$/m,
    rejectedBy: { controller: false, speakers: ['node-a'] },
    rejectedByText: /the speaker of node-a \(the controller accepts it\)/,
  },
];

test('the differential speaker files: each speaker decides with its own configuration, as MetalLB does', { concurrency: 3 }, async (t) => {
  await Promise.all(
    cases.map((c) =>
      t.test(c.file, async () => {
        const { resources, real } = differential(c.file);
        const j = await cli(['explain', 'svc/web', '-o', 'json'], resources);
        assert.equal(j.status, c.exit, j.stderr);
        const e = j.json;
        assert.equal(e.announcer, c.announcer);
        assert.deepEqual(Object.fromEntries(e.nodes.map((n: any) => [n.node, n.decision])), c.l2);
        assert.deepEqual(
          e.configuration.speakers.map((g: any) => ({ nodes: g.nodes, status: g.status })),
          c.configs.map(({ nodes, status }) => ({ nodes, status })),
        );
        for (const [i, want] of c.configs.entries()) {
          if (want.error) assert.match(e.configuration.speakers[i].error, want.error);
          else assert.equal(e.configuration.speakers[i].error, null);
        }
        if (real.configErrors) {
          // MetalLB's own speakers reject on exactly these nodes.
          const rejected = e.configuration.speakers
            .filter((g: any) => g.status === 'rejected')
            .flatMap((g: any) => g.nodes)
            .sort();
          assert.deepEqual(rejected, Object.keys(real.configErrors).sort());
        }
        const bgp = e.bgp ? Object.fromEntries(e.bgp.nodes.filter((n: any) => n.decision !== 'configRejected' || c.bgp(real)[n.node]).map((n: any) => [n.node, n.decision])) : {};
        assert.deepEqual(bgp, c.bgp(real));

        const text = await cli(['explain', 'svc/web'], resources);
        assert.equal(text.status, c.exit);
        assert.match(text.stdout, c.why);

        const v = await cli(['validate', '-o', 'json'], resources);
        assert.equal(v.status, 1, 'exit codes unchanged: 1 on errors');
        assert.equal(v.json.errors.length, 1, JSON.stringify(v.json.errors));
        assert.deepEqual(v.json.errors[0].rejectedBy, c.rejectedBy);
        const vt = await cli(['validate'], resources);
        assert.match(vt.stdout, c.rejectedByText);
      }),
    ),
  );
});

test('the duplicate-selector file: the fix hint is labelled, never the answer', async () => {
  const { resources } = differential('speaker-fixture-duplicate-node-selectors.yaml');
  const e = (await cli(['explain', 'svc/web', '-o', 'json'], resources)).json;
  assert.deepEqual(e.ifFixed, { assuming: 'the repeated entries removed', mode: 'layer2', announcer: 'node-b', bgpAnnouncers: [] });
  assert.equal(e.l2, null);
  assert.equal(e.bgp, null);
  assert.equal(e.findings[0].id, 'config-rejected');
  assert.match(e.findings[0].message, /^every speaker rejects the configuration: .*None applies it: each keeps running the configuration it accepted last, which a snapshot cannot show/);
  const text = (await cli(['explain', 'svc/web'], resources)).stdout;
  assert.match(text, /^Verdict: +nobody announces 10\.0\.0\.10$/m);
  assert.match(text, /^Config: +rejected by every speaker: /m);
  assert.match(text, /^Fix: +correct metallb-system\/L2Advertisement\/l2 .*once fixed \(the repeated entries removed\): node-b would announce it$/m);
});

test('the gap file: the others do not announce because they are not first, and the finding says so', async () => {
  const { resources } = differential('speaker-gap-config-rejected-on-some-speakers.yaml');
  const e = (await cli(['explain', 'svc/web', '-o', 'json'], resources)).json;
  assert.equal(e.l2.winner, 'node-a', 'the accepting speakers still count node-a as a candidate, and it wins the hash');
  assert.equal(e.mode, 'layer2', 'node-b drops both BGPAdvertisements (they select node-a only)');
  const nodeB = e.nodes.find((n: any) => n.node === 'node-b');
  assert.match(nodeB.detail, /node-a is first, but its speaker rejects the configuration: nobody announces$/);
  const f = e.findings.find((x: any) => x.id === 'config-rejected-on-nodes');
  assert.equal(f.severity, 'error');
  assert.match(
    f.message,
    /^the speaker of node-a \(1 of 2 nodes\) rejects the configuration: .*node-a is first in the hash order of 10\.0\.0\.12 but announces nothing new, and the other candidates do not announce because they are not first: nobody answers for 10\.0\.0\.12$/,
  );
  assert.match(f.fix, /^correct metallb-system\/BGPAdvertisement\/bgp-2 /);
  const whois = await cli(['whois', '10.0.0.12', '-o', 'json'], resources);
  assert.equal(whois.status, 1);
  assert.equal(whois.json.holders[0].announcer, null);
});

// ---------------------------------------------------------------------------------------------

const NS = 'metallb-system';
const node = (name: string, labels: Record<string, string> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } } });
const cr = (kind: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: kind === 'BGPPeer' ? 'metallb.io/v1beta2' : 'metallb.io/v1beta1',
  kind,
  metadata: { name, namespace: NS },
  spec,
});
const svc = (name: string, ip?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: { type: 'LoadBalancer', clusterIP: '10.96.0.1', ports: [{ port: 80, protocol: 'TCP' }] },
  status: { loadBalancer: { ingress: ip ? [{ ip }] : [] } },
});
const slice = (service: string, nodes: string[]): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: `${service}-x`, namespace: 'default', labels: { 'kubernetes.io/service-name': service } },
  endpoints: nodes.map((n, i) => ({ addresses: [`10.244.0.${i + 1}`], nodeName: n, conditions: { ready: true } })),
});
const peer = (name: string, address: string, extra: Record<string, unknown> = {}) => cr('BGPPeer', name, { myASN: 64500, peerASN: 64501, peerAddress: address, ...extra });

test('the controller reads pools and communities only: a broken advertisement or peer never stops allocation', { concurrency: 4 }, async (t) => {
  const base = [node('a'), cr('IPAddressPool', 'p', { addresses: ['192.0.2.0/28'] }), cr('L2Advertisement', 'l2', {}), svc('web'), slice('web', ['a'])];
  const rows: Array<{ name: string; extra: KubeObject[]; allocate: number; explain: number; stderr?: RegExp }> = [
    { name: 'a BGPAdvertisement with an impossible aggregation length', extra: [cr('BGPAdvertisement', 'b', { aggregationLength: 20 })], allocate: 0, explain: 1 },
    { name: 'a BGPPeer without myASN', extra: [cr('BGPPeer', 'r', { peerASN: 1, peerAddress: '10.0.0.1' })], allocate: 0, explain: 1 },
    { name: 'an L2Advertisement with a repeated pool name', extra: [cr('L2Advertisement', 'l2b', { ipAddressPools: ['p', 'p'] })], allocate: 0, explain: 1 },
    { name: 'nothing wrong', extra: [], allocate: 0, explain: 0 },
    {
      name: 'overlapping pools: the controller rejects (exit 2 everywhere)',
      extra: [cr('IPAddressPool', 'q', { addresses: ['192.0.2.8/29'] })],
      allocate: 2,
      explain: 2,
      stderr: /^metallb-ts: MetalLB's controller rejects this configuration: metallb-system\/IPAddressPool\/q: .*overlaps.*which a snapshot cannot show \(see metallb-ts validate\)\n$/,
    },
    {
      name: 'a Community alias that does not parse: the controller rejects',
      extra: [cr('Community', 'c', { communities: [{ name: 'x', value: 'nope' }] })],
      allocate: 2,
      explain: 2,
      stderr: /MetalLB's controller rejects this configuration: metallb-system\/Community\/c: /,
    },
  ];
  await Promise.all(
    rows.map((row) =>
      t.test(row.name, async () => {
        const objects = [...base, ...row.extra];
        const a = await cli(['allocate', '--dry-run', '-o', 'json'], objects);
        assert.equal(a.status, row.allocate, a.stderr);
        if (row.allocate === 0) assert.deepEqual(a.json.services[0].ips, ['192.0.2.0'], 'the controller allocates');
        const e = await cli(['explain', 'svc/web'], objects);
        assert.equal(e.status, row.explain, e.stderr + e.stdout);
        if (row.stderr) {
          assert.match(e.stderr, row.stderr);
          assert.equal(e.stdout, '');
        }
        const w = await cli(['whois', '192.0.2.0'], objects);
        assert.equal(w.status, row.explain === 2 ? 2 : 1, w.stderr);
      }),
    ),
  );
});

test('speakerConfigs groups nodes by identical node filters, and each group agrees with speakerConfig on every one of its nodes', () => {
  const objects = [
    ...['a1', 'a2', 'b1', 'b2', 'c1'].map((n) => node(n, { rack: n[0]! })),
    cr('IPAddressPool', 'p', { addresses: ['192.0.2.0/28'] }),
    cr('L2Advertisement', 'l2', {}),
    peer('rr', '10.0.0.1'),
    peer('tor-a', '10.0.1.1', { nodeSelectors: [{ matchLabels: { rack: 'a' } }] }),
    peer('tor-b', '10.0.2.1', { nodeSelectors: [{ matchLabels: { rack: 'b' } }], holdTime: '1s' }), // invalid: rejected on rack b only
    cr('BGPAdvertisement', 'edge', { nodeSelectors: [{ matchLabels: { 'kubernetes.io/hostname': 'c1' } }] }),
    svc('web', '192.0.2.1'),
    slice('web', ['a1']),
  ];
  const state = clusterStateFromObjects(objects);
  const names = state.nodes.map((n) => n.metadata!.name!);
  const configs = speakerConfigs(state, names);
  assert.deepEqual(
    configs.groups.map((g) => [g.nodes.join(','), g.status]),
    [
      ['a1,a2', 'accepted'],
      ['b1,b2', 'rejected'],
      ['c1', 'accepted'],
    ],
  );
  for (const g of configs.groups) {
    for (const n of g.nodes) {
      const own = speakerConfig(state, { node: n, bgpType: 'frr-k8s' });
      assert.equal(own.ok, g.result.ok, n);
      assert.deepEqual(own.droppedPeers, g.result.droppedPeers, n);
      assert.deepEqual(own.droppedBGPAdvertisements, g.result.droppedBGPAdvertisements, n);
      if (!own.ok && !g.result.ok) assert.equal(own.error.message, g.result.error.message);
      if (own.ok && g.result.ok) assert.deepEqual([...own.config.peers.keys()], [...g.result.config.peers.keys()]);
    }
  }
  // Every accepting speaker elects alike: the L2 part of a configuration does not depend on the node.
  const ctx = diagnosticContext(state);
  const service = state.services[0]!;
  const elections = configs.accepted.map((g) => (g.result.ok ? electL2({ config: g.result.config, state, service, speakers: null, ignoreExcludeLB: false, index: ctx.index }) : null));
  for (const x of elections) assert.deepEqual(x, elections[0]);
  const e = explainService({ ...ctx, service });
  assert.deepEqual(Object.fromEntries(e.nodes.map((n) => [n.node, n.decision])), {
    a1: elections[0]!.winner === 'a1' ? 'announce' : 'notOwner',
    a2: elections[0]!.winner === 'a2' ? 'announce' : 'notOwner',
    b1: 'configRejected',
    b2: 'configRejected',
    c1: elections[0]!.winner === 'c1' ? 'announce' : 'notOwner',
  });
  const f = e.findings.find((x) => x.id === 'config-rejected-on-nodes');
  assert.ok(f, JSON.stringify(e.findings));
  assert.match(f.message, /^the speakers of b1, b2 \(2 of 5 nodes\) reject the configuration: metallb-system\/BGPPeer\/tor-b: /);
  assert.match(f.fix, /^correct metallb-system\/BGPPeer\/tor-b /);
});

test('per-node BGPPeers: one group per node, and the JSON lists what each speaker keeps', async () => {
  const nodes = Array.from({ length: 30 }, (_, i) => node(`n${String(i).padStart(2, '0')}`));
  const peers = nodes.map((n, i) => peer(`tor-${n.metadata!.name}`, `10.1.0.${i + 1}`, { nodeSelectors: [{ matchLabels: { 'kubernetes.io/hostname': n.metadata!.name! } }] }));
  const objects = [...nodes, ...peers, cr('IPAddressPool', 'p', { addresses: ['192.0.2.0/28'] }), cr('BGPAdvertisement', 'all', {}), svc('web', '192.0.2.1'), slice('web', ['n00'])];
  const e = (await cli(['explain', 'svc/web', '-o', 'json'], objects)).json;
  assert.equal(e.configuration.speakers.length, 30);
  assert.deepEqual(e.configuration.speakers[3], { nodes: ['n03'], status: 'accepted', stage: null, error: null, bgpPeers: ['tor-n03'], bgpAdvertisements: ['all'] });
  assert.equal(e.bgpAnnouncers.length, 30);
  assert.deepEqual(
    e.bgp.nodes[3].peers.map((p: any) => p.peer),
    ['tor-n03'],
    'a node lists its sessions, not every BGPPeer',
  );
  assert.equal(e.bgp.peers.length, 30);
});

test('speakers without a Node object have no configuration; a snapshot without Nodes has no speaker', async () => {
  const objects = [node('a'), cr('IPAddressPool', 'p', { addresses: ['192.0.2.0/28'] }), cr('L2Advertisement', 'l2', {}), svc('web', '192.0.2.1'), slice('web', ['a'])];
  const r = await cli(['explain', 'svc/web', '-o', 'json', '--speakers', 'a,ghost'], objects);
  assert.equal(r.status, 0, r.stderr);
  const ghost = r.json.configuration.speakers.find((g: any) => g.nodes.includes('ghost'));
  assert.equal(ghost.status, 'noNode');
  assert.match(ghost.error, /failed to get node for ghost/);
  const none = await cli(['explain', 'svc/web', '-o', 'json'], objects.slice(1));
  assert.equal(none.status, 1);
  assert.equal(none.json.findings[0].id, 'no-nodes');
  const text = await cli(['explain', 'svc/web'], objects.slice(1));
  assert.match(text.stdout, /^Verdict: +nobody announces 192\.0\.2\.1$/m);
  assert.match(text.stdout, /^Why: +the snapshot has no Node object: a MetalLB speaker builds its configuration from its own Node/m);
});

test('a BGPPeer whose password Secret is not in a Secret-less snapshot: every speaker rejects, and the fix says the snapshot may lack Secrets', async () => {
  const objects = [
    node('a'),
    cr('IPAddressPool', 'p', { addresses: ['192.0.2.0/28'] }),
    cr('L2Advertisement', 'l2', {}),
    peer('router', '10.0.0.1', { passwordSecret: { name: 'bgp-pass' } }),
    svc('web', '192.0.2.1'),
    slice('web', ['a']),
  ];
  const r = await cli(['explain', 'svc/web', '-o', 'json'], objects);
  assert.equal(r.status, 1);
  assert.equal(r.json.findings[0].id, 'config-rejected');
  assert.match(r.json.findings[0].fix, /the snapshot holds no Secret of metallb-system at all: if it was taken without them, add `kubectl get secrets -n metallb-system -o yaml`/);
  const secret: KubeObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bgp-pass', namespace: NS }, type: 'kubernetes.io/basic-auth', data: { password: Buffer.from('s3cret').toString('base64') } };
  const ok = await cli(['explain', 'svc/web', '-o', 'json'], [...objects, secret]);
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(ok.json.announcer, 'a');
});

test('validate: a frr-k8s peer conflict only the speakers check is an error the speakers of the shared nodes raise', async () => {
  const objects = [
    node('a', { rack: 'x' }),
    node('b', { rack: 'y' }),
    cr('IPAddressPool', 'p', { addresses: ['192.0.2.0/28'] }),
    peer('one', '10.0.0.1', { nodeSelectors: [{ matchLabels: { rack: 'x' } }], routerID: '1.1.1.1' }),
    peer('two', '10.0.0.2', { nodeSelectors: [{ matchLabels: { rack: 'x' } }], routerID: '2.2.2.2' }),
  ];
  const v = await cli(['validate', '-o', 'json'], objects);
  assert.equal(v.status, 1);
  const err = v.json.errors.find((x: any) => /routerID/.test(x.message));
  assert.ok(err, JSON.stringify(v.json));
  assert.deepEqual(err.rejectedBy, { controller: false, speakers: ['a'] });
  const wide = await cli(['validate', '-o', 'wide'], objects);
  assert.match(wide.stdout, /the speaker of a \(the controller accepts it\)/);
});
