// The memberlist Secret the controller creates at start-up (src/controller/memberlist-secret.ts,
// MetalLB v0.16.1's CreateMlSecret) against a real kube-apiserver (test/integration/setup): created
// once with an ownerReference to the controller's Deployment and a 22-character unpadded base64
// key, left alone when it exists, and a one-line error naming the Secret (and the Deployment) when
// the Deployment is missing or RBAC forbids. Then `metallb-ts controller --ml-secret-name …` as a
// subprocess: MetalLB's log lines, the env variables, exit 2 / 3 with one line on stderr.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestCluster, REPO_ROOT, type TestCluster } from './setup/cluster.ts';
import { waitFor } from './setup/wait.ts';
import { corePath } from '../../src/controller/api.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { createMlSecret, newMlSecretKey } from '../../src/controller/memberlist-secret.ts';
import { ClusterUnreachableError, UserError } from '../../src/core/errors.ts';
import { jsonLogger } from '../../src/runtime/log.ts';

const NS = 'metallb-system';
const BIN = join(REPO_ROOT, 'bin/metallb-ts');

test('newMlSecretKey: 16 bytes, base64 without padding (Go RawStdEncoding), 22 characters', () => {
  const cases: Array<[string, number[], string]> = [
    ['0..15', [...Array(16).keys()], 'AAECAwQFBgcICQoLDA0ODw'],
    ['all ones', Array(16).fill(255), '/////////////////////w'],
  ];
  for (const [name, bytes, want] of cases)
    assert.equal(
      newMlSecretKey(() => Uint8Array.from(bytes)),
      want,
      name,
    );
  assert.match(newMlSecretKey(), /^[A-Za-z0-9+/]{22}$/);
  assert.notEqual(newMlSecretKey(), newMlSecretKey());
});

