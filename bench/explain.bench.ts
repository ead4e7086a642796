/**
 * `explain` wall time on a 5,000-service, 500-node snapshot: the whole CLI (`bin/metallb-ts`,
 * process start, YAML parse, config, controller dry run, election, rendering), as a user runs it.
 * Prints figures; asserts nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { stringify } from 'yaml';

const NODES = 500;
const SERVICES = 5000;

function snapshot(format: 'yaml' | 'json'): string {
  const items: unknown[] = [];
  for (let i = 0; i < NODES; i++) {
    const name = `node-${String(i).padStart(3, '0')}`;
    const labels: Record<string, string> = { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' };
    if (i < 3) labels['node.kubernetes.io/exclude-from-external-load-balancers'] = '';
    else labels['node-role/worker'] = 'true';
    items.push({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels, resourceVersion: String(1000 + i) },
      status: { conditions: [{ type: 'NetworkUnavailable', status: 'False' }, { type: 'Ready', status: 'True' }] } });
    items.push({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `speaker-${i}`, namespace: 'metallb-system', labels: { component: 'speaker', app: 'metallb' } },
      spec: { nodeName: name }, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } });
  }
  items.push({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'bench', namespace: 'metallb-system' }, spec: { addresses: ['10.100.0.0/16'] } });
  items.push({ apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name: 'workers', namespace: 'metallb-system' },
    spec: { ipAddressPools: ['bench'], nodeSelectors: [{ matchLabels: { 'node-role/worker': 'true' } }] } });
  for (let i = 0; i < SERVICES; i++) {
    const name = `svc-${i}`;
    const ip = i % 10 === 9 ? undefined : `10.100.${i >> 8}.${i & 255}`;
    items.push({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'bench', creationTimestamp: '2025-01-01T00:00:00Z' },
      spec: { type: 'LoadBalancer', clusterIP: `10.96.${i >> 8}.${i & 255}`, selector: { app: name }, externalTrafficPolicy: i % 4 === 0 ? 'Local' : 'Cluster',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }] },
      status: { loadBalancer: { ingress: ip ? [{ ip, ipMode: 'VIP' }] : [] } } });
    items.push({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', addressType: 'IPv4',
      metadata: { name: `${name}-abcde`, namespace: 'bench', labels: { 'kubernetes.io/service-name': name } },
      endpoints: [0, 1].map((k) => ({ addresses: [`10.244.${k}.${i & 255}`], nodeName: `node-${String((i * 7 + k * 13) % NODES).padStart(3, '0')}`, conditions: { ready: true, serving: true, terminating: false } })) });
  }
  const list = { apiVersion: 'v1', kind: 'List', items };
  return format === 'json' ? JSON.stringify(list) : stringify(list);
}

const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-bench-'));
try {
  const bin = join(import.meta.dirname, '../bin/metallb-ts');
  for (const format of ['yaml', 'json'] as const) {
    const file = join(dir, `cluster.${format}`);
    writeFileSync(file, snapshot(format));
    const runs: number[] = [];
    let status: number | null = null;
    for (let r = 0; r < 3; r++) {
      const t0 = performance.now();
      const out = spawnSync(bin, ['explain', 'svc/svc-2501', '-n', 'bench', '-f', file, '-o', 'json'], { encoding: 'utf8' });
      runs.push(performance.now() - t0);
      status = out.status;
      if (out.status !== 0 && out.status !== 1) {
        console.log(`explain failed (exit ${out.status}): ${out.stderr.trim()}`);
        break;
      }
    }
    runs.sort((a, b) => a - b);
    console.log(`explain wall time, ${SERVICES} services x ${NODES} nodes, ${format} snapshot: ${runs[Math.floor(runs.length / 2)]!.toFixed(0)} ms (median of ${runs.length}, exit ${status})`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
