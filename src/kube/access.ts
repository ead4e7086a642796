/**
 * The daemons' cluster access without the Kubernetes client library: loading
 * @kubernetes/client-node costs a daemon about 85 MiB of resident memory and a second of CPU at
 * start (its generated API models, undici, proxy and cloud auth plugins), for a speaker on every
 * node. What a pod needs is small: the in-cluster service account, or a kubeconfig with a server,
 * its CA, a client certificate or a bearer token. LiteKubeConfig covers exactly that; anything
 * else (exec and auth-provider plugins, basic auth, impersonation, proxies, several merged files)
 * is left to client-node's KubeConfig (src/kube/client.ts loadKubeConfig), as are all errors, so
 * messages stay the same.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { createRequire } from 'node:module';
import { isIPv6 } from 'node:net';
import { dirname, isAbsolute, join } from 'node:path';
import { type SecureContext, createSecureContext } from 'node:tls';
import { parseKubectlYaml } from './kubectl-yaml.ts';

/**
 * What the raw client (KubeClient, ListWatch) needs of a configuration: the current cluster's
 * server and the TLS material and credentials for a request. client-node's KubeConfig has both.
 */
export interface ClusterAccess {
  getCurrentCluster(): { readonly name: string; readonly server: string } | null;
  /** Puts CA, client certificate and key, TLS options and the Authorization header on `opts`. */
  applyToHTTPSOptions(opts: RequestOptions): Promise<void>;
}

/** The service account files of a pod. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** How often a token file is read again (client-node's FileAuth: 60 s; bound tokens rotate). */
const TOKEN_FILE_REFRESH_MS = 60_000;

interface LiteCluster {
  name: string;
  server: string;
  caFile?: string;
  caData?: string;
  skipTLSVerify?: boolean;
  tlsServerName?: string;
}

interface LiteUser {
  certFile?: string;
  certData?: string;
  keyFile?: string;
  keyData?: string;
  token?: string;
  tokenFile?: string;
}

/** A configuration with one cluster and one user of the plain kinds (see the module comment). */
export class LiteKubeConfig implements ClusterAccess {
  private readonly cluster: LiteCluster;
  private readonly user: LiteUser;
  private token: { value: string; read: number } | undefined;
  /** the TLS context of the last material seen (see applyToHTTPSOptions) */
  private context: { ca: Buffer | undefined; cert: Buffer | undefined; key: Buffer | undefined; context: SecureContext } | undefined;

  constructor(cluster: LiteCluster, user: LiteUser) {
    this.cluster = cluster;
    this.user = user;
  }

  getCurrentCluster(): { readonly name: string; readonly server: string } {
    return { name: this.cluster.name, server: this.cluster.server };
  }

  /**
   * As client-node's KubeConfig.applyToHTTPSOptions for these kinds: files are read at each call
   * (rotated certificates are picked up), a token file at most once a minute.
   * @throws the file system's error when a file named by the configuration cannot be read.
   */
  async applyToHTTPSOptions(opts: RequestOptions): Promise<void> {
    const c = this.cluster;
    const u = this.user;
    if (c.skipTLSVerify) opts.rejectUnauthorized = false;
    if (c.tlsServerName) opts.servername = c.tlsServerName;
    const ca = material(c.caFile, c.caData);
    if (ca) opts.ca = ca;
    const cert = material(u.certFile, u.certData);
    if (cert) opts.cert = cert;
    const key = material(u.keyFile, u.keyData);
    if (key) opts.key = key;
    // One TLS context for every connection while the material stays the same (Node builds one per
    // connection from ca/cert/key otherwise: about 35 KB each, with the controller's 20 keep-alive
    // connections 0.7 MiB; issue #14). ca/cert/key stay on `opts`: an https.Agent names its pools by them.
    // Material TLS refuses gets no context: the connection fails with TLS's own error, as before.
    const context = ca || cert || key ? this.contextOf(ca, cert, key) : undefined;
    if (context) (opts as RequestOptions & { secureContext?: SecureContext }).secureContext = context;
    const token = this.bearer();
    if (token) opts.headers = { ...(opts.headers as Record<string, string> | undefined), Authorization: `Bearer ${token}` };
  }

