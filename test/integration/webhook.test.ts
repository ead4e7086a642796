// MetalLB's admission webhooks served by `metallb-ts controller`, called by a real kube-apiserver.
//
// 1. As deployed: deploy/rbac-controller.yaml and deploy/webhook/ applied as they are (the
//    ValidatingWebhookConfiguration `metallb-webhook-configuration` with service references, the
//    Service `metallb-webhook-service`, the empty Secret `metallb-webhook-cert`, the RBAC), the
//    controller running with the `controller` ServiceAccount's token and `--webhook-mode enabled`.
//    The API server reaches it through the Service: `--enable-aggregator-routing` makes it dial the
//    Service's EndpointSlice (this host's own non-loopback address, as the API server refuses
//    loopback endpoints) and check the certificate for metallb-webhook-service.metallb-system.svc
//    against the CA bundle — exactly the path a cluster uses. The rotator fills the Secret and
//    writes the CA into every webhook; valid objects pass, invalid ones are refused with MetalLB's
//    messages; the BGPPeer CRD patched with MetalLB's conversion webhook converts v1beta1 objects;
//    a caBundle someone removes is written back, a deleted Secret is recreated with a new CA (and
//    the webhooks keep working), a serving certificate close to expiry is renewed from the same CA,
//    a restart leaves a valid Secret alone.
// 2. `--webhook-mode onlywebhook --disable-cert-rotation --cert-dir`: a certificate made here
//    (SAN 127.0.0.1), a ValidatingWebhookConfiguration with `clientConfig.url:
//    https://127.0.0.1:PORT/...`; replacing the files swaps the served certificate.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT, startTestCluster, type TestCluster } from './setup/cluster.ts';
import { sleep, waitFor } from './setup/wait.ts';
import { freePort } from '../helpers/net.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { corePath, metallbPath } from '../../src/controller/api.ts';
import { createServingCert } from '../../src/controller/webhook-cert.ts';

const NS = 'metallb-system';
const BIN = join(REPO_ROOT, 'bin/metallb-ts');
const VWC = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
const CRD = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/bgppeers.metallb.io';
const DNS = `metallb-webhook-service.${NS}.svc`;

/** This host's first IPv4 address the API server accepts as an endpoint (not loopback, not link-local). */
function endpointAddress(): string | undefined {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.family === 'IPv4' && !a.internal && !a.address.startsWith('169.254.')) return a.address;
    }
  }
  return undefined;
}

interface Proc {
  proc: ChildProcess;
  out: string[];
  exit: Promise<number | null>;
}

function startController(args: string[], env: Record<string, string>): Proc {
  const proc = spawn(BIN, ['controller', '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0', '--log-level', 'debug', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, KUBECONFIG: '', METALLB_NAMESPACE: NS, METALLB_POD_NAME: '', METALLB_ML_SECRET_NAME: '', METALLB_DEPLOYMENT: '', METALLB_BGP_TYPE: '', ...env },
  });
  const p: Proc = { proc, out: [], exit: new Promise((r) => proc.once('exit', (c) => r(c))) };
  proc.stdout!.on('data', (c: Buffer) => p.out.push(c.toString('utf8')));
  proc.stderr!.on('data', (c: Buffer) => p.out.push(c.toString('utf8')));
  return p;
}

async function stop(p: Proc | undefined): Promise<void> {
  if (!p || p.proc.exitCode !== null || p.proc.signalCode !== null) return;
  p.proc.kill('SIGTERM');
  const t = setTimeout(() => p.proc.kill('SIGKILL'), 15_000);
  await p.exit;
  clearTimeout(t);
}

interface Answer {
  status: number;
  body: any;
  warnings: string[];
}

