// The controller's ConfigurationState against a real kube-apiserver, as MetalLB v0.16.1 writes it
// (PoolReconciler reportCondition + ConfigurationStateReconciler): `controller` in MetalLB's
// namespace, label metallb.io/component-type=controller, owned by the controller's Pod, condition
// poolReconcilerValid True/Reconciled or False/ConfigurationError "configuration error: <error>",
// result Valid/Invalid with errorSummary. The controller runs with the `controller`
// ServiceAccount's token and deploy/rbac-controller.yaml, so the RBAC is checked too.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT, startTestCluster, type TestCluster } from './setup/cluster.ts';
import { waitFor } from './setup/wait.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { metallbPath } from '../../src/controller/api.ts';

const NS = 'metallb-system';
const BIN = join(REPO_ROOT, 'bin/metallb-ts');

interface ConfigurationState {
  metadata: { labels?: Record<string, string>; ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string }> };
  status?: { result?: string; errorSummary?: string; conditions?: Array<{ type: string; status: string; reason: string; message: string; lastTransitionTime: string }> };
}

describe('the controller reports its configuration in the ConfigurationState `controller`', () => {
  let cluster: TestCluster;
  let api: KubeClient;
  let dir: string;
  let proc: ChildProcess | undefined;
  const out: string[] = [];

  before(async () => {
    cluster = await startTestCluster();
    api = new KubeClient(cluster.kubeConfig);
    dir = mkdtempSync(join(tmpdir(), 'metallb-ts-configstate-'));
  });

  after(async () => {
    if (proc && proc.exitCode === null) {
      proc.kill('SIGTERM');
      await new Promise((r) => proc!.once('exit', r));
    }
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const state = async (): Promise<ConfigurationState | undefined> => {
    try {
      return await api.request<ConfigurationState>({ path: metallbPath(NS, 'configurationstates', 'controller') });
    } catch {
      return undefined;
    }
  };
  const detail = (): string => out.join('').slice(-3000);
  const pool = (name: string, addresses: string[]) =>
    api.request({
      method: 'POST',
      path: metallbPath(NS, 'ipaddresspools'),
      body: { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: NS }, spec: { addresses } },
    });

  test('Valid, Invalid with the error, Valid again; owner, labels, condition as MetalLB', async () => {
    // deploy/rbac-controller.yaml as it is, and the controller's Pod (never scheduled here).
    const objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
    for (const doc of parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy/rbac-controller.yaml'), 'utf8'))) {
      await objects.create(doc.toJS() as KubernetesObject);
    }
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const pod = await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'controller-7d9f8', labels: { app: 'metallb-ts', component: 'controller' } },
        spec: { serviceAccountName: 'controller', automountServiceAccountToken: false, containers: [{ name: 'controller', image: 'metallb-ts:0.1.0' }] },
      },
    });
    const tr = await core.createNamespacedServiceAccountToken({ namespace: NS, name: 'controller', body: { spec: { audiences: [], expirationSeconds: 3600 } } });
    const kubeconfig = join(dir, 'controller.kubeconfig');
    writeFileSync(kubeconfig, cluster.kubeConfigForToken(tr.status!.token!, `system:serviceaccount:${NS}:controller`).exportConfig());

    await pool('a', ['192.0.2.0/28']);
    proc = spawn(BIN, ['controller', '--kubeconfig', kubeconfig, '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KUBECONFIG: '', METALLB_NAMESPACE: NS, METALLB_POD_NAME: 'controller-7d9f8', METALLB_ML_SECRET_NAME: '', METALLB_DEPLOYMENT: '' },
    });
    proc.stdout!.on('data', (c: Buffer) => out.push(c.toString('utf8')));
    proc.stderr!.on('data', (c: Buffer) => out.push(c.toString('utf8')));

    const valid = await waitFor('ConfigurationState controller, Valid', async () => ((await state())?.status?.result === 'Valid' ? state() : undefined), detail);
    assert.deepEqual(valid.metadata.labels, { 'metallb.io/component-type': 'controller' });
    assert.deepEqual(valid.metadata.ownerReferences, [{ apiVersion: 'v1', kind: 'Pod', name: 'controller-7d9f8', uid: pod.metadata!.uid }]);
    assert.equal(valid.status?.errorSummary, undefined);
    assert.equal(valid.status?.conditions?.length, 1);
    const c = valid.status!.conditions![0]!;
    assert.deepEqual([c.type, c.status, c.reason, c.message], ['poolReconcilerValid', 'True', 'Reconciled', '']);
    assert.match(c.lastTransitionTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    // No webhook here: an overlapping pool reaches the controller, which rejects its configuration.
    await pool('b', ['192.0.2.8/29']);
    const invalid = await waitFor('ConfigurationState controller, Invalid', async () => ((await state())?.status?.result === 'Invalid' ? state() : undefined), detail);
    const error = 'configuration error: metallb-system/IPAddressPool/b: CIDR "192.0.2.8/29" in pool "b" overlaps with already defined CIDR "192.0.2.0/28" of pool "a"';
    assert.equal(invalid.status?.errorSummary, error);
    const ci = invalid.status!.conditions![0]!;
    assert.deepEqual([ci.type, ci.status, ci.reason, ci.message], ['poolReconcilerValid', 'False', 'ConfigurationError', error]);

    await api.request({ method: 'DELETE', path: metallbPath(NS, 'ipaddresspools', 'b') });
    const fixed = await waitFor('ConfigurationState controller, Valid again', async () => ((await state())?.status?.result === 'Valid' ? state() : undefined), detail);
    assert.equal(fixed.status?.errorSummary, undefined, 'errorSummary removed');
    assert.equal(fixed.status?.conditions?.[0]?.status, 'True');
    assert.doesNotMatch(out.join(''), /failed to report the ConfigurationState/, 'the RBAC of deploy/rbac-controller.yaml suffices');
  });
});
