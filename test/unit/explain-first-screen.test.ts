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
  /** The Why line: the first error finding's message, or the election's summary when `warning` is set. */
  why: string;
  /** The first warning's message, when no finding is an error (line 4, then its Fix). */
  warning?: string;
  fix: string;
  /** The id of the first finding in `-o json` (the one the Why and Fix lines print). */
  id: string;
}

const cases: Case[] = [
  {
    name: 'metallb#1697: pool and advertisement applied without a namespace land in default',
    file: fixture('pool-in-default-namespace.yaml'),
    service: 'apps-dev/ingress-nginx-dev-ef0c5b21-controller',
    exit: 1,
    verdict: 'pending: the controller gives it no address, so nobody announces it',
    why: 'MetalLB reports: pools are empty. It means: the controller has no IPAddressPool in metallb-system: default/IPAddressPool/first-pool, default/L2Advertisement/example are in namespace default, which MetalLB never reads',
    fix: 'create them in metallb-system instead (metadata.namespace: metallb-system in the manifests, kubectl apply, then delete the copies in default), or pass --metallb-namespace default if MetalLB runs there',
    id: 'no-pools',
  },
  {
    name: 'metallb#1697, one step later: the pool moved, the L2Advertisement still in default',
    file: fixture('l2advertisement-in-default-namespace.yaml'),
    service: 'apps-dev/ingress-nginx-dev-ef0c5b21-controller',
    exit: 1,
    verdict: 'nobody announces 192.168.1.240',
    why: 'pool first-pool has no L2Advertisement or BGPAdvertisement in metallb-system: nobody announces its addresses; default/L2Advertisement/example is in namespace default, which MetalLB never reads',
    fix: 'create it in metallb-system instead (metadata.namespace: metallb-system in the manifests, kubectl apply, then delete the copy in default)',
    id: 'no-advertisement',
  },
  {
    name: 'metallb#1765: externalTrafficPolicy Local, the only endpoint on the kubeadm control plane',
    file: fixture('local-policy-control-plane.yaml'),
    service: 'ingress-nginx/ingress-nginx-controller',
    exit: 1,
    verdict: 'nobody announces 10.20.30.200',
    why: 'externalTrafficPolicy is Local, and none of the candidate nodes (worker-01, worker-02) runs a ready endpoint of the Service; the endpoints run on cp-01 (labelled node.kubernetes.io/exclude-from-external-load-balancers)',
    fix:
      'cp-01 may not announce (node.kubernetes.io/exclude-from-external-load-balancers, which kubeadm puts on control-plane nodes): remove the label (kubectl label node cp-01 node.kubernetes.io/exclude-from-external-load-balancers-), '
      + 'run the speakers with --ignore-exclude-lb (Helm: speaker.ignoreExcludeLB=true), schedule the pods on worker-01, worker-02 too, or use externalTrafficPolicy: Cluster',
    id: 'local-no-endpoint-on-candidate',
  },
  {
    name: 'metallb#1081: two Services share an address by key, one is externalTrafficPolicy Local',
    file: fixture('shared-ip-local-policy.yaml'),
    service: 'default/gitea-metallb-ssh',
    exit: 1,
    verdict: 'pending: the controller gives it no address, so nobody announces it',
    why:
      'MetalLB reports: can\'t change sharing key for "default/gitea-metallb-ssh", address also in use by default/gitea-metallb-https. '
      + 'It means: 10.10.2.214 is held by default/gitea-metallb-https, which cannot share it with this Service: this Service has externalTrafficPolicy Local with selector app=gitea, '
      + 'default/gitea-metallb-https has externalTrafficPolicy Cluster; MetalLB shares an address only between Services that are all externalTrafficPolicy Cluster, or all Local with the same selector '
      + "(the announcing node must host every Service's pods)",
    fix: "set externalTrafficPolicy: Cluster on this Service (clients' source addresses are then translated), or request another address for this Service (metallb.io/loadBalancerIPs)",
    id: 'sharing-conflict',
  },
  {
    name: 'metallb#1544: every speaker waits for the memberlist Secret',
    file: fixture('speakers-memberlist-secret.yaml'),
    service: 'ingress-nginx/ingress-nginx-controller',
    exit: 1,
    verdict: 'nobody announces 10.20.30.200',
    why: 'no speaker pod is Ready on any node: 3 speaker pods on cp-01, worker-01, worker-02 wait: CreateContainerConfigError (secret "memberlist" not found)',
    fix:
      "MetalLB's controller creates the memberlist Secret at start-up (--ml-secret-name): check that it runs (kubectl -n metallb-system get pods), "
      + 'or create it: kubectl create secret generic memberlist -n metallb-system --from-literal=secretkey="$(openssl rand -base64 128)"',
    id: 'no-live-speakers',
  },
  {
    name: 'metallb#2482/#1156: a PreferDualStack Service and one pool per family',
    file: fixture('prefer-dual-stack-split-pools.yaml'),
    service: 'nginx-ingress/nginx-ingress',
    exit: 0,
    verdict: 'announced by node-b over layer2: 172.16.10.200',
    why: 'node-b announces 172.16.10.200: first of 1 candidate in the hash order of 172.16.10.200',
    warning:
      'MetalLB reports: ["172.16.10.200" "<nil>"] is not allowed in config. It means: pool ipv4-pool has no IPv6 address (it has IPv4 only), so this PreferDualStack Service gets 172.16.10.200 only and no IPv6 address '
      + "(MetalLB picks no address, Go's nil, and refuses it); pool ipv6-pool has the IPv6 addresses, but MetalLB takes all of a Service's addresses from one pool. "
      + 'The Service is dual-stack: MetalLB takes its family from spec.clusterIPs [10.0.0.79, fd00::d899], which the API server set from spec.ipFamilies [IPv4, IPv6] and spec.ipFamilyPolicy PreferDualStack',
    fix: 'move the IPv6 range 2001:db8:10::200/124 from pool ipv6-pool into pool ipv4-pool (one pool with both families; two pools may not overlap), or set spec.ipFamilyPolicy: SingleStack if one family is meant',
    id: 'pool-lacks-family',
  },
];

