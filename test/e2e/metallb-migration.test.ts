// Migration between MetalLB v0.16.1's own controller and `metallb-ts controller`, against a real
// kube-apiserver (test/integration/setup/cluster.ts; dual-stack Service CIDRs): one controller
// assigns addresses to a realistic set of Services (test/e2e/setup/metallb-scenario.ts: a few
// dozen Services, pools with serviceAllocation, shared IPs, requested pools and addresses, dual
// stack, pending ones, a pool change), creates the memberlist Secret, and is stopped (SIGTERM); the
// other kind takes over; then the first kind again. Each takeover must change no Service (the
// objects, resourceVersions included), no IPAddressPool's spec or status (metallb-ts: not even the
// object; MetalLB's controller rewrites every pool status whenever it starts) and not the
// memberlist Secret; the Events a
// takeover records must be those the first kind records when it takes over the same state.
// Both directions: MetalLB first, and metallb-ts first.
//
// Needs MetalLB's binaries (test/setup.d/55-metallb-binaries.sh); no root.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestCluster, type TestCluster } from '../integration/setup/cluster.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { corePath } from '../../src/controller/api.ts';
import type { KubeObject, Service } from '../../src/core/kube.ts';
import { NS, type Component, type Kind, listPools, listServiceEvents, listServices, metallbBinariesMissing, runController, settle } from './setup/metallb.ts';
import { applyBase, serviceSteps } from './setup/metallb-scenario.ts';

const skip = metallbBinariesMissing() ?? false;
const other = (k: Kind): Kind => (k === 'metallb' ? 'metallb-ts' : 'metallb');
/** Both controllers create the memberlist Secret, owned by the Deployment `controller`, as in MetalLB's manifests. */
const ML_ARGS = ['--ml-secret-name=memberlist', '--deployment=controller'];

interface Snapshot {
  services: Service[];
  pools: KubeObject[];
  secret: KubeObject;
  events: Awaited<ReturnType<typeof listServiceEvents>>;
}

async function snapshot(api: KubeClient): Promise<Snapshot> {
  const byKey = (a: KubeObject, b: KubeObject) => `${a.metadata?.namespace}/${a.metadata?.name}`.localeCompare(`${b.metadata?.namespace}/${b.metadata?.name}`);
  return {
    services: (await listServices(api)).sort(byKey),
    pools: (await listPools(api)).sort(byKey),
    secret: await api.request<KubeObject>({ method: 'GET', path: corePath(NS, 'secrets', 'memberlist') }),
    events: await listServiceEvents(api),
  };
}

const key = (s: KubeObject) => `${s.metadata?.namespace}/${s.metadata?.name}`;
const view = (s: Service) => ({ rv: s.metadata?.resourceVersion, annotations: s.metadata?.annotations ?? {}, ingress: s.status?.loadBalancer?.ingress ?? [] });

/**
 * Every Service and the Secret unchanged (whole objects, resourceVersions included), every pool's
 * spec and status unchanged; names what changed first. Returns the pools whose object changed
 * all the same: MetalLB's controller rewrites every pool's status when it starts (it counts from
 * zero while it reprocesses the Services: transient counts, the same values at the end), so
 * `poolObjects` is required of metallb-ts only.
 */
function assertUnchanged(before: Snapshot, after: Snapshot, who: string, poolObjects: boolean): string[] {
  assert.deepEqual(after.services.map(key), before.services.map(key), `${who}: the set of Services`);
  for (const [i, b] of before.services.entries()) {
    assert.deepEqual(view(after.services[i]!), view(b), `${who} changed Service ${key(b)}`);
    assert.deepEqual(after.services[i], b, `${who} changed Service ${key(b)} (the object)`);
  }
  assert.deepEqual(after.pools.map(key), before.pools.map(key), `${who}: the set of pools`);
  const rewritten: string[] = [];
  for (const [i, b] of before.pools.entries()) {
    const a = after.pools[i]!;
    assert.deepEqual([a.spec, a.status], [b.spec, b.status], `${who} changed IPAddressPool ${key(b)}`);
    if (poolObjects) assert.deepEqual(a, b, `${who} rewrote IPAddressPool ${key(b)}`);
    if (a.metadata?.resourceVersion !== b.metadata?.resourceVersion) rewritten.push(b.metadata!.name!);
  }
  assert.deepEqual(after.secret, before.secret, `${who} changed the memberlist Secret`);
  return rewritten;
}

/** The Events recorded after `before`, as (Service, type, reason, message), sorted. */
function newEvents(before: Snapshot, after: Snapshot): string[] {
  const old = new Map(before.events.map((e) => [e.rv, e.count]));
  return after.events
    .filter((e) => old.get(e.rv) === undefined || old.get(e.rv) !== e.count)
    .map((e) => `${e.ns}/${e.service} ${e.type} ${e.reason}: ${e.message}`)
    .sort();
}

