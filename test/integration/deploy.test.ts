// deploy/ against a real kube-apiserver (test/integration/setup) with MetalLB's CRDs and frr-k8s
// v0.0.25's (test/setup.d/45-frr-k8s.sh copies them into .cache/frr-k8s/crds): every manifest of
// deploy/kustomization.yaml applies (server-side apply; server-side dry run for the Deployment and
// DaemonSet, which nothing would run here), and the RBAC is enough and no more: the controller
// runs as a subprocess with its ServiceAccount's token and the manifest's memberlist variables and
// creates the memberlist Secret (owned by its Deployment), the speaker runs with its token, the
// manifest's BGP variables and memberlist on, reading that key, serves /debug/members, announces
// over L2 and through frr-k8s (FRRConfiguration `metallb-<node>` created, an edit of it reverted,
// ServiceBGPStatus, ConfigurationState `speaker-<node>`), and a speaker whose node has no BGP peer
// deletes a leftover `metallb-<node>`; a ServiceAccount without the roles is refused in one line
// (exit 3), and SubjectAccessReviews show what each account may and may not do, including list and
// watch of every list the speaker watches (SPEAKER_BGP_KINDS). Also the offline checks: memberlist
// and BGP settings of the manifests agree with each other (labels, port, Secret, mounts, the
// frr-k8s namespace), the CRDs are referenced (pinned to v0.16.1, the same files as test/reference/crds),
// deploy/frr-k8s renders frr-k8s v0.0.25 into metallb-system (kubectl kustomize, against the Go module
// cache's copy), and the Dockerfile installs every package the source imports.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { AuthorizationV1Api, CoreV1Api, CustomObjectsApi, DiscoveryV1Api, KubernetesObjectApi, PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { DEFAULT_CRD_DIR, installCrds, RBAC_REFUSAL, REPO_ROOT, startTestCluster, type TestCluster } from './setup/cluster.ts';
import { sleep, waitFor } from './setup/wait.ts';
import { SPEAKER_BGP_KINDS } from '../../src/speaker/speaker.ts';
import { RESOURCES } from '../../src/kube/live.ts';
import { createMetalLBObject } from './setup/metallb-objects.ts';

const NS = 'metallb-system';
const DEPLOY = join(REPO_ROOT, 'deploy');
const BIN = join(REPO_ROOT, 'bin/metallb-ts');
const G = { group: 'metallb.io', version: 'v1beta1' } as const;
const FRR = { group: 'frrk8s.metallb.io', version: 'v1beta1', plural: 'frrconfigurations' } as const;
/** frr-k8s v0.0.25's CRDs, copied there by test/setup.d/45-frr-k8s.sh; `METALLB_TS_FRRK8S_DIR` overrides the directory. */
const FRRK8S_CRD_DIR = join(process.env.METALLB_TS_FRRK8S_DIR ?? join(REPO_ROOT, '.cache/frr-k8s'), 'crds');

