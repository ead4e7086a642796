// MetalLB's webhook server without an API server: AdmissionReviews in, controller-runtime's
// answers out (allowed with code 200, denied with code 403 Forbidden and MetalLB's message,
// malformed requests with code 400), the lists MetalLB reads for each request (and none where it
// answers first), its list-failure wording, the BGPPeer conversion review, and the HTTPS server:
// routes, 404, a certificate swapped while serving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { X509Certificate } from 'node:crypto';
import { clusterValidation, METALLB_WEBHOOKS, type WebhookSpec } from '../../src/core/config/webhook.ts';
import type { KubeObject } from '../../src/core/kube.ts';
import { handleAdmission, handleConversion, WebhookServer, type AdmissionDeps } from '../../src/controller/webhook-server.ts';
import { createCA, createServingCert } from '../../src/controller/webhook-cert.ts';

const NS = 'metallb-system';
const spec = (kind: string): WebhookSpec => METALLB_WEBHOOKS.find((w) => w.kind === kind)!;
const obj = (kind: string, name: string, s: Record<string, unknown> = {}, namespace = NS): KubeObject => ({
  apiVersion: kind === 'BGPPeer' ? 'metallb.io/v1beta2' : 'metallb.io/v1beta1',
  kind,
  metadata: { name, namespace },
  spec: s,
});
const review = (operation: string, object: KubeObject, apiVersion = 'admission.k8s.io/v1'): Buffer =>
  Buffer.from(
    JSON.stringify({
      apiVersion,
      kind: 'AdmissionReview',
      request: { uid: 'u-1', operation, ...(operation === 'DELETE' ? { oldObject: object, object: null } : { object }) },
    }),
  );

/** deps whose lists come from `stored` (by kind), recording what was listed. */
function deps(stored: KubeObject[], fail: string | null = null): AdmissionDeps & { listed: string[] } {
  const listed: string[] = [];
  return {
    namespace: NS,
    validation: clusterValidation('frr-k8s'),
    listed,
    list: async (kind) => {
      listed.push(kind);
      if (kind === fail) throw new Error('ipaddresspools.metallb.io is forbidden: User "x" cannot list resource');
      return stored.filter((o) => o.kind === kind);
    },
  };
}

async function admit(kind: string, operation: string, object: KubeObject, d: AdmissionDeps, apiVersion?: string) {
  const a = await handleAdmission(spec(kind), review(operation, object, apiVersion), 'application/json', d);
  assert.equal(a.status, 200);
  return a.body as { apiVersion: string; kind: string; response: { uid: string; allowed: boolean; status: { code: number; reason?: string; message?: string }; warnings?: string[] } };
}

test('METALLB_WEBHOOKS: MetalLB v0.16.1 paths, versions and operations', () => {
  assert.deepEqual(
    METALLB_WEBHOOKS.map((w) => [w.path, w.operations.join(',')]),
    [
      ['/validate-metallb-io-v1beta2-bgppeer', 'CREATE,UPDATE'],
      ['/validate-metallb-io-v1beta1-bfdprofile', 'CREATE,DELETE'],
      ['/validate-metallb-io-v1beta1-bgpadvertisement', 'CREATE,UPDATE'],
      ['/validate-metallb-io-v1beta1-community', 'CREATE,UPDATE'],
      ['/validate-metallb-io-v1beta1-ipaddresspool', 'CREATE,UPDATE'],
      ['/validate-metallb-io-v1beta1-l2advertisement', 'CREATE,UPDATE'],
    ],
  );
});

