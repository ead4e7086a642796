// `metallb-ts controller` (a subprocess, against a real kube-apiserver + etcd) restarted on states
// where the dry run and the daemon once could disagree, checked against `allocate --dry-run` on a
// snapshot of the same objects:
// - a pool shrunk while the controller was down: the Services whose addresses are still in the
//   pool keep them, the two whose addresses left it get nothing (the pool is full), nobody's
//   address is taken;
// - a PreferDualStack Service whose clusterIPs are IPv4 only, holding one IPv4 address with a
//   sharing key: MetalLB reprocesses everything a second time and re-homes it to 10.0.0.0, and
//   then rewrites it forever on its own update events — metallb-ts stops after one round and
//   logs it; its repeated events are counted in one Event each.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestCluster, REPO_ROOT, type TestCluster } from './setup/cluster.ts';
import { corePath, metallbPath } from '../../src/controller/api.ts';
import { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject, Service } from '../../src/core/kube.ts';

const NS = 'metallb-system';
const BIN = join(REPO_ROOT, 'bin/metallb-ts');
const POOL_FROM = 'metallb.io/ip-allocated-from-pool';
const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface DryRunService {
  service: string;
  ips: string[];
  pool: string | null;
  oscillates?: string[][];
  nondeterministic?: string;
}

