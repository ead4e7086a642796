// deploy/ against a real kube-apiserver (test/integration/setup): every manifest of
// deploy/kustomization.yaml applies (server-side apply; server-side dry run for the Deployment and
// DaemonSet, which nothing would run here), and the RBAC is enough and no more: the speaker and
// the controller run as subprocesses with their ServiceAccounts' tokens (TokenRequest) and do
// their job, a ServiceAccount without the roles is refused in one line (exit 3), and
// SubjectAccessReviews show what each account may not do. Also the offline checks: the CRDs are
// referenced (pinned to v0.16.1, the same files as ../shared/crds), and the Dockerfile installs
// every package the source imports.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import {
  AuthorizationV1Api, CoreV1Api, CustomObjectsApi, DiscoveryV1Api, KubernetesObjectApi, PatchStrategy, setHeaderOptions,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { DEFAULT_CRD_DIR, REPO_ROOT, startTestCluster, type TestCluster } from './setup/cluster.ts';
import { sleep, waitFor } from './setup/wait.ts';

const NS = 'metallb-system';
const DEPLOY = join(REPO_ROOT, 'deploy');
const BIN = join(REPO_ROOT, 'bin/metallb-ts');
const G = { group: 'metallb.io', version: 'v1beta1' } as const;

/** The objects of deploy/kustomization.yaml's resources, in order, with their file. */
function manifests(): Array<{ file: string; obj: KubernetesObject }> {
  const kust = parse(readFileSync(join(DEPLOY, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
  return kust.resources.flatMap((file) => parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8'))
    .map((d) => d.toJS() as KubernetesObject).filter((o) => o && o.kind).map((obj) => ({ file, obj })));
}


interface Proc {
  proc: ChildProcess;
  out: string[];
  err: string[];
  exit: Promise<number | null>;
}

function start(args: string[]): Proc {
  // Speakers here run in the machine's own network namespace: log announcements, never send ARP.
  if (args[0] === 'speaker') args = [...args, '--l2-data-plane', 'log'];
  const proc = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, METALLB_NAMESPACE: '', METALLB_NODE_NAME: '', METALLB_POD_NAME: '' } });
  const p: Proc = { proc, out: [], err: [], exit: new Promise((r) => proc.on('exit', (c) => r(c))) };
  proc.stdout!.on('data', (c: Buffer) => p.out.push(c.toString('utf8')));
  proc.stderr!.on('data', (c: Buffer) => p.err.push(c.toString('utf8')));
  return p;
}

