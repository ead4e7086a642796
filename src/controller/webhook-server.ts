/**
 * MetalLB v0.16.1's webhook server (controller-runtime's webhook server as MetalLB's controller
 * sets it up in `internal/k8s/webhook.go` enableWebhook): HTTPS, one path per validating webhook
 * (METALLB_WEBHOOKS: `/validate-metallb-io-v1beta1-ipaddresspool`, …, BGPPeer on v1beta2) and
 * `/convert`, the BGPPeer v1beta1 ↔ v1beta2 conversion.
 *
 * An admission request is answered as controller-runtime's `webhook.Admission` does: an
 * AdmissionReview (v1 or v1beta1, echoed) with `allowed`, and `status` {code 200} or {code 403,
 * reason Forbidden, message: MetalLB's error}; malformed requests get {code 400}. The decision
 * is the core's admissionReview over the objects MetalLB reads for it, listed from the API
 * server at every request as MetalLB's uncached APIReader does (storedKindsFor). The
 * certificate can be replaced while serving (setKeyPair: the rotator's renewals).
 */
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { admissionReview, convertBGPPeer, METALLB_WEBHOOKS, storedKindsFor, type AdmissionDecision, type ClusterValidation, type WebhookSpec } from '../core/config/webhook.ts';
import type { KubeObject } from '../core/kube.ts';
import { silentLogger, type Logger } from '../runtime/log.ts';
import type { KubeClient } from '../kube/client.ts';
import type { KeyPairPem } from './webhook-cert.ts';
import type { WebhookTlsOptions } from './webhook-tls.ts';
import { setDateHeader } from '../runtime/utc-time.ts';
import { listenHost } from '../runtime/listen-host.ts';

/** controller-runtime's limit on an admission request body (7 MiB). */
export const MAX_REQUEST_BYTES = 7 * 1024 * 1024;
/** The conversion webhook's path. */
export const CONVERT_PATH = '/convert';

/** Lists the stored objects of one kind (storedKindsFor's kinds): MetalLB's namespace, or every Node. */
export type StoredLister = (kind: string) => Promise<KubeObject[]>;

/** Where each stored kind is listed: MetalLB's namespace (the BGPPeers as v1beta2, the hub), Nodes cluster-wide. */
const LIST_PATHS: Record<string, { apiVersion: string; path: (ns: string) => string }> = {
  IPAddressPool: { apiVersion: 'metallb.io/v1beta1', path: (ns) => `/apis/metallb.io/v1beta1/namespaces/${encodeURIComponent(ns)}/ipaddresspools` },
  Community: { apiVersion: 'metallb.io/v1beta1', path: (ns) => `/apis/metallb.io/v1beta1/namespaces/${encodeURIComponent(ns)}/communities` },
  L2Advertisement: { apiVersion: 'metallb.io/v1beta1', path: (ns) => `/apis/metallb.io/v1beta1/namespaces/${encodeURIComponent(ns)}/l2advertisements` },
  BGPAdvertisement: { apiVersion: 'metallb.io/v1beta1', path: (ns) => `/apis/metallb.io/v1beta1/namespaces/${encodeURIComponent(ns)}/bgpadvertisements` },
  BGPPeer: { apiVersion: 'metallb.io/v1beta2', path: (ns) => `/apis/metallb.io/v1beta2/namespaces/${encodeURIComponent(ns)}/bgppeers` },
  Node: { apiVersion: 'v1', path: () => '/api/v1/nodes' },
};

/**
 * A StoredLister over the API server (MetalLB's `mgr.GetAPIReader()`: no cache, one list per kind
 * per request), each item with its kind and apiVersion set. `timeoutMs` bounds each list (the API
 * server gives a webhook 10 s by default).
 */
export function kubeStoredLister(api: KubeClient, namespace: string, timeoutMs = 8000): StoredLister {
  return async (kind) => {
    const where = LIST_PATHS[kind];
    if (!where) throw new Error(`no list for kind ${kind}`);
    const list = await api.request<{ items?: KubeObject[] }>({ path: where.path(namespace), deadlineMs: timeoutMs });
    return (list.items ?? []).map((o) => ({ ...o, apiVersion: where.apiVersion, kind }));
  };
}

/** What the admission handler needs. */
export interface AdmissionDeps {
  /** MetalLB's namespace (`--namespace`) */
  namespace: string;
  /** the whole-cluster validation (clusterValidation(METALLB_BGP_TYPE)) */
  validation: ClusterValidation;
  list: StoredLister;
  log?: Logger;
}

/** An HTTP answer: status code, JSON body (or plain text for HTTP-level errors). */
export interface HttpAnswer {
  status: number;
  body: unknown;
  contentType?: string;
}

