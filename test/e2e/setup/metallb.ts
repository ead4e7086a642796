// MetalLB v0.16.1's own controller and speaker (built by test/setup.d/55-metallb-binaries.sh) and
// metallb-ts's, as processes against the test kube-apiserver (test/integration/setup/cluster.ts),
// for the tests that run them beside and instead of each other (test/e2e/metallb-*.test.ts).
//
// What MetalLB's binaries need from the API server, which no kubelet provides here:
// - their own Pod (`--pod-name`): k8s.New gets it at start-up (owner of the ConfigurationState,
//   ServiceL2Status objects) and fails without it; `createPod` makes one, Running with a pod IP
//   (the speakers' memberlist peers are the pods matching `--ml-labels`, by status.podIP);
// - the ConfigurationState CRD and the others of test/reference/crds (cluster.ts installs them);
// - KUBECONFIG (controller-runtime's GetConfigOrDie), `--namespace` (no service account files).
// Their webhooks are off (`--webhook-mode disabled`: no certificate rotation, no 9443). Their
// metrics (HTTPS, `0.0.0.0:--port`) and health (`:--health-probe-port` for the controller,
// 127.0.0.1 for the speaker) addresses are not configurable beyond the port: the controller gets
// port 0 for both (a free port each), a speaker runs in its own network namespace.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT, type TestCluster } from '../../integration/setup/cluster.ts';
import { onProcessExit, sleep } from '../../integration/setup/wait.ts';
import type { KubeClient } from '../../../src/kube/client.ts';
import { corePath, metallbPath } from '../../../src/controller/api.ts';
import type { KubeObject, Service } from '../../../src/core/kube.ts';

export const NS = 'metallb-system';
export const METALLB_VERSION = 'v0.16.1';
/** MetalLB's binaries: 55-metallb-binaries.sh links them here; `METALLB_TS_METALLB_BIN` overrides. */
export const METALLB_BIN_DIR: string = process.env.METALLB_TS_METALLB_BIN ?? join(REPO_ROOT, '.cache/metallb-bin');
export const TS_BIN: string = join(REPO_ROOT, 'bin/metallb-ts');
/** The labels of MetalLB's speaker pods (its manifests), which every speaker here joins by. */
export const SPEAKER_LABELS = { app: 'metallb', component: 'speaker' } as const;
export const SPEAKER_SELECTOR = 'app=metallb,component=speaker';

export type Kind = 'metallb' | 'metallb-ts';

