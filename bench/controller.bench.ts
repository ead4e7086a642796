/**
 * `metallb-ts controller` convergence after a restart, against the test API server
 * (test/integration/setup: real kube-apiserver + etcd on loopback): 5,000 LoadBalancer Services,
 * 4,500 already holding an address in their status (as a controller left them) and 500 new ones.
 * Measures, from the controller's start: caches synced, ready, and the first clean full pass
 * (every Service converged: the 500 allocated and annotated, the 4,500 kept without a write); then
 * a second restart with everything converged. Prints figures; asserts nothing but convergence.
 * Needs the binaries of test/integration/setup/build-apiserver.sh (fails without them).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { corePath, metallbPath } from '../src/controller/api.ts';
import { KubeClient } from '../src/kube/client.ts';
import type { Service } from '../src/core/kube.ts';
import { REPO_ROOT, startTestCluster } from '../test/integration/setup/cluster.ts';

const SERVICES = 5000;
const WITH_IPS = 4500;
const NS = 'metallb-system';
const BIN = join(REPO_ROOT, 'bin/metallb-ts');

const ms = (t0: number): string => `${(performance.now() - t0).toFixed(0)} ms`;

async function pool<T>(items: readonly T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

function ipOf(i: number): string {
  return `10.100.${Math.floor(i / 256)}.${i % 256}`;
}

const cluster = await startTestCluster({ namespaces: [NS, 'bench'] });
const api = new KubeClient(cluster.kubeConfig, { maxSockets: 32 });
try {
  await api.request({
    method: 'POST',
    path: metallbPath(NS, 'ipaddresspools'),
    body: {
      apiVersion: 'metallb.io/v1beta1',
      kind: 'IPAddressPool',
      metadata: { name: 'bench' },
      spec: { addresses: ['10.100.0.0/16'] },
    },
  });
  const t0 = performance.now();
  await pool([...Array(SERVICES).keys()], 32, async (i) => {
    const name = `svc-${String(i).padStart(4, '0')}`;
    const held = i < WITH_IPS;
    const created = await api.request<Service>({
      method: 'POST',
      path: corePath('bench', 'services'),
      body: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, ...(held ? { annotations: { 'metallb.io/ip-allocated-from-pool': 'bench' } } : {}) },
        spec: { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, ports: [{ port: 80, protocol: 'TCP' }], selector: { app: name } },
      },
    });
    if (held) {
      await api.request({ method: 'PUT', path: `${corePath('bench', 'services', name)}/status`, body: { ...created, status: { loadBalancer: { ingress: [{ ip: ipOf(i) }] } } } });
    }
  });
  console.log(`setup: ${SERVICES} services (${WITH_IPS} with a status address) created in ${ms(t0)}`);

  const run = async (label: string): Promise<void> => {
    const start = performance.now();
    const proc = spawn(BIN, ['controller', '--kubeconfig', cluster.kubeconfigPath, '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KUBECONFIG: '' },
    });
    let err = ''; // the JSON log (stdout, as MetalLB) and anything on stderr
    proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    // the metrics port (--metrics-port 0) is in the start-up log line
    const port = await new Promise<number>((resolve, reject) => {
      const tryRead = setInterval(() => {
        const m = /"address":"127\.0\.0\.1:(\d+)"/.exec(err);
        if (m) {
          clearInterval(tryRead);
          resolve(Number(m[1]));
        }
        if (proc.exitCode !== null) {
          clearInterval(tryRead);
          reject(new Error(`controller exited: ${err}`));
        }
      }, 5);
    });
    let ready = 0;
    let passDone = 0;
    for (;;) {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`)
        .then((x) => x.status)
        .catch(() => 0);
      if (r === 200 && !ready) ready = performance.now() - start;
      if (r === 200) {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const m = /^controller_runtime_reconcile_total\{controller="service",result="success"\} (\d+)/m.exec(text);
        if (m && Number(m[1]) >= 1) {
          passDone = performance.now() - start;
          break;
        }
      }
      if (performance.now() - start > 300_000) throw new Error(`no clean pass within 300 s:\n${err.slice(-2000)}`);
      await new Promise((r2) => setTimeout(r2, 20));
    }
    const list = await api.request<{ items: Service[] }>({ method: 'GET', path: corePath('bench', 'services') });
    const converged = list.items.filter((s) => (s.status?.loadBalancer?.ingress ?? []).length === 1 && s.metadata?.annotations?.['metallb.io/ip-allocated-from-pool'] === 'bench').length;
    const moved = list.items.filter((s) => {
      const i = Number(s.metadata!.name!.slice(4));
      return i < WITH_IPS && s.status?.loadBalancer?.ingress?.[0]?.ip !== ipOf(i);
    }).length;
    proc.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
    console.log(`${label}: ready ${ready.toFixed(0)} ms, first clean full pass ${passDone.toFixed(0)} ms; ${converged}/${SERVICES} converged, ${moved} kept addresses moved; exit ${code}`);
    if (converged !== SERVICES || moved !== 0) throw new Error(`${label}: not converged (${converged}/${SERVICES}, moved ${moved})`);
  };

  await run(`restart with ${SERVICES - WITH_IPS} new services`);
  await run('restart with everything converged');
} finally {
  api.close();
  await cluster.stop();
}