/** The objects of deploy/kustomization.yaml's resources, in order, with their file. */
function manifests(): Array<{ file: string; obj: KubernetesObject }> {
  const kust = parse(readFileSync(join(DEPLOY, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
  return kust.resources.flatMap((file) =>
    parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8'))
      .map((d) => d.toJS() as KubernetesObject)
      .filter((o) => o?.kind)
      .map((obj) => ({ file, obj })),
  );
}

interface Proc {
  proc: ChildProcess;
  out: string[];
  err: string[];
  exit: Promise<number | null>;
}

/** `p`'s output lines that report an RBAC refusal (RBAC_REFUSAL). */
function rbacRefusals(p: Proc): string[] {
  return (p.out.join('') + p.err.join('')).split('\n').filter((l) => RBAC_REFUSAL.test(l));
}

/** The `env` of a container as name → literal value (fieldRef ones left out). */
function literalEnv(container: { env: Array<{ name: string; value?: string }> }): Record<string, string> {
  return Object.fromEntries(container.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
}

/** Starts metallb-ts with `args`; the METALLB_* variables of this machine are cleared, `env` added. */
function start(args: string[], env: Record<string, string> = {}): Proc {
  // Speakers here run in the machine's own network namespace: log announcements, never send ARP.
  if (args[0] === 'speaker') args = [...args, '--l2-data-plane', 'log'];
  const proc = spawn(BIN, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      METALLB_NAMESPACE: '',
      METALLB_NODE_NAME: '',
      METALLB_POD_NAME: '',
      METALLB_ML_SECRET_NAME: '',
      METALLB_DEPLOYMENT: '',
      METALLB_ML_BIND_ADDR: '',
      METALLB_ML_BIND_PORT: '',
      METALLB_ML_LABELS: '',
      METALLB_ML_SECRET_KEY_PATH: '',
      METALLB_BGP_TYPE: '',
      FRRK8S_NAMESPACE: '',
      ...env,
    },
  });
  const p: Proc = { proc, out: [], err: [], exit: new Promise((r) => proc.on('exit', (c) => r(c))) };
  proc.stdout!.on('data', (c: Buffer) => p.out.push(c.toString('utf8')));
  proc.stderr!.on('data', (c: Buffer) => p.err.push(c.toString('utf8')));
  return p;
}

describe('deploy/ offline', () => {
  test('kustomization lists every manifest; CRDs referenced at v0.16.1, the same files as test/reference/crds', () => {
    const kust = parse(readFileSync(join(DEPLOY, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    const yamls = readdirSync(DEPLOY)
      .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
      .sort();
    assert.deepEqual([...kust.resources].sort(), yamls);
    const crds = parse(readFileSync(join(DEPLOY, 'crds/kustomization.yaml'), 'utf8')) as { resources: string[] };
    const prefix = 'https://raw.githubusercontent.com/metallb/metallb/v0.16.1/config/crd/bases/';
    for (const url of crds.resources) assert.ok(url.startsWith(prefix), url);
    assert.deepEqual(
      crds.resources.map((u) => u.slice(prefix.length)).sort(),
      readdirSync(DEFAULT_CRD_DIR)
        .filter((f) => f.endsWith('.yaml'))
        .sort(),
    );
    assert.deepEqual(readdirSync(join(DEPLOY, 'crds')), ['kustomization.yaml'], 'no CRD copied into deploy/');
  });

  test('the speaker DaemonSet: host network, NET_RAW only; the controller runs as nobody', () => {
    const objs = manifests().map((m) => m.obj as any);
    const ds = objs.find((o) => o.kind === 'DaemonSet');
    const c = ds.spec.template.spec.containers[0];
    assert.equal(ds.spec.template.spec.hostNetwork, true);
    assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'], add: ['NET_RAW'] });
    assert.equal(c.args[0], 'speaker');
    assert.equal(ds.spec.template.spec.serviceAccountName, 'speaker');
    const dep = objs.find((o) => o.kind === 'Deployment');
    assert.equal(dep.spec.template.spec.securityContext.runAsUser, 65534);
    assert.equal(dep.spec.template.spec.containers[0].args[0], 'controller');
    assert.equal(dep.spec.template.spec.serviceAccountName, 'controller');
    assert.deepEqual(
      objs.filter((o) => o.kind === 'Secret'),
      [],
      'no Secret in deploy/: the controller creates the memberlist Secret',
    );
  });

  test('probes a busy but healthy daemon passes: 5 s timeouts, liveness restarts only after 6 failures in a row (issue #15)', () => {
    const objs = manifests().map((m) => m.obj as any);
    for (const kind of ['DaemonSet', 'Deployment']) {
      const c = objs.find((o) => o.kind === kind).spec.template.spec.containers[0];
      assert.equal(c.livenessProbe.httpGet.path, '/healthz', kind);
      assert.equal(c.readinessProbe.httpGet.path, '/readyz', kind);
      for (const probe of [c.livenessProbe, c.readinessProbe]) assert.ok(probe.timeoutSeconds >= 5, `${kind}: ${JSON.stringify(probe)}`);
      assert.ok(c.livenessProbe.failureThreshold * c.livenessProbe.periodSeconds >= 60, `${kind}: a minute of failed liveness probes before a restart`);
    }
  });

  test('memberlist on, as MetalLB: the controller creates the Secret the speaker mounts; labels, port and paths agree', () => {
    const objs = manifests().map((m) => m.obj as any);
    const dep = objs.find((o) => o.kind === 'Deployment');
    const ds = objs.find((o) => o.kind === 'DaemonSet');
    const cenv = literalEnv(dep.spec.template.spec.containers[0]);
    assert.equal(cenv.METALLB_ML_SECRET_NAME, 'memberlist');
    assert.equal(cenv.METALLB_DEPLOYMENT, dep.metadata.name, "METALLB_DEPLOYMENT names the controller Deployment (the Secret's owner)");

    const spec = ds.spec.template.spec;
    const c = spec.containers[0];
    const env = Object.fromEntries(c.env.map((e: { name: string }) => [e.name, e]));
    assert.deepEqual(env.METALLB_ML_BIND_ADDR.valueFrom, { fieldRef: { fieldPath: 'status.podIP' } });
    const labels = Object.fromEntries((env.METALLB_ML_LABELS.value as string).split(',').map((kv) => kv.split('=')));
    assert.deepEqual(labels, ds.spec.template.metadata.labels, 'METALLB_ML_LABELS selects exactly the speaker pods');
    assert.deepEqual(labels, ds.spec.selector.matchLabels);
    assert.equal(env.METALLB_ML_BIND_PORT.value, '7946');
    assert.deepEqual(
      c.ports.filter((p: { name: string }) => p.name.startsWith('memberlist')).map((p: any) => [p.containerPort, p.protocol ?? 'TCP']),
      [
        [7946, 'TCP'],
        [7946, 'UDP'],
      ],
    );
    const mount = (path: string) => {
      const m = c.volumeMounts.find((v: { mountPath: string }) => v.mountPath === path);
      assert.ok(m, `a volume is mounted at ${path}`);
      return spec.volumes.find((v: { name: string }) => v.name === m.name);
    };
    assert.equal(env.METALLB_ML_SECRET_KEY_PATH.value, '/etc/ml_secret_key');
    const secretVol = mount('/etc/ml_secret_key');
    assert.equal(secretVol.secret.secretName, cenv.METALLB_ML_SECRET_NAME, 'the Secret the controller creates');
    assert.notEqual(secretVol.secret.optional, true, 'not optional, as MetalLB: the pod waits for the controller');
    assert.deepEqual(mount('/etc/metallb/memberlist').configMap, { name: 'metallb-memberlist-config', optional: true });
    assert.deepEqual(mount('/etc/metallb').configMap, { name: 'metallb-excludel2', optional: true, defaultMode: 256 });
  });

  test('BGP through frr-k8s: METALLB_BGP_TYPE=frr-k8s, FRRK8S_NAMESPACE = the pod namespace, where the frrconfigurations Role is', () => {
    const objs = manifests().map((m) => m.obj as any);
    const ds = objs.find((o) => o.kind === 'DaemonSet');
    const env = Object.fromEntries(ds.spec.template.spec.containers[0].env.map((e: { name: string }) => [e.name, e]));
    assert.deepEqual(env.METALLB_BGP_TYPE, { name: 'METALLB_BGP_TYPE', value: 'frr-k8s' });
    assert.deepEqual(env.FRRK8S_NAMESPACE.valueFrom, { fieldRef: { fieldPath: 'metadata.namespace' } });
    // frr-k8s runs beside MetalLB: the Role granting frrconfigurations is in the speaker's namespace, bound to the speaker.
    const frrRoles = objs.filter((o) => o.kind === 'Role' && o.rules.some((r: any) => r.apiGroups.includes('frrk8s.metallb.io')));
    assert.deepEqual(
      frrRoles.map((r) => [r.metadata.name, r.metadata.namespace]),
      [['metallb-ts-speaker-frrk8s', ds.metadata.namespace]],
    );
    assert.deepEqual(frrRoles[0].rules, [{ apiGroups: ['frrk8s.metallb.io'], resources: ['frrconfigurations'], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] }]);
    const binding = objs.find((o) => o.kind === 'RoleBinding' && o.roleRef.name === 'metallb-ts-speaker-frrk8s');
    assert.equal(binding.metadata.namespace, frrRoles[0].metadata.namespace);
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: ds.spec.template.spec.serviceAccountName, namespace: ds.metadata.namespace }]);
    // only frr-k8s's FRRConfiguration kind, nowhere cluster-wide
    for (const o of objs.filter((x) => x.kind === 'ClusterRole')) {
      assert.ok(!o.rules.some((r: any) => r.apiGroups.includes('frrk8s.metallb.io')), `${o.metadata.name} grants nothing of frrk8s.metallb.io`);
    }
  });

  test("deploy/frr-k8s: frr-k8s v0.0.25 by reference, rendered into the speaker's namespace without its own Namespace", (t) => {
    const kust = parse(readFileSync(join(DEPLOY, 'frr-k8s/kustomization.yaml'), 'utf8')) as { namespace: string; resources: string[] };
    const remote = 'https://github.com/metallb/frr-k8s/config/default/?timeout=120&ref=v0.0.25';
    assert.deepEqual(kust.resources, [remote]);
    assert.deepEqual(readdirSync(join(DEPLOY, 'frr-k8s')), ['kustomization.yaml'], 'nothing of frr-k8s copied into deploy/');
    const ds = manifests().find((m) => m.obj.kind === 'DaemonSet')!.obj;
    assert.equal(kust.namespace, ds.metadata!.namespace, "frr-k8s where FRRK8S_NAMESPACE (the speaker pod's namespace) points");
    // Render it with kubectl's kustomize against the module's own config (go mod download put it in
    // the module cache, test/setup.d/45-frr-k8s.sh), the remote base swapped for that directory
    // (relative: kustomize refuses an absolute root).
    const gomodcache = spawnSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).stdout?.trim();
    const base = gomodcache ? join(gomodcache, 'github.com/metallb/frr-k8s@v0.0.25/config/default') : '';
    if (!base || !existsSync(base)) return t.skip('frr-k8s v0.0.25 is not in the Go module cache (bash test/setup.sh)');
    if (spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status !== 0) return t.skip('no kubectl to render the kustomization');
    const overlay = mkdtempSync(join(tmpdir(), 'metallb-ts-frrk8s-'));
    try {
      writeFileSync(join(overlay, 'kustomization.yaml'), readFileSync(join(DEPLOY, 'frr-k8s/kustomization.yaml'), 'utf8').replace(remote, relative(overlay, base)));
      const r = spawnSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const objs = parseAllDocuments(r.stdout)
        .map((d) => d.toJS() as any)
        .filter(Boolean);
      assert.deepEqual(
        objs.filter((o) => o.kind === 'Namespace'),
        [],
        'no Namespace: metallb-system comes from deploy/namespace.yaml',
      );
      const clusterScoped = new Set(['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'ValidatingWebhookConfiguration']);
      for (const o of objs.filter((x) => !clusterScoped.has(x.kind))) assert.equal(o.metadata.namespace, NS, `${o.kind}/${o.metadata.name}`);
      assert.ok(objs.some((o) => o.kind === 'CustomResourceDefinition' && o.metadata.name === 'frrconfigurations.frrk8s.metallb.io'));
      assert.ok(
        objs.some((o) => o.kind === 'DaemonSet'),
        'the frr-k8s DaemonSet',
      );
      assert.ok(!r.stdout.includes('frr-k8s-system'), 'nothing left pointing at frr-k8s-system');
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
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

  async function can(sa: string, attrs: { verb: string; resource: string; group?: string; subresource?: string; namespace?: string; name?: string }): Promise<boolean> {
    const authz = cluster.kubeConfig.makeApiClient(AuthorizationV1Api);
    const r = await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${NS}:${sa}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${NS}`],
          resourceAttributes: { verb: attrs.verb, resource: attrs.resource, group: attrs.group ?? '', subresource: attrs.subresource ?? '', namespace: attrs.namespace ?? '', name: attrs.name ?? '' },
        },
      },
    });
    return r.status?.allowed === true;
  }

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
    dir = mkdtempSync(join(tmpdir(), 'metallb-ts-deploy-'));
    // The FRRConfiguration CRD is frr-k8s's, not MetalLB's: not in test/reference/crds.
    if (!existsSync(join(FRRK8S_CRD_DIR, 'frrk8s.metallb.io_frrconfigurations.yaml'))) {
      throw new Error(`${FRRK8S_CRD_DIR}/frrk8s.metallb.io_frrconfigurations.yaml is missing: run \`bash test/setup.sh\` (test/setup.d/45-frr-k8s.sh) first`);
    }
    await installCrds(cluster.kubeConfig, FRRK8S_CRD_DIR);
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
  });

  test('least privilege: what each ServiceAccount may and may not do', async () => {
    const cases: Array<[string, Parameters<typeof can>[1], boolean]> = [
      ['speaker', { verb: 'create', resource: 'servicel2statuses', group: 'metallb.io', namespace: NS }, true],
      ['speaker', { verb: 'patch', resource: 'servicel2statuses', group: 'metallb.io', subresource: 'status', namespace: NS }, true],
      ['speaker', { verb: 'watch', resource: 'endpointslices', group: 'discovery.k8s.io' }, true],
      ['speaker', { verb: 'patch', resource: 'events', namespace: 'default' }, true],
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
      // the memberlist Secret: list it by name, create it, get the owner Deployment; nothing more
      ['controller', { verb: 'list', resource: 'secrets', namespace: NS, name: 'memberlist' }, true],
      ['controller', { verb: 'create', resource: 'secrets', namespace: NS }, true],
      ['controller', { verb: 'get', resource: 'deployments', group: 'apps', namespace: NS, name: 'controller' }, true],
      ['controller', { verb: 'get', resource: 'secrets', namespace: NS, name: 'memberlist' }, false],
      ['controller', { verb: 'list', resource: 'secrets', namespace: NS, name: 'other' }, false],
      ['controller', { verb: 'create', resource: 'secrets', namespace: 'default' }, false],
      ['controller', { verb: 'get', resource: 'deployments', group: 'apps', namespace: NS, name: 'other' }, false],
      ['controller', { verb: 'update', resource: 'secrets', namespace: NS, name: 'memberlist' }, false],
      // the speaker finds its memberlist peers by listing the speaker pods
      ['speaker', { verb: 'list', resource: 'pods', namespace: NS }, true],
      ['speaker', { verb: 'list', resource: 'pods', namespace: 'default' }, false],
      // BGP through frr-k8s: its ServiceBGPStatus objects, its ConfigurationState, its node's FRRConfiguration
      ['speaker', { verb: 'create', resource: 'servicebgpstatuses', group: 'metallb.io', namespace: NS }, true],
      ['speaker', { verb: 'delete', resource: 'servicebgpstatuses', group: 'metallb.io', namespace: NS }, true],
      ['speaker', { verb: 'patch', resource: 'servicebgpstatuses', group: 'metallb.io', subresource: 'status', namespace: NS }, true],
      ['speaker', { verb: 'update', resource: 'servicebgpstatuses', group: 'metallb.io', namespace: NS }, false],
      ['speaker', { verb: 'create', resource: 'servicebgpstatuses', group: 'metallb.io', namespace: 'default' }, false],
      ['speaker', { verb: 'get', resource: 'configurationstates', group: 'metallb.io', namespace: NS, name: 'speaker-node-x' }, true],
      ['speaker', { verb: 'create', resource: 'configurationstates', group: 'metallb.io', namespace: NS }, true],
      ['speaker', { verb: 'patch', resource: 'configurationstates', group: 'metallb.io', subresource: 'status', namespace: NS }, true],
      ['speaker', { verb: 'delete', resource: 'configurationstates', group: 'metallb.io', namespace: NS }, false],
      ['speaker', { verb: 'update', resource: 'configurationstates', group: 'metallb.io', namespace: NS }, false],
      ['speaker', { verb: 'list', resource: 'configurationstates', group: 'metallb.io', namespace: NS }, false],
      ...(['get', 'list', 'watch', 'create', 'update', 'delete'] as const).map((verb): [string, Parameters<typeof can>[1], boolean] => [
        'speaker',
        { verb, resource: 'frrconfigurations', group: 'frrk8s.metallb.io', namespace: NS },
        true,
      ]),
      ['speaker', { verb: 'patch', resource: 'frrconfigurations', group: 'frrk8s.metallb.io', namespace: NS }, false],
      ['speaker', { verb: 'create', resource: 'frrconfigurations', group: 'frrk8s.metallb.io', namespace: 'default' }, false],
      ['speaker', { verb: 'list', resource: 'frrconfigurations', group: 'frrk8s.metallb.io' }, false],
      ['speaker', { verb: 'list', resource: 'frrnodestates', group: 'frrk8s.metallb.io', namespace: NS }, false],
      ['speaker', { verb: 'get', resource: 'secrets', namespace: NS, name: 'bgp-password' }, false],
      ['controller', { verb: 'create', resource: 'frrconfigurations', group: 'frrk8s.metallb.io', namespace: NS }, false],
      ['controller', { verb: 'create', resource: 'servicebgpstatuses', group: 'metallb.io', namespace: NS }, false],
    ];
    for (const [sa, attrs, expected] of cases) {
      assert.equal(await can(sa, attrs), expected, `${sa} ${attrs.verb} ${attrs.resource}${attrs.subresource ? `/${attrs.subresource}` : ''} in ${attrs.namespace || 'the cluster'}`);
    }
  });

  test('the speaker may list and watch everything it watches (SPEAKER_BGP_KINDS), where it watches it', async () => {
    // Without it the speaker's start fails (exit 3), or for the optional FRRConfiguration, its own object reads as absent.
    const ds = manifests().find((m) => m.obj.kind === 'DaemonSet')!.obj as any;
    const env = Object.fromEntries(ds.spec.template.spec.containers[0].env.map((e: { name: string }) => [e.name, e]));
    // FRRK8S_NAMESPACE comes from metadata.namespace: the DaemonSet's namespace.
    const frrk8sNamespace: string = env.FRRK8S_NAMESPACE.value ?? ds.metadata.namespace;
    const specs = RESOURCES.filter((r) => SPEAKER_BGP_KINDS.includes(r.list));
    assert.deepEqual(new Set(specs.map((r) => r.list)), new Set(SPEAKER_BGP_KINDS), 'every watched list has a resource');
    for (const r of specs) {
      const group = r.apiVersion.includes('/') ? r.apiVersion.split('/')[0]! : '';
      const namespace = r.scope === 'all' ? '' : r.scope === 'metallb' ? NS : frrk8sNamespace;
      for (const verb of ['list', 'watch']) {
        assert.equal(await can('speaker', { verb, resource: r.plural, group, namespace }), true, `speaker ${verb} ${r.plural} in ${namespace || 'the cluster'} (${r.list})`);
      }
    }
  });

  test('the controller and the speaker do their job with their own tokens', async () => {
    await core.createNode({ body: { metadata: { name: 'node-x', labels: { 'kubernetes.io/hostname': 'node-x' } } } });
    await createMetalLBObject(custom, 'IPAddressPool', 'lab', { addresses: ['192.0.2.0/28'] });
    await createMetalLBObject(custom, 'L2Advertisement', 'l2', { ipAddressPools: ['lab'] });
    // BGP through frr-k8s: one peer for node-x only, the pool advertised over BGP too. peerPort is
    // the CRD's default, spelled out: installCrds (client-node's CRD serializer) drops schema defaults.
    await custom.createNamespacedCustomObject({
      group: 'metallb.io',
      version: 'v1beta2',
      namespace: NS,
      plural: 'bgppeers',
      body: {
        apiVersion: 'metallb.io/v1beta2',
        kind: 'BGPPeer',
        metadata: { name: 'router-a' },
        spec: { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.1', peerPort: 179, nodeSelectors: [{ matchLabels: { 'kubernetes.io/hostname': 'node-x' } }] },
      },
    });
    await custom.createNamespacedCustomObject({
      ...G,
      namespace: NS,
      plural: 'bgpadvertisements',
      body: {
        apiVersion: 'metallb.io/v1beta1',
        kind: 'BGPAdvertisement',
        metadata: { name: 'bgp' },
        spec: { ipAddressPools: ['lab'] },
      },
    });
    await core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: { type: 'LoadBalancer', ports: [{ port: 80, protocol: 'TCP' }], selector: { app: 'web' } },
      },
    });
    await cluster.kubeConfig.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
      namespace: 'default',
      body: {
        metadata: { name: 'web-1', labels: { 'kubernetes.io/service-name': 'web' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.244.0.5'], nodeName: 'node-x', conditions: { ready: true } }],
      },
    });
    // The speaker's own Pod (never scheduled here): --pod-name makes it the ServiceL2Status owner.
    const pod = await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'speaker-x', labels: { app: 'metallb-ts', component: 'speaker' } },
        spec: { serviceAccountName: 'speaker', automountServiceAccountToken: false, nodeName: 'node-x', containers: [{ name: 'speaker', image: 'metallb-ts:0.1.0' }] },
      },
    });
    // ... running, its pod IP 127.0.0.1 (hostNetwork: the node's address): the memberlist peer to join.
    await core.patchNamespacedPodStatus(
      { namespace: NS, name: 'speaker-x', body: { status: { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    // The controller's Deployment for real this time (nothing runs it here): the Secret's owner.
    const depManifest = manifests().find((m) => m.obj.kind === 'Deployment')!.obj as any;
    await objects.patch(depManifest, undefined, undefined, 'metallb-ts-deploy-test', true, PatchStrategy.ServerSideApply);
    const dep = await objects.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace: NS, name: depManifest.metadata.name } });

    // The controller with the manifest's variables (METALLB_ML_SECRET_NAME, METALLB_DEPLOYMENT).
    const controllerEnv = literalEnv(depManifest.spec.template.spec.containers[0]);
    const controller = start(['controller', '--kubeconfig', await saKubeconfig('controller'), '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0'], controllerEnv);
    procs.push(controller);
    let speaker: Proc | undefined;
    const detail = () => `controller:\n${controller.out.join('').slice(-1500)}${controller.err.join('')}\nspeaker:\n${speaker?.out.join('').slice(-1500)}${speaker?.err.join('')}`;
    const secret = await waitFor(
      'the controller creates the memberlist Secret',
      async () => {
        try {
          return await core.readNamespacedSecret({ namespace: NS, name: controllerEnv.METALLB_ML_SECRET_NAME! });
        } catch {
          return undefined;
        }
      },
      detail,
    );
    assert.deepEqual(
      secret.metadata!.ownerReferences!.map((r) => [r.apiVersion, r.kind, r.name, r.uid]),
      [['apps/v1', 'Deployment', 'controller', dep.metadata!.uid]],
    );
    const key = Buffer.from(secret.data!.secretkey!, 'base64');
    assert.match(key.toString('utf8'), /^[A-Za-z0-9+/]{22}$/);
    assert.match(controller.out.join(''), /"msg":"secret successfully created","op":"CreateMlSecret"/);

    // The speaker with memberlist on, the key as the kubelet would mount it (/etc/ml_secret_key/secretkey).
    const keyDir = join(dir, 'ml_secret_key');
    mkdirSync(keyDir);
    writeFileSync(join(keyDir, 'secretkey'), key);
    const mlPort = await new Promise<number>((resolve, reject) => {
      const srv = createServer();
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const dsManifest = manifests().find((m) => m.obj.kind === 'DaemonSet')!.obj as any;
    const dsEnv = literalEnv(dsManifest.spec.template.spec.containers[0]);
    // FRRK8S_NAMESPACE as the kubelet resolves the manifest's fieldRef (metadata.namespace).
    speaker = start(
      [
        'speaker',
        '--node-name',
        'node-x',
        '--pod-name',
        'speaker-x',
        '--kubeconfig',
        await saKubeconfig('speaker'),
        '--metrics-bind-address',
        '127.0.0.1',
        '--port',
        '0',
        '--health-probe-port',
        '0',
        '--log-level',
        'debug',
      ],
      {
        METALLB_ML_BIND_ADDR: '127.0.0.1',
        METALLB_ML_BIND_PORT: String(mlPort),
        METALLB_ML_LABELS: dsEnv.METALLB_ML_LABELS!,
        METALLB_ML_SECRET_KEY_PATH: keyDir,
        METALLB_BGP_TYPE: dsEnv.METALLB_BGP_TYPE!,
        FRRK8S_NAMESPACE: dsManifest.metadata.namespace,
      },
    );
    procs.push(speaker);

    const ip = await waitFor(
      'the controller writes an IP into the Service status',
      async () => {
        const svc = await core.readNamespacedService({ namespace: 'default', name: 'web' });
        return svc.status?.loadBalancer?.ingress?.[0]?.ip;
      },
      detail,
    );
    assert.match(ip, /^192\.0\.2\./);
    const st = await waitFor(
      'the speaker writes the ServiceL2Status with its status',
      async () => {
        const list = (await custom.listNamespacedCustomObject({ ...G, namespace: NS, plural: 'servicel2statuses' })) as { items: any[] };
        return list.items.find((o) => o.status?.node === 'node-x');
      },
      detail,
    );
    assert.deepEqual(
      st.metadata.ownerReferences.map((r: any) => [r.kind, r.name, r.uid]),
      [['Pod', 'speaker-x', pod.metadata!.uid]],
    );
    await waitFor(
      'the nodeAssigned event',
      async () => {
        const ev = await core.listNamespacedEvent({ namespace: 'default' });
        return ev.items.find((e) => e.reason === 'nodeAssigned' && e.involvedObject.name === 'web');
      },
      detail,
    );

    // BGP: the FRRConfiguration metallb-node-x (after the 3 s debounce), the ServiceBGPStatus, the ConfigurationState.
    const readFrr = async (name: string) => {
      try {
        return (await custom.getNamespacedCustomObject({ ...FRR, namespace: NS, name })) as any;
      } catch {
        return undefined;
      }
    };
    const frr = await waitFor('the speaker creates the FRRConfiguration metallb-node-x', () => readFrr('metallb-node-x'), detail);
    assert.deepEqual(frr.spec.nodeSelector, { matchLabels: { 'kubernetes.io/hostname': 'node-x' } });
    const router = frr.spec.bgp.routers[0];
    assert.equal(router.asn, 64500);
    assert.deepEqual(router.prefixes, [`${ip}/32`]);
    assert.deepEqual(
      router.neighbors.map((n: any) => [n.address, n.asn, n.port, n.toAdvertise.allowed.prefixes]),
      [['10.0.0.1', 64501, 179, [`${ip}/32`]]],
    );
    const bgpStatus = await waitFor(
      'the speaker writes the ServiceBGPStatus with its status',
      async () => {
        const list = (await custom.listNamespacedCustomObject({ ...G, namespace: NS, plural: 'servicebgpstatuses' })) as { items: any[] };
        return list.items.find((o) => o.status?.node === 'node-x' && o.status?.peers?.length);
      },
      detail,
    );
    assert.deepEqual([bgpStatus.status.serviceNamespace, bgpStatus.status.serviceName, bgpStatus.status.peers], ['default', 'web', ['router-a']]);
    assert.equal(bgpStatus.metadata.labels['metallb.io/node'], 'node-x');
    assert.deepEqual(
      bgpStatus.metadata.ownerReferences.map((r: any) => [r.kind, r.name, r.uid]),
      [['Pod', 'speaker-x', pod.metadata!.uid]],
    );
    await waitFor(
      'the nodeAssigned event with protocol bgp',
      async () => {
        const ev = await core.listNamespacedEvent({ namespace: 'default' });
        return ev.items.find((e) => e.reason === 'nodeAssigned' && e.involvedObject.name === 'web' && /protocol "bgp"/.test(e.message ?? ''));
      },
      detail,
    );
    const cs = await waitFor(
      'the ConfigurationState speaker-node-x reports Valid',
      async () => {
        const o = (await custom.getNamespacedCustomObject({ ...G, namespace: NS, plural: 'configurationstates', name: 'speaker-node-x' })) as any;
        return o.status?.result === 'Valid' ? o : undefined;
      },
      detail,
    );
    assert.equal(cs.status.conditions[0].type, 'configReconcilerValid');
    // An edit by someone else is reverted (get + update with the speaker's token).
    await custom.patchNamespacedCustomObject({ ...FRR, namespace: NS, name: 'metallb-node-x', body: [{ op: 'replace', path: '/spec/bgp/routers/0/prefixes', value: ['198.51.100.0/24'] }] });
    await waitFor(
      'the speaker reverts an edit of metallb-node-x',
      async () => {
        const o = await readFrr('metallb-node-x');
        return o?.spec.bgp.routers[0].prefixes?.[0] === `${ip}/32` ? o : undefined;
      },
      detail,
    );
    // memberlist: the speaker joined itself through its pod and serves the view.
    const lines = () =>
      speaker!.out
        .join('')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const metrics = await waitFor('the speaker logs its metrics address', async () => lines().find((l) => l.op === 'startup' && typeof l.metrics === 'string')?.metrics as string | undefined, detail);
    const view = await waitFor(
      '/debug/members lists the speaker as alive',
      async () => {
        const v = (await (await fetch(`http://${metrics}/debug/members`)).json()) as { self?: string; members?: Array<{ name: string; address: string; port: number; state: string }> };
        return v.members?.some((m) => m.state === 'alive') ? v : undefined;
      },
      detail,
    );
    assert.equal(view.self, 'node-x');
    assert.deepEqual(
      view.members!.map((m) => [m.name, m.address, m.port, m.state]),
      [['node-x', '127.0.0.1', mlPort, 'alive']],
    );
    assert.ok(!lines().some((l) => /not be encrypted/.test(String(l.warning ?? l.msg ?? ''))), 'the speaker read the key: memberlist encrypted');
    assert.deepEqual(rbacRefusals(speaker), [], 'the speaker hit no RBAC refusal');
    assert.deepEqual(rbacRefusals(controller), [], 'the controller hit no RBAC refusal');

    speaker.proc.kill('SIGTERM');
    controller.proc.kill('SIGTERM');
    assert.equal(await speaker.exit, 0, detail());
    await controller.exit;
    const left = (await custom.listNamespacedCustomObject({ ...G, namespace: NS, plural: 'servicel2statuses' })) as { items: unknown[] };
    assert.deepEqual(left.items, [], 'the speaker deleted its ServiceL2Status on shutdown (delete allowed)');
    // MetalLB leaves the BGP side in place on shutdown: frr-k8s keeps the sessions while the speaker restarts.
    assert.ok(await readFrr('metallb-node-x'), 'metallb-node-x stays after the speaker stopped');
    const bgpLeft = (await custom.listNamespacedCustomObject({ ...G, namespace: NS, plural: 'servicebgpstatuses' })) as { items: unknown[] };
    assert.equal(bgpLeft.items.length, 1, 'the ServiceBGPStatus stays after the speaker stopped');
    assert.deepEqual(rbacRefusals(speaker), [], 'the speaker hit no RBAC refusal');
  });

  test('a speaker whose node has no BGP peer deletes a leftover metallb-<node> with its own token', async () => {
    // node-y: no peer selects it (router-a is node-x's), no BFD profile; excluded from L2 so it announces nothing.
    await core.createNode({ body: { metadata: { name: 'node-y', labels: { 'kubernetes.io/hostname': 'node-y', 'node.kubernetes.io/exclude-from-external-load-balancers': '' } } } });
    await custom.createNamespacedCustomObject({
      ...FRR,
      namespace: NS,
      body: {
        apiVersion: 'frrk8s.metallb.io/v1beta1',
        kind: 'FRRConfiguration',
        metadata: { name: 'metallb-node-y' },
        spec: { nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'node-y' } }, bgp: { routers: [{ asn: 64500 }] } },
      },
    });
    const p = start(
      ['speaker', '--node-name', 'node-y', '--kubeconfig', await saKubeconfig('speaker'), '--metrics-bind-address', '127.0.0.1', '--port', '0', '--health-probe-port', '0', '--log-level', 'debug'],
      { FRRK8S_NAMESPACE: NS },
    );
    procs.push(p);
    const detail = () => `speaker:\n${p.out.join('').slice(-2000)}${p.err.join('')}`;
    await waitFor(
      'the speaker on node-y deletes metallb-node-y',
      async () => {
        try {
          await custom.getNamespacedCustomObject({ ...FRR, namespace: NS, name: 'metallb-node-y' });
          return undefined;
        } catch (err) {
          return (err as { code?: number }).code === 404 ? true : undefined;
        }
      },
      detail,
    );
    assert.match(p.out.join(''), /deleted the FRRConfiguration/);
    p.proc.kill('SIGTERM');
    assert.equal(await p.exit, 0, detail());
    assert.deepEqual(rbacRefusals(p), [], 'no RBAC refusal');
    // metallb-node-x (node-x's, produced) is not node-y's to touch
    await custom.getNamespacedCustomObject({ ...FRR, namespace: NS, name: 'metallb-node-x' });
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
