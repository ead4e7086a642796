/**
 * The speaker's writes to the API server (ServiceL2Status objects and their status subresource,
 * Events), as plain REST calls over the kubeconfig's transport. Reads of
 * cluster state go through the shared ClusterStateWatcher (src/kube/live.ts), never here.
 */
import https from 'node:https';
import http from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ServiceL2Status } from '../core/kube.ts';
import type { L2StatusApi, L2StatusBody } from './l2status.ts';

/** A failed API call: HTTP status (0 when the server was not reached) and the server's message. */
export class ApiCallError extends Error {
  /** the HTTP status, 0 when there was no answer (client.ts httpStatusOf reads it) */
  readonly statusCode: number;
  readonly verb: string;
  readonly path: string;
  constructor(verb: string, path: string, status: number, message: string) {
    super(`${verb} ${path}: ${status === 0 ? '' : `${status} `}${message}`);
    this.name = 'ApiCallError';
    this.verb = verb;
    this.path = path;
    this.statusCode = status;
  }
}

/** Minimal JSON REST client over a KubeConfig's current cluster and user. */
export class RestClient {
  private readonly kc: KubeConfig;
  private readonly server: URL;
  /** per-request timeout in ms */
  readonly timeoutMs: number;

  constructor(kc: KubeConfig, timeoutMs = 15_000) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.kc = kc;
    this.server = new URL(cluster.server);
    this.timeoutMs = timeoutMs;
  }

  /** The server URL (for messages). */
  get serverUrl(): string {
    return this.server.origin;
  }

  /**
   * Sends one request; resolves with the parsed JSON body (null when empty).
   * @throws ApiCallError for a non-2xx answer (status and the Status message) or no answer (status 0).
   */
  async request(verb: string, path: string, body?: unknown, contentType = 'application/json'): Promise<any> {
    const opts: https.RequestOptions = {
      method: verb,
      hostname: this.server.hostname,
      port: this.server.port || (this.server.protocol === 'https:' ? 443 : 80),
      path: `${this.server.pathname.replace(/\/$/, '')}${path}`,
      headers: { Accept: 'application/json', ...(body === undefined ? {} : { 'Content-Type': contentType }) },
      timeout: this.timeoutMs,
    };
    await this.kc.applyToHTTPSOptions(opts);
    const mod = this.server.protocol === 'http:' ? http : https;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = mod.request(opts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(new ApiCallError(verb, path, 0, e.message)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: any = null;
          try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(parsed);
          else reject(new ApiCallError(verb, path, status, (parsed && typeof parsed.message === 'string' ? parsed.message : text.trim().split('\n')[0]) || res.statusMessage || 'error'));
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on('error', (e) => reject(new ApiCallError(verb, path, 0, `${this.server.origin} unreachable: ${e.message}`)));
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }
}

const L2 = '/apis/metallb.io/v1beta1/namespaces';
const seg = encodeURIComponent;

/** L2StatusApi over REST: POST, PATCH …/status (merge patch), DELETE (404 is fine). */
export function restL2StatusApi(rest: RestClient): L2StatusApi {
  return {
    async create(namespace: string, obj: ServiceL2Status): Promise<ServiceL2Status> {
      return rest.request('POST', `${L2}/${seg(namespace)}/servicel2statuses`, obj);
    },
    async patchStatus(namespace: string, name: string, status: L2StatusBody): Promise<void> {
      // A merge patch replaces the interfaces list; null removes a list no longer wanted.
      await rest.request('PATCH', `${L2}/${seg(namespace)}/servicel2statuses/${seg(name)}/status`,
        { status: { ...status, interfaces: status.interfaces ?? null } }, 'application/merge-patch+json');
    },
    async delete(namespace: string, name: string): Promise<void> {
      try {
        await rest.request('DELETE', `${L2}/${seg(namespace)}/servicel2statuses/${seg(name)}`);
      } catch (err) {
        if (!(err instanceof ApiCallError && err.statusCode === 404)) throw err;
      }
    },
  };
}

/** A core/v1 Event as client-go's recorder writes it. */
export interface CoreEvent {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  involvedObject: { apiVersion?: string; kind: string; namespace?: string; name: string; uid?: string; resourceVersion?: string };
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
  source: { component: string; host?: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  reportingComponent: string;
  reportingInstance: string;
}

/** Creates a core/v1 Event in its namespace. */
export async function createEvent(rest: RestClient, ev: CoreEvent): Promise<void> {
  await rest.request('POST', `/api/v1/namespaces/${seg(ev.metadata.namespace)}/events`, ev);
}
