// Cluster access without an API server: which kubeconfig is chosen, how a broken one is reported,
// and how every kind of failed API call maps to the one-line error and exit code the CLI prints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ClusterUnreachableError, UserError } from '../../src/core/errors.ts';
import { apiError, JSON_PATCH, KubeApiError, KubeClient, kubeConfigSource, kubeGet, loadKubeConfig, MERGE_PATCH, type KubeRequest } from '../../src/kube/client.ts';
import { resourcePath, RESOURCES } from '../../src/kube/live.ts';
import { freePort } from '../helpers/net.ts';

const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-kube-client-'));
const write = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

function kubeconfig(opts: { server?: string; contexts?: string[]; current?: string; caFile?: string } = {}): string {
  const ctxs = opts.contexts ?? ['ctx-a'];
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: c1',
    '  cluster:',
    `    server: ${opts.server ?? 'https://127.0.0.1:6443'}`,
    ...(opts.caFile ? [`    certificate-authority: ${opts.caFile}`] : []),
    'users:',
    '- name: u1',
    '  user:',
    '    token: abc',
    'contexts:',
    ...ctxs.flatMap((c) => [`- name: ${c}`, '  context:', '    cluster: c1', '    user: u1']),
    ...(opts.current === '' ? [] : [`current-context: ${opts.current ?? ctxs[0]}`]),
    '',
  ].join('\n');
}

const good = write('good.yaml', kubeconfig({ contexts: ['ctx-a', 'ctx-b'] }));
const other = write(
  'other.yaml',
  kubeconfig({ server: 'https://127.0.0.1:7443', contexts: ['ctx-c'] })
    .replace(/\bc1\b/g, 'c2')
    .replace(/\bu1\b/g, 'u2'),
);

