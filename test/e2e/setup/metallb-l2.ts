// Mixed Layer 2 speakers for test/e2e/metallb-speakers.test.ts: MetalLB v0.16.1's speaker and
// `metallb-ts speaker --l2-data-plane raw` on separate test hosts, one memberlist.
//
// Hosts are the network namespaces of test/integration/setup/l2-testbed.ts (a bridge, a client
// 192.0.2.1, and per node `<prefix>-sK` with eth0 192.0.2.(10+K)/24 and nothing else on the
// bridge); the test API server reaches into each through `ApiRelay`. Each node has a Node object and
// a speaker Pod (`speaker-nK`, labels app=metallb,component=speaker, pod IP = the node's address:
// how both kinds find their memberlist peers). Services get their addresses written to status
// directly (no controller runs: the speakers only read them) and an EndpointSlice with a ready
// endpoint (MetalLB's speaker announces nothing without one).
//
// The expected announcer of an address is MetalLB's rule, the core's election hash
// (src/core/election: sha256 of `node#ip`, smallest first) over the live speakers' nodes.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestCluster, REPO_ROOT, type TestCluster } from '../../integration/setup/cluster.ts';
import { L2Testbed, arpingReplies, speakerMac } from '../../integration/setup/l2-testbed.ts';
import { onProcessExit, sleep } from '../../integration/setup/wait.ts';
import { KubeClient } from '../../../src/kube/client.ts';
import { corePath, metallbPath } from '../../../src/controller/api.ts';
import { electionDigestHex } from '../../../src/core/election/index.ts';
import { ApiRelay, NS, SPEAKER_LABELS, SPEAKER_SELECTOR, type Component, type Kind, createPod, metallbBinariesMissing, startSpeaker, writeSecretDir } from './metallb.ts';

