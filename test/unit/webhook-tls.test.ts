// The webhook server's TLS flags as MetalLB v0.16.1 parses them (internal/tlsconfig OptFor with
// Kubernetes' cliflag names): table of values → node:tls options or MetalLB's error text; and a
// real handshake that honours them (TLS 1.3 by default, TLS 1.2 with the chosen suite, HTTP/1.1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { webhookTlsOptions, type TlsFlags } from '../../src/controller/webhook-tls.ts';
import { createCA, createServingCert } from '../../src/controller/webhook-cert.ts';

const flags = (f: Partial<TlsFlags>): TlsFlags => ({ minVersion: '', cipherSuites: '', curvePreferences: '', ...f });
const TLS13 = 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256';

const cases: Array<{ name: string; flags: Partial<TlsFlags>; want?: object; error?: string }> = [
  { name: 'defaults: TLS 1.3, Node.js ciphers and curves', flags: {}, want: { minVersion: 'TLSv1.3' } },
  { name: 'VersionTLS12', flags: { minVersion: 'VersionTLS12' }, want: { minVersion: 'TLSv1.2' } },
  { name: 'VersionTLS13', flags: { minVersion: 'VersionTLS13' }, want: { minVersion: 'TLSv1.3' } },
  { name: 'an unknown version', flags: { minVersion: 'TLS1.2' }, error: 'parsing tls-min-version: unknown tls version "TLS1.2"' },
  {
    name: 'TLS 1.2 suites in Go names (spaces trimmed, TLS 1.3 names always on)',
    flags: { minVersion: 'VersionTLS12', cipherSuites: 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_AES_128_GCM_SHA256' },
    want: { minVersion: 'TLSv1.2', ciphers: `ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305:${TLS13}` },
  },
  { name: 'suites with the TLS 1.3 default minimum', flags: { cipherSuites: 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256' }, error: 'cipher suites cannot be configured with TLS 1.3' },
  { name: 'an unknown suite', flags: { minVersion: 'VersionTLS12', cipherSuites: 'TLS_FOO' }, error: "parsing tls-cipher-suites: Cipher suite TLS_FOO not supported or doesn't exist" },
  { name: 'curves as Go CurveIDs', flags: { curvePreferences: '29, 23,24' }, want: { minVersion: 'TLSv1.3', ecdhCurve: 'X25519:P-256:P-384' } },
  { name: 'a curve name instead of an id', flags: { curvePreferences: 'X25519' }, error: 'parsing tls-curve-preferences: invalid curve preference "X25519": must be a numeric CurveID (0-65535)' },
  { name: 'curve 0', flags: { curvePreferences: '0' }, error: 'parsing tls-curve-preferences: curve preference 0 is out of range (must be 1-65535)' },
  { name: 'a duplicate curve', flags: { curvePreferences: '23,23' }, error: 'parsing tls-curve-preferences: duplicate curve preference 23' },
  { name: 'a curve Go does not know', flags: { curvePreferences: '22' }, error: 'parsing tls-curve-preferences: curve preference 22 is not supported by metallb-ts' },
];
for (const c of cases) {
  test(`webhookTlsOptions: ${c.name}`, () => {
    if (c.error)
      assert.throws(
        () => webhookTlsOptions(flags(c.flags)),
        (err: Error) => err.message.startsWith(c.error!),
      );
    else assert.deepEqual(webhookTlsOptions(flags(c.flags)), c.want);
  });
}

test('a handshake honours the options: TLS 1.3 by default; TLS 1.2 with the one suite allowed; HTTP/1.1 by ALPN', async () => {
  const ca = createCA();
  const leaf = createServingCert(ca, 'localhost');
  for (const [f, client, version, cipher] of [
    [flags({}), {}, 'TLSv1.3', undefined],
    [flags({ minVersion: 'VersionTLS12', cipherSuites: 'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384', curvePreferences: '23' }), { maxVersion: 'TLSv1.2' as const }, 'TLSv1.2', 'ECDHE-RSA-AES256-GCM-SHA384'],
  ] as const) {
    const server = https.createServer({ key: leaf.keyPem, cert: leaf.certPem, ALPNProtocols: ['http/1.1'], ...webhookTlsOptions(f) }, (_q, r) => r.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const sock = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: ca.certPem, ALPNProtocols: ['h2', 'http/1.1'], ...client });
    await new Promise<void>((resolve, reject) => {
      sock.once('secureConnect', resolve);
      sock.once('error', reject);
    });
    assert.equal(sock.getProtocol(), version);
    assert.equal(sock.alpnProtocol, 'http/1.1');
    if (cipher) assert.equal(sock.getCipher().name, cipher);
    sock.destroy();
    // a TLS 1.2 client is refused by the TLS 1.3 default
    if (version === 'TLSv1.3') {
      const old = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: ca.certPem, maxVersion: 'TLSv1.2' });
      await assert.rejects(
        new Promise((resolve, reject) => {
          old.once('secureConnect', resolve);
          old.once('error', reject);
        }),
      );
      old.destroy();
    }
    await new Promise<void>((r) => server.close(() => r()));
  }
});
