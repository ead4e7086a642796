// metallb-ts in BGP mode on the BGP test bed (setup/frr.ts): the real controller and speaker
// processes against the test kube-apiserver, MetalLB's CRs written through the API, and a clock
// for "a Service got its address → the route is at the router". Shared by
// test/integration/bgp-e2e.test.ts and bench/bgp.bench.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { KubeClient } from '../../../src/kube/client.ts';
import type { KubeObject } from '../../../src/core/kube.ts';
import { REPO_ROOT, type TestCluster } from './cluster.ts';
import { spawnSpeaker, type SpeakerProc } from './speaker.ts';
import { sleep } from './wait.ts';

const BIN = join(REPO_ROOT, 'bin/metallb-ts');

/** The apiserver flag that makes the test cluster dual-stack (RequireDualStack Services). */
export const DUAL_STACK_APISERVER_ARGS = ['--service-cluster-ip-range=10.96.0.0/16,fd00:10:96::/108'];

/** A running `metallb-ts controller`: its log lines and a stop(). */
export interface ControllerProc {
  proc: ChildProcess;
  lines: string[];
  stop(): Promise<number | null>;
}

/** Starts `metallb-ts controller --namespace NS` against the cluster's admin kubeconfig, metrics on a free loopback port. */
export function spawnController(cluster: TestCluster, namespace: string): ControllerProc {
  const proc = spawn(BIN, ['controller', '--kubeconfig', cluster.kubeconfigPath, '--namespace', namespace, '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, KUBECONFIG: '', METALLB_NAMESPACE: '' },
  });
  const lines: string[] = [];
  let buf = '';
  const take = (d: Buffer): void => {
    buf += d.toString('utf8');
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  };
  proc.stdout!.on('data', take);
  proc.stderr!.on('data', take);
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  return {
    proc,
    lines,
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

/** Starts the speaker of `node` in MetalLB namespace `namespace`, writing to frr-k8s's `frrk8sNamespace`. */
export function spawnBGPSpeaker(cluster: TestCluster, node: string, namespace: string, frrk8sNamespace: string, extra: string[] = []): SpeakerProc {
  return spawnSpeaker(cluster.kubeconfigPath, node, ['--namespace', namespace, '--frrk8s-namespace', frrk8sNamespace, ...extra]);
}

/** Stops a speaker (SIGTERM, SIGKILL after 15 s). */
export async function stopSpeaker(s: SpeakerProc): Promise<void> {
  if (s.proc.exitCode !== null) return;
  s.proc.kill('SIGTERM');
  const t = setTimeout(() => s.proc.kill('SIGKILL'), 15_000);
  await s.exit;
  clearTimeout(t);
}

const PLURALS: Record<string, [string, string]> = {
  Namespace: ['/api/v1', 'namespaces'],
  Service: ['/api/v1', 'services'],
  Secret: ['/api/v1', 'secrets'],
  ConfigMap: ['/api/v1', 'configmaps'],
  Node: ['/api/v1', 'nodes'],
  EndpointSlice: ['/apis/discovery.k8s.io/v1', 'endpointslices'],
  Event: ['/api/v1', 'events'],
  IPAddressPool: ['/apis/metallb.io/v1beta1', 'ipaddresspools'],
  BGPAdvertisement: ['/apis/metallb.io/v1beta1', 'bgpadvertisements'],
  BGPPeer: ['/apis/metallb.io/v1beta2', 'bgppeers'],
  Community: ['/apis/metallb.io/v1beta1', 'communities'],
  BFDProfile: ['/apis/metallb.io/v1beta1', 'bfdprofiles'],
  L2Advertisement: ['/apis/metallb.io/v1beta1', 'l2advertisements'],
  ServiceBGPStatus: ['/apis/metallb.io/v1beta1', 'servicebgpstatuses'],
  ConfigurationState: ['/apis/metallb.io/v1beta1', 'configurationstates'],
  FRRConfiguration: ['/apis/frrk8s.metallb.io/v1beta1', 'frrconfigurations'],
};

/** `/api…/namespaces/NS/plural[/name]` for a kind this file knows. */
export function pathOf(kind: string, namespace: string | undefined, name?: string): string {
  const [base, plural] =
    PLURALS[kind]
    ?? (() => {
      throw new Error(`unknown kind ${kind}`);
    })();
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
}

/** Thin CRUD over the test cluster's admin credentials (KubeClient). */
export class TestAPI {
  readonly api: KubeClient;
  constructor(cluster: TestCluster) {
    this.api = new KubeClient(cluster.kubeConfig, { timeoutMs: 15_000 });
  }
  async create<T extends KubeObject>(obj: T): Promise<T> {
    return this.api.request<T>({ method: 'POST', path: pathOf(obj.kind!, obj.metadata?.namespace), body: obj });
  }
  async get<T extends KubeObject>(kind: string, namespace: string | undefined, name: string): Promise<T | null> {
    try {
      return await this.api.request<T>({ path: pathOf(kind, namespace, name) });
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return null;
      throw err;
    }
  }
  async list<T extends KubeObject>(kind: string, namespace: string | undefined, query: Record<string, string> = {}): Promise<T[]> {
    return (await this.api.request<{ items: T[] }>({ path: pathOf(kind, namespace), query })).items;
  }
  async patch(kind: string, namespace: string | undefined, name: string, body: unknown, subresource = ''): Promise<void> {
    await this.api.request({ method: 'PATCH', path: `${pathOf(kind, namespace, name)}${subresource ? `/${subresource}` : ''}`, body });
  }
  async delete(kind: string, namespace: string | undefined, name: string): Promise<void> {
    try {
      await this.api.request({ method: 'DELETE', path: pathOf(kind, namespace, name) });
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) throw err;
    }
  }
}

/** Polls until `probe` returns a value (not undefined/null/false), every 200 ms, or throws after `ms` with `detail()`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined | null | false> | T | undefined | null | false, detail: () => string = () => '', ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${detail()}`);
    await sleep(200);
  }
}

/** Seconds since `t0` (ms), one decimal. */
export function secondsSince(t0: number): string {
  return ((Date.now() - t0) / 1000).toFixed(1);
}

/** A dual-stack LoadBalancer Service and its EndpointSlice with one ready endpoint on `node`. */
export function dualStackService(name: string, namespace: string, node: string, etp: 'Local' | 'Cluster'): KubeObject[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace },
      spec: { type: 'LoadBalancer', ipFamilyPolicy: 'RequireDualStack', ipFamilies: ['IPv4', 'IPv6'], externalTrafficPolicy: etp, ports: [{ port: 80, protocol: 'TCP' }] },
    },
    endpointSlice(name, namespace, node),
  ];
}

/** The EndpointSlice `<svc>-ep` with one ready endpoint on `node`. */
export function endpointSlice(service: string, namespace: string, node: string): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${service}-ep`, namespace, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.244.1.10'], nodeName: node, conditions: { ready: true } }],
    ports: [{ port: 8080, protocol: 'TCP' }],
  };
}