describe('controller restart: the daemon ends where the dry run says', () => {
  let cluster: TestCluster;
  let api: KubeClient;
  let dir: string;
  let proc: ChildProcess | undefined;
  const log: string[] = [];

  const get = <T = any>(path: string): Promise<T> => api.request<T>({ method: 'GET', path });

  async function services(): Promise<Service[]> {
    return (await get<{ items: Service[] }>('/api/v1/services')).items.filter((s) => s.metadata?.name !== 'kubernetes');
  }

  before(async () => {
    cluster = await startTestCluster({ namespaces: [NS] });
    api = new KubeClient(cluster.kubeConfig, { maxSockets: 8 });
    dir = mkdtempSync(join(tmpdir(), 'metallb-ts-parity-'));
    const pools = [
      { name: 'lab', spec: { addresses: ['192.0.2.0/30'] } }, // was 192.0.2.0/29
      { name: 'public', spec: { addresses: ['10.0.0.0/29', '2001:db8:1::/126'], serviceAllocation: { namespaces: ['dual'] } } },
    ];
    for (const p of pools) {
      await api.request({ method: 'POST', path: metallbPath(NS, 'ipaddresspools'), body: { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: p.name }, spec: p.spec } });
    }
    await api.request({ method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dual' } } });
    const mk = async (ns: string, name: string, ip: string, pool: string, extra: { annotations?: Record<string, string>; spec?: Record<string, unknown> } = {}) => {
      const created = await api.request<Service>({
        method: 'POST',
        path: corePath(ns, 'services'),
        body: {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, annotations: { [POOL_FROM]: pool, ...(extra.annotations ?? {}) } },
          spec: { type: 'LoadBalancer', ports: [{ port: 80, protocol: 'TCP' }], selector: { app: name }, ...(extra.spec ?? {}) },
        },
      });
      // The status a controller wrote before it stopped.
      await api.request({ method: 'PUT', path: `${corePath(ns, 'services', name)}/status`, body: { ...created, status: { loadBalancer: { ingress: [{ ip }] } } } });
    };
    await mk('default', 'a-moved', '192.0.2.4', 'lab');
    await mk('default', 'b-moved', '192.0.2.5', 'lab');
    for (const [i, n] of ['c-kept', 'd-kept', 'e-kept', 'f-kept'].entries()) await mk('default', n, `192.0.2.${i}`, 'lab');
    await mk('dual', 'web', '10.0.0.4', 'public', { annotations: { 'metallb.io/allow-shared-ip': 'k1' }, spec: { ipFamilyPolicy: 'PreferDualStack' } });
  });

  after(async () => {
    if (proc && proc.exitCode === null) {
      proc.kill('SIGTERM');
      await new Promise((r) => proc!.once('exit', r));
    }
    api?.close();
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('shrunk pool and PreferDualStack second pass: same addresses as the dry run; the never-settling Service is capped', async () => {
    const items: KubeObject[] = [
      ...(await get<{ items: KubeObject[] }>('/api/v1/namespaces')).items.map((o) => ({ ...o, kind: 'Namespace', apiVersion: 'v1' })),
      ...(await get<{ items: KubeObject[] }>(metallbPath(NS, 'ipaddresspools'))).items.map((o) => ({ ...o, kind: 'IPAddressPool', apiVersion: 'metallb.io/v1beta1' })),
      ...(await services()).map((o) => ({ ...o, kind: 'Service', apiVersion: 'v1' })),
    ];
    const file = join(dir, 'state.json');
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    const dry = spawnSync(BIN, ['allocate', '--dry-run', '-o', 'json', '-f', file], { encoding: 'utf8' });
    const predicted = (JSON.parse(dry.stdout) as { services: DryRunService[] }).services;
    const want: Record<string, string[]> = Object.fromEntries(predicted.map((s) => [s.service, s.ips]));
    assert.deepEqual(
      { ...want },
      {
        'default/c-kept': ['192.0.2.0'],
        'default/d-kept': ['192.0.2.1'],
        'default/e-kept': ['192.0.2.2'],
        'default/f-kept': ['192.0.2.3'],
        'default/a-moved': [],
        'default/b-moved': [],
        'dual/web': ['10.0.0.0'],
      },
    );
    assert.deepEqual(predicted.find((s) => s.service === 'dual/web')!.oscillates, [['10.0.0.0'], ['10.0.0.0', '2001:db8:1::']]);

    proc = spawn(BIN, ['controller', '--kubeconfig', cluster.kubeconfigPath, '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, KUBECONFIG: '' },
    });
    let buf = '';
    proc.stdout!.setEncoding('utf8');
    proc.stdout!.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        log.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });

    const deadline = Date.now() + 60_000;
    let got: Record<string, string[]> = {};
    for (;;) {
      got = Object.fromEntries((await services()).map((s) => [`${s.metadata!.namespace}/${s.metadata!.name}`, (s.status?.loadBalancer?.ingress ?? []).map((x) => x.ip!)]));
      if (Object.keys(want).every((k) => JSON.stringify(got[k]) === JSON.stringify(want[k])) && log.some((l) => l.includes('serviceNeverConverges'))) break;
      if (Date.now() > deadline) assert.fail(`the controller did not reach the dry run's result: ${JSON.stringify(got)}\n${log.slice(-30).join('\n')}`);
      await tick(200);
    }
    // It stays there: the never-settling Service is not rewritten any more.
    const rv = (await get<Service>(corePath('dual', 'services', 'web'))).metadata!.resourceVersion;
    await tick(2000);
    assert.equal((await get<Service>(corePath('dual', 'services', 'web'))).metadata!.resourceVersion, rv);
    assert.deepEqual(
      Object.keys(want).map((k) => [k, got[k]]),
      Object.entries(want),
    );
    const cycleLines = log.map((l) => JSON.parse(l)).filter((j) => j.event === 'serviceNeverConverges');
    assert.equal(cycleLines.length, 1);
    assert.equal(cycleLines[0].service, 'dual/web');
    assert.equal(cycleLines[0].level, 'error');

    // Events: one Event per distinct (type, reason, message), repeats counted; MetalLB's recorder fields.
    let events: any[] = [];
    for (const until = Date.now() + 20_000; Date.now() < until; await tick(300)) {
      events = (await get<{ items: any[] }>(`${corePath('dual', 'events')}?fieldSelector=${encodeURIComponent('involvedObject.name=web')}`)).items;
      if (events.some((e) => e.count >= 2)) break;
    }
    const ids = events.map((e) => `${e.type}/${e.reason}/${e.message}`);
    assert.equal(new Set(ids).size, ids.length, `no two Events repeat one another: ${ids.join(' | ')}`);
    assert.ok(
      events.some((e) => e.reason === 'IPAllocated' && e.message === 'Assigned IP ["10.0.0.0"]' && e.count === 2),
      JSON.stringify(events.map((e) => [e.message, e.count])),
    );
    for (const e of events) {
      assert.deepEqual([e.source, e.reportingComponent, e.reportingInstance ?? ''], [{ component: 'metallb-controller' }, 'metallb-controller', '']);
    }
  });
});
