/**
 * The first screen of `explain` on reproductions of MetalLB users' reports (issue #12 items 1-2):
 * line 2 the verdict, line 3 the cause (never the symptom), line 4 a fix that names the objects and
 * the command, no hole where a value belongs, no "see the message". One snapshot per report, in
 * test/unit/fixtures/issue12/ (their header comments cite the report).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, runCliAsync } from '../helpers/cli.ts';
import { head, type Finding } from '../helpers/explain-text.ts';

const fixture = (name: string): string => join(ROOT, 'test/unit/fixtures/issue12', name);

interface Case {
  name: string;
  file: string;
  service: string;
  exit: number;
  verdict: string;
  why: string;
  fix: string;
  /** The id of the first finding in `-o json` (the one the Why and Fix lines print). */
  id: string;
}

const cases: Case[] = [
  {
    name: 'metallb#1697: pool and advertisement applied without a namespace land in default',
    file: fixture('pool-in-default-namespace.yaml'), service: 'apps-dev/ingress-nginx-dev-ef0c5b21-controller', exit: 1,
    verdict: 'pending: the controller gives it no address, so nobody announces it',
    why: 'MetalLB reports: pools are empty. It means: the controller has no IPAddressPool in metallb-system: default/IPAddressPool/first-pool, default/L2Advertisement/example are in namespace default, which MetalLB never reads',
    fix: 'create them in metallb-system instead (metadata.namespace: metallb-system in the manifests, kubectl apply, then delete the copies in default), or pass --metallb-namespace default if MetalLB runs there',
    id: 'no-pools',
  },
  {
    name: 'metallb#1765: externalTrafficPolicy Local, the only endpoint on the kubeadm control plane',
    file: fixture('local-policy-control-plane.yaml'), service: 'ingress-nginx/ingress-nginx-controller', exit: 1,
    verdict: 'nobody announces 10.20.30.200',
    why: 'externalTrafficPolicy is Local, and none of the candidate nodes (worker-01, worker-02) runs a ready endpoint of the Service; the endpoints run on cp-01 (labelled node.kubernetes.io/exclude-from-external-load-balancers)',
    fix: 'cp-01 may not announce (node.kubernetes.io/exclude-from-external-load-balancers, which kubeadm puts on control-plane nodes): remove the label (kubectl label node cp-01 node.kubernetes.io/exclude-from-external-load-balancers-), '
      + 'run the speakers with --ignore-exclude-lb (Helm: speaker.ignoreExcludeLB=true), schedule the pods on worker-01, worker-02 too, or use externalTrafficPolicy: Cluster',
    id: 'local-no-endpoint-on-candidate',
  },
  {
    name: 'metallb#1081: two Services share an address by key, one is externalTrafficPolicy Local',
    file: fixture('shared-ip-local-policy.yaml'), service: 'default/gitea-metallb-ssh', exit: 1,
    verdict: 'pending: the controller gives it no address, so nobody announces it',
    why: 'MetalLB reports: can\'t change sharing key for "default/gitea-metallb-ssh", address also in use by default/gitea-metallb-https. '
      + 'It means: 10.10.2.214 is held by default/gitea-metallb-https, which cannot share it with this Service: this Service has externalTrafficPolicy Local with selector app=gitea, '
      + 'default/gitea-metallb-https has externalTrafficPolicy Cluster; MetalLB shares an address only between Services that are all externalTrafficPolicy Cluster, or all Local with the same selector '
      + '(the announcing node must host every Service\'s pods)',
    fix: 'set externalTrafficPolicy: Cluster on this Service (clients\' source addresses are then translated), or request another address for this Service (metallb.io/loadBalancerIPs)',
    id: 'sharing-conflict',
  },
];

/** Text that means a message was built from a missing value, or sends the reader elsewhere. */
const HOLES = /undefined|null|NaN|\[object|\(\)|, ,|: ;|see the message|  +\S/;

test('explain on users\' reports: verdict, cause and fix first', { concurrency: 4 }, async (t) => {
  await Promise.all(cases.map((c) => t.test(c.name, async () => {
    const [tx, js] = await Promise.all([runCliAsync(['explain', c.service, '-f', c.file]), runCliAsync(['explain', c.service, '-f', c.file, '-o', 'json'])]);
    assert.equal(tx.status, c.exit, tx.stderr);
    const lines = tx.stdout.split('\n');
    assert.deepEqual(lines.slice(1, 4).map((l) => /^([A-Za-z]+):/.exec(l)?.[1]), ['Verdict', 'Why', 'Fix'], lines.slice(0, 5).join('\n'));
    const h = head(tx.stdout);
    assert.deepEqual([h.Verdict, h.Why, h.Fix], [c.verdict, c.why, c.fix]);
    for (const v of [h.Why!, h.Fix!]) assert.doesNotMatch(v.replace(/^\S+:\s+/, ''), HOLES);
    const f = (JSON.parse(js.stdout) as { findings: Finding[] }).findings;
    assert.deepEqual([f[0]!.id, f[0]!.message, f[0]!.fix], [c.id, c.why, c.fix]);
  })));
});
