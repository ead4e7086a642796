// The certificate rotator on an in-memory API (no watches): a missing Secret is created with a
// CA and serving certificate; the CA goes into every webhook of the configuration and into the
// BGPPeer CRD's conversion webhook when it has one (a CRD without one, or a configuration that
// does not exist yet, is no error); a 409 on the Secret is decided again on a fresh read; a
// valid Secret is not rewritten; a reconcile after the configuration lost its caBundle writes it
// back. And `--disable-cert-rotation`'s CertDirSource: one line for missing files, a change
// picked up by the next poll.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeClient, KubeRequest } from '../../src/kube/client.ts';
import { KubeApiError } from '../../src/kube/client.ts';
import { CertDirSource, CertRotator } from '../../src/controller/webhook-rotator.ts';
import { createCA, createServingCert, type KeyPairPem } from '../../src/controller/webhook-cert.ts';
import { UserError } from '../../src/core/errors.ts';

const NS = 'metallb-system';
const SECRET = `/api/v1/namespaces/${NS}/secrets/metallb-webhook-cert`;
const VWC = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/metallb-webhook-configuration';
const CRD = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/bgppeers.metallb.io';

/** An in-memory API: objects by path, resourceVersion preconditions on PUT, a log of writes. */
class FakeApi {
  readonly server = 'https://fake';
  readonly objects = new Map<string, any>();
  readonly writes: string[] = [];
  private rv = 1;
  conflictsLeft = 0;

  async request<T>(req: KubeRequest): Promise<T> {
    const method = req.method ?? 'GET';
    const notFound = () => new KubeApiError(404, { message: 'not found', reason: 'NotFound' } as never, 'not found');
    if (method === 'GET') {
      const o = this.objects.get(req.path);
      if (!o) throw notFound();
      return structuredClone(o);
    }
    if (method === 'POST') {
      const body = structuredClone(req.body as any);
      const path = `${req.path}/${body.metadata.name}`;
      if (this.objects.has(path)) throw new KubeApiError(409, undefined, 'exists');
      body.metadata.resourceVersion = String(++this.rv);
      this.objects.set(path, body);
      this.writes.push(`POST ${path}`);
      return structuredClone(body);
    }
    if (method === 'PUT') {
      const cur = this.objects.get(req.path);
      if (!cur) throw notFound();
      const body = structuredClone(req.body as any);
      if (this.conflictsLeft > 0 || body.metadata?.resourceVersion !== cur.metadata?.resourceVersion) {
        this.conflictsLeft = Math.max(0, this.conflictsLeft - 1);
        cur.metadata.resourceVersion = String(++this.rv); // someone else wrote meanwhile
        throw new KubeApiError(409, undefined, 'conflict');
      }
      body.metadata.resourceVersion = String(++this.rv);
      this.objects.set(req.path, body);
      this.writes.push(`PUT ${req.path}${req.query?.fieldManager ? ` fieldManager=${req.query.fieldManager}` : ''}`);
      return structuredClone(body);
    }
    throw new Error(`unexpected ${method}`);
  }
}

function rotator(api: FakeApi, served: KeyPairPem[]): CertRotator {
  return new CertRotator({
    api: api as unknown as KubeClient,
    namespace: NS,
    secretName: 'metallb-webhook-cert',
    dnsName: `metallb-webhook-service.${NS}.svc`,
    webhookConfigurationName: 'metallb-webhook-configuration',
    conversionCRDName: 'bgppeers.metallb.io',
    onKeyPair: (kp) => served.push(kp),
  });
}

const vwc = () => ({
  metadata: { name: 'metallb-webhook-configuration', resourceVersion: '1' },
  webhooks: [
    { name: 'a', clientConfig: { service: {} } },
    { name: 'b', clientConfig: { url: 'https://x' } },
  ],
});
const data = (api: FakeApi, key: string): string => Buffer.from(api.objects.get(SECRET).data[key], 'base64').toString('utf8');

