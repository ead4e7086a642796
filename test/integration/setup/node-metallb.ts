// metallb-ts as users install it, on the real nodes of node-cluster.ts: the image (npm run image)
// imported into every node's containerd, MetalLB's CRDs, `kubectl apply -k deploy` unchanged, then
// a Layer 2 Service and what a client on the same segment sees. Shared by
// test/integration/e2e/real-node.test.ts (which asserts) and bench/real-node.bench.ts (which prints
// the failover times).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT, type NodeCluster, type RealNode } from './node-cluster.ts';
import { sleep } from './wait.ts';

export const METALLB_NS = 'metallb-system';
/** The name deploy/'s `image: metallb-ts:0.1.0` resolves to (containerd normalizes it so). */
export const IMAGE_NAME = 'docker.io/library/metallb-ts:0.1.0';

/**
 * The metallb-ts image as an OCI archive: `METALLB_TS_E2E_IMAGE` when set, else what `npm run
 * image` writes (it caches its layers; its archive path comes from its --json output).
 */
export function metallbImageArchive(log: (l: string) => void = () => {}): string {
  const given = process.env.METALLB_TS_E2E_IMAGE;
  if (given) {
    if (!existsSync(given)) throw new Error(`METALLB_TS_E2E_IMAGE=${given} does not exist`);
    return given;
  }
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  if (!pkg.scripts?.image) throw new Error('no `npm run image` in package.json, and METALLB_TS_E2E_IMAGE is not set: no metallb-ts image to run');
  const t0 = Date.now();
  const r = spawnSync('npm', ['run', '--silent', 'image', '--', '--json'], { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 900_000 });
  if (r.status !== 0) throw new Error(`npm run image failed (exit ${r.status ?? r.signal}): ${(r.stderr || r.stdout).trim().split('\n').slice(-5).join('\n')}`);
  const result = JSON.parse(r.stdout) as { archive: string; name: string };
  if (result.name !== IMAGE_NAME) throw new Error(`npm run image named the image ${result.name}, deploy/ runs ${IMAGE_NAME}`);
  log(`npm run image: ${result.archive} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return result.archive;
}

/**
 * MetalLB's CRDs (the repository's copy, test/reference/crds: deploy/crds names them by URL and
 * there is no network), then `kubectl apply -k deploy` as it is, then waits until the controller
 * Deployment and the speaker DaemonSet are rolled out (every pod Ready). Returns the ms each took.
 */
export async function installMetallb(c: NodeCluster, timeoutMs = 300_000): Promise<{ apply: number; ready: number }> {
  const t0 = Date.now();
  await c.kubectl(['apply', '--server-side', '-f', join(REPO_ROOT, 'test/reference/crds')], { timeoutMs: 60_000 });
  await c.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all'], { timeoutMs: 70_000 });
  await c.kubectl(['apply', '-k', join(REPO_ROOT, 'deploy')], { timeoutMs: 60_000 });
  const t1 = Date.now();
  const secs = `${Math.floor(timeoutMs / 1000)}s`;
  await c.kubectl(['-n', METALLB_NS, 'rollout', 'status', 'deployment/controller', `--timeout=${secs}`], { timeoutMs: timeoutMs + 10_000 });
  await c.kubectl(['-n', METALLB_NS, 'rollout', 'status', 'daemonset/speaker', `--timeout=${secs}`], { timeoutMs: timeoutMs + 10_000 });
  return { apply: t1 - t0, ready: Date.now() - t1 };
}

/** The pods of the metallb-system namespace, one line each (for failure messages). */
export async function podSummary(c: NodeCluster): Promise<string> {
  try {
    return await c.kubectl(['get', 'pods', '-A', '-o', 'wide'], { timeoutMs: 15_000 });
  } catch (e) {
    return `(kubectl get pods failed: ${(e as Error).message})`;
  }
}

/**
 * An IPAddressPool and L2Advertisement in metallb-system, a DaemonSet of pause pods (a ready
 * endpoint on every node, so that stopping one node leaves the Service an endpoint: MetalLB
 * announces a Cluster-policy Service only with one) and a LoadBalancer Service selecting them.
 * Resolves to the address the controller assigned.
 */
export async function createL2Service(c: NodeCluster, o: { namespace: string; name: string; pool: string; addresses: string }): Promise<string> {
  const manifest = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.namespace } },
    { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: o.pool, namespace: METALLB_NS }, spec: { addresses: [o.addresses] } },
    { apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name: o.pool, namespace: METALLB_NS }, spec: { ipAddressPools: [o.pool] } },
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: o.name, namespace: o.namespace },
      spec: {
        selector: { matchLabels: { app: o.name } },
        template: {
          metadata: { labels: { app: o.name } },
          spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10', ports: [{ containerPort: 8080 }] }] },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: o.name, namespace: o.namespace },
      spec: { type: 'LoadBalancer', selector: { app: o.name }, ports: [{ port: 80, targetPort: 8080 }] },
    },
  ];
  await c.kubectl(['apply', '-f', '-'], { input: manifest.map((m) => JSON.stringify(m)).join('\n'), timeoutMs: 60_000 });
  await c.kubectl(['-n', o.namespace, 'rollout', 'status', `daemonset/${o.name}`, '--timeout=180s'], { timeoutMs: 190_000 });
  return untilValue(`an address for ${o.namespace}/${o.name}`, 60_000, async () => {
    const s = await c.kubectlJson<any>(['-n', o.namespace, 'get', 'service', o.name]);
    return s.status?.loadBalancer?.ingress?.[0]?.ip as string | undefined;
  });
}

/** Polls `probe` (a throw counts as "not yet") until it returns a value; fails naming `what` and the last error. */
export async function untilValue<T>(what: string, ms: number, probe: () => Promise<T | undefined>, everyMs = 250): Promise<T> {
  const deadline = Date.now() + ms;
  let last = '';
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${last.slice(0, 600)})` : ''}`);
    await sleep(everyMs);
  }
}

/** The MACs answering ARP for `ip` on the client's segment (arping from the client namespace, up to `count` requests). */
export async function arpingMacs(c: NodeCluster, ip: string, count = 1, waitS = 2): Promise<string[]> {
  const r = await c.exec(c.netns.client, 'arping', ['-I', c.client.iface, '-c', String(count), '-w', String(waitS), ip], { timeoutMs: (waitS + 5) * 1000 });
  return [...new Set([...r.stdout.matchAll(/reply from \S+ \[([0-9A-Fa-f:]{17})\]/g)].map((m) => m[1]!.toLowerCase()))];
}

/** The client's neighbour entry for `ip`: its MAC, or null (none, or incomplete). */
export async function neighbourMac(c: NodeCluster, ip: string): Promise<string | null> {
  const r = await c.exec(c.netns.client, 'ip', ['neigh', 'show', ip, 'dev', c.client.iface]);
  return /lladdr ([0-9a-f:]{17})/.exec(r.stdout)?.[1] ?? null;
}

/**
 * Makes the client's kernel resolve `ip`, as any client talking to the Service would: one UDP
 * datagram (to the discard port; nothing answers it, no kube-proxy) leaves a neighbour entry once
 * the ARP exchange is done. Resolves to the entry's MAC, or null after 5 s.
 */
export async function touch(c: NodeCluster, ip: string): Promise<string | null> {
  const send = `const s = require('node:dgram').createSocket('udp4'); s.send('e2e', 9, ${JSON.stringify(ip)}, () => setTimeout(() => s.close(), 200));`;
  await c.exec(c.netns.client, process.execPath, ['-e', send], { timeoutMs: 10_000 });
  const deadline = Date.now() + 5_000;
  for (;;) {
    const mac = await neighbourMac(c, ip);
    if (mac || Date.now() > deadline) return mac;
    await sleep(100);
  }
}

/** Follows the client's neighbour table (`ip monitor neigh`, a stream): when an entry for an address got a MAC. */
export class NeighbourWatch {
  readonly events: { t: number; ip: string; mac: string; line: string }[] = [];
  private readonly proc: ChildProcess;
  private waiters: (() => void)[] = [];

  private constructor(c: NodeCluster) {
    this.proc = spawn('nsenter', [`--net=/run/netns/${c.netns.client}`, '--', 'ip', 'monitor', 'neigh'], { stdio: ['ignore', 'pipe', 'ignore'] });
    this.proc.unref();
    createInterface({ input: this.proc.stdout! }).on('line', (line) => {
      const m = /^(?:Deleted )?(\S+) dev \S+ lladdr ([0-9a-f:]{17})/.exec(line);
      if (m && !line.startsWith('Deleted')) this.events.push({ t: Date.now(), ip: m[1]!, mac: m[2]!, line });
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async start(c: NodeCluster): Promise<NeighbourWatch> {
    const w = new NeighbourWatch(c);
    await sleep(200); // the monitor subscribes
    return w;
  }

  /** The first time at or after `since` when the entry for `ip` carried `mac`; fails after `ms`. */
  async waitFor(ip: string, mac: string, since: number, ms: number): Promise<number> {
    const deadline = Date.now() + ms;
    for (;;) {
      const hit = this.events.find((e) => e.ip === ip && e.mac === mac && e.t >= since);
      if (hit) return hit.t;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `the client's neighbour entry for ${ip} never showed ${mac}; seen: ${
            this.events
              .filter((e) => e.ip === ip)
              .map((e) => `${e.t - since} ms ${e.mac}`)
              .join(', ') || 'nothing'
          }`,
        );
      await new Promise<void>((res) => {
        const t = setTimeout(res, Math.min(left, 500));
        this.waiters.push(() => {
          clearTimeout(t);
          res();
        });
      });
    }
  }

  stop(): void {
    this.proc.kill();
  }
}

/** The ServiceL2Status objects of a Service: the nodes they name (sorted). */
export async function l2StatusNodes(c: NodeCluster, namespace: string, name: string): Promise<string[]> {
  const list = await c.kubectlJson<{ items: any[] }>(['-n', METALLB_NS, 'get', 'servicel2statuses.metallb.io', '-l', `metallb.io/service-name=${name},metallb.io/service-namespace=${namespace}`], {
    timeoutMs: 15_000,
  });
  return list.items.map((s) => (s.status?.node ?? s.metadata?.labels?.['metallb.io/node'] ?? '?') as string).sort();
}

/** What `metallb-ts explain svc/NAME -n NS -o json` says live (the admin kubeconfig, from the cp namespace). */
export interface Explained {
  code: number | null;
  ms: number;
  announcer: string | null;
  l2Status: string[];
  speakers: { source: string; nodes: string[] | null; fallback?: string; from?: { pod?: string; node?: string } };
  findings: { id: string; severity: string; message: string }[];
  raw: any;
}

export async function explain(c: NodeCluster, namespace: string, name: string): Promise<Explained> {
  const r = await c.metallbTs(['explain', `svc/${name}`, '-n', namespace, '-o', 'json'], { timeoutMs: 60_000 });
  let raw: any;
  try {
    raw = JSON.parse(r.stdout);
  } catch {
    throw new Error(`explain exit ${r.code}: ${r.stderr.trim() || r.stdout.slice(0, 500)}`);
  }
  return {
    code: r.code,
    ms: r.ms,
    raw,
    announcer: raw.announcer ?? null,
    l2Status: ((raw.l2Status ?? []) as { node: string }[]).map((s) => s.node).sort(),
    speakers: raw.speakers,
    findings: raw.findings ?? [],
  };
}

/** One observation of who announces a Service, from every side at once. */
export interface Observation {
  t: number;
  explain: Explained;
  /** the nodes of its ServiceL2Status objects (kubectl) */
  statuses: string[];
  /** the MACs answering arping, mapped to node names ('?' for an unknown MAC) */
  arping: string[];
}

export async function observe(c: NodeCluster, namespace: string, name: string, ip: string): Promise<Observation> {
  const t = Date.now();
  const [ex, statuses, macs] = await Promise.all([explain(c, namespace, name), l2StatusNodes(c, namespace, name), arpingMacs(c, ip)]);
  return { t, explain: ex, statuses, arping: macs.map((m) => nodeByMac(c, m)?.name ?? `?${m}`) };
}

export function nodeByMac(c: NodeCluster, mac: string): RealNode | undefined {
  return c.nodes.find((n) => n.mac === mac);
}

/** Whether every side names `node` alone: explain's announcer, its view of the statuses, the objects, the ARP answers. */
export function agreesOn(o: Observation, node: string): boolean {
  return (
    o.explain.code === 0
    && o.explain.announcer === node
    && o.explain.l2Status.join() === node
    && o.statuses.join() === node
    && o.arping.join() === node
    && !o.explain.findings.some((f) => f.id === 'l2status-disagrees')
  );
}

export function describeObservation(o: Observation): string {
  return (
    `explain (exit ${o.explain.code}, ${o.explain.ms} ms, speakers ${o.explain.speakers?.source}${o.explain.speakers?.nodes ? ` [${o.explain.speakers.nodes.join(', ')}]` : ''}): `
    + `announcer ${o.explain.announcer ?? 'none'}, ServiceL2Status as explain read them [${o.explain.l2Status.join(', ')}]`
    + `${o.explain.findings.length ? `, findings ${o.explain.findings.map((f) => f.id).join(', ')}` : ''}; `
    + `ServiceL2Status objects [${o.statuses.join(', ')}]; arping answered by [${o.arping.join(', ')}]`
  );
}

/**
 * Observes until every side agrees on one node (and, when given, that it is `node`): returns that
 * observation and every one before it. Fails after `ms` with the observations made.
 */
export async function untilAgreed(c: NodeCluster, svc: { namespace: string; name: string; ip: string }, ms: number, node?: string): Promise<{ agreed: Observation; seen: Observation[] }> {
  const seen: Observation[] = [];
  const deadline = Date.now() + ms;
  for (;;) {
    const o = await observe(c, svc.namespace, svc.name, svc.ip);
    seen.push(o);
    const who = o.explain.announcer;
    if (who && (node === undefined || who === node) && agreesOn(o, who)) return { agreed: o, seen };
    if (Date.now() > deadline) {
      throw new Error(`no agreement on ${node ?? 'one node'} within ${ms} ms; observations:\n${seen.map((s) => `  +${s.t - seen[0]!.t} ms: ${describeObservation(s)}`).join('\n')}`);
    }
    await sleep(300);
  }
}

/** The speaker pod on `node`. */
export async function speakerPodOn(c: NodeCluster, node: string): Promise<{ name: string; uid: string; ready: boolean } | undefined> {
  const list = await c.kubectlJson<{ items: any[] }>(['-n', METALLB_NS, 'get', 'pods', '-l', 'app=metallb-ts,component=speaker', '--field-selector', `spec.nodeName=${node}`]);
  const p = list.items.find((i) => !i.metadata.deletionTimestamp);
  if (!p) return undefined;
  return { name: p.metadata.name, uid: p.metadata.uid, ready: p.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True') ?? false };
}

/** One line a container of `namespace` logged (kubelet's CRI log files, read from disk: also a stopped node's). */
export interface LogLine {
  node: string;
  pod: string;
  container: string;
  text: string;
  json: Record<string, unknown> | null;
}

export function containerLogs(c: NodeCluster, namespace = METALLB_NS): LogLine[] {
  const out: LogLine[] = [];
  for (const n of c.nodes) {
    if (!existsSync(n.podLogsDir)) continue;
    for (const podDir of readdirSync(n.podLogsDir)) {
      const [ns, pod] = podDir.split('_');
      if (ns !== namespace) continue;
      for (const container of readdirSync(join(n.podLogsDir, podDir))) {
        for (const f of readdirSync(join(n.podLogsDir, podDir, container))
          .filter((x) => x.endsWith('.log'))
          .sort()) {
          for (const l of readFileSync(join(n.podLogsDir, podDir, container, f), 'utf8').split('\n')) {
            const text = /^\S+ (?:stdout|stderr) [FP] (.*)$/.exec(l)?.[1];
            if (text === undefined) continue;
            let json: Record<string, unknown> | null = null;
            try {
              json = JSON.parse(text) as Record<string, unknown>;
            } catch {
              /* not JSON */
            }
            out.push({ node: n.name, pod: pod!, container, text, json });
          }
        }
      }
    }
  }
  return out;
}