/** A kubeconfig for `server` with a bearer token `t` and TLS verification off (local test servers). */
function tokenKubeConfig(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

test('kubeConfigSource: --kubeconfig, else KUBECONFIG, else ~/.kube/config, else in-cluster, else none', () => {
  const noFiles = { exists: () => false, home: '/home/x' };
  const cases: Array<[string, Parameters<typeof kubeConfigSource>[0], Parameters<typeof kubeConfigSource>[1], ReturnType<typeof kubeConfigSource>]> = [
    ['flag wins over everything', { kubeconfig: '/a' }, { ...noFiles, KUBECONFIG: '/b', exists: () => true }, { kind: 'flag', files: ['/a'] }],
    ['KUBECONFIG path list', {}, { ...noFiles, KUBECONFIG: `/b${delimiter}${delimiter}/c` }, { kind: 'env', files: ['/b', '/c'] }],
    ['empty KUBECONFIG is ignored', {}, { KUBECONFIG: '', home: '/home/x', exists: (p) => p === '/home/x/.kube/config' }, { kind: 'home', files: ['/home/x/.kube/config'] }],
    ['home config', {}, { home: '/home/x', exists: (p) => p === '/home/x/.kube/config' }, { kind: 'home', files: ['/home/x/.kube/config'] }],
    ['in-cluster: service host and token file', {}, { ...noFiles, KUBERNETES_SERVICE_HOST: '10.96.0.1', serviceAccountTokenFile: '/t', exists: (p) => p === '/t' }, { kind: 'in-cluster' }],
    ['service host without token file', {}, { ...noFiles, KUBERNETES_SERVICE_HOST: '10.96.0.1' }, { kind: 'none' }],
    ['nothing', {}, noFiles, { kind: 'none' }],
  ];
  for (const [name, opts, env, want] of cases) assert.deepEqual(kubeConfigSource(opts, env), want, name);
});

test('loadKubeConfig: selects the file and context', () => {
  const kc = loadKubeConfig({ kubeconfig: good });
  assert.equal(kc.getCurrentContext(), 'ctx-a');
  assert.equal(kc.getCurrentCluster()?.server, 'https://127.0.0.1:6443');
  assert.equal(loadKubeConfig({ kubeconfig: good, context: 'ctx-b' }).getCurrentContext(), 'ctx-b');
  // KUBECONFIG: files merged, the first file's current-context wins; --context may pick any of them
  const env = { KUBECONFIG: [good, other].join(delimiter), exists: () => false };
  assert.equal(loadKubeConfig({}, env).getCurrentContext(), 'ctx-a');
  const c = loadKubeConfig({ context: 'ctx-c' }, env);
  assert.equal(c.getCurrentCluster()?.server, 'https://127.0.0.1:7443');
});

test('loadKubeConfig: a broken configuration is a one-line UserError (exit 2) naming the file or context', () => {
  const cases: Array<[string, () => unknown, RegExp]> = [
    ['missing file', () => loadKubeConfig({ kubeconfig: join(dir, 'nope.yaml') }), /^kubeconfig .*nope\.yaml: no such file$/],
    ['a directory', () => loadKubeConfig({ kubeconfig: dir }), /^kubeconfig .*: is a directory$/],
    ['invalid YAML', () => loadKubeConfig({ kubeconfig: write('bad.yaml', 'clusters: [\n') }), /^kubeconfig .*bad\.yaml: invalid: /],
    ['not a kubeconfig', () => loadKubeConfig({ kubeconfig: write('scalar.yaml', 'hello\n') }), /^kubeconfig .*scalar\.yaml: invalid/],
    ['cluster without server', () => loadKubeConfig({ kubeconfig: write('noserver.yaml', 'clusters:\n- name: c\n  cluster: {}\n') }), /noserver\.yaml: invalid: .*server/],
    ['unknown context', () => loadKubeConfig({ kubeconfig: good, context: 'prod' }), /^context "prod" not found in kubeconfig .*good\.yaml \(contexts: ctx-a, ctx-b\)$/],
    ['no current-context', () => loadKubeConfig({ kubeconfig: write('nocur.yaml', kubeconfig({ current: '' })) }), /nocur\.yaml has no current-context; pass --context NAME/],
    ['current-context undefined', () => loadKubeConfig({ kubeconfig: write('wrongcur.yaml', kubeconfig({ current: 'gone' })) }), /current-context "gone" is not defined/],
    ['missing CA file', () => loadKubeConfig({ kubeconfig: write('ca.yaml', kubeconfig({ caFile: 'missing-ca.crt' })) }), /certificate-authority file .*missing-ca\.crt does not exist/],
    ['no configuration at all', () => loadKubeConfig({}, { exists: () => false, home: '/nonexistent' }), /^no kubeconfig: pass --kubeconfig/],
  ];
  for (const [name, fn, re] of cases) {
    assert.throws(
      fn,
      (err: unknown) => {
        assert.ok(err instanceof UserError && !(err instanceof ClusterUnreachableError), `${name}: ${String(err)}`);
        assert.equal(err.exitCode, 2, name);
        assert.ok(!err.message.includes('\n'), `${name}: one line`);
        assert.match(err.message, re, name);
        return true;
      },
      name,
    );
  }
});

const CTX = { verb: 'list', resource: 'metallb.io/v1beta1 ipaddresspools', server: 'https://127.0.0.1:6443' };
const WHAT = 'cannot list metallb.io/v1beta1 ipaddresspools at https://127.0.0.1:6443';
const errno = (code: string, message = code): Error => Object.assign(new Error(message), { code, syscall: 'connect' });

test('apiError: unreachable, unauthorized and forbidden are exit 3; other API errors exit 2; bugs pass through', () => {
  const cases: Array<[string, unknown, number, string | RegExp]> = [
    ['connection refused (node socket)', errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6443'), 3, `${WHAT}: connection refused`],
    ['connection refused (fetch)', new TypeError('fetch failed', { cause: errno('ECONNREFUSED') }), 3, `${WHAT}: connection refused`],
    ['happy eyeballs AggregateError', new TypeError('fetch failed', { cause: Object.assign(new AggregateError([errno('ECONNREFUSED')]), { code: 'ECONNREFUSED' }) }), 3, `${WHAT}: connection refused`],
    ['our timeout', errno('ETIMEDOUT', 'no answer within 30000 ms'), 3, `${WHAT}: timed out`],
    ['undici connect timeout', new TypeError('fetch failed', { cause: errno('UND_ERR_CONNECT_TIMEOUT') }), 3, `${WHAT}: timed out`],
    ['watch timeout (DOMException)', new DOMException('The operation was aborted due to timeout', 'TimeoutError'), 3, `${WHAT}: timed out`],
    ['host not found', errno('ENOTFOUND', 'getaddrinfo ENOTFOUND k8s.invalid'), 3, `${WHAT}: host not found`],
    ['TLS: unknown CA', errno('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'), 3, `${WHAT}: TLS: self-signed certificate in certificate chain`],
    ['TLS: wrong host', errno('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"), 3, /: TLS: Hostname\/IP does not match/],
    ['401 (our request)', new KubeApiError(401, { message: 'Unauthorized' }, ''), 3, `${WHAT}: unauthorized: Unauthorized (check the kubeconfig's credentials)`],
    [
      '403 with the API message',
      new KubeApiError(403, { message: 'ipaddresspools.metallb.io is forbidden: User "nobody" cannot list resource "ipaddresspools"' }, ''),
      3,
      `${WHAT}: forbidden: ipaddresspools.metallb.io is forbidden: User "nobody" cannot list resource "ipaddresspools"`,
    ],
    [
      '403 from client-node ApiException (JSON body)',
      Object.assign(new Error('HTTP-Code: 403\nMessage: ...'), { code: 403, body: '{"kind":"Status","message":"forbidden thing"}' }),
      3,
      `${WHAT}: forbidden: forbidden thing`,
    ],
    ['403 from client-node Watch (statusCode, no body)', Object.assign(new Error('Forbidden'), { statusCode: 403 }), 3, `${WHAT}: forbidden: Forbidden`],
    ['404 is not about reachability', new KubeApiError(404, { message: 'the server could not find the requested resource' }, ''), 2, `${WHAT}: the server could not find the requested resource (HTTP 404)`],
    ['500 with a multi-line message', new KubeApiError(500, { message: 'etcdserver:\n  request timed out' }, ''), 2, `${WHAT}: etcdserver: request timed out (HTTP 500)`],
  ];
  for (const [name, err, exit, want] of cases) {
    const got = apiError(err, CTX);
    assert.ok(got instanceof UserError, `${name}: ${String(got)}`);
    assert.equal(got.exitCode, exit, name);
    assert.equal(got instanceof ClusterUnreachableError, exit === 3, name);
    assert.ok(!got.message.includes('\n'), `${name}: one line`);
    if (typeof want === 'string') assert.equal(got.message, want, name);
    else assert.match(got.message, want, name);
  }
  const userErr = new UserError('already one line');
  assert.equal(apiError(userErr, CTX), userErr);
  const bug = new TypeError("Cannot read properties of undefined (reading 'items')");
  assert.equal(apiError(bug, CTX), bug, 'a programming error is not turned into a user error');
});

test('kubeGet on a closed loopback port: ECONNREFUSED, mapped to exit 3 naming the server', async () => {
  const port = await freePort();
  const server = `https://127.0.0.1:${port}`;
  const kc = tokenKubeConfig(server);
  const err = await kubeGet(kc, '/api/v1/services').then(
    () => undefined,
    (e: unknown) => e,
  );
  const mapped = apiError(err, { verb: 'list', resource: 'v1 services', server });
  assert.ok(mapped instanceof ClusterUnreachableError, String(err));
  assert.equal(mapped.message, `cannot list v1 services at ${server}: connection refused`);
});

test('KubeClient.request: method, query, body and content type on the wire; answers and failures as apiError maps them', async () => {
  const seen: Array<{ method: string; url: string; type: string | undefined; agent: string | undefined; auth: string | undefined; body: string }> = [];
  const sockets = new Set<unknown>();
  const http = createHttpServer((req: IncomingMessage, res) => {
    sockets.add(req.socket);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, type: req.headers['content-type'], agent: req.headers['user-agent'], auth: req.headers.authorization, body: Buffer.concat(chunks).toString() });
      const path = new URL(req.url!, 'http://x').pathname;
      const answer = (code: number, text: string) => {
        res.writeHead(code, { 'Content-Type': 'application/json' });
        res.end(text);
      };
      if (path === '/slow') return; // never answers
      if (path === '/empty') return answer(200, '');
      if (path === '/html') return answer(200, '<html>proxy</html>');
      if (path === '/missing') return answer(404, JSON.stringify({ kind: 'Status', message: 'services "x" not found', code: 404 }));
      if (path === '/forbidden') return answer(403, JSON.stringify({ kind: 'Status', message: 'services is forbidden: User "u" cannot list', code: 403 }));
      answer(200, JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const server = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
  const kc = tokenKubeConfig(server);
  const api = new KubeClient(kc, { userAgent: 'ua-test', maxSockets: 2, timeoutMs: 200 });
  const CTX = { verb: 'get', resource: 'v1 services', server };
  const cases: Array<{ name: string; req: KubeRequest; wire?: { method: string; url: string; type?: string; body?: string }; resolves?: unknown; exit?: number; message?: string }> = [
    {
      name: 'GET with a query (undefined values left out)',
      req: { path: '/api/v1/services', query: { limit: 500, continue: undefined, labelSelector: 'a=b' } },
      wire: { method: 'GET', url: '/api/v1/services?limit=500&labelSelector=a%3Db' },
      resolves: { ok: true },
    },
    { name: 'POST: a JSON body', req: { method: 'POST', path: '/p', body: { a: 1 } }, wire: { method: 'POST', url: '/p', type: 'application/json', body: '{"a":1}' }, resolves: { ok: true } },
    { name: 'PATCH: merge patch by default', req: { method: 'PATCH', path: '/p', body: { a: null } }, wire: { method: 'PATCH', url: '/p', type: MERGE_PATCH, body: '{"a":null}' }, resolves: { ok: true } },
    {
      name: 'PATCH: the content type given, a raw body',
      req: { method: 'PATCH', path: '/p', rawBody: '[]', contentType: JSON_PATCH },
      wire: { method: 'PATCH', url: '/p', type: JSON_PATCH, body: '[]' },
      resolves: { ok: true },
    },
    { name: 'an empty answer to a write is undefined', req: { method: 'DELETE', path: '/empty' }, resolves: undefined },
    { name: 'a GET answered with no JSON is an API error', req: { path: '/html' }, exit: 2, message: `cannot get v1 services at ${server}: the server did not answer JSON: <html>proxy</html> (HTTP 200)` },
    { name: '404: the Status message, exit 2', req: { path: '/missing' }, exit: 2, message: `cannot get v1 services at ${server}: services "x" not found (HTTP 404)` },
    { name: '403: forbidden, exit 3', req: { path: '/forbidden' }, exit: 3, message: `cannot get v1 services at ${server}: forbidden: services is forbidden: User "u" cannot list` },
    { name: 'no answer within the timeout: exit 3', req: { path: '/slow', timeoutMs: 100 }, exit: 3, message: `cannot get v1 services at ${server}: timed out` },
  ];
  try {
    for (const c of cases) {
      seen.length = 0;
      const got = await api.request(c.req).then(
        (v) => ({ ok: true as const, v }),
        (e: unknown) => ({ ok: false as const, e }),
      );
      if (c.exit === undefined) {
        assert.ok(got.ok, `${c.name}: ${got.ok ? '' : String(got.e)}`);
        assert.deepEqual(got.v, c.resolves, c.name);
      } else {
        assert.ok(!got.ok, `${c.name}: resolved`);
        const mapped = apiError(got.e, CTX) as UserError;
        assert.ok(mapped instanceof UserError, `${c.name}: ${String(got.e)}`);
        assert.equal(mapped.exitCode, c.exit, c.name);
        assert.equal(mapped.message, c.message, c.name);
        if (c.exit === 2 && got.e instanceof KubeApiError) assert.equal(got.e.statusCode, c.req.path === '/missing' ? 404 : 200, c.name);
      }
      if (c.wire) {
        assert.equal(seen.length, 1, c.name);
        const w = seen[0]!;
        assert.deepEqual({ method: w.method, url: w.url, ...(w.type ? { type: w.type } : {}), ...(w.body ? { body: w.body } : {}) }, c.wire, c.name);
        assert.equal(w.agent, 'ua-test', c.name);
        assert.equal(w.auth, 'Bearer t', `${c.name}: the kubeconfig's credentials`);
      }
    }
    assert.equal(sockets.size, 1, 'maxSockets: one kept-alive connection serves the requests one after another');
  } finally {
    api.close();
    http.closeAllConnections();
    await new Promise((r) => http.close(r));
  }
});

test('KubeClient.setMaxSockets: requests beyond the pool wait for a free connection; a larger pool opens more', async () => {
  const sockets = new Set<unknown>();
  const held: Array<() => void> = [];
  const http = createHttpServer((req: IncomingMessage, res) => {
    sockets.add(req.socket);
    held.push(() => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const api = new KubeClient(tokenKubeConfig(`http://127.0.0.1:${(http.address() as { port: number }).port}`), { maxSockets: 1 });
  /** Sends `n` requests at once and resolves to the most the server held unanswered at once (it answers them when no more come). */
  const burst = async (n: number): Promise<number> => {
    let most = 0;
    let last = -1;
    const answering = setInterval(() => {
      most = Math.max(most, held.length);
      if (held.length > 0 && held.length === last) for (const answer of held.splice(0)) answer(); // nothing more came for a tick
      last = held.length;
    }, 25);
    try {
      await Promise.all(Array.from({ length: n }, () => api.request({ path: '/x' })));
    } finally {
      clearInterval(answering);
    }
    return most;
  };
  try {
    assert.equal(await burst(3), 1, 'a pool of 1: the requests one after another');
    assert.equal(sockets.size, 1);
    api.setMaxSockets(3);
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(await burst(3), 3, 'a pool of 3: the three at once');
    assert.equal(sockets.size, 3, 'two more connections');
    const none = new KubeClient(tokenKubeConfig('http://127.0.0.1:1'));
    none.setMaxSockets(2); // no pool of its own: nothing to size
    none.close();
  } finally {
    api.close();
    http.closeAllConnections();
    await new Promise((r) => http.close(r));
  }
});

test('KubeClient.request / kubeGet: an absolute deadline (a trickling answer is never idle), a size cap, abort', async () => {
  const big = JSON.stringify({ items: 'x'.repeat(5000) });
  const http = createHttpServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    if (path === '/trickle') {
      // One byte every 50 ms: the idle timeout never fires.
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const t = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(t));
      return;
    }
    if (path === '/big-declared') return void res.writeHead(200, { 'Content-Length': String(big.length) }).end(big);
    if (path === '/big-chunked') {
      res.writeHead(200);
      for (let i = 0; i < big.length; i += 500) res.write(big.slice(i, i + 500));
      return void res.end();
    }
    if (path === '/big-error') return void res.writeHead(503).end(big);
    res.writeHead(200).end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const server = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
  const kc = tokenKubeConfig(server);
  const api = new KubeClient(kc, { timeoutMs: 200 });
  const ctx = { verb: 'get', resource: 'v1 pods', server };
  const fails = async (p: Promise<unknown>) =>
    p.then(
      (v) => assert.fail(`resolved ${JSON.stringify(v)}`),
      (e: unknown) => e as Error & { code?: string },
    );
  try {
    const t0 = Date.now();
    const slow = await fails(api.request({ path: '/trickle', deadlineMs: 400 }));
    assert.ok(Date.now() - t0 < 1000, `${Date.now() - t0} ms`);
    assert.equal(slow.message, 'no answer within 400 ms');
    assert.equal(slow.code, 'ETIMEDOUT');
    assert.equal((apiError(slow, ctx) as UserError).message, `cannot get v1 pods at ${server}: timed out`);
    const viaGet = await fails(kubeGet(kc, '/trickle', { timeoutMs: 200, deadlineMs: 300 }));
    assert.equal(viaGet.message, 'no answer within 300 ms');
    for (const path of ['/big-declared', '/big-chunked', '/big-error']) {
      const e = await fails(api.request({ path, maxBytes: 1000 }));
      assert.equal(e.message, 'answer larger than 1000 bytes', path);
      assert.equal(e.code, 'ERESPONSETOOLARGE', path);
      const mapped = apiError(e, ctx);
      assert.ok(mapped instanceof ClusterUnreachableError, path);
      assert.equal(mapped.message, `cannot get v1 pods at ${server}: answer larger than 1000 bytes`);
    }
    assert.deepEqual(await kubeGet(kc, '/big-declared', { maxBytes: big.length }), JSON.parse(big), 'exactly maxBytes is fine');
    assert.deepEqual(await kubeGet(kc, '/ok', { deadlineMs: 2000, maxBytes: 100 }), { ok: true });
    const abort = new AbortController();
    const asked = api.request({ path: '/trickle', timeoutMs: 5000, signal: abort.signal });
    setTimeout(() => abort.abort(new Error('stop')), 50);
    assert.equal((await fails(asked)).message, 'stop');
  } finally {
    http.closeAllConnections();
    await new Promise((r) => http.close(r));
  }
});

test('KubeClient.request: a 429 or 5xx with Retry-After is retried after it, as client-go does (not past the deadline, not after abort)', async () => {
  const hits = new Map<string, number>();
  const http = createHttpServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    const throttled = (code: number, retryAfter?: string) =>
      res
        .writeHead(code, { 'Content-Type': 'application/json', ...(retryAfter ? { 'Retry-After': retryAfter } : {}) })
        .end(JSON.stringify({ kind: 'Status', reason: 'TooManyRequests', message: 'Too many requests, please try again later.', code }));
    if (path === '/twice' && n <= 2) return void throttled(429, '1');
    if (path === '/shutting-down' && n <= 1) return void throttled(503, '1');
    if (path === '/no-header') return void throttled(429);
    if (path === '/always') return void throttled(429, '1');
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ n }));
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const api = new KubeClient(tokenKubeConfig(`http://127.0.0.1:${(http.address() as { port: number }).port}`), { timeoutMs: 1000 });
  const fails = async (p: Promise<unknown>) =>
    p.then(
      (v) => assert.fail(`resolved ${JSON.stringify(v)}`),
      (e: unknown) => e as KubeApiError,
    );
  try {
    let t0 = Date.now();
    assert.deepEqual(await api.request({ path: '/twice', method: 'PATCH', body: { a: 1 } }), { n: 3 });
    assert.ok(Date.now() - t0 >= 1900, `waited ${Date.now() - t0} ms for two Retry-After: 1`);
    assert.deepEqual(await api.request({ path: '/shutting-down' }), { n: 2 });
    const bare = await fails(api.request({ path: '/no-header' }));
    assert.equal(bare.statusCode, 429);
    assert.equal(hits.get('/no-header'), 1, 'no Retry-After: not retried');
    t0 = Date.now();
    const late = await fails(api.request({ path: '/always', deadlineMs: 1500 }));
    assert.equal(late.statusCode, 429);
    assert.equal(late.retryAfterSeconds, 1);
    assert.equal(hits.get('/always'), 2, 'one retry fits in the 1.5 s deadline, the next would not');
    assert.ok(Date.now() - t0 < 1500, `${Date.now() - t0} ms`);
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 200);
    t0 = Date.now();
    assert.equal((await fails(api.request({ path: '/always', signal: abort.signal }))).statusCode, 429);
    assert.ok(Date.now() - t0 < 900, `abort ends the wait: ${Date.now() - t0} ms`);
  } finally {
    api.close();
    http.closeAllConnections();
    await new Promise((r) => http.close(r));
  }
});

test('resource paths: cluster-wide core and group kinds, MetalLB kinds in the MetalLB namespace', () => {
  const paths = RESOURCES.map((r) => `${r.list} ${resourcePath(r, 'mlb')}${r.labelSelector ? ` ?${r.labelSelector}` : ''}${r.fieldSelector ? ` ?${r.fieldSelector}` : ''}`);
  assert.deepEqual(paths, [
    'services /api/v1/services',
    'endpointSlices /apis/discovery.k8s.io/v1/endpointslices',
    'nodes /api/v1/nodes',
    'namespaces /api/v1/namespaces',
    'pods /api/v1/namespaces/mlb/pods ?component=speaker',
    'pods /api/v1/namespaces/mlb/pods ?app.kubernetes.io/component=speaker',
    'secrets /api/v1/namespaces/mlb/secrets',
    'configMaps /api/v1/namespaces/mlb/configmaps',
    'ipAddressPools /apis/metallb.io/v1beta1/namespaces/mlb/ipaddresspools',
    'l2Advertisements /apis/metallb.io/v1beta1/namespaces/mlb/l2advertisements',
    'bgpAdvertisements /apis/metallb.io/v1beta1/namespaces/mlb/bgpadvertisements',
    'bgpPeers /apis/metallb.io/v1beta2/namespaces/mlb/bgppeers',
    'communities /apis/metallb.io/v1beta1/namespaces/mlb/communities',
    'bfdProfiles /apis/metallb.io/v1beta1/namespaces/mlb/bfdprofiles',
    'serviceL2Statuses /apis/metallb.io/v1beta1/namespaces/mlb/servicel2statuses',
    'serviceBGPStatuses /apis/metallb.io/v1beta1/namespaces/mlb/servicebgpstatuses',
    'configurationStates /apis/metallb.io/v1beta1/namespaces/mlb/configurationstates',
    'frrConfigurations /apis/frrk8s.metallb.io/v1beta1/namespaces/mlb/frrconfigurations',
    'events /api/v1/namespaces/mlb/events',
    'events /api/v1/events ?involvedObject.kind=Service',
  ]);
});
