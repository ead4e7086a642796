/**
 * electL2 against a plain reference (issue #13 item 5): MetalLB v0.16.1's layer2 election written
 * as its steps read (speaker/layer2_controller.go ShouldAnnounce: speakersForAds with
 * nodesWithActiveSpeakers, the Local endpoint filter, then sort by sha256(node#ip) and take the
 * first), with none of electL2's optimisations (bitmasks, shared candidate head, memos, one
 * compression per candidate). On random clusters both must give the same candidates, hash order
 * and winner, and every node the decision the reference implies.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { electL2 } from '../../src/core/election/index.ts';
import { buildElectionIndex } from '../../src/core/election/state-index.ts';
import { diagnosticConfig } from '../../src/core/explain/context.ts';
import { clusterStateFromObjects, EXCLUDE_LB_LABEL, type KubeObject, type Service } from '../../src/core/kube.ts';
import { mulberry32 } from '../helpers/rng.ts';

const NS = 'metallb-system';

interface Cluster {
  objects: KubeObject[];
  nodes: Array<{ name: string; labels: Record<string, string>; netUnavailable: boolean }>;
  ads: Array<{ name: string; zone: string | null; serviceLabel: string | null }>;
  service: Service;
  endpoints: Array<{ node: string; ready?: boolean; serving?: boolean }>;
  speakers: string[] | null;
  ignoreExcludeLB: boolean;
}

function randomCluster(rnd: () => number): Cluster {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const nodes = Array.from({ length: 1 + Math.floor(rnd() * 12) }, (_, i) => {
    const labels: Record<string, string> = { 'kubernetes.io/hostname': `node-${i}`, zone: pick(['a', 'b', 'c']) };
    if (rnd() < 0.2) labels[EXCLUDE_LB_LABEL] = pick(['', 'true']);
    return { name: `node-${i}`, labels, netUnavailable: rnd() < 0.1 };
  });
  const ads = Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, i) => ({ name: `l2-${i}`, zone: rnd() < 0.5 ? null : pick(['a', 'b', 'c']), serviceLabel: rnd() < 0.2 ? pick(['web', 'db']) : null }));
  const endpoints = Array.from({ length: Math.floor(rnd() * 5) }, () => {
    const e: { node: string; ready?: boolean; serving?: boolean } = { node: pick(nodes).name };
    if (rnd() < 0.6) e.ready = rnd() < 0.7;
    if (rnd() < 0.4) e.serving = rnd() < 0.5;
    return e;
  });
  const ip = `192.0.2.${1 + Math.floor(rnd() * 250)}`;
  const service: Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'svc', namespace: 'default', labels: { app: pick(['web', 'db']) } },
    spec: { type: 'LoadBalancer', clusterIP: '10.96.0.10', externalTrafficPolicy: rnd() < 0.4 ? 'Local' : 'Cluster', ports: [{ port: 80, protocol: 'TCP' }] },
    status: { loadBalancer: { ingress: [{ ip }] } },
  };
  let speakers: string[] | null = null;
  if (rnd() < 0.8) {
    speakers = nodes.filter(() => rnd() < 0.8).map((n) => n.name);
    if (rnd() < 0.2) speakers.push('ghost'); // a live speaker without a Node object
  }
  const objects: KubeObject[] = [
    ...nodes.map(
      (n): KubeObject => ({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: n.name, labels: n.labels },
        status: { conditions: [{ type: 'Ready', status: 'True' }, ...(n.netUnavailable ? [{ type: 'NetworkUnavailable', status: 'True' }] : [])] },
      }),
    ),
    { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'pool', namespace: NS }, spec: { addresses: ['192.0.2.0/24'] } },
    ...ads.map(
      (a): KubeObject => ({
        apiVersion: 'metallb.io/v1beta1',
        kind: 'L2Advertisement',
        metadata: { name: a.name, namespace: NS },
        spec: {
          ipAddressPools: ['pool'],
          ...(a.zone ? { nodeSelectors: [{ matchLabels: { zone: a.zone } }] } : {}),
          ...(a.serviceLabel ? { serviceSelectors: [{ matchLabels: { app: a.serviceLabel } }] } : {}),
        },
      }),
    ),
    service,
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'svc-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'svc' } },
      addressType: 'IPv4',
      endpoints: endpoints.map((e, i) => ({
        addresses: [`10.244.0.${i + 1}`],
        nodeName: e.node,
        conditions: { ...(e.ready !== undefined ? { ready: e.ready } : {}), ...(e.serving !== undefined ? { serving: e.serving } : {}) },
      })),
    },
  ];
  return { objects, nodes, ads, service, endpoints, speakers, ignoreExcludeLB: rnd() < 0.2 };
}

/** MetalLB's election, step by step and nothing else: the candidates in hash order. */
function reference(c: Cluster): { candidates: string[]; hashOrder: string[] } {
  const appLabel = c.service.metadata!.labels!.app;
  const ads = c.ads.filter((a) => a.serviceLabel === null || a.serviceLabel === appLabel);
  const usable = (e: { ready?: boolean; serving?: boolean }): boolean => ((e.ready ?? true) ? true : e.serving === true);
  const live = c.speakers ?? c.nodes.map((n) => n.name);
  const candidates = live.filter((name) => {
    const node = c.nodes.find((n) => n.name === name);
    if (node?.netUnavailable) return false;
    if (node && !c.ignoreExcludeLB && EXCLUDE_LB_LABEL in node.labels) return false;
    if (!node || !ads.some((a) => a.zone === null || a.zone === node.labels.zone)) return false;
    if (c.service.spec!.externalTrafficPolicy === 'Local' && !c.endpoints.some((e) => e.node === name && usable(e))) return false;
    return true;
  });
  const ip = (c.service.status!.loadBalancer!.ingress![0] as { ip: string }).ip;
  const digest = (n: string): string => crypto.createHash('sha256').update(`${n}#${ip}`).digest('hex');
  const hashOrder = [...candidates].sort((a, b) => (digest(a) < digest(b) ? -1 : digest(a) > digest(b) ? 1 : 0));
  return { candidates: [...candidates].sort(), hashOrder };
}

