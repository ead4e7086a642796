/**
 * The webhook server's TLS settings from MetalLB v0.16.1's flags `--tls-min-version`,
 * `--tls-cipher-suites` and `--tls-curve-preferences` (`internal/tlsconfig/tlsopt.go` OptFor,
 * with Kubernetes' cliflag names), turned into node:tls options. The same values MetalLB accepts
 * are accepted, with its error texts; a value Go knows but this Node's OpenSSL cannot do (the
 * RC4 suites) is refused with one line instead of being silently dropped.
 */
import { getCiphers, type SecureContextOptions } from 'node:tls';

/** The three flags as given ("" = unset). */
export interface TlsFlags {
  minVersion: string;
  cipherSuites: string;
  curvePreferences: string;
}

/** What the flags make of the server's secure context. */
export interface WebhookTlsOptions {
  minVersion: NonNullable<SecureContextOptions['minVersion']>;
  /** OpenSSL cipher string (TLS 1.2 suites, then the TLS 1.3 ones Go always enables), or undefined: Node's defaults */
  ciphers?: string;
  /** OpenSSL group list, or undefined: Node's defaults */
  ecdhCurve?: string;
}

/** cliflag's TLS versions. */
const VERSIONS: Record<string, NonNullable<SecureContextOptions['minVersion']>> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/** Go's cipher suite names (tls.CipherSuites, tls.InsecureCipherSuites, cliflag's aliases) → OpenSSL names; TLS 1.3 suites map to null. */
const CIPHERS: Record<string, string | null> = {
  TLS_AES_128_GCM_SHA256: null,
  TLS_AES_256_GCM_SHA384: null,
  TLS_CHACHA20_POLY1305_SHA256: null,
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
};

/** The TLS 1.3 suites Go always enables, in OpenSSL's spelling. */
const TLS13_SUITES = 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256';

/** Go's tls.CurveID values → OpenSSL group names. */
const CURVES: Record<number, string> = { 23: 'P-256', 24: 'P-384', 25: 'P-521', 29: 'X25519', 4588: 'X25519MLKEM768' };

/** One wrong flag value: MetalLB's error text (the caller names the flag and exits 2). */
export class TlsFlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsFlagError';
  }
}

function parseCiphers(text: string): string[] | null {
  if (text === '') return null;
  const supported = new Set(getCiphers().map((c) => c.toUpperCase()));
  const out: string[] = [];
  for (const raw of text.split(',')) {
    const name = raw.trim();
    if (!Object.hasOwn(CIPHERS, name)) throw new TlsFlagError(`parsing tls-cipher-suites: Cipher suite ${name} not supported or doesn't exist`);
    const openssl = CIPHERS[name]!;
    if (openssl === null) continue; // TLS 1.3: always on, as in Go
    if (!supported.has(openssl)) {
      throw new TlsFlagError(`parsing tls-cipher-suites: ${name} (OpenSSL ${openssl}) is not available in this Node.js's OpenSSL ${process.versions.openssl}`);
    }
    if (!out.includes(openssl)) out.push(openssl);
  }
  return out;
}

function parseCurves(text: string): string[] | null {
  if (text === '') return null;
  const out: string[] = [];
  const seen = new Set<number>();
  for (const raw of text.split(',')) {
    const p = raw.trim();
    if (!/^\d+$/.test(p) || Number(p) > 65535) {
      throw new TlsFlagError(`parsing tls-curve-preferences: invalid curve preference ${JSON.stringify(p)}: must be a numeric CurveID (0-65535)`);
    }
    const id = Number(p);
    if (id === 0) throw new TlsFlagError('parsing tls-curve-preferences: curve preference 0 is out of range (must be 1-65535)');
    if (seen.has(id)) throw new TlsFlagError(`parsing tls-curve-preferences: duplicate curve preference ${id}`);
    seen.add(id);
    const name = CURVES[id];
    if (!name) {
      const known = Object.entries(CURVES)
        .map(([k, v]) => `${k} (${v})`)
        .join(', ');
      throw new TlsFlagError(`parsing tls-curve-preferences: curve preference ${id} is not supported by metallb-ts (supported: ${known})`);
    }
    out.push(name);
  }
  return out;
}

/**
 * MetalLB's OptFor: `minVersion` "" means TLS 1.3; cipher suites (Go names, comma-separated)
 * apply to TLS 1.2 and below and may not be combined with a TLS 1.3 minimum; curve preferences
 * are Go CurveIDs (23, 24, 25, 29, 4588).
 * @throws TlsFlagError with MetalLB's message (`parsing tls-min-version: unknown tls version "x"`, …).
 */
export function webhookTlsOptions(flags: TlsFlags): WebhookTlsOptions {
  const ciphers = parseCiphers(flags.cipherSuites);
  const curves = parseCurves(flags.curvePreferences);
  let minVersion: WebhookTlsOptions['minVersion'];
  if (flags.minVersion === '') minVersion = 'TLSv1.3';
  else if (Object.hasOwn(VERSIONS, flags.minVersion)) minVersion = VERSIONS[flags.minVersion]!;
  else throw new TlsFlagError(`parsing tls-min-version: unknown tls version ${JSON.stringify(flags.minVersion)}`);
  if (ciphers !== null && minVersion === 'TLSv1.3') throw new TlsFlagError('cipher suites cannot be configured with TLS 1.3');
  return {
    minVersion,
    ...(ciphers !== null ? { ciphers: [...ciphers, TLS13_SUITES].join(':') } : {}),
    ...(curves !== null ? { ecdhCurve: curves.join(':') } : {}),
  };
}
