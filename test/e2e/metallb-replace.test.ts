// deploy/replace-metallb applied over MetalLB v0.16.1's own manifests (config/manifests/
// metallb-native.yaml and metallb-frr-k8s.yaml of its module: what `kubectl apply -f` installs) on
// a real kube-apiserver,
// with kubectl's client-side apply as users run it (the README's "Replacing MetalLB"):
// - in place: the apply is accepted (MetalLB's names and selectors), and the Deployment
//   `controller`, DaemonSet `speaker`, webhook configuration, Service and Secret end exactly as a
//   fresh install of the same manifests makes them: nothing of MetalLB's pod templates is left
//   (kubectl's three-way merge removes what MetalLB's last-applied configuration had);
// - node by node: the DaemonSet gets updateStrategy OnDelete (no rolling restart), the rest the same;
// - and back: MetalLB's manifest over metallb-ts's (back-to-metallb's OnDelete patch, then as it
//   is) ends as a fresh MetalLB install.
// No kubelet runs: this checks what the API server stores, not the rollout (test/e2e/
// metallb-speakers.test.ts runs both kinds of speaker in one memberlist).
//
// Needs kubectl (.cache/k8s-bin, build-apiserver.sh, else PATH) and MetalLB's manifests
// (test/setup.d/55-metallb-binaries.sh copies them from its module); no root.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_BIN_DIR, REPO_ROOT, startTestCluster, type TestCluster } from '../integration/setup/cluster.ts';
import { METALLB_BIN_DIR, NS } from './setup/metallb.ts';

const MANIFESTS = ['metallb-native.yaml', 'metallb-frr-k8s.yaml'].map((f) => join(METALLB_BIN_DIR, 'manifests', f));
const MANIFEST = MANIFESTS[0]!;
const KUBECTL = existsSync(join(DEFAULT_BIN_DIR, 'kubectl')) ? join(DEFAULT_BIN_DIR, 'kubectl') : 'kubectl';
const skip = !MANIFESTS.every((m) => existsSync(m))
  ? `${MANIFEST} is missing: run bash test/setup.d/55-metallb-binaries.sh`
  : spawnSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' }).status !== 0
    ? 'no kubectl'
    : false;

/** What the replacement touches: MetalLB's objects of the same names. */
const OBJECTS = [
  ['deployment', 'controller'],
  ['daemonset', 'speaker'],
  ['service', 'metallb-webhook-service'],
  ['secret', 'metallb-webhook-cert'],
  ['validatingwebhookconfiguration', 'metallb-webhook-configuration'],
] as const;

