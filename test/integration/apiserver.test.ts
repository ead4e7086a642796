// Against a real kube-apiserver + etcd (test/integration/setup): MetalLB's CRDs are served, a
// LoadBalancer Service's status is written through the status subresource, CRD schema validation
// rejects bad objects with 422, and RBAC is enforced.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type V1Service } from '@kubernetes/client-node';
import { startTestCluster, type TestCluster } from './setup/cluster.ts';

const NS = 'metallb-system';
const G = { group: 'metallb.io', version: 'v1beta1' } as const;

/** HTTP status and Status message of a rejected call; fails the test if the call was accepted. */
async function statusOf(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof ApiException)) throw e;
    const body: unknown = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
    return { code: e.code, message: (body as { message?: string }).message ?? JSON.stringify(body) };
  }
  assert.fail('the call was accepted');
}

/** status.loadBalancer.ingress as plain objects (the client deserializes into model classes). */
function plainIngress(svc: V1Service): { ip?: string; ipMode?: string }[] | undefined {
  return svc.status?.loadBalancer?.ingress?.map((i) => ({ ip: i.ip, ipMode: i.ipMode }));
}

describe('real kube-apiserver', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;

  before(async () => {
    cluster = await startTestCluster({ users: [{ name: 'nobody' }] });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  });

  after(async () => {
    await cluster?.stop();
  });

  test('serves on loopback with the CRDs and the metallb-system namespace', async () => {
    assert.match(cluster.server, /^https:\/\/127\.0\.0\.1:\d+$/);
    const ns = await core.readNamespace({ name: NS });
    assert.equal(ns.status?.phase, 'Active');
    for (const plural of ['ipaddresspools', 'l2advertisements', 'bgppeers', 'bgpadvertisements', 'bfdprofiles', 'communities', 'servicel2statuses', 'servicebgpstatuses', 'configurationstates']) {
      const list = (await custom.listNamespacedCustomObject({ ...G, namespace: NS, plural })) as { items: unknown[] };
      assert.deepEqual(list.items, [], plural);
    }
  });

  test('IPAddressPool and L2Advertisement round-trip', async () => {
    await custom.createNamespacedCustomObject({
      ...G,
      namespace: NS,
      plural: 'ipaddresspools',
      body: { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'pool-a' }, spec: { addresses: ['192.0.2.0/28', '2001:db8::10-2001:db8::1f'], autoAssign: true } },
    });
    await custom.createNamespacedCustomObject({
      ...G,
      namespace: NS,
      plural: 'l2advertisements',
      body: {
        apiVersion: 'metallb.io/v1beta1',
        kind: 'L2Advertisement',
        metadata: { name: 'l2-a' },
        spec: { ipAddressPools: ['pool-a'], nodeSelectors: [{ matchLabels: { 'kubernetes.io/hostname': 'node-1' } }] },
      },
    });
    const pool = (await custom.getNamespacedCustomObject({ ...G, namespace: NS, plural: 'ipaddresspools', name: 'pool-a' })) as {
      metadata: { uid?: string };
      spec: { addresses: string[]; autoAssign: boolean; avoidBuggyIPs?: boolean };
    };
    assert.deepEqual(pool.spec.addresses, ['192.0.2.0/28', '2001:db8::10-2001:db8::1f']);
    assert.equal(pool.spec.autoAssign, true);
    assert.ok(pool.metadata.uid);
    const l2 = (await custom.getNamespacedCustomObject({ ...G, namespace: NS, plural: 'l2advertisements', name: 'l2-a' })) as { spec: { ipAddressPools: string[]; nodeSelectors: unknown[] } };
    assert.deepEqual(l2.spec.ipAddressPools, ['pool-a']);
    assert.deepEqual(l2.spec.nodeSelectors, [{ matchLabels: { 'kubernetes.io/hostname': 'node-1' } }]);
  });

  test('Service type LoadBalancer: status written only through the status subresource', async () => {
    const created = await core.createNamespacedService({
      namespace: 'default',
      body: { metadata: { name: 'web' }, spec: { type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }] } },
    });
    assert.match(created.spec?.clusterIP ?? '', /^10\.96\.\d+\.\d+$/, 'a ClusterIP from --service-cluster-ip-range');
    assert.ok((created.spec?.ports?.[0]?.nodePort ?? 0) > 0, 'a NodePort is allocated');
    assert.equal(created.status?.loadBalancer?.ingress, undefined);

    const statusPatch = { status: { loadBalancer: { ingress: [{ ip: '192.0.2.1', ipMode: 'VIP' }] } } };
    // a status in a patch of the main resource is ignored
    const viaMain = await core.patchNamespacedService({ name: 'web', namespace: 'default', body: statusPatch }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    assert.equal(viaMain.status?.loadBalancer?.ingress, undefined);
    // the status subresource writes it
    const patched: V1Service = await core.patchNamespacedServiceStatus({ name: 'web', namespace: 'default', body: statusPatch }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    assert.deepEqual(plainIngress(patched), [{ ip: '192.0.2.1', ipMode: 'VIP' }]);
    const read = await core.readNamespacedService({ name: 'web', namespace: 'default' });
    assert.deepEqual(plainIngress(read), [{ ip: '192.0.2.1', ipMode: 'VIP' }]);
    assert.equal(read.spec?.type, 'LoadBalancer');
  });

  test('CRD schema validation rejects an IPAddressPool with a wrong field type (422)', async () => {
    const r = await statusOf(
      custom.createNamespacedCustomObject({
        ...G,
        namespace: NS,
        plural: 'ipaddresspools',
        body: { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'bad' }, spec: { addresses: '192.0.2.0/24', autoAssign: 'yes' } },
      }),
    );
    assert.equal(r.code, 422, r.message);
    assert.match(r.message, /spec\.addresses/);
    assert.match(r.message, /spec\.autoAssign/);
  });

  test('RBAC is enforced: a user without bindings is forbidden (403)', async () => {
    const kc = cluster.kubeConfigForToken(cluster.userTokens.nobody!, 'nobody');
    const r = await statusOf(kc.makeApiClient(CoreV1Api).listNamespacedService({ namespace: 'default' }));
    assert.equal(r.code, 403, r.message);
    assert.match(r.message, /User "nobody" cannot list resource "services"/);
  });
});
