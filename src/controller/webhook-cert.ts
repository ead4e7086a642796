/**
 * The webhook's certificates as MetalLB v0.16.1 makes them through open-policy-agent's
 * cert-controller v0.15.0 (`pkg/rotator/rotator.go`): a self-signed CA (RSA 2048, CN `cert`,
 * O `metallb`, SAN `cert`, serial 0, 10 years) and a serving certificate it signs (RSA 2048, CN
 * and SAN `<service>.<namespace>.svc`, serial 1, 1 year, server authentication), both valid
 * from an hour ago, keys as PKCS#1 PEM (`RSA PRIVATE KEY`); and cert-controller's `ValidCert`,
 * which decides when they must be renewed (no longer valid 90 days from now).
 *
 * node:crypto generates the keys, signs and parses certificates but cannot build one; the
 * certificate itself is a small DER encoder here (X.509 v3, sha256WithRSAEncryption, the
 * extensions Go's x509.CreateCertificate writes for these templates). Checked against
 * node:crypto's and OpenSSL's parsers and a real kube-apiserver's TLS client in the tests.
 */
import { createHash, createPrivateKey, generateKeyPairSync, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { rfc3339Utc } from '../runtime/utc-time.ts';

// cert-controller's defaults, as MetalLB uses them:
/** the CA's validity (defaultCaCertValidityDuration, 10 years) */
export const CA_VALIDITY_MS = 10 * 365 * 24 * 3600_000;
/** the serving certificate's validity (defaultServerCertValidityDuration, 1 year) */
export const SERVER_CERT_VALIDITY_MS = 365 * 24 * 3600_000;
/** renew when a certificate is no longer valid this far ahead (cert-controller's LookaheadInterval) */
export const LOOKAHEAD_MS = 90 * 24 * 3600_000;
/** how often the rotator checks (cert-controller's RotationCheckFrequency) */
export const ROTATION_CHECK_MS = 12 * 3600_000;
/** MetalLB's CA name (internal/k8s/k8s.go caName): its CN and SAN */
export const CA_NAME = 'cert';
/** MetalLB's CA organization (internal/k8s/k8s.go caOrganization) */
export const CA_ORGANIZATION = 'metallb';

/** A certificate and its key, both PEM. */
export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

// ------------------------------------------------------------------------------------------ DER

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
}

const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bitString = (b: Buffer, unusedBits = 0): Buffer => tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), b]));
const explicit = (n: number, content: Buffer): Buffer => tlv(0xa0 | n, content);
const NULL = Buffer.from([0x05, 0x00]);
const TRUE = Buffer.from([0x01, 0x01, 0xff]);