/** Text that means a message was built from a missing value, or sends the reader elsewhere. */
const HOLES = /undefined|null|NaN|\[object|\(\)|, ,|: ;|see the message|  +\S/;

test("explain on users' reports: verdict, cause and fix first", { concurrency: 4 }, async (t) => {
  await Promise.all(
    cases.map((c) =>
      t.test(c.name, async () => {
        const [tx, js] = await Promise.all([runCliAsync(['explain', c.service, '-f', c.file]), runCliAsync(['explain', c.service, '-f', c.file, '-o', 'json'])]);
        assert.equal(tx.status, c.exit, tx.stderr);
        const lines = tx.stdout.split('\n');
        const labels = c.warning === undefined ? ['Verdict', 'Why', 'Fix'] : ['Verdict', 'Why', 'Warning', 'Fix'];
        assert.deepEqual(
          lines.slice(1, 1 + labels.length).map((l) => /^([A-Za-z]+):/.exec(l)?.[1]),
          labels,
          lines.slice(0, 6).join('\n'),
        );
        const h = head(tx.stdout);
        assert.deepEqual([h.Verdict, h.Why, h.Warning, h.Fix], [c.verdict, c.why, c.warning === undefined ? undefined : `${c.id}: ${c.warning}`, c.fix]);
        const message = c.warning ?? c.why;
        for (const v of [message, c.fix]) assert.doesNotMatch(v.replace(/<nil>/g, ''), HOLES);
        const f = (JSON.parse(js.stdout) as { findings: Finding[] }).findings;
        assert.deepEqual([f[0]!.id, f[0]!.message, f[0]!.fix], [c.id, message, c.fix]);
      }),
    ),
  );
});

test('the only candidate: the Failover line says nobody takes over, with no blank where the next node belongs', async () => {
  const r = await runCliAsync(['explain', 'nginx-ingress/nginx-ingress', '-f', fixture('prefer-dual-stack-split-pools.yaml')]);
  assert.equal(r.status, 0, r.stderr);
  const line = r.stdout.split('\n').find((l) => l.startsWith('Failover:'));
  assert.equal(line, 'Failover:     nobody takes over: node-b is the only candidate, so if it dies the address stays dark until another node becomes one (its death is known after 5–6.2 s)');
});

test('no speaker alive: the Speakers line says none, not an empty list', async () => {
  const r = await runCliAsync(['explain', 'ingress-nginx/ingress-nginx-controller', '-f', fixture('speakers-memberlist-secret.yaml')]);
  assert.equal(r.status, 1, r.stderr);
  assert.ok(r.stdout.split('\n').includes('Speakers:     none alive (speaker-pods)'), r.stdout);
});