describe('admission webhooks through a real API server', () => {
  let cluster: TestCluster;
  let api: KubeClient;
  let dir: string;
  const procs: Proc[] = [];

  /** A request as the admin, with the answer's status, body and Warning headers. */
  async function call(method: string, path: string, body?: unknown): Promise<Answer> {
    const url = new URL(cluster.server + path);
    const opts: https.RequestOptions = { method, headers: {} };
    await cluster.kubeConfig.applyToHTTPSOptions(opts);
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    opts.headers = { ...(opts.headers as Record<string, string>), Accept: 'application/json', ...(data ? { 'Content-Type': 'application/json' } : {}) };
    return new Promise((resolve, reject) => {
      const req = https.request(url, opts, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => {
          const w = res.headers.warning;
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, warnings: Array.isArray(w) ? w : w ? [w] : [] });
        });
      });
      req.on('error', reject);
      req.end(data);
    });
  }
  const create = (kind: string, name: string, spec: Record<string, unknown>, version = 'v1beta1', namespace = NS) =>
    call('POST', `/apis/metallb.io/${version}/namespaces/${namespace}/${kind.toLowerCase()}s`.replace('bgppeers', 'bgppeers').replace('communitys', 'communities').replace('bfdprofiles', 'bfdprofiles'), {
      apiVersion: `metallb.io/${version}`,
      kind,
      metadata: { name, namespace },
      spec,
    });
  const denied = (a: Answer, webhook: string, message: string) => {
    assert.equal(a.status, 403, JSON.stringify(a.body));
    assert.equal(a.body.message, `admission webhook "${webhook}" denied the request: ${message}`);
  };
  const created = (a: Answer) => assert.equal(a.status, 201, JSON.stringify(a.body));

  before(async () => {
    cluster = await startTestCluster({ extraApiserverArgs: ['--enable-aggregator-routing=true'] });
    api = new KubeClient(cluster.kubeConfig);
    dir = mkdtempSync(join(tmpdir(), 'metallb-ts-webhook-'));
  });

  after(async () => {
    for (const p of procs) await stop(p);
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const secretCerts = async () => {
    const s = await api.request<{ metadata: { resourceVersion: string }; data?: Record<string, string> }>({ path: corePath(NS, 'secrets', 'metallb-webhook-cert') });
    const d = (k: string) => (s.data?.[k] ? Buffer.from(s.data[k]!, 'base64').toString('utf8') : undefined);
    return { rv: s.metadata.resourceVersion, ca: d('ca.crt'), caKey: d('ca.key'), cert: d('tls.crt'), key: d('tls.key'), raw: s };
  };
  const bundles = async (): Promise<string[]> => {
    const v = await api.request<{ webhooks: Array<{ clientConfig: { caBundle?: string } }> }>({ path: `${VWC}/metallb-webhook-configuration` });
    return v.webhooks.map((w) => (w.clientConfig.caBundle ? Buffer.from(w.clientConfig.caBundle, 'base64').toString('utf8') : ''));
  };

  test('as deployed: rotated certificate, CA injected, MetalLB objects admitted or refused with MetalLB messages, BGPPeer conversion', async (t) => {
    const address = endpointAddress();
    if (!address) {
      t.skip('this host has no non-loopback IPv4 address for the webhook Service endpoint');
      return;
    }
    const port = await freePort();
    const objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
    for (const file of ['deploy/rbac-controller.yaml', 'deploy/webhook/rbac-webhook.yaml', 'deploy/webhook/webhook.yaml']) {
      for (const doc of parseAllDocuments(readFileSync(join(REPO_ROOT, file), 'utf8'))) await objects.create(doc.toJS() as KubernetesObject);
    }
    // What kube-controller-manager would make of the Service: its endpoint, this host's address.
    await api.request({
      method: 'POST',
      path: `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`,
      body: {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'metallb-webhook-service-1', namespace: NS, labels: { 'kubernetes.io/service-name': 'metallb-webhook-service' } },
        addressType: 'IPv4',
        ports: [{ name: '', port, protocol: 'TCP' }],
        endpoints: [{ addresses: [address], conditions: { ready: true } }],
      },
    });
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const tr = await core.createNamespacedServiceAccountToken({ namespace: NS, name: 'controller', body: { spec: { audiences: [], expirationSeconds: 3600 } } });
    const kubeconfig = join(dir, 'controller.kubeconfig');
    writeFileSync(kubeconfig, cluster.kubeConfigForToken(tr.status!.token!, `system:serviceaccount:${NS}:controller`).exportConfig());
    const args = ['--kubeconfig', kubeconfig, '--webhook-mode', 'enabled', '--webhook-bind-address', address, '--webhook-port', String(port)];
    let c = startController(args, { METALLB_BGP_TYPE: 'frr-k8s' });
    procs.push(c);
    const detail = () => c.out.join('').slice(-4000);

    // The rotator fills the shipped empty Secret and writes its CA into every webhook.
    const certs = await waitFor(
      'the CA in every webhook of metallb-webhook-configuration',
      async () => {
        const s = await secretCerts();
        const b = await bundles();
        return s.ca && b.length === 6 && b.every((x) => x === s.ca) ? s : undefined;
      },
      detail,
    );
    const leaf = new X509Certificate(certs.cert!);
    assert.equal(leaf.subjectAltName, `DNS:${DNS}`);
    assert.ok(leaf.checkIssued(new X509Certificate(certs.ca!)));
    assert.equal(new X509Certificate(certs.ca!).subject, 'O=metallb\nCN=cert');
    await waitFor('the webhook server listening', async () => (/"action":"webhooks enabled"/.test(c.out.join('')) ? true : undefined), detail);

    // --- admission, as a user sees it
    created(await create('IPAddressPool', 'lab', { addresses: ['192.0.2.0/28'] }));
    denied(
      await create('IPAddressPool', 'lab2', { addresses: ['192.0.2.8/29'] }),
      'ipaddresspoolvalidationwebhook.metallb.io',
      'metallb-system/IPAddressPool/lab2: CIDR "192.0.2.8/29" in pool "lab2" overlaps with already defined CIDR "192.0.2.0/28" of pool "lab"',
    );
    denied(
      await create('IPAddressPool', 'elsewhere', { addresses: ['198.51.100.0/28'] }, 'v1beta1', 'default'),
      'ipaddresspoolvalidationwebhook.metallb.io',
      'resource must be created in metallb-system namespace',
    );
    // an update is checked against the others, not against itself
    await waitFor(
      'the pool widened (an update: retried while the controller writes its status)',
      async () => {
        const lab = (await call('GET', metallbPath(NS, 'ipaddresspools', 'lab'))).body;
        const a = await call('PUT', metallbPath(NS, 'ipaddresspools', 'lab'), { ...lab, spec: { addresses: ['192.0.2.0/27'] } });
        if (a.status === 409) return undefined;
        assert.equal(a.status, 200, JSON.stringify(a.body));
        return true;
      },
      detail,
    );

    created(await create('BFDProfile', 'fast', { receiveInterval: 300 }));
    created(await create('BGPPeer', 'router', { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.1', bfdProfile: 'fast' }, 'v1beta2'));
    denied(
      await create('BGPPeer', 'bad', { myASN: 64500, peerASN: 64501, peerAddress: 'not-an-ip' }, 'v1beta2'),
      'bgppeersvalidationwebhook.metallb.io',
      'metallb-system/BGPPeer/bad: invalid BGPPeer address "not-an-ip"',
    );
    const mp = await create('BGPPeer', 'legacy', { myASN: 64500, peerASN: 64502, peerAddress: '10.0.0.2', disableMP: true }, 'v1beta2');
    created(mp);
    assert.deepEqual(mp.warnings, ['299 - "disable mp is deprecated and has no effect since it\'s the default behavior now"']);
    denied(await call('DELETE', metallbPath(NS, 'bfdprofiles', 'fast')), 'bfdprofilevalidationwebhook.metallb.io', 'failed to delete BFDProfile fast, used by BGPPeer router');

    denied(
      await create('BGPAdvertisement', 'agg', { ipAddressPools: ['lab'], aggregationLength: 24 }),
      'bgpadvertisementvalidationwebhook.metallb.io',
      'metallb-system/BGPAdvertisement/agg: invalid aggregation length 24: prefix 27 in pool "lab" is more specific than the aggregation length for addresses 192.0.2.0/27',
    );
    created(await create('BGPAdvertisement', 'bgp', { ipAddressPools: ['lab'] }));
    denied(
      await create('L2Advertisement', 'l2bad', { nodeSelectors: [{ matchExpressions: [{ key: 'a', operator: 'Bogus' }] }] }),
      'l2advertisementvalidationwebhook.metallb.io',
      'metallb-system/L2Advertisement/l2bad: invalid nodeSelectors {"matchExpressions":[{"key":"a","operator":"Bogus"}]}: "Bogus" is not a valid label selector operator',
    );
    created(await create('L2Advertisement', 'l2', { ipAddressPools: ['lab'] }));
    denied(
      await create('Community', 'bad', { communities: [{ name: 'x', value: 'nope' }] }),
      'communityvalidationwebhook.metallb.io',
      'metallb-system/Community/bad: parsing community "x": invalid community format "nope"',
    );
    created(await create('Community', 'good', { communities: [{ name: 'no-export', value: '65535:65281' }] }));

    // --- BGPPeer conversion: MetalLB's CRD patch (config/crd/patches/crd-conversion-patch-bgppeers.yaml)
    const crd = await api.request<any>({ path: CRD });
    crd.spec.conversion = { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1beta1', 'v1beta2'], clientConfig: { service: { namespace: NS, name: 'metallb-webhook-service', path: '/convert' } } } };
    await api.request({ method: 'PUT', path: CRD, body: crd });
    await waitFor(
      'the CA in the BGPPeer CRD conversion webhook',
      async () => {
        const x = await api.request<any>({ path: CRD });
        return x.spec.conversion?.webhook?.clientConfig?.caBundle === Buffer.from(certs.ca!).toString('base64') ? true : undefined;
      },
      detail,
    );
    const v1 = await waitFor(
      'a v1beta1 BGPPeer created through the conversion webhook',
      async () => {
        const a = await create('BGPPeer', 'old-style', { myASN: 64500, peerASN: 64503, peerAddress: '10.0.0.3', holdTime: '90s', nodeSelectors: [{ matchLabels: { rack: 'a' } }] });
        return a.status === 201 ? a : undefined;
      },
      detail,
    );
    // peerPort: the CRD schema's default
    assert.deepEqual(v1.body.spec, { myASN: 64500, peerASN: 64503, peerAddress: '10.0.0.3', peerPort: 179, holdTime: '1m30s', keepaliveTime: '0s', nodeSelectors: [{ matchLabels: { rack: 'a' } }] });
    const v2 = (await call('GET', `/apis/metallb.io/v1beta2/namespaces/${NS}/bgppeers/old-style`)).body;
    // stored as v1beta2 (our conversion), with the v1beta2 schema's defaults
    assert.deepEqual(v2.spec, {
      myASN: 64500,
      peerASN: 64503,
      peerAddress: '10.0.0.3',
      peerPort: 179,
      holdTime: '1m30s',
      keepaliveTime: '0s',
      nodeSelectors: [{ matchLabels: { rack: 'a' } }],
      passwordSecret: {},
      disableMP: false,
      dualStackAddressFamily: false,
    });
    // a v1beta1 object reaches the v1beta2 validating webhook converted
    denied(await create('BGPPeer', 'old-bad', { myASN: 64500, peerASN: 64504, peerAddress: 'nope' }), 'bgppeersvalidationwebhook.metallb.io', 'metallb-system/BGPPeer/old-bad: invalid BGPPeer address "nope"');

    // --- the rotator keeps the configuration right
    const vwc = await api.request<any>({ path: `${VWC}/metallb-webhook-configuration` });
    for (const w of vwc.webhooks) delete w.clientConfig.caBundle;
    await api.request({ method: 'PUT', path: `${VWC}/metallb-webhook-configuration`, body: vwc });
    await waitFor('the caBundle written back', async () => ((await bundles()).every((b) => b === certs.ca) ? true : undefined), detail);

    // a serving certificate 30 days from expiry: renewed from the same CA
    const expiring = createServingCert({ certPem: certs.ca!, keyPem: certs.caKey! }, DNS, { validityMs: 30 * 24 * 3600_000 });
    const s = (await secretCerts()).raw;
    await api.request({
      method: 'PUT',
      path: corePath(NS, 'secrets', 'metallb-webhook-cert'),
      body: { ...s, data: { ...s.data, 'tls.crt': Buffer.from(expiring.certPem).toString('base64'), 'tls.key': Buffer.from(expiring.keyPem).toString('base64') } },
    });
    const renewed = await waitFor(
      'the serving certificate renewed',
      async () => {
        const x = await secretCerts();
        return x.cert !== expiring.certPem && x.cert !== certs.cert ? x : undefined;
      },
      detail,
    );
    assert.equal(renewed.ca, certs.ca, 'the CA is kept');
    assert.ok(new X509Certificate(renewed.cert!).validToDate.getTime() > Date.now() + 300 * 24 * 3600_000);

    // the Secret deleted: a new one with a new CA, injected, and admission goes on
    await api.request({ method: 'DELETE', path: corePath(NS, 'secrets', 'metallb-webhook-cert') });
    const fresh = await waitFor(
      'a new CA in the recreated Secret and in the webhooks',
      async () => {
        const x = await secretCerts().catch(() => undefined);
        if (!x?.ca || x.ca === certs.ca) return undefined;
        return (await bundles()).every((b) => b === x.ca) ? x : undefined;
      },
      detail,
    );
    const afterRotation = await waitFor(
      'admission with the new CA',
      async () => {
        const a = await create('IPAddressPool', 'after-rotation', { addresses: ['192.0.2.64/28'] });
        return a.status === 201 ? a : undefined;
      },
      detail,
    );
    assert.equal(afterRotation.status, 201);

    // a restart with a valid Secret writes nothing
    await stop(c);
    assert.equal(await c.exit, 0, `the controller did not exit 0 on SIGTERM:\n${detail()}`);
    const before = await secretCerts();
    c = startController(args, { METALLB_BGP_TYPE: 'frr-k8s' });
    procs.push(c);
    await waitFor('the restarted controller serving', async () => (/"action":"webhooks enabled"/.test(c.out.join('')) ? true : undefined), detail);
    await sleep(1000);
    const again = await secretCerts();
    assert.equal(again.rv, before.rv, 'the Secret was not rewritten');
    assert.equal(again.ca, fresh.ca);
    denied(
      await create('IPAddressPool', 'lab3', { addresses: ['192.0.2.1/32'] }),
      'ipaddresspoolvalidationwebhook.metallb.io',
      'metallb-system/IPAddressPool/lab3: CIDR "192.0.2.1/32" in pool "lab3" overlaps with already defined CIDR "192.0.2.0/27" of pool "lab"',
    );
    // (a denial is logged at error level, as MetalLB's webhooks do: not a failure of the controller)
    const errors = c.out
      .join('')
      .split('\n')
      .filter((l) => l.includes('"level":"error"') && !l.includes('"webhook":"ipaddresspool"'));
    assert.deepEqual(errors, [], 'the RBAC of deploy/ suffices: no error');
  });

  test('onlywebhook with --disable-cert-rotation: the certificate of --cert-dir, a URL webhook on 127.0.0.1, files replaced while serving', async () => {
    const port = await freePort();
    const certDir = join(dir, 'certs');
    mkdirSync(certDir);
    /** A CA and a serving certificate for 127.0.0.1 (openssl: the rotator makes DNS names only). */
    const makeCerts = (tag: string): string => {
      const w = join(dir, tag);
      mkdirSync(w);
      const run = (args: string[]) => {
        const r = spawnSync('openssl', args, { cwd: w, encoding: 'utf8' });
        assert.equal(r.status, 0, r.stderr);
      };
      run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', `/CN=test-ca-${tag}`]);
      writeFileSync(join(w, 'ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
      run(['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', '/CN=127.0.0.1']);
      run(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', '7', '-days', '2', '-extfile', 'ext', '-out', 'tls.crt']);
      // as a kubelet would update the mount: new files in place
      writeFileSync(join(certDir, 'tls.crt'), readFileSync(join(w, 'tls.crt')));
      writeFileSync(join(certDir, 'tls.key'), readFileSync(join(w, 'tls.key')));
      return readFileSync(join(w, 'ca.crt'), 'utf8');
    };
    let ca = makeCerts('one');
    const c = startController(
      [
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--webhook-mode',
        'onlywebhook',
        '--disable-cert-rotation',
        '--cert-dir',
        certDir,
        '--webhook-bind-address',
        '127.0.0.1',
        '--webhook-port',
        String(port),
        '--tls-min-version',
        'VersionTLS12',
      ],
      {},
    );
    procs.push(c);
    const detail = () => c.out.join('').slice(-3000);
    await waitFor('the onlywebhook controller serving', async () => (/"action":"webhooks enabled"/.test(c.out.join('')) ? true : undefined), detail);
    const ready = c.out.join('').match(/"address":"127\.0\.0\.1:(\d+)","caller":"main\.go","level":"info","msg":"serving \/metrics/);
    assert.ok(ready);
    assert.equal((await fetch(`http://127.0.0.1:${ready[1]}/readyz`)).status, 200);

    const hook = (bundle: string) => ({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'metallb-ts-url-webhook' },
      webhooks: [
        {
          name: 'communityvalidationwebhook.url.test',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          clientConfig: { url: `https://127.0.0.1:${port}/validate-metallb-io-v1beta1-community`, caBundle: Buffer.from(bundle).toString('base64') },
          rules: [{ apiGroups: ['metallb.io'], apiVersions: ['v1beta1'], operations: ['CREATE', 'UPDATE'], resources: ['communities'] }],
        },
      ],
    });
    // only this test's URL webhook decides (the deployed configuration of the test before is gone)
    await api.request({ method: 'DELETE', path: `${VWC}/metallb-webhook-configuration` }).catch(() => undefined);
    await api.request({ method: 'POST', path: VWC, body: hook(ca) });
    await waitFor(
      'the URL webhook refuses a bad Community',
      async () => {
        const a = await create('Community', 'url-bad', { communities: [{ name: 'y', value: '1:2:3:4' }] });
        return a.status === 403 && a.body.message.startsWith('admission webhook "communityvalidationwebhook.url.test" denied the request: ') ? a : undefined;
      },
      detail,
    );

    // new files from another CA; the configuration follows; the server picks them up (10 s poll)
    ca = makeCerts('two');
    const cur = await api.request<any>({ path: `${VWC}/metallb-ts-url-webhook` });
    await api.request({ method: 'PUT', path: `${VWC}/metallb-ts-url-webhook`, body: { ...hook(ca), metadata: cur.metadata } });
    await waitFor('the new certificate served', async () => (/"msg":"webhook certificate reloaded"/.test(c.out.join('')) ? true : undefined), detail, 30_000);
    await waitFor(
      'a valid Community admitted through the URL webhook',
      async () => {
        const a = await create('Community', `url-good-${Date.now()}`, { communities: [{ name: 'z', value: '65000:1' }] });
        return a.status === 201 ? a : undefined;
      },
      detail,
    );
    assert.doesNotMatch(c.out.join(''), /ConfigurationState|caches synced/, 'onlywebhook: no reconcilers, no ConfigurationState');
  });
});