/** Why MetalLB's binaries cannot run here, or null. */
export function metallbBinariesMissing(): string | null {
  for (const b of ['controller', 'speaker']) {
    if (!existsSync(join(METALLB_BIN_DIR, b))) return `MetalLB ${METALLB_VERSION}'s ${b} is not built (${join(METALLB_BIN_DIR, b)}): run bash test/setup.d/55-metallb-binaries.sh (or npm run test:e2e)`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// processes

const live = new Set<ChildProcess>();
function killLive(): void {
  for (const p of live) {
    if (p.exitCode === null && p.signalCode === null) {
      try {
        p.kill('SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}

/** A controller or speaker process of either kind, its output lines kept. */
export class Component {
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: Array<() => void> = [];
  readonly kind: Kind;
  readonly role: 'controller' | 'speaker';
  readonly name: string;
  readonly proc: ChildProcess;

  constructor(kind: Kind, role: 'controller' | 'speaker', name: string, proc: ChildProcess) {
    this.kind = kind;
    this.role = role;
    this.name = name;
    this.proc = proc;
    live.add(proc);
    onProcessExit(killLive);
    const take = (l: string): void => {
      this.lines.push(l);
      if (this.lines.length > 20_000) this.lines.splice(0, 5_000);
      for (const w of this.waiters.splice(0)) w();
    };
    createInterface({ input: proc.stdout! }).on('line', take);
    createInterface({ input: proc.stderr! }).on('line', take);
    this.exited = new Promise((r) =>
      proc.once('exit', (code, signal) => {
        live.delete(proc);
        r({ code, signal });
        for (const w of this.waiters.splice(0)) w();
      }),
    );
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Waits for an output line matching `re`, searching from line `from`; fails on exit or after `ms`. */
  async waitLine(re: RegExp, ms = 30_000, from = 0): Promise<string> {
    const deadline = Date.now() + ms;
    for (let i = from; ; ) {
      for (; i < this.lines.length; i++) if (re.test(this.lines[i]!)) return this.lines[i]!;
      if (!this.running) throw new Error(`${this.label} exited before printing ${re}:\n${this.tail()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.label}: no line matching ${re} in ${ms} ms:\n${this.tail()}`);
      await new Promise<void>((res) => {
        const t = setTimeout(res, left);
        this.waiters.push(() => {
          clearTimeout(t);
          res();
        });
      });
    }
  }

  get label(): string {
    return `${this.kind} ${this.role}${this.role === 'speaker' ? ` on ${this.name}` : ''}`;
  }

  tail(n = 25): string {
    return `--- ${this.label} (pid ${this.proc.pid})\n${this.lines.slice(-n).join('\n')}`;
  }

  /** SIGTERM (graceful; SIGKILL after `graceMs`) or SIGKILL; resolves once the process is gone. */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM', graceMs = 15_000): Promise<void> {
    if (this.running) {
      this.proc.kill(signal);
      const t = signal === 'SIGTERM' ? setTimeout(() => this.proc.kill('SIGKILL'), graceMs) : undefined;
      await this.exited;
      clearTimeout(t);
    }
  }
}

function launch(kind: Kind, role: 'controller' | 'speaker', name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv, netns?: string): Component {
  const full = netns ? (['ip', ['netns', 'exec', netns, cmd, ...args]] as const) : ([cmd, args] as const);
  const proc = spawn(full[0], [...full[1]], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // only what the components read: no METALLB_* of the caller leaks in
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE, ...env },
  });
  return new Component(kind, role, name, proc);
}

export interface ControllerOptions {
  /** the controller's Pod in metallb-system (created by the caller: `createPod`) */
  podName: string;
  logLevel?: string;
  extraArgs?: string[];
}

/** MetalLB's controller: webhooks off, metrics and health on free ports. */
export function startMetallbController(cluster: TestCluster, o: ControllerOptions): Component {
  return launch(
    'metallb',
    'controller',
    'controller',
    join(METALLB_BIN_DIR, 'controller'),
    [`--namespace=${NS}`, `--pod-name=${o.podName}`, '--webhook-mode=disabled', '--port=0', '--health-probe-port=0', `--log-level=${o.logLevel ?? 'info'}`, ...(o.extraArgs ?? [])],
    { KUBECONFIG: cluster.kubeconfigPath },
  );
}

/** `metallb-ts controller`: webhooks off (its default), metrics on a free port of 127.0.0.1. */
export function startTsController(cluster: TestCluster, o: ControllerOptions): Component {
  return launch(
    'metallb-ts',
    'controller',
    'controller',
    TS_BIN,
    [
      'controller',
      `--kubeconfig=${cluster.kubeconfigPath}`,
      `--namespace=${NS}`,
      `--pod-name=${o.podName}`,
      '--webhook-mode=disabled',
      '--metrics-bind-address=127.0.0.1',
      '--metrics-port=0',
      `--log-level=${o.logLevel ?? 'info'}`,
      ...(o.extraArgs ?? []),
    ],
    {},
  );
}

export function startController(kind: Kind, cluster: TestCluster, o: ControllerOptions): Component {
  return kind === 'metallb' ? startMetallbController(cluster, o) : startTsController(cluster, o);
}

/**
 * The line each controller prints once it has gone through every Service after loading its
 * configuration (MetalLB: the end of ServiceReconciler's reprocessAll; metallb-ts: its equivalent).
 */
export const REPROCESSED: Record<Kind, RegExp> = {
  metallb: /"end reconcile":"metallbreload\/reload"/,
  'metallb-ts': /"event":"reprocessAll done"/,
};

/**
 * Creates the controller's Pod (`controller-<kind>-<n>`), starts the controller with `extraArgs`
 * and waits until it has processed every Service once (`REPROCESSED`).
 */
export async function runController(kind: Kind, cluster: TestCluster, api: KubeClient, podName: string, extraArgs: string[] = [], ms = 60_000): Promise<Component> {
  await createPod(api, { name: podName, labels: { app: 'metallb', component: 'controller' }, podIP: '10.244.0.5', image: kind === 'metallb' ? 'quay.io/metallb/controller:v0.16.1' : 'metallb-ts:0.1.0' });
  const c = startController(kind, cluster, { podName, extraArgs });
  await c.waitLine(REPROCESSED[kind], ms);
  return c;
}

export interface SpeakerOptions {
  node: string;
  podName: string;
  /** its network namespace (the speaker answers ARP on its interfaces) */
  netns: string;
  /** memberlist bind address (the node's IP) and labels; none: memberlist off */
  ml?: { bindAddr: string; labels: string; secretDir?: string; port?: number };
  logLevel?: string;
}

/**
 * A speaker of either kind in `o.netns`, with the admin kubeconfig (its server must be reachable in
 * that namespace: `ApiRelay`). MetalLB's: native BGP mode (MetalLB's metallb-native.yaml), metrics
 * 9120 (HTTPS, every address of the namespace), health on 127.0.0.1:17472. metallb-ts's: the raw L2
 * data plane (native addon, CAP_NET_RAW: root), metrics and health on 127.0.0.1.
 */
export function startSpeaker(kind: Kind, cluster: TestCluster, o: SpeakerOptions): Component {
  const ml = o.ml ? [`--ml-bindaddr=${o.ml.bindAddr}`, `--ml-labels=${o.ml.labels}`, `--ml-bindport=${o.ml.port ?? 7946}`, ...(o.ml.secretDir ? [`--ml-secret-key-path=${o.ml.secretDir}`] : [])] : [];
  const common = [`--node-name=${o.node}`, `--pod-name=${o.podName}`, `--namespace=${NS}`, `--log-level=${o.logLevel ?? 'debug'}`, ...ml];
  if (kind === 'metallb') {
    return launch(kind, 'speaker', o.node, join(METALLB_BIN_DIR, 'speaker'), [...common, '--port=9120', '--health-probe-port=17472'], { KUBECONFIG: cluster.kubeconfigPath }, o.netns);
  }
  return launch(
    kind,
    'speaker',
    o.node,
    TS_BIN,
    [
      'speaker',
      ...common,
      `--kubeconfig=${cluster.kubeconfigPath}`,
      '--l2-data-plane=raw',
      '--metrics-bind-address=127.0.0.1',
      '--port=9120',
      '--health-probe-port=17472',
      // MetalLB's fixed path: nothing there on a test machine; named so no file of the host is read
      '--ml-config-path=/nonexistent/metallb-memberlist/config.json',
    ],
    {},
    o.netns,
  );
}

/** Writes the memberlist key as the Secret's volume holds it: `DIR/secretkey`. */
export function writeSecretDir(dir: string, key: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'secretkey'), key, { mode: 0o600 });
  return dir;
}

// ---------------------------------------------------------------------------------------------
// API objects

export interface PodSpec {
  name: string;
  nodeName?: string;
  labels?: Record<string, string>;
  /** status.podIP (Running); default: no IP, still Running */
  podIP?: string;
  image?: string;
}

/** A Pod as the API shows a running one (no kubelet here: the status is written directly). */
export async function createPod(api: KubeClient, p: PodSpec): Promise<KubeObject> {
  const created = await api.request<KubeObject>({
    method: 'POST',
    path: corePath(NS, 'pods'),
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name, labels: p.labels ?? {} },
      spec: {
        ...(p.nodeName ? { nodeName: p.nodeName } : {}),
        automountServiceAccountToken: false,
        containers: [{ name: p.name.startsWith('controller') ? 'controller' : 'speaker', image: p.image ?? 'quay.io/metallb/speaker:v0.16.1' }],
      },
    },
  });
  const ips = p.podIP ? { podIP: p.podIP, podIPs: [{ ip: p.podIP }] } : {};
  await api.request({
    method: 'PATCH',
    path: `${corePath(NS, 'pods', p.name)}/status`,
    contentType: 'application/merge-patch+json',
    body: { status: { phase: 'Running', ...ips, conditions: [{ type: 'Ready', status: 'True' }] } },
  });
  return created;
}

export async function deletePod(api: KubeClient, name: string): Promise<void> {
  await api.request({ method: 'DELETE', path: `${corePath(NS, 'pods', name)}?gracePeriodSeconds=0` }).catch(() => {});
}

export async function listServices(api: KubeClient): Promise<Service[]> {
  return (await api.request<{ items: Service[] }>({ method: 'GET', path: '/api/v1/services' })).items.filter((s) => !(s.metadata?.namespace === 'default' && s.metadata?.name === 'kubernetes'));
}

export interface EventRec {
  ns: string;
  service: string;
  type: string;
  reason: string;
  message: string;
  count: number;
  component: string;
  rv: string;
}

/** Every Event about a Service, oldest first. */
export async function listServiceEvents(api: KubeClient): Promise<EventRec[]> {
  const items = (await api.request<{ items: any[] }>({ method: 'GET', path: '/api/v1/events' })).items;
  return items
    .filter((e) => e.involvedObject?.kind === 'Service')
    .map((e) => ({
      ns: e.involvedObject.namespace,
      service: e.involvedObject.name,
      type: e.type,
      reason: e.reason,
      message: e.message,
      count: e.count ?? 1,
      component: e.source?.component ?? e.reportingComponent ?? '',
      rv: e.metadata.resourceVersion,
    }))
    .sort((a, b) => Number(a.rv) - Number(b.rv));
}

export async function listPools(api: KubeClient): Promise<KubeObject[]> {
  return (await api.request<{ items: KubeObject[] }>({ method: 'GET', path: metallbPath(NS, 'ipaddresspools') })).items;
}

/**
 * A fingerprint of what controllers write: every Service (resourceVersion, annotations, status),
 * every Event about a Service (resourceVersion), every IPAddressPool (resourceVersion, status).
 */
export async function writtenState(api: KubeClient): Promise<string> {
  const [svcs, evs, pools] = await Promise.all([listServices(api), listServiceEvents(api), listPools(api)]);
  return JSON.stringify([
    svcs.map((s) => [s.metadata?.namespace, s.metadata?.name, s.metadata?.resourceVersion]),
    evs.map((e) => [e.rv, e.count]),
    pools.map((p) => [p.metadata?.name, p.metadata?.resourceVersion]),
  ]);
}

/**
 * Waits until what controllers write (`writtenState`) stays the same for `quietMs`, polled every
 * 250 ms; fails after `ms`. Returns the time it took until the last change.
 */
export async function settle(api: KubeClient, quietMs = 3000, ms = 90_000, detail: () => string = () => ''): Promise<number> {
  const t0 = Date.now();
  let last = await writtenState(api);
  let lastChange = Date.now();
  for (;;) {
    await sleep(250);
    const now = await writtenState(api);
    if (now !== last) {
      last = now;
      lastChange = Date.now();
      continue;
    }
    if (Date.now() - lastChange >= quietMs) return lastChange - t0;
    if (Date.now() - t0 > ms) throw new Error(`the cluster did not settle in ${ms} ms\n${detail()}`);
  }
}

// ---------------------------------------------------------------------------------------------
// the API server inside network namespaces

/**
 * Makes the test API server (127.0.0.1:PORT of this network namespace) reachable at the same
 * address inside other network namespaces, so components there use the cluster's kubeconfig as it
 * is (its certificate names 127.0.0.1): a relay process in each namespace listens on 127.0.0.1:PORT
 * and forwards every connection to a unix socket (unix sockets are not per network namespace),
 * where this process forwards it to the API server.
 */
export class ApiRelay {
  private server?: Server;
  private readonly relays: ChildProcess[] = [];
  private readonly sockets = new Set<Socket>();
  readonly port: number;
  private readonly sockPath: string;

  constructor(cluster: TestCluster, sockPath: string) {
    this.port = Number(new URL(cluster.server).port);
    this.sockPath = sockPath;
  }

  async start(): Promise<void> {
    this.server = createServer((down) => {
      const up = connect(this.port, '127.0.0.1');
      for (const s of [down, up]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
      }
      down.pipe(up).pipe(down);
      down.on('error', () => up.destroy());
      up.on('error', () => down.destroy());
      down.on('close', () => up.destroy());
      up.on('close', () => down.destroy());
    });
    await new Promise<void>((r, j) => {
      this.server!.once('error', j);
      this.server!.listen(this.sockPath, () => r());
    });
  }

  /** Starts the relay inside `netns`; resolves once it listens. */
  async into(netns: string): Promise<void> {
    const script = `const net = require('node:net');
      net.createServer((c) => { const u = net.connect(process.env.SOCK); c.pipe(u).pipe(c);
        c.on('error', () => u.destroy()); u.on('error', () => c.destroy()); c.on('close', () => u.destroy()); u.on('close', () => c.destroy()); })
        .listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));`;
    const p = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, SOCK: this.sockPath, PORT: String(this.port) } });
    live.add(p);
    onProcessExit(killLive);
    this.relays.push(p);
    let err = '';
    p.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
    });
    await new Promise<void>((resolve, reject) => {
      p.stdout!.once('data', () => resolve());
      p.once('exit', (code) => reject(new Error(`API relay in ${netns} exited ${code}: ${err}`)));
    });
  }

  async stop(): Promise<void> {
    for (const p of this.relays) {
      if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
      live.delete(p);
    }
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