/** A non-negative INTEGER, minimal two's complement. */
function integer(v: bigint): Buffer {
  if (v < 0n) throw new Error('negative INTEGER');
  let hex = v.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let b = Buffer.from(hex, 'hex');
  if (b[0]! & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [parts[0]! * 40 + parts[1]!];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** PrintableString when every character allows it, else UTF8String (Go's pkix encoding). */
function directoryString(s: string): Buffer {
  return /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(s) ? tlv(0x13, Buffer.from(s, 'ascii')) : tlv(0x0c, Buffer.from(s, 'utf8'));
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 4.1.2.5), whole seconds. */
function time(d: Date): Buffer {
  const digits = rfc3339Utc(d.getTime(), false).slice(0, 19).replace(/[-T:]/g, ''); // 20250102030405
  const year = d.getUTCFullYear();
  return year >= 1950 && year < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii')) : tlv(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  sha256WithRSA: '1.2.840.113549.1.1.11',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

/** A Name as Go's pkix.Name.ToRDNSequence orders it: O before CN, one attribute per RDN. */
function name(cn: string, organization?: string): Buffer {
  const rdn = (type: string, value: string): Buffer => set(seq(oid(type), directoryString(value)));
  return seq(...(organization !== undefined ? [rdn(OID.organization, organization)] : []), rdn(OID.commonName, cn));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [TRUE] : []), octets(value));
}

// ---------------------------------------------------------------------------------- certificates

/** Options of one certificate. */
interface CertTemplate {
  serial: bigint;
  subject: { cn: string; organization?: string };
  dnsNames: string[];
  notBefore: Date;
  notAfter: Date;
  isCA: boolean;
}

interface KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
}

function rsaKeyPair(): KeyPair {
  return generateKeyPairSync('rsa', { modulusLength: 2048 });
}

/** SHA-1 of the subjectPublicKey bits (the PKCS#1 RSAPublicKey), as Go derives a SubjectKeyId. */
function keyId(publicKey: KeyObject): Buffer {
  return createHash('sha1')
    .update(publicKey.export({ type: 'pkcs1', format: 'der' }))
    .digest();
}

/**
 * Builds and signs one certificate with the extensions x509.CreateCertificate writes for
 * cert-controller's templates: key usage (critical), extended key usage serverAuth (leaf),
 * basic constraints (critical), subject key id (CA), authority key id (leaf: the CA's), SANs.
 */
function createCertificate(t: CertTemplate, subjectKey: KeyObject, issuer: { name: Buffer; key: KeyObject; keyId: Buffer | null }): Buffer {
  const sigAlg = seq(oid(OID.sha256WithRSA), NULL);
  // digitalSignature(0) | keyEncipherment(2) [| keyCertSign(5)], bit 0 first
  const keyUsage = t.isCA ? bitString(Buffer.from([0xa4]), 2) : bitString(Buffer.from([0xa0]), 5);
  const exts: Buffer[] = [extension(OID.keyUsage, true, keyUsage)];
  if (!t.isCA) exts.push(extension(OID.extKeyUsage, false, seq(oid(OID.serverAuth))));
  exts.push(extension(OID.basicConstraints, true, t.isCA ? seq(TRUE) : seq()));
  if (t.isCA) exts.push(extension(OID.subjectKeyId, false, octets(keyId(subjectKey))));
  if (!t.isCA && issuer.keyId) exts.push(extension(OID.authorityKeyId, false, seq(tlv(0x80, issuer.keyId))));
  if (t.dnsNames.length > 0) exts.push(extension(OID.subjectAltName, false, seq(...t.dnsNames.map((d) => tlv(0x82, Buffer.from(d, 'ascii'))))));
  const tbs = seq(
    explicit(0, integer(2n)),
    integer(t.serial),
    sigAlg,
    issuer.name,
    seq(time(t.notBefore), time(t.notAfter)),
    name(t.subject.cn, t.subject.organization),
    subjectKey.export({ type: 'spki', format: 'der' }),
    explicit(3, seq(...exts)),
  );
  const signature = sign('sha256', tbs, issuer.key);
  return seq(tbs, sigAlg, bitString(signature));
}

function pem(type: string, der: Buffer): string {
  const b64 = der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN ${type}-----\n${b64}\n-----END ${type}-----\n`;
}

/**
 * A new CA as cert-controller's CreateCACert: CN and SAN `caName`, O `organization`, serial 0,
 * valid from `now - 1h` for `validityMs`, key usage digitalSignature, keyEncipherment,
 * certSign, CA:TRUE.
 */
export function createCA(opts: { now?: Date; validityMs?: number; caName?: string; organization?: string } = {}): KeyPairPem {
  const now = opts.now ?? new Date();
  const caName = opts.caName ?? CA_NAME;
  const keys = rsaKeyPair();
  const subject = { cn: caName, organization: opts.organization ?? CA_ORGANIZATION };
  const der = createCertificate(
    {
      serial: 0n,
      subject,
      dnsNames: [caName],
      isCA: true,
      notBefore: new Date(now.getTime() - 3600_000),
      notAfter: new Date(now.getTime() + (opts.validityMs ?? CA_VALIDITY_MS)),
    },
    keys.publicKey,
    { name: name(subject.cn, subject.organization), key: keys.privateKey, keyId: null },
  );
  return { certPem: pem('CERTIFICATE', der), keyPem: keys.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string };
}

/**
 * A serving certificate signed by `ca`, as cert-controller's CreateCertPEM: CN and SAN
 * `dnsName`, serial 1, valid from `now - 1h` for `validityMs`, key usage digitalSignature and
 * keyEncipherment, extended key usage serverAuth, CA:FALSE.
 * @throws Error when the CA's certificate or key does not parse.
 */
export function createServingCert(ca: KeyPairPem, dnsName: string, opts: { now?: Date; validityMs?: number } = {}): KeyPairPem {
  const now = opts.now ?? new Date();
  const caCert = new X509Certificate(ca.certPem);
  const caKey = createPrivateKey(ca.keyPem);
  const keys = rsaKeyPair();
  const der = createCertificate(
    {
      serial: 1n,
      subject: { cn: dnsName },
      dnsNames: [dnsName],
      isCA: false,
      notBefore: new Date(now.getTime() - 3600_000),
      notAfter: new Date(now.getTime() + (opts.validityMs ?? SERVER_CERT_VALIDITY_MS)),
    },
    keys.publicKey,
    { name: subjectNameDer(caCert), key: caKey, keyId: keyId(caCert.publicKey) },
  );
  return { certPem: pem('CERTIFICATE', der), keyPem: keys.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string };
}

/** The subject Name of a certificate as DER (the issuer field of what it signs). */
function subjectNameDer(cert: X509Certificate): Buffer {
  // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version, serial, sigAlg, issuer, validity, subject, ... } }
  const raw = cert.raw;
  const read = (buf: Buffer, at: number): { start: number; end: number; tag: number; header: number } => {
    const tag = buf[at]!;
    let len = buf[at + 1]!;
    let header = 2;
    if (len & 0x80) {
      const n = len & 0x7f;
      len = 0;
      for (let i = 0; i < n; i++) len = len * 256 + buf[at + 2 + i]!;
      header += n;
    }
    return { start: at, end: at + header + len, tag, header };
  };
  const outer = read(raw, 0);
  const tbs = read(raw, outer.header);
  let at = tbs.start + tbs.header;
  const fields: Array<{ start: number; end: number; tag: number }> = [];
  while (at < tbs.end && fields.length < 6) {
    const f = read(raw, at);
    fields.push(f);
    at = f.end;
  }
  const offset = fields[0]?.tag === 0xa0 ? 1 : 0; // version is optional
  const subject = fields[offset + 4];
  if (!subject) throw new Error('malformed certificate: no subject');
  return raw.subarray(subject.start, subject.end);
}

// ---------------------------------------------------------------------------------- validation

const SERVER_AUTH = OID.serverAuth;
const ANY_EKU = '2.5.29.37.0';

/**
 * cert-controller's ValidCert: `certPem` with `keyPem` is a key pair, it chains to `caPem`, and
 * at `at` both are within their validity and `dnsName` matches the certificate (serverAuth
 * allowed when it restricts its use). Returns the reason it is not valid, or null.
 */
export function certProblem(caPem: string | undefined, certPem: string | undefined, keyPem: string | undefined, dnsName: string, at: Date): string | null {
  if (!caPem || !certPem || !keyPem) return 'empty cert';
  let ca: X509Certificate;
  let cert: X509Certificate;
  try {
    ca = new X509Certificate(caPem);
  } catch (err) {
    return `bad CA cert: ${(err as Error).message}`;
  }
  try {
    cert = new X509Certificate(certPem);
  } catch (err) {
    return `bad cert: ${(err as Error).message}`;
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return 'the key does not match the certificate';
  } catch (err) {
    return `building key pair: ${(err as Error).message}`;
  }
  if (!ca.ca) return 'the CA certificate is not a CA';
  if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return 'the certificate is not signed by the CA';
  for (const [what, c] of [
    ['certificate', cert],
    ['CA certificate', ca],
  ] as const) {
    if (at < c.validFromDate) return `the ${what} is not valid yet at ${rfc3339Utc(at.getTime())}`;
    if (at > c.validToDate) return `the ${what} has expired or expires before ${rfc3339Utc(at.getTime())}`;
    const eku = c.keyUsage;
    if (eku && eku.length > 0 && !eku.includes(SERVER_AUTH) && !eku.includes(ANY_EKU)) return `the ${what} does not allow server authentication`;
  }
  if (cert.checkHost(dnsName, { subject: 'never' }) === undefined) return `the certificate is not valid for ${dnsName}`;
  return null;
}
