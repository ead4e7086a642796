/**
 * `explain` wall time as a user runs it: the whole CLI (`bin/metallb-ts`, process start, YAML
 * parse, config, controller dry run, election, rendering). First on examples/cluster.yaml (median
 * of SMALL_RUNS, goal 150 ms), then on a 5,000-service, 500-node snapshot in YAML and JSON (goals
 * 1 s and 0.5 s; issue #12 item 11). Beside each: CPU time (user + system) of the median run, which
 * a loaded machine inflates less than wall time. Prints figures; asserts nothing.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    items.push({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels, resourceVersion: String(1000 + i) },
      status: {
        conditions: [
          { type: 'NetworkUnavailable', status: 'False' },
          { type: 'Ready', status: 'True' },
        ],
      },
    });
    items.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `speaker-${i}`, namespace: 'metallb-system', labels: { component: 'speaker', app: 'metallb' } },
      spec: { nodeName: name },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
  }
  items.push({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'bench', namespace: 'metallb-system' }, spec: { addresses: ['10.100.0.0/16'] } });
  items.push({
    apiVersion: 'metallb.io/v1beta1',
    kind: 'L2Advertisement',
    metadata: { name: 'workers', namespace: 'metallb-system' },
    spec: { ipAddressPools: ['bench'], nodeSelectors: [{ matchLabels: { 'node-role/worker': 'true' } }] },
  });
  for (let i = 0; i < SERVICES; i++) {
    const name = `svc-${i}`;
    const ip = i % 10 === 9 ? undefined : `10.100.${i >> 8}.${i & 255}`;
    items.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: 'bench', creationTimestamp: '2025-01-01T00:00:00Z' },
      spec: {
        type: 'LoadBalancer',
        clusterIP: `10.96.${i >> 8}.${i & 255}`,
        selector: { app: name },
        externalTrafficPolicy: i % 4 === 0 ? 'Local' : 'Cluster',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      },
      status: { loadBalancer: { ingress: ip ? [{ ip, ipMode: 'VIP' }] : [] } },
    });
    items.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      addressType: 'IPv4',
      metadata: { name: `${name}-abcde`, namespace: 'bench', labels: { 'kubernetes.io/service-name': name } },
      endpoints: [0, 1].map((k) => ({
        addresses: [`10.244.${k}.${i & 255}`],
        nodeName: `node-${String((i * 7 + k * 13) % NODES).padStart(3, '0')}`,
        conditions: { ready: true, serving: true, terminating: false },
      })),
    });
  }
  const list = { apiVersion: 'v1', kind: 'List', items };
  return format === 'json' ? JSON.stringify(list) : stringify(list);
}

const SMALL_RUNS = 15;
const bin = join(import.meta.dirname, '../bin/metallb-ts');

/** Wall and CPU time of one run of the binary (ms) and its exit status. */
function timed(args: string[]): { wall: number; cpu: number; status: number | null; stderr: string } {
  const t0 = performance.now();
  const out = spawnSync(bin, args, { encoding: 'utf8' });
  const wall = performance.now() - t0;
  const cpu = childCpuMs() - cpuBefore;
  cpuBefore += cpu;
  return { wall, cpu, status: out.status, stderr: out.stderr };
}

/** CPU time (user + system) of this process's waited-for children so far, from /proc/self/stat (ms). */
function childCpuMs(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  const ticks = Number(fields[13]) + Number(fields[14]); // cutime, cstime (fields 16, 17)
  return ticks * 10; // USER_HZ 100
}
let cpuBefore = childCpuMs();

const median = <T extends { wall: number }>(runs: T[]): T => [...runs].sort((a, b) => a.wall - b.wall)[Math.floor(runs.length / 2)]!;

{
  const example = join(import.meta.dirname, '../examples/cluster.yaml');
  timed(['explain', 'svc/frontend', '-n', 'shop', '-f', example]); // fills the compile cache
  const runs = Array.from({ length: SMALL_RUNS }, () => timed(['explain', 'svc/frontend', '-n', 'shop', '-f', example]));
  const m = median(runs);
  const best = Math.min(...runs.map((r) => r.wall));
  console.log(`explain wall time, examples/cluster.yaml: ${m.wall.toFixed(0)} ms (median of ${SMALL_RUNS}, fastest ${best.toFixed(0)} ms; CPU ${m.cpu} ms; exit ${m.status})`);
}

const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-bench-'));
try {
  for (const format of ['yaml', 'json'] as const) {
    const file = join(dir, `cluster.${format}`);
    writeFileSync(file, snapshot(format));
    const runs: Array<ReturnType<typeof timed>> = [];
    for (let r = 0; r < 3; r++) {
      const out = timed(['explain', 'svc/svc-2501', '-n', 'bench', '-f', file, '-o', 'json']);
      runs.push(out);
      if (out.status !== 0 && out.status !== 1) {
        console.log(`explain failed (exit ${out.status}): ${out.stderr.trim()}`);
        break;
      }
    }
    const m = median(runs);
    console.log(`explain wall time, ${SERVICES} services x ${NODES} nodes, ${format} snapshot: ${m.wall.toFixed(0)} ms (median of ${runs.length}; CPU ${m.cpu} ms; exit ${m.status})`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
