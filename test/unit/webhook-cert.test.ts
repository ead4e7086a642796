// The webhook certificates as cert-controller v0.15.0 makes them for MetalLB (CA: CN/SAN `cert`,
// O `metallb`, serial 0, 10 years, CA:TRUE; serving: CN/SAN `<service>.<ns>.svc`, serial 1, 1 year,
// serverAuth; both from an hour ago; PKCS#1 keys), checked with node:crypto's parser and, when it
// is installed, `openssl verify`; ValidCert's verdicts (certProblem) and the rotator's renewal
// decision (renewCerts: a new CA, a new serving certificate, or nothing, 90 days ahead).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { certProblem, createCA, createServingCert, LOOKAHEAD_MS } from '../../src/controller/webhook-cert.ts';
import { renewCerts } from '../../src/controller/webhook-rotator.ts';

const DNS = 'metallb-webhook-service.metallb-system.svc';
const NOW = new Date('2026-03-01T12:00:00Z');
const DAY = 24 * 3600_000;
const ca = createCA({ now: NOW });
const leaf = createServingCert(ca, DNS, { now: NOW });

test('the CA: CN and SAN cert, O metallb, serial 0, self-signed CA, from an hour ago for 10 years, PKCS#1 key', () => {
  const c = new X509Certificate(ca.certPem);
  assert.equal(c.subject, 'O=metallb\nCN=cert');
  assert.equal(c.issuer, c.subject);
  assert.equal(c.subjectAltName, 'DNS:cert');
  assert.equal(c.serialNumber, '0');
  assert.equal(c.ca, true);
  assert.ok(c.verify(c.publicKey), 'self-signed');
  assert.equal(c.validFromDate.toISOString(), '2026-03-01T11:00:00.000Z');
  assert.equal(c.validToDate.toISOString(), new Date(NOW.getTime() + 10 * 365 * DAY).toISOString());
  assert.match(ca.keyPem, /^-----BEGIN RSA PRIVATE KEY-----\n/);
  assert.equal(createPrivateKey(ca.keyPem).asymmetricKeyDetails?.modulusLength, 2048);
});

test('the serving certificate: CN and SAN the service name, serial 1, signed by the CA, serverAuth, 1 year', () => {
  const c = new X509Certificate(leaf.certPem);
  const cac = new X509Certificate(ca.certPem);
  assert.equal(c.subject, `CN=${DNS}`);
  assert.equal(c.issuer, 'O=metallb\nCN=cert');
  assert.equal(c.subjectAltName, `DNS:${DNS}`);
  assert.equal(c.serialNumber, '01');
  assert.equal(c.ca, false);
  assert.deepEqual(c.keyUsage, ['1.3.6.1.5.5.7.3.1']);
  assert.ok(c.checkIssued(cac) && c.verify(cac.publicKey));
  assert.ok(c.checkPrivateKey(createPrivateKey(leaf.keyPem)));
  assert.equal(c.validToDate.toISOString(), new Date(NOW.getTime() + 365 * DAY).toISOString());
  assert.equal(c.checkHost(DNS), DNS);
  assert.equal(c.checkHost('other.metallb-system.svc'), undefined);
});