test('no Secret, no configuration yet, a CRD without conversion webhook: the Secret is created, nothing else fails', async () => {
  const api = new FakeApi();
  api.objects.set(CRD, { metadata: { name: 'bgppeers.metallb.io', resourceVersion: '1' }, spec: { conversion: { strategy: 'None' } } });
  const served: KeyPairPem[] = [];
  const r = rotator(api, served);
  const kp = await r.start();
  await r.stop();
  assert.deepEqual(api.writes, [`POST ${SECRET}`]);
  assert.equal(r.injected, false, 'the configuration is not there (yet)');
  assert.equal(served.length, 1);
  assert.equal(kp.certPem, data(api, 'tls.crt'));
  assert.ok(new X509Certificate(data(api, 'tls.crt')).checkIssued(new X509Certificate(data(api, 'ca.crt'))));
  assert.deepEqual(Object.keys(api.objects.get(SECRET).data).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
});

test('the shipped empty Secret is filled (after a conflict), the CA goes into every webhook and the conversion webhook; a valid Secret is left alone', async () => {
  const api = new FakeApi();
  api.objects.set(SECRET, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'metallb-webhook-cert', namespace: NS, resourceVersion: '1' }, data: { keep: 'eA==' } });
  api.objects.set(VWC, vwc());
  api.objects.set(CRD, { metadata: { name: 'bgppeers.metallb.io', resourceVersion: '1' }, spec: { conversion: { strategy: 'Webhook', webhook: { clientConfig: { service: {} } } } } });
  api.conflictsLeft = 1;
  const served: KeyPairPem[] = [];
  const r = rotator(api, served);
  await r.start();
  const ca = data(api, 'ca.crt');
  const b64 = Buffer.from(ca).toString('base64');
  assert.equal(api.objects.get(SECRET).data.keep, 'eA==', 'other keys are kept');
  assert.deepEqual(
    api.objects.get(VWC).webhooks.map((w: any) => w.clientConfig.caBundle),
    [b64, b64],
  );
  assert.equal(api.objects.get(CRD).spec.conversion.webhook.clientConfig.caBundle, b64);
  assert.deepEqual(api.writes, [`PUT ${SECRET}`, `PUT ${VWC} fieldManager=MetalLB`, `PUT ${CRD} fieldManager=MetalLB`]);
  assert.equal(r.injected, true);

  // someone re-applies the configuration without caBundle: the next reconcile writes it back, nothing else
  api.writes.length = 0;
  api.objects.set(VWC, { ...vwc(), metadata: { ...vwc().metadata, resourceVersion: '99' } });
  r.trigger('test');
  await r.idle();
  assert.deepEqual(api.writes, [`PUT ${VWC} fieldManager=MetalLB`]);
  await r.stop();

  // a restart finds everything valid: no write, the stored certificate is served
  api.writes.length = 0;
  const again: KeyPairPem[] = [];
  const r2 = rotator(api, again);
  await r2.start();
  await r2.stop();
  assert.deepEqual(api.writes, []);
  assert.equal(again[0]!.certPem, served[0]!.certPem);
});

test('start() fails in one line when the Secret cannot be read (RBAC): exit 3', async () => {
  const api = new FakeApi();
  (api as any).request = async () => {
    throw new KubeApiError(403, { message: 'secrets "metallb-webhook-cert" is forbidden', reason: 'Forbidden' } as never, 'forbidden');
  };
  await assert.rejects(rotator(api, []).start(), (err: Error) => err instanceof UserError && err.exitCode === 3 && /cannot set up the webhook certificate/.test(err.message));
});

test('CertDirSource: missing files are one line (exit 2); replaced files are served from the next poll; a broken pair keeps the old one', () => {
  const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-certdir-'));
  try {
    const served: KeyPairPem[] = [];
    const errors: unknown[] = [];
    const log = { error: (f: unknown) => errors.push(f), info: () => {}, warn: () => {}, debug: () => {}, with: () => log } as never;
    const src = new CertDirSource({ dir, onKeyPair: (kp) => served.push(kp), log, pollMs: 3_600_000 });
    assert.throws(
      () => src.start(),
      (err: Error) => err instanceof UserError && err.exitCode === 2 && err.message.includes(`${dir}/tls.crt: no such file`),
    );
    const ca = createCA();
    const one = createServingCert(ca, 'a.svc');
    writeFileSync(join(dir, 'tls.crt'), one.certPem);
    writeFileSync(join(dir, 'tls.key'), one.keyPem);
    src.start();
    const two = createServingCert(ca, 'a.svc');
    writeFileSync(join(dir, 'tls.crt'), two.certPem);
    src.poll();
    assert.equal(served.length, 1, 'a certificate without its key is not served');
    assert.equal(errors.length, 1);
    writeFileSync(join(dir, 'tls.key'), two.keyPem);
    src.poll();
    src.poll();
    src.stop();
    assert.deepEqual(
      served.map((s) => s.certPem),
      [one.certPem, two.certPem],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