  /**
   * The TLS context of this material: the last one made while the files (or data) did not change;
   * undefined when TLS refuses the material (a key that does not match its certificate).
   */
  private contextOf(ca: Buffer | undefined, cert: Buffer | undefined, key: Buffer | undefined): SecureContext | undefined {
    const same = (a: Buffer | undefined, b: Buffer | undefined): boolean => (a && b ? a.equals(b) : a === b);
    const last = this.context;
    if (last && same(last.ca, ca) && same(last.cert, cert) && same(last.key, key)) return last.context;
    try {
      const context = createSecureContext({ ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) });
      this.context = { ca, cert, key, context };
      return context;
    } catch {
      return undefined;
    }
  }

  private bearer(): string | undefined {
    if (this.user.token) return this.user.token;
    if (!this.user.tokenFile) return undefined;
    const now = Date.now();
    if (!this.token || now - this.token.read > TOKEN_FILE_REFRESH_MS) {
      this.token = { value: readFileSync(this.user.tokenFile, 'utf8').trim(), read: now };
    }
    return this.token.value;
  }
}

function material(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (data) return Buffer.from(data, 'base64');
  if (file) return readFileSync(file);
  return undefined;
}

/** The in-cluster configuration, as client-node's loadFromCluster builds it. */
export function inClusterConfig(env: { KUBERNETES_SERVICE_HOST?: string | undefined; KUBERNETES_SERVICE_PORT?: string | undefined }, dir = SERVICE_ACCOUNT_DIR): LiteKubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  return new LiteKubeConfig({ name: 'inCluster', server: `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`, caFile: join(dir, 'ca.crt') }, { tokenFile: join(dir, 'token') });
}

const CLUSTER_KEYS = new Set(['server', 'certificate-authority', 'certificate-authority-data', 'insecure-skip-tls-verify', 'tls-server-name', 'extensions']);
const USER_KEYS = new Set(['client-certificate', 'client-certificate-data', 'client-key', 'client-key-data', 'token', 'tokenFile', 'extensions']);

type Entry = Record<string, unknown>;
const isEntry = (v: unknown): v is Entry => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * The LiteKubeConfig of one kubeconfig file's `context` (default its current-context), or
 * undefined when the file uses anything beyond the plain kinds, does not parse, or would fail
 * loadKubeConfig's checks (a missing context, cluster, user or file, a bad server URL): the caller
 * then loads it with client-node, which handles the rest and reports the errors.
 */
export function liteKubeConfigFromFile(file: string, context?: string): LiteKubeConfig | undefined {
  let doc: unknown;
  try {
    const text = readFileSync(file, 'utf8');
    // kubectl's own layout (block mappings and sequences, plain and quoted scalars) through the
    // small parser of kubectl-yaml.ts; anything else through js-yaml, which otherwise stays
    // unloaded: about 1.5 MiB of a daemon's resident memory (issue #14; README, Performance).
    const plain = parseKubectlYaml(text);
    doc = plain?.length === 1 ? plain[0]!.value : (createRequire(import.meta.url)('js-yaml') as typeof import('js-yaml')).load(text);
  } catch {
    return undefined;
  }
  if (!isEntry(doc)) return undefined;
  const named = (list: unknown, name: string | undefined, field: string): Entry | undefined => {
    if (!Array.isArray(list) || !name) return undefined;
    const hits = list.filter((e) => isEntry(e) && e['name'] === name);
    return hits.length === 1 && isEntry(hits[0]![field]) ? (hits[0]![field] as Entry) : undefined;
  };
  const ctx = named(doc['contexts'], context ?? str(doc['current-context']), 'context');
  const clusterName = str(ctx?.['cluster']);
  const cluster = named(doc['clusters'], clusterName, 'cluster');
  const userName = str(ctx?.['user']);
  const user = userName ? named(doc['users'], userName, 'user') : {};
  if (!ctx || !cluster || !user) return undefined;
  if (Object.keys(cluster).some((k) => !CLUSTER_KEYS.has(k)) || Object.keys(user).some((k) => !USER_KEYS.has(k))) return undefined;
  const server = str(cluster['server']);
  if (!server || !URL.canParse(server)) return undefined;
  const path = (v: unknown): string | undefined => {
    const p = str(v);
    return p === undefined ? undefined : isAbsolute(p) ? p : join(dirname(file), p);
  };
  const lite = {
    cluster: {
      name: clusterName!,
      server,
      caFile: path(cluster['certificate-authority']),
      caData: str(cluster['certificate-authority-data']),
      skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
      tlsServerName: str(cluster['tls-server-name']),
    },
    user: {
      certFile: path(user['client-certificate']),
      certData: str(user['client-certificate-data']),
      keyFile: path(user['client-key']),
      keyData: str(user['client-key-data']),
      token: str(user['token']),
      tokenFile: path(user['tokenFile']),
    },
  };
  for (const f of [lite.cluster.caFile, lite.user.certFile, lite.user.keyFile, lite.user.tokenFile]) {
    if (f !== undefined && !existsSync(f)) return undefined;
  }
  return new LiteKubeConfig(lite.cluster, lite.user);
}