describe("deploy/replace-metallb over MetalLB v0.16.1's manifest, and back", { skip }, () => {
  let cluster: TestCluster;
  let dir: string;
  after(async () => {
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const kubectl = (args: string[], input?: string): string => {
    const r = spawnSync(KUBECTL, ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', input, maxBuffer: 64 << 20 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
    return r.stdout;
  };
  const render = (path: string): string => {
    const r = spawnSync(KUBECTL, ['kustomize', '--load-restrictor', 'LoadRestrictionsNone', path], { encoding: 'utf8', maxBuffer: 64 << 20 });
    if (r.status !== 0) throw new Error(`kubectl kustomize ${path}: ${r.stderr}`);
    return r.stdout;
  };
  /** The objects as stored, without what every write changes (metadata bookkeeping, status). */
  const stored = (): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [kind, name] of OBJECTS) {
      const o = JSON.parse(kubectl(['get', kind, name, ...(kind === 'validatingwebhookconfiguration' ? [] : ['-n', NS]), '-o', 'json', '--ignore-not-found']) || 'null');
      if (!o) {
        out[kind] = null;
        continue;
      }
      const { metadata, status: _status, ...rest } = o;
      void _status;
      const annotations = { ...(metadata.annotations ?? {}) };
      delete annotations['kubectl.kubernetes.io/last-applied-configuration'];
      delete annotations['deprecated.daemonset.template.generation'];
      delete annotations['deployment.kubernetes.io/revision'];
      // the webhooks' CA bundle and the certificate are written by a running controller (none here)
      if (kind === 'validatingwebhookconfiguration') for (const w of rest.webhooks ?? []) delete w.clientConfig.caBundle;
      // allocated by the API server at each creation
      if (kind === 'service') {
        delete rest.spec.clusterIP;
        delete rest.spec.clusterIPs;
      }
      out[kind] = { labels: metadata.labels ?? {}, annotations, ownerReferences: metadata.ownerReferences ?? [], ...rest };
    }
    return out;
  };
  const deleteAll = (): void => {
    for (const [kind, name] of OBJECTS) kubectl(['delete', kind, name, ...(kind === 'validatingwebhookconfiguration' ? [] : ['-n', NS]), '--ignore-not-found', '--wait=true']);
  };

  for (const manifest of MANIFESTS) {
    test(`${manifest.split('/').pop()}: in place and node by node accepted, the objects end as a fresh install of the same manifests; back: as a fresh MetalLB`, { timeout: 300_000 }, async (t) => {
      const t0 = Date.now();
      await cluster?.stop();
      cluster = await startTestCluster({ crdDir: null, namespaces: [] });
      dir ??= mkdtempSync(join(tmpdir(), 'metallb-ts-replace-'));
      const native = readFileSync(manifest, 'utf8');
      const inPlace = render(join(REPO_ROOT, 'deploy/replace-metallb'));
      const nodeByNode = render(join(REPO_ROOT, 'deploy/replace-metallb/node-by-node'));
      // back-to-metallb names MetalLB's manifest by URL: the same kustomization over the module's copy
      const back = join(dir, `back-${manifest.split('/').pop()}`);
      spawnSync('mkdir', ['-p', back]);
      copyFileSync(manifest, join(back, 'metallb.yaml'));
      writeFileSync(
        join(back, 'kustomization.yaml'),
        readFileSync(join(REPO_ROOT, 'deploy/replace-metallb/back-to-metallb/kustomization.yaml'), 'utf8').replace(
          /^- https:\/\/raw\.githubusercontent\.com\/metallb\/metallb\/v0\.16\.1\/config\/manifests\/metallb-native\.yaml$/m,
          '- metallb.yaml',
        ),
      );
      const backNodeByNode = render(back);
      assert.notEqual(backNodeByNode, native, 'the back-to-metallb kustomization resolved its resource');

      // the references: each set of manifests alone on an empty cluster
      kubectl(['apply', '-f', '-'], native);
      kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
      const freshMetallb = stored();
      deleteAll();
      kubectl(['apply', '-f', '-'], inPlace);
      const freshTs = stored();
      deleteAll();
      kubectl(['apply', '-f', '-'], nodeByNode);
      const freshTsOnDelete = stored();
      deleteAll();
      assert.equal((freshTs.daemonset as any).spec.selector.matchLabels.app, 'metallb');
      assert.deepEqual((freshTsOnDelete.daemonset as any).spec.updateStrategy, { type: 'OnDelete' });

      // in place over MetalLB, and back
      kubectl(['apply', '-f', '-'], native);
      assert.deepEqual(stored(), freshMetallb);
      kubectl(['apply', '-f', '-'], inPlace);
      assert.deepEqual(stored(), freshTs, 'metallb-ts applied in place over MetalLB ends as a fresh install');
      kubectl(['apply', '-f', '-'], native);
      assert.deepEqual(stored(), freshMetallb, 'MetalLB applied back over metallb-ts ends as a fresh MetalLB');

      // node by node over MetalLB, back node by node, then MetalLB's manifest as it is
      kubectl(['apply', '-f', '-'], nodeByNode);
      assert.deepEqual(stored(), freshTsOnDelete, 'metallb-ts node by node over MetalLB ends as a fresh install of node-by-node');
      kubectl(['apply', '-f', '-'], backNodeByNode);
      const backStored = stored() as any;
      assert.deepEqual(backStored.daemonset.spec.updateStrategy, { type: 'OnDelete' });
      assert.deepEqual(
        { ...backStored, daemonset: { ...backStored.daemonset, spec: { ...backStored.daemonset.spec, updateStrategy: (freshMetallb.daemonset as any).spec.updateStrategy } } },
        freshMetallb,
        "back-to-metallb over metallb-ts: MetalLB's objects but OnDelete",
      );
      kubectl(['apply', '-f', '-'], native);
      assert.deepEqual(stored(), freshMetallb, "then MetalLB's manifest as it is: a fresh MetalLB (RollingUpdate again)");
      t.diagnostic(`${((Date.now() - t0) / 1000).toFixed(1)} s`);
    });
  }
});