describe("migration between MetalLB v0.16.1's controller and metallb-ts's", { skip }, () => {
  const clusters: TestCluster[] = [];
  const running: Component[] = [];
  after(async () => {
    for (const c of running) await c.stop('SIGKILL');
    for (const c of clusters) await c.stop();
  });

  for (const first of ['metallb', 'metallb-ts'] as const) {
    test(`${first} assigns, ${other(first)} takes over, ${first} takes over again: no Service, pool or Secret changes`, { timeout: 600_000 }, async (t) => {
      const t0 = Date.now();
      const cluster = await startTestCluster({ namespaces: [NS], extraApiserverArgs: ['--service-cluster-ip-range=10.96.0.0/16,fd00:96::/108'] });
      clusters.push(cluster);
      const api = new KubeClient(cluster.kubeConfig, { maxSockets: 8 });
      const logs = () =>
        running
          .slice(-2)
          .map((c) => c.tail(30))
          .join('\n');
      try {
        await applyBase(api);
        // the Deployment MetalLB's manifests name `controller`: owner of the memberlist Secret (no
        // controller-manager runs here, the object only has to exist)
        await api.request({
          method: 'POST',
          path: `/apis/apps/v1/namespaces/${NS}/deployments`,
          body: {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'controller', labels: { app: 'metallb', component: 'controller' } },
            spec: {
              selector: { matchLabels: { app: 'metallb', component: 'controller' } },
              template: { metadata: { labels: { app: 'metallb', component: 'controller' } }, spec: { containers: [{ name: 'controller', image: 'quay.io/metallb/controller:v0.16.1' }] } },
            },
          },
        });

        // 1. the first controller assigns
        const c1 = await runController(first, cluster, api, `controller-${first}-1`, ML_ARGS);
        running.push(c1);
        const steps = serviceSteps();
        const poolChangeAt = steps.findIndex((s) => !s.service);
        for (const [i, s] of steps.entries()) {
          if (i === poolChangeAt) await settle(api, 2000, 120_000, logs); // the Services before it have their addresses
          await s.apply(api);
        }
        await settle(api, 3000, 120_000, logs);
        const s1 = await snapshot(api);
        const lb = s1.services.filter((s) => s.spec?.type === 'LoadBalancer' && !s.spec?.loadBalancerClass);
        const withIP = lb.filter((s) => (s.status?.loadBalancer?.ingress ?? []).length > 0);
        t.diagnostic(`${first}: ${withIP.length} of ${lb.length} LoadBalancer Services have addresses, ${s1.events.length} Events`);
        assert.ok(withIP.length >= 30, `the scenario gives most Services an address: ${withIP.length}\n${logs()}`);
        assert.ok((s1.secret as { data?: Record<string, string> }).data?.secretkey, 'the memberlist Secret was created');
        await c1.stop('SIGTERM');
        assert.deepEqual(await c1.exited, { code: 0, signal: null }, `${c1.label} exits 0 on SIGTERM\n${c1.tail()}`);

        // 2. the other kind takes over
        const c2 = await runController(other(first), cluster, api, `controller-${other(first)}-2`, ML_ARGS);
        running.push(c2);
        await settle(api, 4000, 120_000, logs);
        const s2 = await snapshot(api);
        const r2 = assertUnchanged(s1, s2, `${c2.label} taking over from ${first}`, other(first) === 'metallb-ts');
        if (r2.length) t.diagnostic(`${c2.label} rewrote the status of pools ${r2.join(', ')} (same values)`);
        const e2 = newEvents(s1, s2);
        await c2.stop('SIGTERM');
        assert.deepEqual(await c2.exited, { code: 0, signal: null }, `${c2.label} exits 0 on SIGTERM\n${c2.tail()}`);

        // 3. the first kind again: what it records taking over the same state
        const c3 = await runController(first, cluster, api, `controller-${first}-3`, ML_ARGS);
        running.push(c3);
        await settle(api, 4000, 120_000, logs);
        const s3 = await snapshot(api);
        const r3 = assertUnchanged(s2, s3, `${c3.label} taking over from ${other(first)}`, first === 'metallb-ts');
        if (r3.length) t.diagnostic(`${c3.label} rewrote the status of pools ${r3.join(', ')} (same values)`);
        const e3 = newEvents(s2, s3);
        await c3.stop('SIGTERM');
        t.diagnostic(`takeover Events: ${other(first)} ${e2.length}, ${first} ${e3.length}`);
        assert.deepEqual(e2, e3, `the Events ${other(first)} records taking over (actual) are those ${first} records taking over the same state (expected)`);
        t.diagnostic(`${first} → ${other(first)} → ${first}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      } finally {
        api.close();
      }
    });
  }
});