const cases: Array<{ name: string; kind: string; op: string; object: KubeObject; stored?: KubeObject[]; listed: string[]; allowed: boolean; message?: string; warnings?: string[] }> = [
  {
    name: 'a valid pool',
    kind: 'IPAddressPool',
    op: 'CREATE',
    object: obj('IPAddressPool', 'b', { addresses: ['10.0.1.0/24'] }),
    stored: [obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/24'] })],
    listed: ['IPAddressPool'],
    allowed: true,
  },
  {
    name: 'an overlapping pool',
    kind: 'IPAddressPool',
    op: 'CREATE',
    object: obj('IPAddressPool', 'b', { addresses: ['10.0.0.128/25'] }),
    stored: [obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/24'] })],
    listed: ['IPAddressPool'],
    allowed: false,
    // the core's rendition of MetalLB's parser error (naming the object), as `validate` prints it
    message: 'metallb-system/IPAddressPool/b: CIDR "10.0.0.128/25" in pool "b" overlaps with already defined CIDR "10.0.0.0/24" of pool "a"',
  },
  {
    name: 'a pool outside the namespace: denied before listing',
    kind: 'IPAddressPool',
    op: 'CREATE',
    object: obj('IPAddressPool', 'b', { addresses: ['10.0.0.0/24'] }, 'default'),
    listed: [],
    allowed: false,
    message: 'resource must be created in metallb-system namespace',
  },
  {
    name: 'a BGPPeer with disableMP: allowed with the warning, nothing listed',
    kind: 'BGPPeer',
    op: 'CREATE',
    object: obj('BGPPeer', 'p', { disableMP: true }),
    listed: [],
    allowed: true,
    warnings: ["disable mp is deprecated and has no effect since it's the default behavior now"],
  },
  {
    name: 'a BGPPeer update reads the peers and the nodes',
    kind: 'BGPPeer',
    op: 'UPDATE',
    object: obj('BGPPeer', 'p', { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.1' }),
    listed: ['BGPPeer', 'Node'],
    allowed: true,
  },
  {
    name: 'a BFDProfile in use cannot be deleted',
    kind: 'BFDProfile',
    op: 'DELETE',
    object: obj('BFDProfile', 'fast'),
    stored: [obj('BGPPeer', 'router', { bfdProfile: 'fast' })],
    listed: ['BGPPeer'],
    allowed: false,
    message: 'failed to delete BFDProfile fast, used by BGPPeer router',
  },
  { name: 'a BFDProfile create reads nothing', kind: 'BFDProfile', op: 'CREATE', object: obj('BFDProfile', 'fast'), listed: [], allowed: true },
  {
    name: 'an L2Advertisement with a bad selector',
    kind: 'L2Advertisement',
    op: 'CREATE',
    object: obj('L2Advertisement', 'l2', { nodeSelectors: [{ matchExpressions: [{ key: 'a', operator: 'Bogus' }] }] }),
    listed: ['L2Advertisement', 'IPAddressPool'],
    allowed: false,
  },
  { name: 'an unhandled operation (CONNECT) is allowed', kind: 'IPAddressPool', op: 'CONNECT', object: obj('IPAddressPool', 'b'), listed: [], allowed: true },
];
for (const c of cases) {
  test(`admission: ${c.name}`, async () => {
    const d = deps(c.stored ?? []);
    const r = await admit(c.kind, c.op, c.object, d);
    assert.equal(r.response.uid, 'u-1');
    assert.equal(r.response.allowed, c.allowed, r.response.status.message);
    assert.deepEqual(d.listed, c.listed);
    if (c.allowed) assert.deepEqual(r.response.status, { metadata: {}, code: 200 });
    else {
      assert.equal(r.response.status.code, 403);
      assert.equal(r.response.status.reason, 'Forbidden');
      if (c.message) assert.equal(r.response.status.message, c.message);
    }
    assert.deepEqual(r.response.warnings, c.warnings);
  });
}

test('admission: a failed list is a denial with MetalLB wording (errors.Join for v1beta1 kinds, %w for BGPPeer)', async () => {
  const r = await admit('IPAddressPool', 'CREATE', obj('IPAddressPool', 'b', { addresses: ['10.0.0.0/24'] }), deps([], 'IPAddressPool'));
  assert.equal(r.response.allowed, false);
  assert.equal(r.response.status.message, 'ipaddresspools.metallb.io is forbidden: User "x" cannot list resource\nfailed to get existing IPAddressPool objects');
  const p = await admit('BGPPeer', 'CREATE', obj('BGPPeer', 'p', { myASN: 1, peerASN: 2, peerAddress: '10.0.0.1' }), deps([], 'Node'));
  assert.equal(p.response.status.message, 'failed to get existing Node objects: ipaddresspools.metallb.io is forbidden: User "x" cannot list resource');
});

test('admission: malformed requests get code 400 (controller-runtime texts); a v1beta1 review is answered as v1beta1', async () => {
  const d = deps([]);
  const s = spec('IPAddressPool');
  const body = async (b: Buffer, ct = 'application/json') => ((await handleAdmission(s, b, ct, d)).body as { response: { allowed: boolean; status: { code: number; message: string } } }).response;
  assert.deepEqual(await body(Buffer.alloc(0)), { uid: '', allowed: false, status: { metadata: {}, code: 400, message: 'request body is empty' } });
  assert.equal((await body(review('CREATE', obj('IPAddressPool', 'a')), 'text/plain')).status.message, 'contentType=text/plain, expected application/json');
  assert.equal((await body(Buffer.from('{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}'))).status.message, 'got an empty AdmissionRequest');
  assert.equal((await body(Buffer.from('{'))).status.code, 400);
  assert.match((await body(review('CREATE', obj('Community', 'a')))).status.message, /expected IPAddressPool, got Community/);
  const v1beta1 = await admit('IPAddressPool', 'CREATE', obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/24'] }), d, 'admission.k8s.io/v1beta1');
  assert.equal(v1beta1.apiVersion, 'admission.k8s.io/v1beta1');
  assert.equal(v1beta1.response.allowed, true);
});

test('conversion review: v1beta1 → v1beta2 and back, as MetalLB answers it; a bad duration is a Failure', () => {
  const v1beta1 = { apiVersion: 'metallb.io/v1beta1', kind: 'BGPPeer', metadata: { name: 'p', namespace: NS, uid: 'x' }, spec: { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.1', holdTime: '90s' } };
  const a = handleConversion(
    Buffer.from(
      JSON.stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'ConversionReview',
        request: { uid: 'c-1', desiredAPIVersion: 'metallb.io/v1beta2', objects: [v1beta1] },
      }),
    ),
  );
  assert.equal(a.status, 200);
  const res = (a.body as { response: { uid: string; convertedObjects: KubeObject[]; result: { status: string } } }).response;
  assert.equal(res.uid, 'c-1');
  assert.equal(res.result.status, 'Success');
  assert.deepEqual(res.convertedObjects, [
    {
      apiVersion: 'metallb.io/v1beta2',
      kind: 'BGPPeer',
      metadata: v1beta1.metadata,
      spec: { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.1', holdTime: '1m30s', keepaliveTime: '0s', passwordSecret: {} },
      status: {},
    },
  ]);
  const bad = handleConversion(
    Buffer.from(
      JSON.stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'ConversionReview',
        request: { uid: 'c-2', desiredAPIVersion: 'metallb.io/v1beta2', objects: [{ ...v1beta1, spec: { holdTime: '5x' } }] },
      }),
    ),
  );
  assert.deepEqual((bad.body as { response: unknown }).response, {
    uid: 'c-2',
    convertedObjects: null,
    result: { metadata: {}, status: 'Failure', message: 'spec.holdTime: time: invalid duration "5x"' },
  });
  assert.equal(handleConversion(Buffer.from('nope')).status, 400);
});

function post(port: number, path: string, body: Buffer, ca: string): Promise<{ status: number; text: string; cert: X509Certificate }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path, method: 'POST', servername: 'webhook.test', ca, agent: false, headers: { 'Content-Type': 'application/json' } }, (res) => {
      const cert = new X509Certificate((res.socket as import('node:tls').TLSSocket).getPeerX509Certificate()!.raw);
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, cert }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('the HTTPS server: every path answers, others 404; a swapped certificate serves the next connection', async () => {
  const ca = createCA();
  const first = createServingCert(ca, 'webhook.test');
  const server = new WebhookServer({ ...deps([]), host: '127.0.0.1', port: 0, tls: { minVersion: 'TLSv1.3' }, keyPair: first });
  const port = await server.listen();
  try {
    const r = await post(port, '/validate-metallb-io-v1beta1-ipaddresspool', review('CREATE', obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/24'] })), ca.certPem);
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.text).response.allowed, true);
    assert.equal(r.cert.serialNumber, new X509Certificate(first.certPem).serialNumber);
    const nf = await post(port, '/validate-nothing', Buffer.from('{}'), ca.certPem);
    assert.deepEqual([nf.status, nf.text], [404, '404 page not found\n']);
    const conv = await post(port, '/convert', Buffer.from('{}'), ca.certPem);
    assert.equal(conv.status, 400);
    const second = createServingCert(ca, 'webhook.test');
    server.setKeyPair(second);
    const after = await post(port, '/validate-metallb-io-v1beta1-ipaddresspool', review('CREATE', obj('IPAddressPool', 'a', { addresses: ['10.0.0.0/24'] })), ca.certPem);
    assert.equal(after.cert.fingerprint256, new X509Certificate(second.certPem).fingerprint256);
  } finally {
    await server.close();
  }
});
