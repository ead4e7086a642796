/**
 * The controller's writes to the API server as raw JSON requests (GET, PUT, PATCH, POST) over one
 * keep-alive connection pool, with the kubeconfig's TLS material and credentials. Objects stay
 * exactly as the API server shows them (no client-node model classes), like src/kube/client.ts's
 * reads.
 */
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError } from '../kube/client.ts';

/** Content types of PATCH bodies. */
export const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';

/** Options of ApiClient. */
export interface ApiClientOptions {
  /** connections kept open to the server (default 16) */
  maxSockets?: number;
  /** per-request timeout in milliseconds (default 30000) */
  timeoutMs?: number;
  /** User-Agent header (default `metallb-ts-controller`) */
  userAgent?: string;
}

/** A request: `path` is absolute on the server (`/api/v1/namespaces/ns/services/x/status`). */
export interface ApiRequest {
  method: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE';
  path: string;
  /** JSON body (serialized here) */
  body?: unknown;
  /** JSON body already serialized (wins over `body`) */
  rawBody?: string;
  /** Content-Type for PATCH (default merge patch) */
  contentType?: string;
  query?: Record<string, string | undefined>;
}

/**
 * Minimal JSON client for the API server. `request` resolves to the parsed answer, or rejects with
 * KubeApiError (non-2xx, with the Kubernetes Status message; `statusCode` 409 for conflicts, 404
 * for not found) or the socket's error (map both with src/kube/client.ts apiError for messages).
 */
export class ApiClient {
  readonly server: string;
  private readonly kc: KubeConfig;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly maxSockets: number;
  private agent: http.Agent | undefined;

  constructor(kc: KubeConfig, opts: ApiClientOptions = {}) {
    this.kc = kc;
    const server = kc.getCurrentCluster()?.server;
    if (!server) throw new Error('the kubeconfig has no current cluster');
    this.server = server.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.userAgent = opts.userAgent ?? 'metallb-ts-controller';
    this.maxSockets = opts.maxSockets ?? 16;
  }

  /** Sends one request; see the class comment for what it resolves or rejects with. */
  async request<T = unknown>(req: ApiRequest): Promise<T> {
    const url = new URL(this.server + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const opts: https.RequestOptions = { method: req.method, headers: {} };
    await this.kc.applyToHTTPSOptions(opts);
    opts.agent = this.keepAlive(opts);
    const body = req.rawBody !== undefined ? Buffer.from(req.rawBody) : req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    opts.headers = {
      ...(opts.headers as Record<string, string>),
      Accept: 'application/json',
      'User-Agent': this.userAgent,
      ...(body ? { 'Content-Type': req.method === 'PATCH' ? (req.contentType ?? MERGE_PATCH) : 'application/json', 'Content-Length': String(body.length) } : {}),
    };
    const mod = url.protocol === 'http:' ? http : https;
    return new Promise<T>((resolve, reject) => {
      const r = mod.request(url, opts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const code = res.statusCode ?? 0;
          let parsed: unknown;
          try { parsed = text === '' ? undefined : JSON.parse(text); } catch { parsed = undefined; }
          if (code < 200 || code >= 300) {
            const status = parsed && typeof parsed === 'object' ? parsed as KubeApiError['status'] : undefined;
            reject(new KubeApiError(code, status, text.trim().slice(0, 200) || (http.STATUS_CODES[code] ?? '')));
            return;
          }
          resolve(parsed as T);
        });
      });
      r.setTimeout(this.timeoutMs, () => {
        r.destroy(Object.assign(new Error(`no answer within ${this.timeoutMs} ms`), { code: 'ETIMEDOUT' }));
      });
      r.on('error', reject);
      r.end(body);
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }

  /** One keep-alive agent with the TLS material client-node put on `opts` (proxy agents are kept as they are). */
  private keepAlive(opts: https.RequestOptions): http.Agent | undefined {
    const given = opts.agent;
    if (given && !(given instanceof https.Agent) && !(given instanceof http.Agent && given.constructor === http.Agent)) return given as http.Agent;
    if (this.agent) return this.agent;
    const base = given && 'options' in given ? (given as https.Agent).options : {};
    this.agent = this.server.startsWith('http:')
      ? new http.Agent({ keepAlive: true, maxSockets: this.maxSockets })
      : new https.Agent({ ...base, ca: opts.ca ?? base.ca, cert: opts.cert ?? base.cert, key: opts.key ?? base.key, keepAlive: true, maxSockets: this.maxSockets });
    return this.agent;
  }
}

/** The HTTP status of an error from ApiClient, or undefined for a socket error. */
export function statusCodeOf(err: unknown): number | undefined {
  return err instanceof KubeApiError ? err.statusCode : undefined;
}

/** Path of a namespaced core/v1 object: `/api/v1/namespaces/<ns>/<plural>/<name>`. */
export function corePath(namespace: string, plural: string, name?: string): string {
  const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/${plural}`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}

/** Path of a namespaced metallb.io/v1beta1 object. */
export function metallbPath(namespace: string, plural: string, name?: string): string {
  const base = `/apis/metallb.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/${plural}`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}
