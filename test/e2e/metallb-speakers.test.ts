// Mixed speakers: MetalLB v0.16.1's speaker and `metallb-ts speaker --l2-data-plane raw` on four
// test hosts (network namespaces joined by a bridge, a client namespace; test/e2e/setup/metallb-l2.ts),
// one memberlist of both kinds, against a real kube-apiserver. What the client sees with arping:
// every Service address is answered by exactly one MAC, the node MetalLB's rule names (sha256 of
// `node#ip` over the live speakers); the ServiceL2Status objects name the same node. A speaker of
// either kind stopped gracefully (SIGTERM: it leaves memberlist) and by SIGKILL (memberlist finds
// it dead): its addresses move to the node the rule names without it, the others stay; restarted,
// it takes them back. With the memberlist key (MetalLB's Secret, sha256-derived) and without.
//
// Needs root (namespaces, raw sockets), arping, MetalLB's binaries (test/setup.d/55-metallb-binaries.sh)
// and the raw-socket addon (native/build/l2.node).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MixedSpeakers, mixedSpeakersSkipReason } from './setup/metallb-l2.ts';
import type { Kind } from './setup/metallb.ts';

const skip = mixedSpeakersSkipReason() ?? false;
const KINDS: Kind[] = ['metallb', 'metallb-ts', 'metallb', 'metallb-ts'];

/** Waits until the ServiceL2Status objects name exactly the expected node per Service. */
async function statusesAgree(m: MixedSpeakers, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let diff: string[] = [];
  for (;;) {
    const got = await m.l2Statuses();
    const want = m.expected();
    diff = m.addresses
      .filter((a) => JSON.stringify(got.get(a.service) ?? []) !== JSON.stringify([want.get(a.ip)]))
      .map((a) => `${a.service} (${a.ip}): want [${want.get(a.ip)}], ServiceL2Status on [${got.get(a.service)?.join(', ') ?? ''}]`);
    if (diff.length === 0) return;
    if (Date.now() > deadline) assert.fail(`ServiceL2Status objects disagree:\n  ${diff.join('\n  ')}\n${m.logs()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

for (const secret of [true, false]) {
  describe(`mixed speakers, memberlist ${secret ? 'with' : 'without'} the secret key: MetalLB on n1, n3, metallb-ts on n2, n4`, { skip, concurrency: false }, () => {
    const m = new MixedSpeakers(`mlmx${secret ? 'k' : 'p'}${process.pid % 10000}`, { kinds: KINDS, secret });
    after(async () => {
      await m.stop();
    });

    test("one announcer per address, the node MetalLB's rule names; ServiceL2Status agrees", { timeout: 180_000 }, async (t) => {
      const t0 = Date.now();
      await m.start();
      const ms = await m.converge(90_000, 2, () => m.logs());
      t.diagnostic(`${m.addresses.length} addresses over ${m.nodes.length} speakers: converged ${ms} ms after the speakers started (${((Date.now() - t0) / 1000).toFixed(1)} s with the cluster)`);
      await statusesAgree(m, 30_000);
    });

    const cases: Array<{ node: string; signal: 'SIGTERM' | 'SIGKILL' }> = secret
      ? [
          { node: 'n1', signal: 'SIGTERM' },
          { node: 'n2', signal: 'SIGTERM' },
          { node: 'n3', signal: 'SIGKILL' },
          { node: 'n4', signal: 'SIGKILL' },
        ]
      : [
          { node: 'n2', signal: 'SIGKILL' },
          { node: 'n3', signal: 'SIGTERM' },
        ];
    for (const { node, signal } of cases) {
      test(`${KINDS[Number(node.slice(1)) - 1]} speaker on ${node} stopped (${signal}): its addresses move where the rule says, the others stay; restarted, it takes them back`, {
        timeout: 180_000,
      }, async (t) => {
        const n = m.node(node);
        const moved = m.addresses.filter((a) => a.first === n.name);
        const before = m.expected();
        await m.stopSpeaker(n, signal);
        const want = m.expected();
        for (const a of moved) assert.equal(want.get(a.ip), a.second);
        for (const [ip, w] of want) if (!moved.some((a) => a.ip === ip)) assert.equal(w, before.get(ip), `${ip} stays`);
        const ms = await m.converge(signal === 'SIGKILL' ? 90_000 : 30_000, 2, () => m.logs());
        t.diagnostic(`${n.kind} on ${node} ${signal}: ${moved.map((a) => `${a.ip} → ${a.second}`).join(', ')} in ${ms} ms`);
        await statusesAgree(m, 30_000);

        m.startSpeaker(n);
        const back = await m.converge(60_000, 2, () => m.logs());
        t.diagnostic(`${n.kind} on ${node} restarted: its addresses back in ${back} ms`);
        await statusesAgree(m, 30_000);
      });
    }
  });
}