/** MetalLB's wording when a list fails (`getExisting*`: errors.Join in webhookv1beta1, %w in webhookv1beta2). */
function listFailure(kind: string, forKind: string, err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const v1beta2 = forKind === 'BGPPeer' || (forKind === 'BFDProfile' && kind === 'BGPPeer');
  const what = kind === 'L2Advertisement' ? 'v1beta1.L2Advertisement' : kind;
  return v1beta2 ? `failed to get existing ${what} objects: ${text}` : `${text}\nfailed to get existing ${what} objects`;
}

/** `admission.Errored(code, err)`. */
function errored(code: number, message: string): Record<string, unknown> {
  return { allowed: false, status: { metadata: {}, code, message } };
}

/** `admission.Allowed("")` (with warnings) / `admission.Denied(message)`. */
function decided(d: Pick<AdmissionDecision, 'allowed' | 'reason' | 'warnings'>): Record<string, unknown> {
  if (d.allowed) return { allowed: true, status: { metadata: {}, code: 200 }, ...(d.warnings.length > 0 ? { warnings: d.warnings } : {}) };
  return { allowed: false, status: { metadata: {}, code: 403, reason: 'Forbidden', message: d.reason } };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Answers one AdmissionReview for the webhook `spec` (controller-runtime's `webhook.Admission`
 * ServeHTTP + MetalLB's Handle): `body` is the raw request body, `contentType` its header.
 * Always HTTP 200 with an AdmissionReview; the verdict is in `response`.
 */
export async function handleAdmission(spec: WebhookSpec, body: Buffer, contentType: string | undefined, deps: AdmissionDeps): Promise<HttpAnswer> {
  const log = (deps.log ?? silentLogger).with({ webhook: spec.kind.toLowerCase() });
  let apiVersion = 'admission.k8s.io/v1';
  const answer = (response: Record<string, unknown>, uid: unknown = ''): HttpAnswer => ({
    status: 200,
    body: { apiVersion, kind: 'AdmissionReview', response: { uid, ...response } },
  });
  if (body.length === 0) return answer(errored(400, 'request body is empty'));
  if (body.length > MAX_REQUEST_BYTES) return answer(errored(413, `request entity is too large; limit is ${MAX_REQUEST_BYTES} bytes`));
  if (contentType !== 'application/json') return answer(errored(400, `contentType=${contentType ?? ''}, expected application/json`));
  let review: unknown;
  try {
    review = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return answer(errored(400, (err as Error).message));
  }
  if (isObject(review) && (review.apiVersion === 'admission.k8s.io/v1beta1' || review.apiVersion === 'admission.k8s.io/v1')) apiVersion = review.apiVersion;
  const request = isObject(review) ? review.request : undefined;
  if (!isObject(request)) return answer(errored(400, 'got an empty AdmissionRequest'));
  const uid = request.uid ?? '';
  const op = String(request.operation ?? '').toLowerCase();
  if (op !== 'create' && op !== 'update' && op !== 'delete') return answer(decided({ allowed: true, reason: '', warnings: [] }), uid);
  const raw = op === 'delete' ? request.oldObject : request.object;
  if (!isObject(raw)) return answer(errored(400, 'there is no content to decode'), uid);
  const object = raw as KubeObject;
  if (object.kind !== spec.kind) {
    return answer(errored(400, `expected ${spec.kind}, got ${String(object.kind ?? '<no kind>')} ${String(object.apiVersion ?? '')}`.trim()), uid);
  }
  const name = object.metadata?.name ?? '';
  const namespace = object.metadata?.namespace ?? '';
  log.debug({ action: op, name, namespace });
  const base = { metallbNamespace: deps.namespace, operation: op, object } as const;
  const stored: KubeObject[] = [];
  for (const kind of storedKindsFor(base)) {
    try {
      stored.push(...(await deps.list(kind)));
    } catch (err) {
      const message = listFailure(kind, spec.kind, err);
      log.error({ action: op, name, namespace, error: message });
      return answer(decided({ allowed: false, reason: message, warnings: [] }), uid);
    }
  }
  const d = admissionReview({ ...base, stored, clusterValidation: deps.validation });
  if (!d.allowed) log.error({ action: op, name, namespace, error: d.reason });
  return answer(decided(d), uid);
}

/**
 * Answers one ConversionReview (controller-runtime's conversion webhook with MetalLB's BGPPeer
 * ConvertTo/ConvertFrom): `result.status` Success with the converted objects, or Failure with
 * the error; HTTP 400 (plain text) when the body is no ConversionReview.
 */
export function handleConversion(body: Buffer, log: Logger = silentLogger): HttpAnswer {
  let review: unknown;
  try {
    review = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return { status: 400, body: `${(err as Error).message}\n`, contentType: 'text/plain; charset=utf-8' };
  }
  const request = isObject(review) ? review.request : undefined;
  if (!isObject(review) || !isObject(request)) return { status: 400, body: 'conversion request is nil\n', contentType: 'text/plain; charset=utf-8' };
  const apiVersion = typeof review.apiVersion === 'string' ? review.apiVersion : 'apiextensions.k8s.io/v1';
  const desired = String(request.desiredAPIVersion ?? '');
  const objects = Array.isArray(request.objects) ? request.objects : [];
  let response: Record<string, unknown>;
  try {
    const converted = objects.map((o) => {
      if (!isObject(o)) throw new Error('an object to convert is not a JSON object');
      return convertBGPPeer(o as KubeObject, desired);
    });
    response = { convertedObjects: converted, result: { metadata: {}, status: 'Success' } };
  } catch (err) {
    log.error({ op: 'convert', desiredAPIVersion: desired, error: (err as Error).message, msg: 'failed to convert' });
    response = { convertedObjects: null, result: { metadata: {}, status: 'Failure', message: (err as Error).message } };
  }
  return { status: 200, body: { apiVersion, kind: 'ConversionReview', response: { uid: request.uid ?? '', ...response } } };
}

/** Options of WebhookServer. */
export interface WebhookServerOptions extends AdmissionDeps {
  /** address to listen on (MetalLB: every address) */
  host: string;
  /** port (MetalLB: 9443; 0 picks a free one) */
  port: number;
  tls: WebhookTlsOptions;
  /** the first certificate (setKeyPair replaces it) */
  keyPair: KeyPairPem;
}

/** The HTTPS server (see the module comment). */
export class WebhookServer {
  private readonly o: WebhookServerOptions;
  private readonly server: https.Server;
  private readonly routes = new Map<string, WebhookSpec>(METALLB_WEBHOOKS.map((w) => [w.path, w]));
  private readonly log: Logger;

  constructor(o: WebhookServerOptions) {
    this.o = o;
    this.log = (o.log ?? silentLogger).with({ component: 'webhook-server' });
    // HTTP/1.1 only, as MetalLB's server without --webhook-http2 (NextProtos http/1.1).
    this.server = https.createServer({ ...this.secureContext(o.keyPair), ALPNProtocols: ['http/1.1'] }, (req, res) => this.serve(req, res));
    this.server.on('tlsClientError', (err) => this.log.debug({ op: 'tls', error: err.message, msg: 'TLS handshake failed' }));
  }

  private secureContext(kp: KeyPairPem): https.ServerOptions {
    return { key: kp.keyPem, cert: kp.certPem, ...this.o.tls };
  }

  /** Starts listening; resolves to the port. @throws the listen error (EADDRINUSE, EACCES). */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.o.port, listenHost(this.o.host), () => {
        this.server.off('error', reject);
        resolve((this.server.address() as AddressInfo).port);
      });
    });
  }

  /** Serves `kp` from the next TLS handshake on (connections already open keep theirs). */
  setKeyPair(kp: KeyPairPem): void {
    this.server.setSecureContext(this.secureContext(kp));
  }

  /**
   * Stops accepting connections and closes the idle ones; connections still busy after `graceMs`
   * (a review the API server never finishes reading, a TLS handshake left half-way) are destroyed.
   */
  close(graceMs = 1000): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.server.closeAllConnections(), graceMs);
      timer.unref?.();
      this.server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      this.server.closeIdleConnections();
    });
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    setDateHeader(res);
    const path = (req.url ?? '').split('?')[0] ?? '';
    const spec = this.routes.get(path);
    if (!spec && path !== CONVERT_PATH) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_REQUEST_BYTES) tooLarge = true;
      else chunks.push(c);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const body = tooLarge ? Buffer.alloc(MAX_REQUEST_BYTES + 1) : Buffer.concat(chunks);
      const answered = spec ? handleAdmission(spec, body, req.headers['content-type'], this.o) : Promise.resolve(handleConversion(body, this.log));
      answered.then(
        (a) => {
          const text = typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
          res.writeHead(a.status, { 'Content-Type': a.contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
        },
        (err: unknown) => {
          // A bug: answer 500 with the message, as Go's http server recovers a handler panic.
          this.log.error({ op: 'webhook', path, error: (err as Error)?.message, stack: (err as Error)?.stack, msg: 'internal error in the webhook' });
          res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('internal error\n');
        },
      );
    });
  }
}
