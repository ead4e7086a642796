/**
 * BGP mode latency (`npm run bench bgp`): the time from a Service getting its addresses (the
 * metallb-ts controller writes its status) to the routes in the router's kernel table, through the
 * metallb-ts speaker, frr-k8s v0.0.25, FRR in a node namespace and eBGP to an FRR router namespace
 * (test/integration/setup/frr.ts); and from the Service's deletion to the withdrawal. Median and
 * range over BGP_BENCH_RUNS runs (default 3), one fresh dual-stack Service each. Most of it is the
 * two fixed debounces MetalLB and frr-k8s both keep (3 s each) and FRR's reload.
 * Needs root and `bash test/setup.sh` (apiserver, FRR, frr-k8s).
 */
import { startTestCluster } from '../test/integration/setup/cluster.ts';
import { checkBGPTestBedPrerequisites, startBGPTestBed } from '../test/integration/setup/frr.ts';
import { DUAL_STACK_APISERVER_ARGS, TestAPI, dualStackService, spawnBGPSpeaker, spawnController, stopSpeaker, until } from '../test/integration/setup/metallb-bgp.ts';
import type { KubeObject, Service } from '../src/core/kube.ts';

const RUNS = Number(process.env.BGP_BENCH_RUNS ?? 3);
const NS = 'metallb-system';

try {
  checkBGPTestBedPrerequisites();
} catch (err) {
  console.log(`bgp: not measured: ${(err as Error).message.split('\n')[0]}`);
  process.exit(0);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]): string => `${(median(xs) / 1000).toFixed(1)} s median (${(Math.min(...xs) / 1000).toFixed(1)}–${(Math.max(...xs) / 1000).toFixed(1)} s, ${xs.length} runs)`;

const cluster = await startTestCluster({ namespaces: [NS], extraApiserverArgs: DUAL_STACK_APISERVER_ARGS });
const node = 'bench-node';
const bed = await startBGPTestBed({ cluster, node, namespace: NS, nodeASN: 64512, routerASN: 64513 });
const api = new TestAPI(cluster);
const controller = spawnController(cluster, NS);
const speaker = spawnBGPSpeaker(cluster, node, NS, NS);
try {
  const objects: KubeObject[] = [
    { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'bench', namespace: NS }, spec: { addresses: ['192.0.2.0/28', '2001:db8:ff::/124'] } },
    { apiVersion: 'metallb.io/v1beta2', kind: 'BGPPeer', metadata: { name: 'r4', namespace: NS }, spec: { myASN: 64512, peerASN: 64513, peerAddress: bed.routerIPv4 } },
    { apiVersion: 'metallb.io/v1beta2', kind: 'BGPPeer', metadata: { name: 'r6', namespace: NS }, spec: { myASN: 64512, peerASN: 64513, peerAddress: bed.routerIPv6 } },
    { apiVersion: 'metallb.io/v1beta1', kind: 'BGPAdvertisement', metadata: { name: 'adv', namespace: NS }, spec: { ipAddressPools: ['bench'] } },
  ];
  for (const o of objects) await api.create(o);
  const up4: number[] = [];
  const up6: number[] = [];
  const down: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const name = `bench-${i}`;
    for (const o of dualStackService(name, 'default', node, 'Cluster')) await api.create(o);
    const svc = await until('addresses', async () => {
      const s = await api.get<Service>('Service', 'default', name);
      return (s?.status?.loadBalancer?.ingress?.length ?? 0) === 2 ? s : undefined;
    });
    const t0 = Date.now();
    const ips = svc.status!.loadBalancer!.ingress!.map((x) => x.ip!);
    const v4 = `${ips.find((ip) => !ip.includes(':'))}/32`;
    const v6 = `${ips.find((ip) => ip.includes(':'))}/128`;
    await bed.waitForRoute(v4, { timeoutMs: 60_000 });
    up4.push(Date.now() - t0);
    await bed.waitForRoute(v6, { timeoutMs: 60_000 });
    up6.push(Date.now() - t0);
    const t1 = Date.now();
    await api.delete('Service', 'default', name);
    await bed.waitForRoute(v4, { present: false, timeoutMs: 60_000 });
    await bed.waitForRoute(v6, { present: false, timeoutMs: 60_000 });
    down.push(Date.now() - t1);
  }
  console.log(`bgp: Service addressed → IPv4 route at the router: ${fmt(up4)}`);
  console.log(`bgp: Service addressed → IPv6 route at the router: ${fmt(up6)}`);
  console.log(`bgp: Service deleted → both routes withdrawn: ${fmt(down)}`);
} finally {
  await stopSpeaker(speaker);
  await controller.stop();
  await bed.stop();
  await cluster.stop();
}