/** Why the mixed-speaker test cannot run here, or null. */
export function mixedSpeakersSkipReason(): string | null {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return 'needs root on Linux (network namespaces, raw sockets)';
  const missing = metallbBinariesMissing();
  if (missing) return missing;
  if (!existsSync(join(REPO_ROOT, 'native/build/l2.node'))) return 'the raw-socket addon native/build/l2.node is not built (sh native/build.sh): metallb-ts speaker --l2-data-plane raw needs it';
  for (const tool of ['ip', 'arping']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed (test/setup.d/20-netns-tools.sh installs it)`;
  }
  return null;
}

export interface L2Node {
  name: string;
  ip: string;
  mac: string;
  netns: string;
  kind: Kind;
  pod: string;
}

/** The election: the live nodes ordered by sha256(`node#ip`); the first one announces `ip`. */
export function winner(ip: string, live: readonly string[]): string {
  return [...live].sort((a, b) => (electionDigestHex(a, ip) < electionDigestHex(b, ip) ? -1 : electionDigestHex(a, ip) > electionDigestHex(b, ip) ? 1 : 0))[0]!;
}

/**
 * `perNode` addresses of 192.0.2.100-199 for every node, each one won by that node when all are live,
 * in address order; also the node that wins each when its first choice is gone.
 */
export function pickAddresses(nodes: readonly string[], perNode: number): Array<{ ip: string; first: string; second: string }> {
  const out: Array<{ ip: string; first: string; second: string }> = [];
  const count = new Map(nodes.map((n) => [n, 0]));
  for (let i = 100; i < 200 && out.length < nodes.length * perNode; i++) {
    const ip = `192.0.2.${i}`;
    const first = winner(ip, nodes);
    if (count.get(first)! >= perNode) continue;
    count.set(first, count.get(first)! + 1);
    out.push({
      ip,
      first,
      second: winner(
        ip,
        nodes.filter((n) => n !== first),
      ),
    });
  }
  if (out.length < nodes.length * perNode) throw new Error('not enough addresses in 192.0.2.100-199');
  return out;
}

/** The replies to `count` ARP requests for `ip` from the client (MACs, lower case, in order). */
export function arpAnswers(bed: L2Testbed, ip: string, count = 2): Promise<string[]> {
  return new Promise((resolve) => {
    const p = spawn('ip', ['netns', 'exec', bed.client, 'arping', '-I', 'eth0', '-c', String(count), '-w', String(count + 1), ip], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    p.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    p.once('close', () => resolve(arpingReplies(out).map((r) => r.mac)));
  });
}

export interface MixedSpeakersOptions {
  /** the kind of speaker on each node, in node order (node K is nK) */
  kinds: Kind[];
  /** memberlist encrypted with a key from a Secret (both kinds read `DIR/secretkey`) */
  secret: boolean;
  /** addresses won by each node when all are live (default 2) */
  perNode?: number;
}

/** A cluster, the namespaces, one speaker per node, Services: see the file comment. */
export class MixedSpeakers {
  readonly nodes: L2Node[];
  readonly bed: L2Testbed;
  readonly addresses: Array<{ ip: string; first: string; second: string; service: string }>;
  readonly speakers = new Map<string, Component>();
  readonly stopped: Component[] = [];
  cluster!: TestCluster;
  api!: KubeClient;
  private relay?: ApiRelay;
  private readonly dir: string;
  private readonly secretDir?: string;

  constructor(prefix: string, o: MixedSpeakersOptions) {
    this.bed = new L2Testbed(prefix, o.kinds.length, { extraInterfaces: false, nodeIPv4: (i) => `192.0.2.${10 + i}` });
    this.nodes = o.kinds.map((kind, i) => ({
      name: `n${i + 1}`,
      ip: `192.0.2.${11 + i}`,
      mac: speakerMac(i + 1),
      netns: this.bed.speakers[i]!,
      kind,
      pod: `speaker-n${i + 1}`,
    }));
    this.addresses = pickAddresses(
      this.nodes.map((n) => n.name),
      o.perNode ?? 2,
    ).map((a, i) => ({ ...a, service: `web-${i + 1}` }));
    this.dir = mkdtempSync(join(tmpdir(), 'metallb-ts-mixed-'));
    if (o.secret) this.secretDir = writeSecretDir(join(this.dir, 'ml-secret'), randomBytes(16).toString('base64').replace(/=+$/, ''));
  }

  node(name: string): L2Node {
    return this.nodes.find((n) => n.name === name)!;
  }

  async start(): Promise<void> {
    this.bed.destroy();
    onProcessExit(() => this.bed.destroy()); // also when the test process is interrupted
    this.bed.create();
    this.cluster = await startTestCluster({ namespaces: [NS] });
    this.api = new KubeClient(this.cluster.kubeConfig, { maxSockets: 8 });
    this.relay = new ApiRelay(this.cluster, join(this.dir, 'api.sock'));
    await this.relay.start();
    for (const n of this.nodes) await this.relay.into(n.netns);

    const post = (path: string, body: unknown) => this.api.request({ method: 'POST', path, body });
    for (const n of this.nodes) {
      await post('/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: n.name, labels: { 'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux' } } });
      await createPod(this.api, { name: n.pod, nodeName: n.name, labels: { ...SPEAKER_LABELS }, podIP: n.ip, image: n.kind === 'metallb' ? 'quay.io/metallb/speaker:v0.16.1' : 'metallb-ts:0.1.0' });
    }
    await post(metallbPath(NS, 'ipaddresspools'), { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'lan' }, spec: { addresses: ['192.0.2.100-192.0.2.199'] } });
    await post(metallbPath(NS, 'l2advertisements'), { apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name: 'lan' }, spec: { ipAddressPools: ['lan'] } });
    for (const a of this.addresses) {
      const created = await this.api.request<Record<string, any>>({
        method: 'POST',
        path: corePath('default', 'services'),
        body: {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: a.service, annotations: { 'metallb.io/ip-allocated-from-pool': 'lan' } },
          spec: { type: 'LoadBalancer', selector: { app: a.service }, ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
        },
      });
      await this.api.request({ method: 'PUT', path: `${corePath('default', 'services', a.service)}/status`, body: { ...created, status: { loadBalancer: { ingress: [{ ip: a.ip, ipMode: 'VIP' }] } } } });
      await post(`/apis/discovery.k8s.io/v1/namespaces/default/endpointslices`, {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${a.service}-1`, labels: { 'kubernetes.io/service-name': a.service } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: [{ addresses: ['10.244.1.10'], nodeName: this.nodes[0]!.name, conditions: { ready: true, serving: true, terminating: false } }],
      });
    }
    for (const n of this.nodes) this.startSpeaker(n);
  }

  /** Starts the speaker of `n` (its kind), memberlist on its address. */
  startSpeaker(n: L2Node): Component {
    const c = startSpeaker(n.kind, this.cluster, {
      node: n.name,
      podName: n.pod,
      netns: n.netns,
      ml: { bindAddr: n.ip, labels: SPEAKER_SELECTOR, ...(this.secretDir ? { secretDir: this.secretDir } : {}) },
    });
    this.speakers.set(n.name, c);
    return c;
  }

  /** Stops the speaker of `n` (SIGTERM: gracefully; SIGKILL); its Pod stays, as a crashed container's does. */
  async stopSpeaker(n: L2Node, signal: 'SIGTERM' | 'SIGKILL'): Promise<Component> {
    const c = this.speakers.get(n.name)!;
    this.speakers.delete(n.name);
    this.stopped.push(c);
    await c.stop(signal);
    return c;
  }

  /** The nodes whose speaker runs. */
  live(): string[] {
    return this.nodes.filter((n) => this.speakers.get(n.name)?.running).map((n) => n.name);
  }

  /** Who should announce each address now. */
  expected(): Map<string, string> {
    const live = this.live();
    return new Map(this.addresses.map((a) => [a.ip, winner(a.ip, live)]));
  }

  /** The MACs answering ARP for every address (in parallel). */
  async answers(count = 2): Promise<Map<string, string[]>> {
    const r = await Promise.all(this.addresses.map(async (a) => [a.ip, await arpAnswers(this.bed, a.ip, count)] as const));
    return new Map(r);
  }

  /** Addresses whose answers differ from `want` (node names): `ip: want node (MAC), got [MACs]`. */
  mismatches(got: Map<string, string[]>, want: Map<string, string>): string[] {
    const out: string[] = [];
    for (const [ip, node] of want) {
      const macs = got.get(ip) ?? [];
      const mac = this.node(node).mac;
      if (macs.length === 0 || macs.some((m) => m !== mac)) {
        out.push(`${ip}: want ${node} (${mac}), answered by [${macs.map((m) => `${this.nodes.find((x) => x.mac === m)?.name ?? '?'} ${m}`).join(', ')}]`);
      }
    }
    return out;
  }

  /**
   * Polls ARP until every address is answered by its expected node only, `stable` rounds in a row;
   * returns the ms it took (from the call); fails after `ms` naming the mismatches.
   */
  async converge(ms: number, stable = 2, detail: () => string = () => ''): Promise<number> {
    const t0 = Date.now();
    let ok = 0;
    let last: string[] = [];
    let tFirstOk = 0;
    for (;;) {
      const want = this.expected();
      last = this.mismatches(await this.answers(), want);
      if (last.length === 0) {
        if (ok === 0) tFirstOk = Date.now();
        if (++ok >= stable) return tFirstOk - t0;
      } else {
        ok = 0;
      }
      if (Date.now() - t0 > ms) throw new Error(`ARP did not converge in ${ms} ms (live: ${this.live().join(', ')}):\n  ${last.join('\n  ')}\n${detail()}`);
      await sleep(200);
    }
  }

  /** The node of each ServiceL2Status (`status.node`), by Service name. */
  async l2Statuses(): Promise<Map<string, string[]>> {
    const items = (await this.api.request<{ items: any[] }>({ method: 'GET', path: metallbPath(NS, 'servicel2statuses') })).items;
    const out = new Map<string, string[]>();
    for (const s of items) {
      const svc = s.status?.serviceName ?? s.metadata?.labels?.['metallb.io/service-name'];
      out.set(svc, [...(out.get(svc) ?? []), s.status?.node ?? s.metadata?.labels?.['metallb.io/node']].sort());
    }
    return out;
  }

  logs(n = 15): string {
    return [...this.speakers.values(), ...this.stopped.slice(-2)].map((c) => c.tail(n)).join('\n');
  }

  async stop(): Promise<void> {
    for (const c of this.speakers.values()) await c.stop('SIGKILL');
    await this.relay?.stop();
    this.api?.close();
    await this.cluster?.stop();
    this.bed.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
