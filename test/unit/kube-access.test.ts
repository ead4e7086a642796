// The daemons' cluster access without client-node (src/kube/access.ts) and its ListWatch
// (src/kube/list-watch.ts), against a stand-in API server on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createHttpsServer, type RequestOptions } from 'node:https';
import { inClusterConfig, liteKubeConfigFromFile, LiteKubeConfig } from '../../src/kube/access.ts';
import { KubeClient, loadClusterAccess } from '../../src/kube/client.ts';
import { ListWatch } from '../../src/kube/list-watch.ts';
import { createCA, createServingCert } from '../../src/controller/webhook-cert.ts';
import type { SecureContext } from 'node:tls';
import type { KubeObject } from '../../src/core/kube.ts';

function kubeconfig(user: string, cluster = '    server: https://10.0.0.1:6443\n    certificate-authority: ca.crt'): string {
  return `apiVersion: v1
kind: Config
current-context: main
contexts:
- name: main
  context: {cluster: c1, user: u1}
- name: other
  context: {cluster: c1, user: u2}
clusters:
- name: c1
  cluster:
${cluster}
users:
- name: u1
  user:
${user}
- name: u2
  user:
    token: second
`;
}

test('a kubeconfig with a CA file, client certificate data or tokens: LiteKubeConfig, paths relative to the file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kube-access-'));
  try {
    writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
    writeFileSync(join(dir, 'token'), 'from-file\n');
    const file = join(dir, 'config');
    writeFileSync(file, kubeconfig(`    client-certificate-data: ${Buffer.from('CERT').toString('base64')}\n    client-key-data: ${Buffer.from('KEY').toString('base64')}`));
    const lite = liteKubeConfigFromFile(file)!;
    assert.ok(lite instanceof LiteKubeConfig);
    assert.deepEqual(lite.getCurrentCluster(), { name: 'c1', server: 'https://10.0.0.1:6443' });
    const opts: RequestOptions = {};
    await lite.applyToHTTPSOptions(opts);
    assert.equal(String(opts.ca), 'CA PEM');
    assert.equal(String(opts.cert), 'CERT');
    assert.equal(String(opts.key), 'KEY');
    assert.equal(opts.headers, undefined);

    const other: RequestOptions = { headers: { X: '1' } };
    await liteKubeConfigFromFile(file, 'other')!.applyToHTTPSOptions(other);
    assert.deepEqual(other.headers, { X: '1', Authorization: 'Bearer second' });

    writeFileSync(file, kubeconfig('    tokenFile: token', '    server: https://10.0.0.1:6443\n    insecure-skip-tls-verify: true\n    tls-server-name: api.example'));
    const byFile: RequestOptions = {};
    await liteKubeConfigFromFile(file)!.applyToHTTPSOptions(byFile);
    assert.deepEqual(byFile.headers, { Authorization: 'Bearer from-file' });
    assert.equal(byFile.rejectUnauthorized, false);
    assert.equal(byFile.servername, 'api.example');
    // loadClusterAccess picks it for --kubeconfig
    assert.ok(loadClusterAccess({ kubeconfig: file }, {}) instanceof LiteKubeConfig);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a kubeconfig as kubectl writes it is read without js-yaml, to the same LiteKubeConfig as js-yaml's reading of the same file in flow style", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kube-access-'));
  try {
    writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
    const user = `    client-certificate-data: ${Buffer.from('CERT').toString('base64')}\n    client-key-data: ${Buffer.from('KEY').toString('base64')}\n    token: "t0k:en"`;
    // kubeconfig() writes `context: {cluster: c1, user: u1}`: a flow mapping, which only js-yaml reads
    const flow = join(dir, 'flow');
    writeFileSync(flow, kubeconfig(user));
    const block = join(dir, 'block');
    writeFileSync(block, kubeconfig(user).replace(/context: \{cluster: (\w+), user: (\w+)\}/g, 'context:\n    cluster: $1\n    user: $2'));
    assert.doesNotMatch(readFileSync(block, 'utf8'), /\{/);
    for (const context of [undefined, 'other']) {
      const [a, b] = [liteKubeConfigFromFile(flow, context)!, liteKubeConfigFromFile(block, context)!];
      assert.deepEqual(b.getCurrentCluster(), a.getCurrentCluster());
      const [oa, ob]: RequestOptions[] = [{}, {}];
      await a.applyToHTTPSOptions(oa);
      await b.applyToHTTPSOptions(ob);
      assert.deepEqual(ob, oa);
      assert.equal(String(ob.ca), 'CA PEM');
    }
    // In a fresh process: the block file leaves js-yaml unloaded, the flow file loads it.
    const loads = (file: string): boolean => {
      const script = `
        import { createRequire } from 'node:module';
        const { liteKubeConfigFromFile } = await import(${JSON.stringify(join(import.meta.dirname, '../../src/kube/access.ts'))});
        if (!liteKubeConfigFromFile(${JSON.stringify(file)})) throw new Error('not read');
        process.stdout.write(String(Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes('/js-yaml/'))));`;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      return r.stdout === 'true';
    };
    assert.equal(loads(block), false);
    assert.equal(loads(flow), true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('exec plugins, basic auth, proxies, unknown contexts, missing files, bad YAML: left to client-node (same errors)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kube-access-'));
  try {
    writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
    const file = join(dir, 'config');
    const cases: Array<[string, string | undefined]> = [
      [kubeconfig('    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws'), undefined],
      [kubeconfig('    username: a\n    password: b'), undefined],
      [kubeconfig('    token: t', '    server: https://10.0.0.1:6443\n    proxy-url: http://proxy:3128'), undefined],
      [kubeconfig('    token: t'), 'nope'],
      [kubeconfig('    client-certificate: missing.crt\n    client-key: missing.key'), undefined],
      [kubeconfig('    token: t', '    server: "not a url"'), undefined],
      ['clusters: [', undefined],
    ];
    for (const [text, context] of cases) {
      writeFileSync(file, text);
      assert.equal(liteKubeConfigFromFile(file, context), undefined, text);
    }
    // and loadClusterAccess gives client-node's error for the unknown context
    writeFileSync(file, kubeconfig('    token: t'));
    assert.throws(() => loadClusterAccess({ kubeconfig: file, context: 'nope' }, {}), /context "nope" not found/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('one TLS context for every connection while the CA and client certificate stay the same; a new one when a file changes; none for material TLS refuses', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kube-access-tls-'));
  const ca = createCA();
  const serving = createServingCert(ca, 'localhost');
  const client = createCA({ caName: 'client' });
  const server = createHttpsServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) => {
    res.setHeader('Content-Type', 'application/json');
    res.end('{"kind":"Status"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as { port: number }).port;
    writeFileSync(join(dir, 'ca.crt'), ca.certPem);
    const file = join(dir, 'config');
    const user = (key: string) => `    client-certificate-data: ${Buffer.from(client.certPem).toString('base64')}\n    client-key-data: ${Buffer.from(key).toString('base64')}`;
    writeFileSync(file, kubeconfig(user(client.keyPem), `    server: https://127.0.0.1:${port}\n    certificate-authority: ca.crt\n    tls-server-name: localhost`));
    const lite = liteKubeConfigFromFile(file)!;
    const contextOf = async (): Promise<SecureContext | undefined> => {
      const o: RequestOptions & { secureContext?: SecureContext } = {};
      await lite.applyToHTTPSOptions(o);
      return o.secureContext;
    };
    const first = await contextOf();
    assert.ok(first, 'a context');
    assert.equal(await contextOf(), first, 'the same context for the same material');
    // requests on it verify the server with the CA (on fresh connections each)
    assert.deepEqual(await new KubeClient(lite).request({ path: '/api' }), { kind: 'Status' });
    assert.deepEqual(await new KubeClient(lite, { maxSockets: 2 }).request({ path: '/api' }), { kind: 'Status' });
    // the CA file rotated: a new context, which does not trust the server any more
    writeFileSync(join(dir, 'ca.crt'), createCA({ caName: 'other' }).certPem);
    const second = await contextOf();
    assert.ok(second && second !== first, 'a new context for a new CA');
    await assert.rejects(new KubeClient(lite).request({ path: '/api' }), (e: { code?: string }) => /CERT|SIGNATURE|ISSUER/.test(e.code ?? ''));
    // a key that is not the certificate's: no context, TLS reports it on the request as before
    writeFileSync(file, kubeconfig(user(createCA().keyPem), `    server: https://127.0.0.1:${port}\n    certificate-authority: ca.crt`));
    const mismatched = liteKubeConfigFromFile(file)!;
    const o: RequestOptions & { secureContext?: SecureContext } = {};
    await mismatched.applyToHTTPSOptions(o);
    assert.equal(o.secureContext, undefined);
    await assert.rejects(new KubeClient(mismatched).request({ path: '/api' }), /key values mismatch/);
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("in-cluster: the service host (IPv6 in brackets) and port, the account's CA and token", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kube-access-'));
  try {
    writeFileSync(join(dir, 'ca.crt'), 'CA');
    writeFileSync(join(dir, 'token'), 'sa-token');
    const c = inClusterConfig({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, dir);
    assert.equal(c.getCurrentCluster().server, 'https://[fd00::1]:443');
    const opts: RequestOptions = {};
    await c.applyToHTTPSOptions(opts);
    assert.equal(String(opts.ca), 'CA');
    assert.deepEqual(opts.headers, { Authorization: 'Bearer sa-token' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const svc = (name: string, rv: string): KubeObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'ns', name, resourceVersion: rv } });

test("ListWatch: list, watch events from the list's resourceVersion, 410 Gone re-lists and reports what went away", async () => {
  const watches: string[] = [];
  let listRound = 0;
  let open: ServerResponse | undefined;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url!, 'http://x');
    assert.equal(url.pathname, '/api/v1/services');
    watches.push(`${url.searchParams.get('resourceVersion')} ${url.searchParams.get('labelSelector')}`);
    if (watches.length === 2) {
      res.writeHead(410).end('{"kind":"Status","code":410}');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders(); // as the API server: the head at once, events as they come
    open = res;
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const access = new LiteKubeConfig({ name: 'c', server: `http://127.0.0.1:${port}` }, {});
  const lists = [
    { metadata: { resourceVersion: '10' }, items: [svc('a', '1'), svc('b', '2')] },
    { metadata: { resourceVersion: '20' }, items: [svc('a', '1'), svc('c', '15')] },
  ];
  const lw = new ListWatch('/api/v1/services', access, async () => lists[listRound++]!, 'app=x');
  const seen: string[] = [];
  for (const verb of ['add', 'update', 'delete'] as const) lw.on(verb, (o) => seen.push(`${verb} ${o.metadata!.name}@${o.metadata!.resourceVersion}`));
  const errors: unknown[] = [];
  lw.on('error', (e) => errors.push(e));
  const until = async (ok: () => boolean): Promise<void> => {
    for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(ok(), `seen: ${seen.join(', ')}; watches: ${watches.join(', ')}`);
  };
  try {
    await lw.start();
    assert.deepEqual(seen, ['add a@1', 'add b@2']);
    await until(() => open !== undefined);
    open!.write(`${JSON.stringify({ type: 'MODIFIED', object: svc('a', '11') })}\n{"type":"ADDED","object":`);
    open!.write(`${JSON.stringify(svc('d', '12'))}}\n${JSON.stringify({ type: 'DELETED', object: svc('b', '13') })}\n`);
    await until(() => seen.length === 5);
    assert.deepEqual(seen.slice(2), ['update a@11', 'add d@12', 'delete b@13']);
    // the server ends the watch: watched again from 13, which is Gone: listed again
    open!.end();
    open = undefined;
    await until(() => seen.length === 8);
    assert.deepEqual(seen.slice(5).sort(), ['add c@15', 'delete d@12', 'update a@1'].sort());
    await until(() => watches.length === 3);
    assert.deepEqual(watches, ['10 app=x', '13 app=x', '20 app=x']);
    assert.deepEqual(
      lw
        .list()
        .map((o) => o.metadata!.name)
        .sort(),
      ['a', 'c'],
    );
    assert.deepEqual(errors, []);
  } finally {
    await lw.stop();
    server.closeAllConnections();
    server.close();
  }
});

test('ListWatch: a failed list or a refused watch is reported to the error listeners, and start() resolves', async () => {
  const server = createServer((_req, res) => {
    res.writeHead(403).end('{"kind":"Status","code":403}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const access = new LiteKubeConfig({ name: 'c', server: `http://127.0.0.1:${(server.address() as { port: number }).port}` }, {});
  try {
    const failing = new ListWatch('/api/v1/nodes', access, async () => {
      throw new Error('list failed');
    });
    const errs: unknown[] = [];
    failing.on('error', (e) => errs.push(e));
    await failing.start();
    assert.deepEqual(
      errs.map((e) => (e as Error).message),
      ['list failed'],
    );

    const refused = new ListWatch('/api/v1/nodes', access, async () => ({ metadata: { resourceVersion: '1' }, items: [] }));
    const statuses: unknown[] = [];
    refused.on('error', (e) => statuses.push((e as { statusCode?: number }).statusCode));
    await refused.start();
    for (let i = 0; i < 200 && statuses.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(statuses, [403]);
    await refused.stop();
  } finally {
    server.close();
  }
});

test("watch caches drop managedFields and a Node's images, nothing else", async () => {
  const { trimForCache } = await import('../../src/kube/live.ts');
  const node = { metadata: { name: 'n1', labels: { a: 'b' }, managedFields: [{ manager: 'kubelet' }] }, status: { images: [{ names: ['x'] }], conditions: [{ type: 'Ready', status: 'True' }] } } as KubeObject;
  trimForCache(node, 'Node');
  assert.deepEqual(node, { metadata: { name: 'n1', labels: { a: 'b' } }, status: { conditions: [{ type: 'Ready', status: 'True' }] } });
  const other = { metadata: { name: 's', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' }, managedFields: [] }, status: { images: 1 } } as unknown as KubeObject;
  trimForCache(other, 'Service');
  assert.deepEqual(other, { metadata: { name: 's', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } }, status: { images: 1 } });
});