describe('the memberlist Secret on a real API server', () => {
  let cluster: TestCluster;
  let admin: KubeClient;
  let dir: string;
  let deploymentUid: string;
  const clients: KubeClient[] = [];

  const get = <T = any>(path: string): Promise<T> => admin.request<T>({ method: 'GET', path });
  const secretPath = (name: string): string => corePath(NS, 'secrets', name);
  async function secretOrNull(name: string): Promise<any> {
    try {
      return await get(secretPath(name));
    } catch {
      return null;
    }
  }
  function logged(): { lines: any[]; logger: ReturnType<typeof jsonLogger> } {
    const lines: any[] = [];
    return { lines, logger: jsonLogger({ level: 'debug', write: (l) => lines.push(JSON.parse(l)) }) };
  }
  /** A KubeClient authenticating as the static user `name`, with the rules given (a Role in NS). */
  async function clientFor(user: string, rules: unknown[]): Promise<KubeClient> {
    if (rules.length > 0) {
      await admin.request({ method: 'POST', path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, body: { metadata: { name: user }, rules } });
      await admin.request({
        method: 'POST',
        path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`,
        body: {
          metadata: { name: user },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: user },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
        },
      });
    }
    const c = new KubeClient(cluster.kubeConfigForToken(cluster.userTokens[user]!, user), { maxSockets: 16 });
    clients.push(c);
    return c;
  }

  before(async () => {
    cluster = await startTestCluster({ users: [{ name: 'nobody' }, { name: 'lister' }, { name: 'deploy-test' }] });
    admin = new KubeClient(cluster.kubeConfig, { maxSockets: 16 });
    dir = mkdtempSync(join(tmpdir(), 'metallb-ts-mlsecret-'));
    // The controller's Deployment: a real object (no controller-manager here, so it runs nothing).
    const dep = await admin.request<any>({
      method: 'POST',
      path: `/apis/apps/v1/namespaces/${NS}/deployments`,
      body: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'controller' },
        spec: { selector: { matchLabels: { app: 'c' } }, template: { metadata: { labels: { app: 'c' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
      },
    });
    deploymentUid = dep.metadata.uid;
  });

  after(async () => {
    admin?.close();
    for (const c of clients) c.close();
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('creates the Secret: ownerReference to the Deployment, data.secretkey a 22-character unpadded base64 key', async () => {
    const { lines, logger } = logged();
    assert.equal(await createMlSecret(admin, { namespace: NS, secretName: 'memberlist', deploymentName: 'controller', logger }), 'created');
    const s = await get(secretPath('memberlist'));
    assert.deepEqual(s.metadata.ownerReferences, [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'controller', uid: deploymentUid }]);
    assert.deepEqual(Object.keys(s.data), ['secretkey']);
    const key = Buffer.from(s.data.secretkey, 'base64').toString('utf8');
    assert.match(key, /^[A-Za-z0-9+/]{22}$/, 'RawStdEncoding: no padding');
    assert.equal(Buffer.from(key, 'base64').length, 16, '128 bits');
    assert.equal(s.type, 'Opaque');
    assert.deepEqual(
      lines.map((l) => [l.level, l.op, l.msg]),
      [['info', 'CreateMlSecret', 'secret successfully created']],
    );
    assert.ok(!JSON.stringify(lines).includes(key), 'the key is never logged');
  });

  test('leaves an existing Secret alone (also one created by hand, without owner or key)', async () => {
    const before = await get(secretPath('memberlist'));
    const { lines, logger } = logged();
    assert.equal(await createMlSecret(admin, { namespace: NS, secretName: 'memberlist', deploymentName: 'controller', logger }), 'exists');
    const now = await get(secretPath('memberlist'));
    assert.equal(now.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.deepEqual(
      lines.map((l) => [l.level, l.op, l.msg]),
      [['debug', 'CreateMlSecret', 'secret already exists, nothing to do']],
    );

    await admin.request({ method: 'POST', path: corePath(NS, 'secrets'), body: { metadata: { name: 'by-hand' }, stringData: { other: 'x' } } });
    assert.equal(await createMlSecret(admin, { namespace: NS, secretName: 'by-hand', deploymentName: 'missing' }), 'exists', 'no Deployment needed');
    assert.deepEqual(Object.keys((await get(secretPath('by-hand'))).data), ['other']);
  });

  test('errors: one line naming the Secret (and the Deployment); nothing created', async () => {
    const lister = await clientFor('lister', [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }]);
    const nobody = await clientFor('nobody', []);
    const cases: Array<{ name: string; api: () => KubeClient; deployment: string; type: typeof UserError; exit: number; message: RegExp }> = [
      {
        name: 'the Deployment does not exist',
        api: () => admin,
        deployment: 'no-such',
        type: UserError,
        exit: 2,
        message: /^cannot create the memberlist Secret metallb-system\/ml-a: its owner, the controller's Deployment metallb-system\/no-such, does not exist/,
      },
      {
        name: 'no Deployment named',
        api: () => admin,
        deployment: '',
        type: UserError,
        exit: 2,
        message: /^cannot create the memberlist Secret metallb-system\/ml-a: no owner Deployment \(set --deployment or METALLB_DEPLOYMENT/,
      },
      {
        name: 'RBAC forbids the list',
        api: () => nobody,
        deployment: 'controller',
        type: ClusterUnreachableError,
        exit: 3,
        message: /^cannot create the memberlist Secret metallb-system\/ml-a: cannot list v1 secrets \(metadata.name=ml-a\) in metallb-system at https:.*: forbidden: /,
      },
      {
        name: 'RBAC forbids getting the Deployment',
        api: () => lister,
        deployment: 'controller',
        type: ClusterUnreachableError,
        exit: 3,
        message: /^cannot create the memberlist Secret metallb-system\/ml-a: cannot get apps\/v1 deployments controller in metallb-system \(the owner of the Secret\) at https:.*: forbidden: /,
      },
    ];
    for (const c of cases) {
      await assert.rejects(
        createMlSecret(c.api(), { namespace: NS, secretName: 'ml-a', deploymentName: c.deployment }),
        (err: Error) => {
          assert.ok(err instanceof c.type, `${c.name}: ${err.name}: ${err.message}`);
          assert.equal((err as UserError).exitCode, c.exit, c.name);
          assert.match(err.message, c.message, c.name);
          assert.ok(!err.message.includes('\n'), `${c.name}: one line`);
          return true;
        },
        c.name,
      );
    }
    // RBAC forbids the create (list and get allowed)
    await admin.request({
      method: 'POST',
      path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`,
      body: { metadata: { name: 'lister-deploy' }, rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] }] },
    });
    await admin.request({
      method: 'POST',
      path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`,
      body: {
        metadata: { name: 'lister-deploy' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'lister-deploy' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'lister' }],
      },
    });
    await waitFor('RBAC sees the new binding', async () => {
      try {
        await lister.request({ method: 'GET', path: `/apis/apps/v1/namespaces/${NS}/deployments/controller` });
        return true;
      } catch {
        return undefined;
      }
    });
    await assert.rejects(createMlSecret(lister, { namespace: NS, secretName: 'ml-a', deploymentName: 'controller' }), (err: Error) => {
      assert.ok(err instanceof ClusterUnreachableError, err.message);
      assert.match(err.message, /^cannot create the memberlist Secret metallb-system\/ml-a: cannot create v1 secrets in metallb-system at https:.*: forbidden: /);
      return true;
    });
    assert.equal(await secretOrNull('ml-a'), null);
  });

  /** Runs `metallb-ts controller` with `args` and `env`; resolves when `until` matches stdout (then SIGTERM) or on exit. */
  async function runController(args: string[], env: Record<string, string>, until?: RegExp): Promise<{ code: number | null; out: string; err: string }> {
    const proc = spawn(BIN, ['controller', '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0', '--log-level', 'debug', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KUBECONFIG: '', METALLB_NAMESPACE: '', METALLB_POD_NAME: '', METALLB_ML_SECRET_NAME: '', METALLB_DEPLOYMENT: '', ...env },
    });
    let out = '';
    let err = '';
    let stopped = false;
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      if (!stopped && until && until.test(out)) {
        stopped = true; // once: a second SIGTERM after the shutdown would kill it by default
        proc.kill('SIGTERM');
      }
    });
    proc.stderr!.on('data', (c: Buffer) => {
      err += c.toString('utf8');
    });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((r) => proc.on('exit', (c) => r(c)));
    clearTimeout(timer);
    return { code, out, err };
  }

  test('metallb-ts controller --ml-secret-name/--deployment (and METALLB_ML_SECRET_NAME/METALLB_DEPLOYMENT) creates it before watching', async () => {
    const kubeconfig = cluster.kubeconfigPath;
    const r1 = await runController(['--kubeconfig', kubeconfig, '--ml-secret-name', 'ml-cli', '--deployment', 'controller'], {}, /caches synced/);
    assert.equal(r1.code, 0, r1.out + r1.err);
    const lines = r1.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const created = lines.findIndex((l) => l.op === 'CreateMlSecret' && l.msg === 'secret successfully created');
    assert.ok(created >= 0, r1.out);
    assert.ok(created < lines.findIndex((l) => l.msg === 'caches synced, starting the reconcilers'), 'the Secret comes first, as in MetalLB');
    const s = await get(secretPath('ml-cli'));
    assert.equal(s.metadata.ownerReferences[0].uid, deploymentUid);

    const r2 = await runController(['--kubeconfig', kubeconfig], { METALLB_ML_SECRET_NAME: 'ml-cli', METALLB_DEPLOYMENT: 'controller' }, /caches synced/);
    assert.equal(r2.code, 0, r2.out + r2.err);
    assert.match(r2.out, /"msg":"secret already exists, nothing to do".*"op":"CreateMlSecret"/);
    assert.equal((await get(secretPath('ml-cli'))).metadata.resourceVersion, s.metadata.resourceVersion);

    const r3 = await runController(['--kubeconfig', kubeconfig, '--deployment', 'controller'], {}, /caches synced/);
    assert.equal(r3.code, 0, r3.out + r3.err);
    assert.doesNotMatch(r3.out, /CreateMlSecret/, 'no --ml-secret-name: no Secret');
    assert.match(r3.out, /"level":"warn".*--deployment only names the owner of the memberlist Secret: ignored without --ml-secret-name/);
  });

  test("metallb-ts controller: a missing Deployment exits 2, a forbidden list exits 3, one line on stderr and MetalLB's error log line", async () => {
    const r = await runController(['--kubeconfig', cluster.kubeconfigPath], { METALLB_ML_SECRET_NAME: 'ml-none', METALLB_DEPLOYMENT: 'nope' });
    assert.equal(r.code, 2, r.out + r.err);
    assert.equal(r.err.trim().split('\n').length, 1, r.err);
    assert.match(r.err, /^metallb-ts: cannot create the memberlist Secret metallb-system\/ml-none: its owner, the controller's Deployment metallb-system\/nope, does not exist/);
    assert.match(r.out, /"error":"cannot create the memberlist Secret.*"msg":"failed to create memberlist secret","op":"startup"/);
    assert.equal(await secretOrNull('ml-none'), null);

    const kc = join(dir, 'nobody.kubeconfig');
    writeFileSync(kc, cluster.kubeConfigForToken(cluster.userTokens.nobody!, 'nobody').exportConfig());
    const f = await runController(['--kubeconfig', kc, '--ml-secret-name', 'ml-none', '--deployment', 'controller'], {});
    assert.equal(f.code, 3, f.out + f.err);
    assert.equal(f.err.trim().split('\n').length, 1, f.err);
    assert.match(f.err, /^metallb-ts: cannot create the memberlist Secret metallb-system\/ml-none: cannot list v1 secrets .*forbidden/);
  });
});
