// `metallb-ts controller` as a real subprocess against a real kube-apiserver + etcd
// (test/integration/setup): 200 Services with namespace-pinned, selector and requested pools,
// priorities, sharing and an exhausted pool get exactly what `metallb-ts allocate --dry-run`
// predicted from a snapshot of the same objects; a restart writes nothing; a delete hands the
// freed address to a pending Service; a pool change re-homes only the Services it must. Events,
// IPAddressPool status counters and /metrics are checked along the way.
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

interface DryRunService {
  service: string;
  ips: string[];
  pool: string | null;
  error: string | null;
}
interface DryRunPool {
  name: string;
  size: number;
  inUse: number;
  assignedIPv4: number;
  assignedIPv6: number;
  availableIPv4: number;
  availableIPv6: number;
}
interface DryRun {
  services: DryRunService[];
  pools: DryRunPool[];
}

/** A running controller subprocess with its stdout (JSON log lines, as MetalLB) and metrics port. */
interface Controller {
  proc: ChildProcess;
  port: number;
  log: string[];
  stop(): Promise<number | null>;
}

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('metallb-ts controller against a real API server', () => {
  let cluster: TestCluster;
  let api: KubeClient;
  let dir: string;
  let controller: Controller | undefined;

  const get = <T = any>(path: string): Promise<T> => api.request<T>({ method: 'GET', path });
  const post = (path: string, body: unknown): Promise<unknown> => api.request({ method: 'POST', path, body });

  async function listServices(): Promise<Service[]> {
    const list = await get<{ items: Service[] }>('/api/v1/services');
    return list.items.filter((s) => s.metadata?.namespace !== 'default' || s.metadata?.name !== 'kubernetes');
  }

  /** The objects the controller reads, as a `kind: List` snapshot file (what `kubectl get -o json` gives). */
  async function snapshot(name: string, edit: (items: KubeObject[]) => KubeObject[] = (x) => x): Promise<string> {
    const withKind =
      (kind: string, apiVersion: string) =>
      (o: KubeObject): KubeObject => ({ ...o, kind, apiVersion });
    const items: KubeObject[] = [
      ...(await get<{ items: KubeObject[] }>('/api/v1/namespaces')).items.map(withKind('Namespace', 'v1')),
      ...(await get<{ items: KubeObject[] }>(metallbPath(NS, 'ipaddresspools'))).items.map(withKind('IPAddressPool', 'metallb.io/v1beta1')),
      ...(await listServices()).map(withKind('Service', 'v1')),
    ];
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: edit(items) }));
    return file;
  }

  function dryRun(file: string): DryRun {
    const r = spawnSync(BIN, ['allocate', '--dry-run', '-o', 'json', '-f', file], { encoding: 'utf8', maxBuffer: 64 << 20 });
    assert.ok(r.status === 0 || r.status === 1, `allocate --dry-run failed (${r.status}): ${r.stderr}`);
    return JSON.parse(r.stdout) as DryRun;
  }

  async function startController(): Promise<Controller> {
    const proc = spawn(BIN, ['controller', '--kubeconfig', cluster.kubeconfigPath, '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, KUBECONFIG: '' },
    });
    const log: string[] = [];
    let buf = '';
    let portResolve!: (p: number) => void;
    const portP = new Promise<number>((r) => {
      portResolve = r;
    });
    proc.stdout!.setEncoding('utf8');
    proc.stdout!.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        log.push(line);
        const m = /"address":"127\.0\.0\.1:(\d+)"/.exec(line);
        if (m) portResolve(Number(m[1]));
      }
    });
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    const port = await Promise.race([
      portP,
      exited.then((c) => {
        throw new Error(`controller exited (${c}) before serving: ${log.join('\n')}`);
      }),
    ]);
    return {
      proc,
      port,
      log,
      stop: async () => {
        if (proc.exitCode !== null) return proc.exitCode;
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        const code = await exited;
        clearTimeout(t);
        return code;
      },
    };
  }

  async function metrics(c: Controller): Promise<string> {
    const r = await fetch(`http://127.0.0.1:${c.port}/metrics`);
    assert.equal(r.status, 200);
    return r.text();
  }

  function metricValue(text: string, name: string, labels = ''): number | undefined {
    const re = new RegExp(`^${name}${labels ? `\\{${labels.replace(/[{}]/g, '')}\\}` : ''} (\\S+)$`, 'm');
    const m = re.exec(text);
    return m ? Number(m[1]) : undefined;
  }

  /** Waits until a clean full pass has run (reconcile_total{result=success} grows) and the controller is ready. */
  async function waitReady(c: Controller, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ready = await fetch(`http://127.0.0.1:${c.port}/readyz`)
        .then((r) => r.status)
        .catch(() => 0);
      if (ready === 200) {
        const m = await metrics(c);
        if ((metricValue(m, 'controller_runtime_reconcile_total', 'controller="service",result="success"') ?? 0) >= 1) return;
      }
      if (Date.now() > deadline) assert.fail(`controller not ready in time\n${c.log.slice(-30).join('\n')}`);
      await tick(200);
    }
  }

  /** Services by key: addresses and pool annotation, as the API stores them. */
  async function allocations(): Promise<Map<string, { ips: string[]; pool: string | null; rv: string }>> {
    const out = new Map<string, { ips: string[]; pool: string | null; rv: string }>();
    for (const s of await listServices()) {
      out.set(`${s.metadata!.namespace}/${s.metadata!.name}`, {
        ips: (s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? ''),
        pool: s.metadata?.annotations?.[POOL_FROM] ?? null,
        rv: s.metadata!.resourceVersion!,
      });
    }
    return out;
  }

  /** Waits until every Service of the dry run has exactly its predicted addresses and pool; returns the allocations. */
  async function waitConverged(expected: DryRun, c: Controller, timeoutMs = 90_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const now = await allocations();
      const diffs: string[] = [];
      for (const s of expected.services) {
        const got = now.get(s.service);
        const want = { ips: s.ips, pool: s.ips.length > 0 ? s.pool : null };
        if (!got || JSON.stringify(got.ips) !== JSON.stringify(want.ips) || got.pool !== want.pool) {
          diffs.push(`${s.service}: want ${JSON.stringify(want)} got ${JSON.stringify(got && { ips: got.ips, pool: got.pool })}`);
        }
      }
      if (diffs.length === 0) return now;
      if (Date.now() > deadline) {
        assert.fail(`${diffs.length} Services differ from the dry run:\n${diffs.slice(0, 15).join('\n')}\n--- controller log ---\n${c.log.slice(-40).join('\n')}`);
      }
      await tick(250);
    }
  }

  async function poolStatus(name: string): Promise<Record<string, number>> {
    return (await get<{ status?: Record<string, number> }>(metallbPath(NS, 'ipaddresspools', name))).status ?? {};
  }

  async function eventsOf(ns: string, name: string): Promise<Array<{ reason: string; type: string; message: string; count: number; source: { component?: string } }>> {
    const list = await get<{ items: any[] }>(`${corePath(ns, 'events')}?fieldSelector=${encodeURIComponent(`involvedObject.kind=Service,involvedObject.name=${name}`)}`);
    return list.items;
  }

  type CoreEvent = Awaited<ReturnType<typeof eventsOf>>[number];
  /**
   * The Service's events once `ready` says they are complete. The controller writes Events one at
   * a time, as client-go's recorder does, so they trail the status writes.
   */
  async function eventsWhen(ns: string, name: string, ready: (events: CoreEvent[]) => boolean, timeoutMs = 30_000): Promise<CoreEvent[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const events = await eventsOf(ns, name);
      if (ready(events) || Date.now() > deadline) return events;
      await tick(200);
    }
  }

  before(async () => {
    cluster = await startTestCluster({ namespaces: [NS, 'team-a', 'team-b'] });
    api = new KubeClient(cluster.kubeConfig, { maxSockets: 16 });
    dir = mkdtempSync(join(tmpdir(), 'metallb-ts-controller-test-'));

    const pools = [
      { name: 'pool-a', spec: { addresses: ['192.0.2.0/26'], serviceAllocation: { priority: 10, namespaces: ['team-a'] } } },
      { name: 'pool-gold', spec: { addresses: ['198.51.100.0/27'], serviceAllocation: { priority: 5, serviceSelectors: [{ matchLabels: { tier: 'gold' } }] } } },
      { name: 'pool-general', spec: { addresses: ['203.0.113.0/24'] } },
      { name: 'pool-small', spec: { addresses: ['192.0.2.128/30'], autoAssign: false } },
    ];
    for (const p of pools) {
      await post(metallbPath(NS, 'ipaddresspools'), { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: p.name }, spec: p.spec });
    }
    const services: Service[] = [];
    const mk = (ns: string, name: string, opts: { labels?: Record<string, string>; annotations?: Record<string, string>; port?: number; lbIP?: string; lbClass?: string } = {}): void => {
      services.push({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace: ns, ...(opts.labels ? { labels: opts.labels } : {}), ...(opts.annotations ? { annotations: opts.annotations } : {}) },
        spec: {
          type: 'LoadBalancer',
          ports: [{ port: opts.port ?? 80, protocol: 'TCP' }],
          selector: { app: name },
          ...(opts.lbIP ? { loadBalancerIP: opts.lbIP } : {}),
          ...(opts.lbClass ? { loadBalancerClass: opts.lbClass } : {}),
        },
      } as Service);
    };
    for (let i = 0; i < 40; i++) mk('team-a', `a-${String(i).padStart(2, '0')}`, i % 4 === 0 ? { labels: { tier: 'gold' } } : {});
    for (let i = 0; i < 40; i++) mk('team-b', `b-${String(i).padStart(2, '0')}`, i % 3 === 0 ? { labels: { tier: 'gold' } } : {});
    for (let i = 0; i < 10; i++) {
      // pairs sharing one address (different ports), one pair per key
      mk('team-b', `shared-${i}-http`, { annotations: { 'metallb.io/allow-shared-ip': `key-${i}` }, port: 80 });
      mk('team-b', `shared-${i}-https`, { annotations: { 'metallb.io/allow-shared-ip': `key-${i}` }, port: 443 });
    }
    for (let i = 0; i < 6; i++) mk('default', `small-${i}`, { annotations: { 'metallb.io/address-pool': 'pool-small' } });
    mk('default', 'fixed-ip', { lbIP: '203.0.113.200' });
    mk('default', 'fixed-annotation', { annotations: { 'metallb.io/loadBalancerIPs': '203.0.113.201' } });
    mk('default', 'other-class', { lbClass: 'example.com/not-metallb' });
    while (services.length < 200) mk('default', `web-${String(services.length).padStart(3, '0')}`);
    for (let i = 0; i < services.length; i += 20) {
      await Promise.all(services.slice(i, i + 20).map((s) => post(corePath(s.metadata!.namespace!, 'services'), s)));
    }
  });

  after(async () => {
    await controller?.stop();
    api?.close();
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let predicted: DryRun;

  test('200 Services get exactly what allocate --dry-run predicted from a snapshot', async () => {
    predicted = dryRun(await snapshot('before'));
    assert.equal(predicted.services.length, 199, 'every LoadBalancer Service but the other-class one');
    const pending = predicted.services.filter((s) => s.ips.length === 0).map((s) => s.service);
    assert.deepEqual(pending, ['default/small-4', 'default/small-5'], 'pool-small (4 addresses) is exhausted');
    const byPool = (p: string) => predicted.services.filter((s) => s.pool === p).length;
    assert.ok(byPool('pool-a') > 0 && byPool('pool-gold') > 0 && byPool('pool-general') > 0 && byPool('pool-small') === 4);
    const shared = predicted.services.filter((s) => s.service.startsWith('team-b/shared-0-'));
    assert.deepEqual(shared[0]!.ips, shared[1]!.ips, 'sharing Services share one address');

    controller = await startController();
    const now = await waitConverged(predicted, controller);
    assert.deepEqual(now.get('default/other-class')!.ips, [], 'another loadBalancerClass is left alone');
    await waitReady(controller);

    // events: IPAllocated on an allocated Service, AllocationFailed (Warning) on a pending one
    const ok = await eventsWhen('default', 'fixed-ip', (e) => e.length > 0);
    assert.deepEqual(
      ok.map((e) => [e.type, e.reason, e.message, e.source.component]),
      [['Normal', 'IPAllocated', 'Assigned IP ["203.0.113.200"]', 'metallb-controller']],
    );
    const failed = await eventsWhen('default', 'small-5', (e) => e.some((x) => x.reason === 'AllocationFailed'));
    assert.ok(
      failed.some((e) => e.type === 'Warning' && e.reason === 'AllocationFailed' && /Failed to allocate IP for "default\/small-5"/.test(e.message)),
      JSON.stringify(failed),
    );
    // The bulk start: one Event per Service and distinct message, repeats counted in it (client-go's
    // correlator), never two Events with count 1 for the same thing; MetalLB's recorder fields.
    let all: any[] = [];
    for (let prev = -1, until = Date.now() + 30_000; Date.now() < until; await tick(500)) {
      all = (await get<{ items: any[] }>(`/api/v1/events?fieldSelector=${encodeURIComponent('involvedObject.kind=Service')}`)).items;
      const total = all.reduce((n, e) => n + e.count, 0);
      if (total === prev) break;
      prev = total;
    }
    const ids = all.map((e) => JSON.stringify([e.involvedObject.namespace, e.involvedObject.name, e.type, e.reason, e.message]));
    assert.deepEqual(
      ids.filter((id, i) => ids.indexOf(id) !== i),
      [],
      'identical events are one Event with a count',
    );
    assert.ok(all.length >= 199, `${all.length} Events`);
    for (const e of all) assert.deepEqual([e.source, e.reportingComponent, e.reportingInstance ?? ''], [{ component: 'metallb-controller' }, 'metallb-controller', '']);

    // pool status counters and /metrics follow the dry run's pool figures
    await tick(500);
    const text = await metrics(controller);
    for (const p of predicted.pools) {
      assert.deepEqual(
        await poolStatus(p.name),
        {
          assignedIPv4: p.assignedIPv4,
          assignedIPv6: p.assignedIPv6,
          availableIPv4: p.availableIPv4,
          availableIPv6: p.availableIPv6,
        },
        `status of ${p.name}`,
      );
      assert.equal(metricValue(text, 'metallb_allocator_addresses_in_use_total', `pool="${p.name}"`), p.inUse, `in use ${p.name}`);
      assert.equal(metricValue(text, 'metallb_allocator_addresses_total', `pool="${p.name}"`), p.size, `size ${p.name}`);
    }
    assert.equal(metricValue(text, 'metallb_k8s_client_config_loaded_bool'), 1);
    assert.equal(metricValue(text, 'metallb_k8s_client_config_stale_bool'), 0);
    assert.equal((await fetch(`http://127.0.0.1:${controller.port}/healthz`)).status, 200);
    assert.ok(
      controller.log.some((l) => {
        const j = JSON.parse(l);
        return j.event === 'ipAllocated' && j.service === 'default/fixed-ip' && j.level === 'info' && j.caller && j.ts;
      }),
    );
  });

  test('a restart changes no address and writes no Service', async () => {
    const before = await allocations();
    assert.equal(await controller!.stop(), 0, 'SIGTERM: graceful exit 0');
    controller = await startController();
    await waitReady(controller);
    await tick(1000);
    const afterRestart = await allocations();
    for (const [key, a] of before) {
      assert.deepEqual(afterRestart.get(key), a, `${key} unchanged (addresses, pool and resourceVersion)`);
    }
  });

  test('deleting a Service lets a pending one take the freed address', async () => {
    const victim = 'default/small-1';
    const freed = (await allocations()).get(victim)!.ips;
    assert.equal(freed.length, 1);
    const expected = dryRun(await snapshot('delete', (items) => items.filter((o) => !(o.kind === 'Service' && `${o.metadata!.namespace}/${o.metadata!.name}` === victim))));
    const taker = expected.services.find((s) => JSON.stringify(s.ips) === JSON.stringify(freed));
    assert.ok(taker && /^default\/small-[45]$/.test(taker.service), `the dry run gives ${freed} to a pending Service: ${JSON.stringify(taker)}`);
    await api.request({ method: 'DELETE', path: corePath('default', 'services', 'small-1') });
    await waitConverged(expected, controller!);
    await tick(500);
    assert.equal((await poolStatus('pool-small')).assignedIPv4, 4);
    const events = await eventsWhen('default', taker.service.split('/')[1]!, (e) => e.some((x) => x.reason === 'IPAllocated'));
    const failedSeries = events.find((e) => e.reason === 'AllocationFailed');
    assert.ok(failedSeries && failedSeries.count >= 2, `repeated AllocationFailed events are counted in one Event: ${JSON.stringify(events.map((e) => [e.reason, e.count]))}`);
    assert.ok(events.some((e) => e.reason === 'IPAllocated' && e.message === `Assigned IP ${JSON.stringify(freed)}`));
  });

  test('changing a pool re-homes only the Services it must', async () => {
    const before = await allocations();
    const newAddresses = ['192.0.2.0/28', '192.0.2.32/27'];
    const expected = dryRun(
      await snapshot('pool-change', (items) => items.map((o) => (o.kind === 'IPAddressPool' && o.metadata!.name === 'pool-a' ? { ...o, spec: { ...(o as any).spec, addresses: newAddresses } } : o))),
    );
    const moved = expected.services.filter((s) => JSON.stringify(s.ips) !== JSON.stringify(before.get(s.service)!.ips)).map((s) => s.service);
    assert.ok(moved.length > 0, 'some pool-a addresses fall outside the new ranges');
    for (const key of moved) {
      const old = before.get(key)!.ips[0]!;
      assert.ok(/^192\.0\.2\.(1[6-9]|2\d|3[01])$/.test(old), `${key} moves only because ${old} left the pool`);
    }

    const pool = await get<any>(metallbPath(NS, 'ipaddresspools', 'pool-a'));
    await api.request({ method: 'PUT', path: metallbPath(NS, 'ipaddresspools', 'pool-a'), body: { ...pool, spec: { ...pool.spec, addresses: newAddresses } } });
    const now = await waitConverged(expected, controller!);
    for (const [key, a] of before) {
      if (!moved.includes(key)) assert.equal(now.get(key)!.rv, a.rv, `${key} was not written`);
    }
    const events = await eventsWhen(moved[0]!.split('/')[0]!, moved[0]!.split('/')[1]!, (e) => e.some((x) => x.reason === 'ClearAssignment'));
    assert.ok(
      events.some((e) => e.reason === 'ClearAssignment' && e.type === 'Normal'),
      JSON.stringify(events.map((e) => e.reason)),
    );
    await tick(500);
    const st = await poolStatus('pool-a');
    const pa = expected.pools.find((p) => p.name === 'pool-a')!;
    assert.deepEqual(st, { assignedIPv4: pa.assignedIPv4, assignedIPv6: 0, availableIPv4: pa.availableIPv4, availableIPv6: 0 });
    assert.equal(pa.size, 48);
    assert.equal(metricValue(await metrics(controller!), 'metallb_allocator_addresses_total', 'pool="pool-a"'), 48);
  });
});
