/**
 * Issue #12 item 6: `explain svc/x` in the wrong namespace names the namespaces where x exists
 * (exit 2 unchanged), and manifests of Services not created yet (no cluster IPs) given to
 * `allocate --dry-run` are defaulted as the API server would, and the output says so, instead of
 * "pending: No ClusterIPs". Snapshot: test/unit/fixtures/issue12/hazards.yaml plus the manifests
 * of new-services.yaml (as users write them: no clusterIP, no ipFamilies).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, runCliAsync } from '../helpers/cli.ts';
import { serviceNetwork, withAPIServerDefaults } from '../../src/core/apiserver-defaults.ts';
import type { Service } from '../../src/core/kube.ts';

const DIR = join(ROOT, 'test/unit/fixtures/issue12');
const SNAPSHOT = join(DIR, 'hazards.yaml');
const NEW = join(DIR, 'new-services.yaml');

test('item 6 through the CLI', { concurrency: 4 }, async (t) => {
  await t.test('explain in the wrong namespace names where the Service is, exit 2', async () => {
    const r = await runCliAsync(['explain', 'svc/jellyfin', '-f', SNAPSHOT]);
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trim(), 'metallb-ts: service default/jellyfin not found in the cluster state; a Service jellyfin exists in namespace media: explain svc/jellyfin -n media');
  });

  await t.test('explain of a name that exists nowhere: no hint', async () => {
    const r = await runCliAsync(['explain', 'svc/nothing', '-n', 'media', '-f', SNAPSHOT]);
    assert.equal(r.status, 2);
    assert.equal(r.stderr.trim(), 'metallb-ts: service media/nothing not found in the cluster state');
  });

  await t.test('allocate --dry-run defaults a new manifest and says so first; refuses what the API server would refuse', async () => {
    const [tx, js] = await Promise.all([
      runCliAsync(['allocate', '--dry-run', '-n', 'new', '-f', SNAPSHOT, '-f', NEW]),
      runCliAsync(['allocate', '--dry-run', '-n', 'new', '-f', SNAPSHOT, '-f', NEW, '-o', 'json']),
    ]);
    assert.equal(tx.status, 1, tx.stderr);
    const lines = tx.stdout.split('\n');
    assert.equal(
      lines[0],
      "Defaulted as the API server would: new/web has no cluster IPs (a manifest not created yet): ipFamilyPolicy SingleStack, ipFamilies [IPv4], judged from the kubernetes Service's cluster IP 10.96.0.1; single-stack",
    );
    assert.equal(
      lines[1],
      "Not defaulted: new/dns has no cluster IPs and the API server would refuse it: ipFamilyPolicy RequireDualStack on a cluster that is single-stack as far as the snapshot shows (the kubernetes Service's cluster IP 10.96.0.1; single-stack)",
    );
    assert.match(tx.stdout, /\nnew\/web +192\.168\.1\.0 +home +allocated /);
    assert.doesNotMatch(tx.stdout, /new\/web[^\n]*No ClusterIPs/);
    assert.match(tx.stdout, /\nnew\/dns +<pending> +<none> +pending +the API server would refuse this Service: ipFamilyPolicy RequireDualStack/);
    const report = JSON.parse(js.stdout) as { services: Array<{ service: string; ips: string[]; error: string | null }>; defaulted: Array<Record<string, unknown>> };
    assert.deepEqual(
      report.services.map((s) => [s.service, s.ips, s.error]),
      [
        ['new/dns', [], 'No ClusterIPs'],
        ['new/web', ['192.168.1.0'], null],
      ],
    );
    assert.deepEqual(
      report.defaulted.map((d) => [d.service, d.ipFamilyPolicy, d.ipFamilies, d.clusterIPs, d.refused ?? null]),
      [
        ['new/web', 'SingleStack', ['IPv4'], ['10.96.0.1'], null],
        [
          'new/dns',
          'RequireDualStack',
          ['IPv4'],
          ['10.96.0.1'],
          "ipFamilyPolicy RequireDualStack on a cluster that is single-stack as far as the snapshot shows (the kubernetes Service's cluster IP 10.96.0.1; single-stack)",
        ],
      ],
    );
  });

  await t.test('a snapshot whose Services all have cluster IPs: nothing defaulted, no line', async () => {
    const r = await runCliAsync(['allocate', '--dry-run', '-f', SNAPSHOT, '-o', 'json']);
    assert.deepEqual((JSON.parse(r.stdout) as { defaulted: unknown[] }).defaulted, []);
  });
});

function svc(name: string, spec: Record<string, unknown>): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: name === 'kubernetes' ? 'default' : 'app' }, spec: { type: 'LoadBalancer', ...spec } } as Service;
}

test("withAPIServerDefaults: the cluster's families as the API server would use them", () => {
  const kube = svc('kubernetes', { type: 'ClusterIP', clusterIP: 'fd00:10:96::1', clusterIPs: ['fd00:10:96::1'] });
  const dual = svc('dual', { clusterIP: 'fd00:10:96::20', clusterIPs: ['fd00:10:96::20', '10.96.0.20'], ipFamilyPolicy: 'PreferDualStack' });
  // An IPv6-primary dual-stack cluster.
  assert.deepEqual(serviceNetwork([kube, dual]).families, ['ipv6', 'ipv4']);
  const { services, defaulted } = withAPIServerDefaults([
    kube,
    dual,
    svc('plain', {}),
    svc('prefer', { ipFamilyPolicy: 'PreferDualStack' }),
    svc('v4', { ipFamilies: ['IPv4'] }),
    svc('two-unset', { ipFamilies: ['IPv4', 'IPv6'] }),
  ]);
  assert.deepEqual(
    defaulted.map((d) => [d.service, d.ipFamilyPolicy, d.ipFamilies, d.refused ?? null]),
    [
      ['app/plain', 'SingleStack', ['IPv6'], null],
      ['app/prefer', 'PreferDualStack', ['IPv6', 'IPv4'], null],
      ['app/v4', 'SingleStack', ['IPv4'], null],
      ['app/two-unset', '(unset)', [], 'spec.ipFamilies lists two families but spec.ipFamilyPolicy is unset (the API server requires PreferDualStack or RequireDualStack then)'],
    ],
  );
  const prefer = services.find((s) => s.metadata?.name === 'prefer')!;
  assert.deepEqual(prefer.spec?.clusterIPs, ['fd00:10:96::1', '10.96.0.20']);
  // Left as written when refused; untouched when it has cluster IPs.
  assert.equal(services.find((s) => s.metadata?.name === 'two-unset')!.spec?.clusterIPs, undefined);
  assert.equal(services[1], dual);
  // No cluster IP anywhere: single-stack IPv4.
  const alone = withAPIServerDefaults([svc('plain', {})]).defaulted[0]!;
  assert.deepEqual([alone.ipFamilies, alone.basis], [['IPv4'], "no cluster IP in the snapshot: the API server's single-stack IPv4 default; single-stack"]);
});
