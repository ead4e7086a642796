/**
 * L2 election throughput: 5,000 LoadBalancer services on 500 nodes, every node's decision for
 * every service (2.5 million decisions), with the full trace and hash order. Prints `name: X ms`.
 *
 * Workloads:
 *  - cluster: every service externalTrafficPolicy Cluster, one L2Advertisement selecting every
 *    node: 500 candidates per service, the worst case (500 SHA-256 digests per service).
 *  - mixed: half the services Local (3 endpoints each), advertisements split by zone.
 * Figures: the first pass (cold JIT) and the best of 5 passes.
 */
import { parseConfig } from '../src/core/config/index.ts';
import { buildElectionIndex, decideL2ForNode, electL2 } from '../src/core/election/index.ts';
import { clusterStateFromObjects, type KubeObject } from '../src/core/kube.ts';

const NODES = 500;
const SERVICES = 5000;

function workload(mixed: boolean) {
  const objs: KubeObject[] = [];
  for (let n = 0; n < NODES; n++) {
    const name = `worker-${String(n).padStart(3, '0')}.example.internal`;
    objs.push({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name, zone: `z${n % 3}` } },
      status: { conditions: [{ type: 'Ready', status: 'True' }, ...(n % 97 === 0 ? [{ type: 'NetworkUnavailable', status: 'True' }] : [])] },
    });
  }
  objs.push({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'pool', namespace: 'metallb-system' }, spec: { addresses: ['10.0.0.0/18', '2001:db8::/112'] } });
  if (mixed) {
    for (let z = 0; z < 3; z++) {
      objs.push({
        apiVersion: 'metallb.io/v1beta1',
        kind: 'L2Advertisement',
        metadata: { name: `adv-z${z}`, namespace: 'metallb-system' },
        spec: { nodeSelectors: [{ matchLabels: { zone: `z${z}` } }], interfaces: [`eth${z}`] },
      });
    }
  } else {
    objs.push({ apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name: 'adv', namespace: 'metallb-system' }, spec: {} });
  }
  for (let s = 0; s < SERVICES; s++) {
    const ns = `ns-${s % 50}`;
    const name = `svc-${s}`;
    const ip = `10.0.${s >> 8}.${s & 255}`;
    const ingress = mixed && s % 10 === 0 ? [{ ip }, { ip: `2001:db8::${s.toString(16)}` }] : [{ ip }];
    objs.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns, labels: { app: name } },
      spec: { type: 'LoadBalancer', externalTrafficPolicy: mixed && s % 2 === 0 ? 'Local' : 'Cluster', ports: [{ port: 80, protocol: 'TCP' }] },
      status: { loadBalancer: { ingress } },
    });
    objs.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-abc`, namespace: ns, labels: { 'kubernetes.io/service-name': name } },
      endpoints: [0, 1, 2].map((k) => ({
        addresses: [`192.168.${k}.${s & 255}`],
        nodeName: `worker-${String((s * 7 + k * 131) % NODES).padStart(3, '0')}.example.internal`,
        conditions: { ready: k !== 2 },
      })),
    });
  }
  const state = clusterStateFromObjects(objs);
  return { state, config: parseConfig(state), speakers: state.nodes.map((n) => n.metadata!.name!) };
}

function time(fn: () => void): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

for (const mixed of [false, true]) {
  const label = mixed ? 'mixed' : 'cluster';
  const { state, config, speakers } = workload(mixed);
  let index = buildElectionIndex(state, speakers);
  console.log(
    `index ${label} (${NODES} nodes, ${SERVICES} slices): ${time(() => {
      index = buildElectionIndex(state, speakers);
    }).toFixed(1)} ms`,
  );

  let announces = 0;
  const everyNode = (): void => {
    announces = 0;
    for (const service of state.services) {
      const e = electL2({ config, state, service, speakers, ignoreExcludeLB: false, index });
      for (const d of e.nodes) if (d.decision === 'announce') announces++;
    }
  };
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) runs.push(time(everyNode));
  if (announces !== SERVICES) throw new Error(`expected ${SERVICES} winners, got ${announces}`);
  console.log(`electL2 ${label} ${SERVICES} services x ${NODES} nodes, first pass: ${runs[0].toFixed(1)} ms`);
  console.log(`electL2 ${label} ${SERVICES} services x ${NODES} nodes, best of 5: ${Math.min(...runs).toFixed(1)} ms`);

  // The speaker on one node: the election per service, then its own decision.
  const me = speakers[123];
  const speakerRuns: number[] = [];
  for (let i = 0; i < 3; i++) {
    speakerRuns.push(
      time(() => {
        for (const service of state.services) {
          decideL2ForNode(electL2({ config, state, service, speakers, ignoreExcludeLB: false, index }), me);
        }
      }),
    );
  }
  console.log(`speaker ${label} on one node, ${SERVICES} services, best of 3: ${Math.min(...speakerRuns).toFixed(1)} ms`);

  // Without a prebuilt index (what a careless caller pays), 100 services only.
  const few = state.services.slice(0, 100);
  console.log(
    `electL2 ${label} without index, 100 services: ${time(() => {
      for (const service of few) electL2({ config, state, service, speakers, ignoreExcludeLB: false });
    }).toFixed(1)} ms`,
  );
}