test('electL2 agrees with the plain reference election on 3,000 random clusters (candidates, hash order, winner, every node)', () => {
  let withWinner = 0;
  let local = 0;
  for (let seed = 1; seed <= 3000; seed++) {
    const c = randomCluster(mulberry32(seed));
    const state = clusterStateFromObjects(c.objects);
    const { config } = diagnosticConfig(state);
    const e = electL2({ config, state, service: c.service, speakers: c.speakers, ignoreExcludeLB: c.ignoreExcludeLB, index: buildElectionIndex(state, c.speakers) });
    const r = reference(c);
    const hasEndpoint = c.endpoints.some((x) => ((x.ready ?? true) ? true : x.serving === true));
    if (!hasEndpoint) {
      assert.equal(e.winner, null, `seed ${seed}: no usable endpoint`);
      continue;
    }
    assert.deepEqual([...e.candidates].sort(), r.candidates, `seed ${seed}: candidates`);
    assert.deepEqual(
      e.hashOrder.map((h) => h.node),
      r.hashOrder,
      `seed ${seed}: hash order`,
    );
    assert.equal(e.winner, r.hashOrder[0] ?? null, `seed ${seed}: winner`);
    for (const d of e.nodes) assert.equal(d.decision === 'announce', d.node === e.winner, `seed ${seed}: ${d.node} announces only when it wins`);
    if (e.winner) withWinner++;
    if (c.service.spec!.externalTrafficPolicy === 'Local') local++;
  }
  assert.ok(withWinner > 1000 && local > 500, `the generator reaches the interesting cases (${withWinner} with a winner, ${local} Local)`);
});
