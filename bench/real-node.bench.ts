/**
 * Layer 2 failover on real nodes (`npm run bench real-node`): deploy/ on two kubelets
 * (test/integration/setup/node-cluster.ts, the harness of test/integration/e2e/real-node.test.ts),
 * one LoadBalancer Service, and a client namespace on the nodes' segment watching its neighbour
 * table (`ip monitor neigh`). Measured:
 *   - the announcing node's speaker pod deleted (kubectl delete pod): time until the client's
 *     neighbour entry carries the other node's MAC (the speaker leaves memberlist on SIGTERM, the
 *     other one announces), and until it carries the first node's again (the DaemonSet's new pod
 *     starts and joins: the hash winner announces again); REAL_NODE_BENCH_RUNS times (default 3);
 *   - the announcing node stopped (kubelet, containerd and every container process SIGKILLed):
 *     time until the entry moves (memberlist's failure detection: suspect, then dead), once.
 * Also the cluster's start-up and deploy/'s roll-out. Needs root and `bash test/setup.sh`.
 */
import { realNodeSkipReason, startNodeCluster } from '../test/integration/setup/node-cluster.ts';
import { NeighbourWatch, createL2Service, installMetallb, metallbImageArchive, speakerPodOn, touch, untilAgreed, untilValue } from '../test/integration/setup/node-metallb.ts';

const RUNS = Number(process.env.REAL_NODE_BENCH_RUNS ?? 3);
const skip = realNodeSkipReason();
if (skip) {
  console.log(`real-node: not measured: ${skip}`);
  process.exit(0);
}

const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]): string => `${s(median(xs))} median (${s(Math.min(...xs))}–${s(Math.max(...xs))}, ${xs.length} runs)`;

const image = metallbImageArchive();
const c = await startNodeCluster({ nodes: 2, images: [image] });
let watch: NeighbourWatch | undefined;
try {
  const t = c.timings;
  console.log(`real-node: ${c.nodes.length} nodes Ready in ${s(t.total!)} (control plane ${s(t.apiserver!)}, image imports ${s(t.images!)}, kubelets to Ready ${s(t['nodes Ready']!)})`);
  const d = await installMetallb(c);
  console.log(`real-node: kubectl apply -k deploy → controller and speakers Ready: ${s(d.apply + d.ready)}`);
  const svc = { namespace: 'bench', name: 'web', ip: '' };
  svc.ip = await createL2Service(c, { ...svc, pool: 'bench', addresses: '192.0.2.200-192.0.2.209' });
  const first = (await untilAgreed(c, svc, 90_000)).agreed;
  const w = c.nodes.find((n) => n.name === first.explain.announcer)!;
  const o = c.nodes.find((n) => n !== w)!;
  watch = await NeighbourWatch.start(c);
  if ((await touch(c, svc.ip)) !== w.mac) throw new Error(`the client did not resolve ${svc.ip} to ${w.name}`);

  const away: number[] = [];
  const back: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const pod = (await speakerPodOn(c, w.name))!;
    const t0 = Date.now();
    await c.kubectl(['-n', 'metallb-system', 'delete', 'pod', pod.name, '--wait=false']);
    const moved = await watch.waitFor(svc.ip, o.mac, t0, 60_000);
    away.push(moved - t0);
    const returned = await watch.waitFor(svc.ip, w.mac, moved, 120_000);
    back.push(returned - t0);
    await untilValue('the replacement speaker Ready', 60_000, async () => {
      const p = await speakerPodOn(c, w.name);
      return p?.ready && p.uid !== pod.uid ? p : undefined;
    });
    await untilAgreed(c, svc, 60_000, w.name);
  }
  console.log(`real-node failover, announcing node's speaker pod deleted → client's neighbour entry on the other node: ${fmt(away)}`);
  console.log(`real-node failback, the DaemonSet's new speaker pod → entry back on the hash winner, from the deletion: ${fmt(back)}`);

  const t0 = Date.now();
  await w.stop();
  const moved = await watch.waitFor(svc.ip, o.mac, t0, 90_000);
  console.log(`real-node failover, announcing node stopped (every process SIGKILLed) → client's neighbour entry on the other node: ${s(moved - t0)} (1 run; memberlist's failure detection)`);
} finally {
  watch?.stop();
  await c.stop();
}