describe('deploy/ offline', () => {
  test('kustomization lists every manifest; CRDs referenced at v0.16.1, the same files as ../shared/crds', () => {
    const kust = parse(readFileSync(join(DEPLOY, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    const yamls = readdirSync(DEPLOY).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort();
    assert.deepEqual([...kust.resources].sort(), yamls);
    const crds = parse(readFileSync(join(DEPLOY, 'crds/kustomization.yaml'), 'utf8')) as { resources: string[] };
    const prefix = 'https://raw.githubusercontent.com/metallb/metallb/v0.16.1/config/crd/bases/';
    for (const url of crds.resources) assert.ok(url.startsWith(prefix), url);
    assert.deepEqual(crds.resources.map((u) => u.slice(prefix.length)).sort(), readdirSync(DEFAULT_CRD_DIR).filter((f) => f.endsWith('.yaml')).sort());
    assert.deepEqual(readdirSync(join(DEPLOY, 'crds')), ['kustomization.yaml'], 'no CRD copied into deploy/');
  });

  test('the speaker DaemonSet: host network, NET_RAW only, no memberlist variables; the controller runs as nobody', () => {
    const objs = manifests().map((m) => m.obj as any);
    const ds = objs.find((o) => o.kind === 'DaemonSet');
    const c = ds.spec.template.spec.containers[0];
    assert.equal(ds.spec.template.spec.hostNetwork, true);
    assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'], add: ['NET_RAW'] });
    assert.equal(c.args[0], 'speaker');
    assert.ok(!c.env.some((e: { name: string }) => e.name.startsWith('METALLB_ML_')), 'memberlist is not available: the speaker would refuse');
    assert.equal(ds.spec.template.spec.serviceAccountName, 'speaker');
    const dep = objs.find((o) => o.kind === 'Deployment');
    assert.equal(dep.spec.template.spec.securityContext.runAsUser, 65534);
    assert.equal(dep.spec.template.spec.containers[0].args[0], 'controller');
    assert.equal(dep.spec.template.spec.serviceAccountName, 'controller');
    const secret = objs.find((o) => o.kind === 'Secret');
    assert.equal(secret.metadata.name, 'memberlist');
    assert.equal(secret.data, undefined, 'no key committed');
  });

  test('Dockerfile: node:24-slim, runtime dependencies only, and they cover every package src/ imports', () => {
    const df = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    assert.match(df, /^FROM node:24-slim$/m);
    assert.match(df, /npm ci --omit=dev/);
    assert.match(df, /^COPY src \.\/src$/m);
    assert.match(df, /^COPY bin \.\/bin$/m);
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const files: string[] = [];
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else if (e.name.endsWith('.ts')) files.push(join(d, e.name));
      }
    };
    walk(join(REPO_ROOT, 'src'));
    const missing = new Set<string>();
    for (const f of files) {
      for (const m of readFileSync(f, 'utf8').matchAll(/^\s*(?:import|export)\s(?:[^'"]*?\sfrom\s)?['"]([^'"./][^'"]*)['"]/gm)) {
        const spec = m[1]!;
        if (spec.startsWith('node:')) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        if (!(name in pkg.dependencies)) missing.add(`${name} (${relative(REPO_ROOT, f)})`);
      }
    }
    assert.deepEqual([...missing], [], 'imported by src/ but not a runtime dependency');
  });
});

describe('deploy/ on a real API server', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let objects: KubernetesObjectApi;
  let dir: string;
  const procs: Proc[] = [];

  async function saKubeconfig(sa: string): Promise<string> {
    const tr = await core.createNamespacedServiceAccountToken({ namespace: NS, name: sa, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
    const file = join(dir, `${sa}.kubeconfig`);
    writeFileSync(file, cluster.kubeConfigForToken(tr.status!.token!, `system:serviceaccount:${NS}:${sa}`).exportConfig());
    return file;
  }

  async function can(sa: string, attrs: { verb: string; resource: string; group?: string; subresource?: string; namespace?: string }): Promise<boolean> {
    const authz = cluster.kubeConfig.makeApiClient(AuthorizationV1Api);
    const r = await authz.createSubjectAccessReview({ body: { spec: {
      user: `system:serviceaccount:${NS}:${sa}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${NS}`],
      resourceAttributes: { verb: attrs.verb, resource: attrs.resource, group: attrs.group ?? '', subresource: attrs.subresource ?? '', namespace: attrs.namespace ?? '' },
    } } });
    return r.status?.allowed === true;
  }

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
    dir = mkdtempSync(join(tmpdir(), 'metallb-ts-deploy-'));
  });

  after(async () => {
    for (const p of procs) if (p.proc.exitCode === null) p.proc.kill('SIGKILL');
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('every manifest applies (server-side apply; dry run for the Deployment and DaemonSet)', async () => {
    for (const { file, obj } of manifests()) {
      const workload = obj.kind === 'Deployment' || obj.kind === 'DaemonSet';
      const what = `${file}: ${obj.kind}/${obj.metadata?.name}`;
      try {
        await objects.patch(obj, undefined, workload ? 'All' : undefined, 'metallb-ts-deploy-test', true, PatchStrategy.ServerSideApply);
      } catch (err) {
        assert.fail(`${what} rejected: ${(err as { body?: unknown }).body ?? String(err)}`);
      }
    }
    const ns = await core.readNamespace({ name: NS });
    assert.equal(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'privileged');
    await core.readNamespacedServiceAccount({ namespace: NS, name: 'speaker' });
    await core.readNamespacedServiceAccount({ namespace: NS, name: 'controller' });
    await core.readNamespacedSecret({ namespace: NS, name: 'memberlist' });
  });

  test('least privilege: what each ServiceAccount may and may not do', async () => {
    const cases: Array<[string, Parameters<typeof can>[1], boolean]> = [
      ['speaker', { verb: 'create', resource: 'servicel2statuses', group: 'metallb.io', namespace: NS }, true],
      ['speaker', { verb: 'patch', resource: 'servicel2statuses', group: 'metallb.io', subresource: 'status', namespace: NS }, true],
      ['speaker', { verb: 'watch', resource: 'endpointslices', group: 'discovery.k8s.io' }, true],
      ['speaker', { verb: 'get', resource: 'pods', namespace: NS }, true],
      ['speaker', { verb: 'create', resource: 'servicel2statuses', group: 'metallb.io', namespace: 'default' }, false],
      ['speaker', { verb: 'list', resource: 'secrets', namespace: 'default' }, false],
      ['speaker', { verb: 'update', resource: 'services', subresource: 'status', namespace: 'default' }, false],
      ['speaker', { verb: 'create', resource: 'ipaddresspools', group: 'metallb.io', namespace: NS }, false],
      ['controller', { verb: 'update', resource: 'services', subresource: 'status', namespace: 'default' }, true],
      ['controller', { verb: 'update', resource: 'ipaddresspools', group: 'metallb.io', subresource: 'status', namespace: NS }, true],
      ['controller', { verb: 'create', resource: 'servicel2statuses', group: 'metallb.io', namespace: NS }, false],
      ['controller', { verb: 'list', resource: 'secrets', namespace: NS }, false],
      ['controller', { verb: 'list', resource: 'nodes' }, false],
    ];
    for (const [sa, attrs, expected] of cases) {
      assert.equal(await can(sa, attrs), expected, `${sa} ${attrs.verb} ${attrs.resource}${attrs.subresource ? `/${attrs.subresource}` : ''} in ${attrs.namespace || 'the cluster'}`);
    }
  });

  test('the controller and the speaker do their job with their own tokens', async () => {
    await core.createNode({ body: { metadata: { name: 'node-x', labels: { 'kubernetes.io/hostname': 'node-x' } } } });
    await custom.createNamespacedCustomObject({ ...G, namespace: NS, plural: 'ipaddresspools', body: {
      apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'lab' }, spec: { addresses: ['192.0.2.0/28'] } } });
    await custom.createNamespacedCustomObject({ ...G, namespace: NS, plural: 'l2advertisements', body: {
      apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name: 'l2' }, spec: { ipAddressPools: ['lab'] } } });
    await core.createNamespacedService({ namespace: 'default', body: {
      metadata: { name: 'web' }, spec: { type: 'LoadBalancer', ports: [{ port: 80, protocol: 'TCP' }], selector: { app: 'web' } } } });
    await cluster.kubeConfig.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({ namespace: 'default', body: {
      metadata: { name: 'web-1', labels: { 'kubernetes.io/service-name': 'web' } }, addressType: 'IPv4',
      endpoints: [{ addresses: ['10.244.0.5'], nodeName: 'node-x', conditions: { ready: true } }] } });
    // The speaker's own Pod (never scheduled here): --pod-name makes it the ServiceL2Status owner.
    const pod = await core.createNamespacedPod({ namespace: NS, body: {
      metadata: { name: 'speaker-x', labels: { app: 'metallb-ts', component: 'speaker' } },
      spec: { serviceAccountName: 'speaker', automountServiceAccountToken: false, nodeName: 'node-x', containers: [{ name: 'speaker', image: 'metallb-ts:0.1.0' }] } } });

    const controller = start(['controller', '--kubeconfig', await saKubeconfig('controller'), '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0']);
    const speaker = start(['speaker', '--node-name', 'node-x', '--pod-name', 'speaker-x', '--kubeconfig', await saKubeconfig('speaker'),
      '--metrics-bind-address', '127.0.0.1', '--port', '0', '--health-probe-port', '0']);
    procs.push(controller, speaker);
    const detail = () => `controller:\n${controller.out.join('').slice(-1500)}${controller.err.join('')}\nspeaker:\n${speaker.out.join('').slice(-1500)}${speaker.err.join('')}`;

    const ip = await waitFor('the controller writes an IP into the Service status', async () => {
      const svc = await core.readNamespacedService({ namespace: 'default', name: 'web' });
      return svc.status?.loadBalancer?.ingress?.[0]?.ip;
    }, detail);
    assert.match(ip, /^192\.0\.2\./);
    const st = await waitFor('the speaker writes the ServiceL2Status with its status', async () => {
      const list = await custom.listNamespacedCustomObject({ ...G, namespace: NS, plural: 'servicel2statuses' }) as { items: any[] };
      return list.items.find((o) => o.status?.node === 'node-x');
    }, detail);
    assert.deepEqual(st.metadata.ownerReferences.map((r: any) => [r.kind, r.name, r.uid]), [['Pod', 'speaker-x', pod.metadata!.uid]]);
    await waitFor('the nodeAssigned event', async () => {
      const ev = await core.listNamespacedEvent({ namespace: 'default' });
      return ev.items.find((e) => e.reason === 'nodeAssigned' && e.involvedObject.name === 'web');
    }, detail);
    const forbidden = (p: Proc) => (p.out.join('') + p.err.join('')).split('\n').filter((l) => /forbidden|403/i.test(l));
    assert.deepEqual(forbidden(speaker), [], 'the speaker hit no RBAC refusal');
    assert.deepEqual(forbidden(controller), [], 'the controller hit no RBAC refusal');

    speaker.proc.kill('SIGTERM');
    controller.proc.kill('SIGTERM');
    assert.equal(await speaker.exit, 0, detail());
    await controller.exit;
    const left = await custom.listNamespacedCustomObject({ ...G, namespace: NS, plural: 'servicel2statuses' }) as { items: unknown[] };
    assert.deepEqual(left.items, [], 'the speaker deleted its ServiceL2Status on shutdown (delete allowed)');
  });

  test('a ServiceAccount without the roles is refused in one line, exit 3', async () => {
    await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'nobody' } } });
    const p = start(['speaker', '--node-name', 'node-x', '--kubeconfig', await saKubeconfig('nobody'), '--metrics-bind-address', '127.0.0.1', '--port', '0', '--health-probe-port', '0']);
    procs.push(p);
    const code = await Promise.race([p.exit, sleep(60_000).then(() => 'timeout')]);
    assert.equal(code, 3, p.err.join(''));
    const err = p.err.join('').trim();
    assert.equal(err.split('\n').length, 1, err);
    assert.match(err, /^metallb-ts: cannot list .* forbidden/);
  });
});