test('OpenSSL verifies the chain for a TLS server and prints the extensions Go writes', (t) => {
  if (spawnSync('openssl', ['version']).status !== 0) {
    t.skip('openssl not installed');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-cert-'));
  try {
    writeFileSync(join(dir, 'ca.pem'), ca.certPem);
    writeFileSync(join(dir, 'leaf.pem'), leaf.certPem);
    // -attime: the certificates are dated NOW (2026-03-01).
    const v = spawnSync('openssl', ['verify', '-attime', String(NOW.getTime() / 1000), '-CAfile', join(dir, 'ca.pem'), '-purpose', 'sslserver', join(dir, 'leaf.pem')], { encoding: 'utf8' });
    assert.equal(v.status, 0, v.stderr + v.stdout);
    const text = spawnSync('openssl', ['x509', '-in', join(dir, 'leaf.pem'), '-noout', '-text'], { encoding: 'utf8' }).stdout;
    assert.match(text, /X509v3 Key Usage: critical\n\s+Digital Signature, Key Encipherment/);
    assert.match(text, /X509v3 Basic Constraints: critical\n\s+CA:FALSE/);
    assert.match(text, /X509v3 Authority Key Identifier:/);
    const caText = spawnSync('openssl', ['x509', '-in', join(dir, 'ca.pem'), '-noout', '-text'], { encoding: 'utf8' }).stdout;
    assert.match(caText, /X509v3 Key Usage: critical\n\s+Digital Signature, Key Encipherment, Certificate Sign/);
    assert.match(caText, /X509v3 Basic Constraints: critical\n\s+CA:TRUE/);
    assert.match(caText, /X509v3 Subject Key Identifier:/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("certProblem (cert-controller's ValidCert): one reason per broken case, null when valid", () => {
  const other = createCA({ now: NOW });
  const expiring = createServingCert(ca, DNS, { now: NOW, validityMs: 30 * DAY });
  const cases: Array<[string, string | undefined, string | undefined, string | undefined, string, Date, RegExp | null]> = [
    ['valid now and 90 days ahead', ca.certPem, leaf.certPem, leaf.keyPem, DNS, new Date(NOW.getTime() + LOOKAHEAD_MS), null],
    ['the CA checked as its own leaf, name cert', ca.certPem, ca.certPem, ca.keyPem, 'cert', NOW, null],
    ['missing key', ca.certPem, leaf.certPem, undefined, DNS, NOW, /empty cert/],
    ['garbage CA', 'not a pem', leaf.certPem, leaf.keyPem, DNS, NOW, /bad CA cert/],
    ['key of another pair', ca.certPem, leaf.certPem, ca.keyPem, DNS, NOW, /key does not match/],
    ['signed by another CA', other.certPem, leaf.certPem, leaf.keyPem, DNS, NOW, /not signed by the CA/],
    ['another name', ca.certPem, leaf.certPem, leaf.keyPem, 'metallb-webhook-service.other.svc', NOW, /not valid for/],
    ['expires within the lookahead', ca.certPem, expiring.certPem, expiring.keyPem, DNS, new Date(NOW.getTime() + LOOKAHEAD_MS), /expired or expires/],
    ['not valid yet', ca.certPem, leaf.certPem, leaf.keyPem, DNS, new Date(NOW.getTime() - 2 * 3600_000), /not valid yet/],
  ];
  for (const [name, c, cert, key, dns, at, want] of cases) {
    const got = certProblem(c, cert, key, dns, at);
    if (want === null) assert.equal(got, null, name);
    else assert.match(got ?? '', want, name);
  }
});

test('renewCerts: nothing stored → a new CA and serving certificate; an expiring serving certificate → a new one from the same CA; valid → nothing', () => {
  const fresh = renewCerts({}, DNS, NOW);
  assert.equal(fresh.outcome, 'ca');
  assert.equal(fresh.reason, 'empty cert');
  assert.equal(certProblem(fresh.certs!.caCert, fresh.certs!.cert, fresh.certs!.key, DNS, new Date(NOW.getTime() + LOOKAHEAD_MS)), null);

  const expiring = createServingCert(ca, DNS, { now: NOW, validityMs: 60 * DAY });
  const server = renewCerts({ caCert: ca.certPem, caKey: ca.keyPem, cert: expiring.certPem, key: expiring.keyPem }, DNS, NOW);
  assert.equal(server.outcome, 'server');
  assert.equal(server.certs!.caCert, ca.certPem, 'the CA is kept');
  assert.equal(server.certs!.caKey, ca.keyPem);
  assert.notEqual(server.certs!.cert, expiring.certPem);

  const renamed = renewCerts({ caCert: ca.certPem, caKey: ca.keyPem, cert: leaf.certPem, key: leaf.keyPem }, 'metallb-webhook-service.other.svc', NOW);
  assert.equal(renamed.outcome, 'server', 'another --cert-service-name or namespace: a new serving certificate');

  const oldCA = createCA({ now: NOW, validityMs: 80 * DAY });
  assert.equal(renewCerts({ caCert: oldCA.certPem, caKey: oldCA.keyPem, cert: leaf.certPem, key: leaf.keyPem }, DNS, NOW).outcome, 'ca');

  const none = renewCerts({ caCert: ca.certPem, caKey: ca.keyPem, cert: leaf.certPem, key: leaf.keyPem }, DNS, NOW);
  assert.deepEqual(none, { outcome: 'none', reason: null, certs: null });
});

test('a certificate valid past 2049 carries GeneralizedTime and still parses', () => {
  const far = createCA({ now: new Date('2045-01-01T00:00:00Z') });
  assert.equal(new X509Certificate(far.certPem).validToDate.toISOString(), '2054-12-30T00:00:00.000Z');
});
