/**
 * Cluster access: which kubeconfig to use, the one raw HTTP client to the API server (KubeClient:
 * the CLI's reads, the controller's and the speaker's reads and writes), and the mapping of
 * whatever goes wrong on the way to the one-line errors the CLI prints (apiError).
 *
 * Requests are raw (node:http/https with the TLS material and credentials client-node derives from
 * the kubeconfig) rather than through client-node's typed APIs: those turn objects into class
 * instances with Date timestamps and drop fields their models do not know, while metallb-ts keeps
 * objects exactly as the API server (and `kubectl get -o json`) shows them.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Agent as HttpAgent, ClientRequest, IncomingMessage } from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { ClusterUnreachableError, UserError } from '../core/errors.ts';
import { RESPONSE_TOO_LARGE, timeoutError, tooLargeError } from './http-limits.ts';
import { inClusterConfig, liteKubeConfigFromFile, type ClusterAccess } from './access.ts';

export type { ClusterAccess } from './access.ts';

// node:http through getBuiltinModule: its ESM facade reads every export, which loads undici.
const http = process.getBuiltinModule('node:http');
// client-node is loaded by loadKubeConfig only (the daemons use loadClusterAccess, see access.ts).
const require = createRequire(import.meta.url);
const newKubeConfig = (): KubeConfig => new (require('@kubernetes/client-node') as typeof import('@kubernetes/client-node')).KubeConfig();

/** Options that choose the kubeconfig (the CLI's `--kubeconfig` and `--context`). */
export interface KubeConfigOptions {
  /** `--kubeconfig`: a kubeconfig file; wins over `KUBECONFIG` and `~/.kube/config`. */
  kubeconfig?: string;
  /** `--context`: a context of that kubeconfig instead of its current-context. */
  context?: string;
}

/** Where the configuration comes from (see kubeConfigSource). */
export type KubeConfigSource = { kind: 'flag' | 'env' | 'home'; files: string[] } | { kind: 'in-cluster' } | { kind: 'none' };

/** The environment kubeConfigSource looks at (tests pass their own). */
export interface KubeConfigEnv {
  KUBECONFIG?: string | undefined;
  KUBERNETES_SERVICE_HOST?: string | undefined;
  KUBERNETES_SERVICE_PORT?: string | undefined;
  /** home directory; default os.homedir() */
  home?: string;
  /** the service-account token file; default /var/run/secrets/kubernetes.io/serviceaccount/token */
  serviceAccountTokenFile?: string;
  /** whether a file exists; default fs.existsSync */
  exists?: (path: string) => boolean;
}

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * Which configuration loadKubeConfig uses, in kubectl's order: `--kubeconfig`, else the files of
 * `KUBECONFIG` (path-list, merged, the first file's current-context wins), else `~/.kube/config`
 * when it exists, else the pod's service account when running in a cluster
 * (`KUBERNETES_SERVICE_HOST` set and the token file present), else none. Pure: reads nothing but
 * `env.exists`.
 */
export function kubeConfigSource(opts: KubeConfigOptions, env: KubeConfigEnv = process.env): KubeConfigSource {
  const exists = env.exists ?? existsSync;
  if (opts.kubeconfig !== undefined) return { kind: 'flag', files: [opts.kubeconfig] };
  const list = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '');
  if (list.length > 0) return { kind: 'env', files: list };
  const home = join(env.home ?? homedir(), '.kube', 'config');
  if (exists(home)) return { kind: 'home', files: [home] };
  if (env.KUBERNETES_SERVICE_HOST && exists(env.serviceAccountTokenFile ?? SERVICE_ACCOUNT_TOKEN)) return { kind: 'in-cluster' };
  return { kind: 'none' };
}

/**
 * Loads the kubeconfig kubeConfigSource picks and selects `opts.context` (else the file's
 * current-context). Every file the configuration names (kubeconfig files, CA, client certificate
 * and key) is checked here, so a broken configuration fails before any request.
 *
 * @throws UserError (exit 2), one line naming the file or context: a missing or unreadable
 *   kubeconfig, one that is not valid YAML or has invalid entries, an unknown `--context`, no
 *   current-context, a context naming a missing cluster or user, a missing CA/cert/key file, or no
 *   configuration at all.
 */
export function loadKubeConfig(opts: KubeConfigOptions = {}, env: KubeConfigEnv = process.env): KubeConfig {
  const source = kubeConfigSource(opts, env);
  const kc = newKubeConfig();
  let where: string;
  switch (source.kind) {
    case 'none':
      throw new UserError('no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG, create ~/.kube/config, or run in a pod with a service account (or use -f for a snapshot)');
    case 'in-cluster':
      kc.loadFromCluster();
      where = 'the in-cluster service account';
      break;
    default: {
      const [first, ...rest] = source.files;
      loadFile(kc, first!);
      for (const f of rest) {
        const more = newKubeConfig();
        loadFile(more, f);
        try {
          kc.mergeConfig(more, true);
        } catch (err) {
          throw new UserError(`kubeconfig ${f}: ${(err as Error).message}`);
        }
      }
      where = `kubeconfig ${source.files.join(delimiter)}`;
    }
  }
  if (opts.context !== undefined) {
    if (!kc.getContextObject(opts.context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new UserError(`context "${opts.context}" not found in ${where}${known.length ? ` (contexts: ${known.join(', ')})` : ''}`);
    }
    kc.setCurrentContext(opts.context);
  }
  const ctxName = kc.getCurrentContext();
  const ctx = ctxName ? kc.getContextObject(ctxName) : null;
  if (!ctxName) throw new UserError(`${where} has no current-context; pass --context NAME`);
  if (!ctx) throw new UserError(`${where}: current-context "${ctxName}" is not defined`);
  const cluster = kc.getCluster(ctx.cluster);
  if (!cluster) throw new UserError(`${where}: context "${ctxName}" names cluster "${ctx.cluster}", which is not defined`);
  if (!cluster.server) throw new UserError(`${where}: cluster "${cluster.name}" has no server`);
  try {
    new URL(cluster.server);
  } catch {
    throw new UserError(`${where}: cluster "${cluster.name}" has an invalid server URL "${cluster.server}"`);
  }
  const user = ctx.user ? kc.getUser(ctx.user) : null;
  if (ctx.user && !user) throw new UserError(`${where}: context "${ctxName}" names user "${ctx.user}", which is not defined`);
  const files: Array<[string, string | undefined]> = [
    ['certificate-authority', cluster.caFile],
    ['client-certificate', user?.certFile],
    ['client-key', user?.keyFile],
  ];
  for (const [what, file] of files) {
    if (file && !existsSync(file)) throw new UserError(`${where}: ${what} file ${file} does not exist`);
  }
  return kc;
}

/**
 * The configuration a daemon uses, chosen as loadKubeConfig chooses it: without client-node when it
 * is the in-cluster service account or one kubeconfig file whose context needs nothing beyond a
 * server, its CA, a client certificate or a bearer token (LiteKubeConfig, src/kube/access.ts);
 * otherwise, and for every error, loadKubeConfig's KubeConfig.
 * @throws UserError as loadKubeConfig.
 */
export function loadClusterAccess(opts: KubeConfigOptions = {}, env: KubeConfigEnv = process.env): ClusterAccess {
  const source = kubeConfigSource(opts, env);
  if (source.kind === 'in-cluster' && env.serviceAccountTokenFile === undefined && opts.context === undefined) {
    const lite = inClusterConfig(env);
    if (existsSync(SERVICE_ACCOUNT_CA)) return lite;
  } else if ((source.kind === 'flag' || source.kind === 'env' || source.kind === 'home') && source.files.length === 1) {
    const lite = liteKubeConfigFromFile(source.files[0]!, opts.context);
    if (lite) return lite;
  }
  return loadKubeConfig(opts, env);
}

const SERVICE_ACCOUNT_CA = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';

function loadFile(kc: KubeConfig, file: string): void {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
    throw new UserError(`kubeconfig ${file}: ${why}`);
  }
  try {
    kc.loadFromString(text);
    kc.makePathsAbsolute(dirname(file));
  } catch (err) {
    throw new UserError(`kubeconfig ${file}: invalid: ${oneLineMessage(err)}`);
  }
  if ((kc.clusters ?? []).length === 0 && (kc.contexts ?? []).length === 0) throw new UserError(`kubeconfig ${file}: invalid: not a kubeconfig (no clusters or contexts)`);
}

/** The API server URL of the kubeconfig's current context (`https://host:port`), or `<no server>`. */
export function serverOf(kc: ClusterAccess): string {
  return kc.getCurrentCluster()?.server?.replace(/\/+$/, '') ?? '<no server>';
}

/** What failed, for apiError's message: `cannot <verb> <resource> at <server>`. */
export interface ApiErrorContext {
  /** the API verb: list, watch, get, ... */
  verb: string;
  /** `group/version plural` (`metallb.io/v1beta1 ipaddresspools`) or `v1 services` for the core group */
  resource: string;
  /** the API server URL */
  server: string;
}

/** A non-2xx answer of the API server; `status` is the Kubernetes `Status` body when there was one. */
export class KubeApiError extends Error {
  readonly statusCode: number;
  readonly status: { message?: string; reason?: string; code?: number } | undefined;
  /** the answer's Retry-After in seconds (a whole number of seconds, RFC 9110 10.2.3); undefined: none */
  readonly retryAfterSeconds: number | undefined;
  constructor(statusCode: number, status: KubeApiError['status'], fallback: string, retryAfterSeconds?: number) {
    super(status?.message || fallback || `HTTP ${statusCode}`);
    this.name = 'KubeApiError';
    this.statusCode = statusCode;
    this.status = status;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Retry-After as whole seconds (the API server sends them so); undefined when absent or a date. */
function retryAfterOf(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v !== undefined && /^\s*\d+\s*$/.test(v) ? Number(v) : undefined;
}

/** Retries of an answer with Retry-After (client-go's rest client: maxRetries 10). */
const MAX_RETRY_AFTER_RETRIES = 10;

const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ETIMEDOUT: 'timed out',
  ESOCKETTIMEDOUT: 'timed out',
  UND_ERR_CONNECT_TIMEOUT: 'timed out',
  UND_ERR_HEADERS_TIMEOUT: 'timed out',
  UND_ERR_BODY_TIMEOUT: 'timed out',
  UND_ERR_SOCKET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found (DNS)',
  EADDRNOTAVAIL: 'address not available',
};

const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_SIGNATURE_FAILURE',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'EPROTO',
]);

/** The cause chain of an error (fetch wraps socket errors in `cause`, undici in `cause.cause`). */
function causes(err: unknown): Array<{ code?: unknown; name?: unknown; message?: unknown; statusCode?: unknown }> {
  const out: Array<{ code?: unknown; name?: unknown; message?: unknown; statusCode?: unknown }> = [];
  let e: unknown = err;
  for (let i = 0; i < 5 && e !== null && typeof e === 'object'; i++) {
    out.push(e as { code?: unknown });
    if (Array.isArray((e as { errors?: unknown }).errors) && (e as { errors: unknown[] }).errors.length > 0) {
      e = (e as { errors: unknown[] }).errors[0]; // AggregateError (happy eyeballs)
    } else {
      e = (e as { cause?: unknown }).cause;
    }
  }
  return out;
}

/** HTTP status of an error from our requests, client-node's ApiException or its Watch, if any. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof KubeApiError) return err.statusCode;
  const e = err as { statusCode?: unknown; code?: unknown } | null;
  if (e && typeof e.statusCode === 'number') return e.statusCode;
  if (e && typeof e.code === 'number' && e.code >= 100 && e.code < 600) return e.code; // ApiException
  return undefined;
}

/** Whether the error means the server cannot be reached or refuses us (ClusterUnreachableError). */
function networkReason(err: unknown): string | undefined {
  for (const c of causes(err)) {
    const code = typeof c.code === 'string' ? c.code : undefined;
    if (code && NETWORK_CODES[code]) return NETWORK_CODES[code];
    if (code && (TLS_CODES.has(code) || code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL'))) {
      return `TLS: ${oneLineMessage(c)}`;
    }
    if (c.name === 'TimeoutError') return 'timed out';
    if (code === RESPONSE_TOO_LARGE) return oneLineMessage(c);
  }
  const msg = causes(err)
    .map((c) => String(c.message ?? ''))
    .join(' ');
  if (/certificate|self[- ]signed|tls|ssl/i.test(msg)) return `TLS: ${oneLineMessage(err)}`;
  return undefined;
}

/**
 * Maps an error of an API call to the one-line error the CLI prints.
 * - the server cannot be reached (connection refused/reset, timeout, DNS, TLS failure) →
 *   ClusterUnreachableError (exit 3): `cannot <verb> <resource> at <server>: connection refused`;
 * - 401 / 403 → ClusterUnreachableError (exit 3): `...: unauthorized|forbidden: <the API's message>`;
 * - any other API error (404, 422, 500, ...) → UserError (exit 2): `...: <the API's message> (HTTP n)`;
 * - a UserError passes through unchanged.
 * Anything else (a bug in our code) is returned unchanged, so it still crashes with its stack.
 */
export function apiError(err: unknown, ctx: ApiErrorContext): UserError | unknown {
  if (err instanceof UserError) return err;
  const what = `cannot ${ctx.verb} ${ctx.resource} at ${ctx.server}`;
  const status = httpStatusOf(err);
  if (status !== undefined) {
    const message = apiMessage(err);
    if (status === 401) return new ClusterUnreachableError(`${what}: unauthorized${message ? `: ${message}` : ''} (check the kubeconfig's credentials)`);
    if (status === 403) return new ClusterUnreachableError(`${what}: forbidden${message ? `: ${message}` : ''}`);
    return new UserError(`${what}: ${message || 'error'} (HTTP ${status})`);
  }
  const reason = networkReason(err);
  if (reason) return new ClusterUnreachableError(`${what}: ${reason}`);
  if (err instanceof Error && (err.name === 'FetchError' || err.message === 'fetch failed' || (err as NodeJS.ErrnoException).syscall)) {
    return new ClusterUnreachableError(`${what}: ${oneLineMessage(err)}`);
  }
  return err;
}

/** The API's message of an error: a Status body's `message`, else the error's message. */
function apiMessage(err: unknown): string {
  if (err instanceof KubeApiError) return oneLineMessage(err);
  const body = (err as { body?: unknown }).body;
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = body;
    }
  }
  if (parsed && typeof parsed === 'object' && typeof (parsed as { message?: unknown }).message === 'string') {
    return oneLineMessage({ message: (parsed as { message: string }).message });
  }
  if (typeof parsed === 'string' && parsed.trim() !== '') return oneLineMessage({ message: parsed });
  const m = oneLineMessage(err);
  return /^HTTP-Code: \d+/.test(m) ? '' : m;
}

function oneLineMessage(err: unknown): string {
  const m = err && typeof err === 'object' && 'message' in err ? String((err as { message: unknown }).message) : String(err);
  return m
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean)
    .join(' ');
}

/** Content type of a JSON merge patch (the default for PATCH). */
export const MERGE_PATCH = 'application/merge-patch+json';
/** Content type of a JSON patch. */
export const JSON_PATCH = 'application/json-patch+json';

/** One request: `path` is absolute on the server (`/api/v1/namespaces/ns/services/x/status`). */
export interface KubeRequest {
  /** default GET */
  method?: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE';
  path: string;
  /** query parameters (undefined values are left out) */
  query?: Record<string, string | number | boolean | undefined>;
  /** JSON body (serialized here) */
  body?: unknown;
  /** JSON body already serialized (wins over `body`) */
  rawBody?: string;
  /** Content-Type of a PATCH body (default MERGE_PATCH); other bodies are `application/json` */
  contentType?: string;
  /** idle timeout in milliseconds: the socket may be silent this long (default: the client's) */
  timeoutMs?: number;
  /**
   * absolute deadline in milliseconds for the whole request (credentials, connect, answer and
   * body), however the bytes trickle in; absent: none. Past it the request is destroyed and
   * rejects with `no answer within N ms` (code ETIMEDOUT).
   */
  deadlineMs?: number;
  /**
   * largest answer body accepted, in bytes; absent: no limit. A larger one (by Content-Length or
   * as it arrives) is cut off and rejects with `answer larger than N bytes` (code ERESPONSETOOLARGE).
   */
  maxBytes?: number;
  /** aborts the request: rejects with the signal's reason (an AbortError by default) */
  signal?: AbortSignal;
}

export { RESPONSE_TOO_LARGE, timeoutError, tooLargeError } from './http-limits.ts';

/** Options of KubeClient. */
export interface KubeClientOptions {
  /** per-request timeout in milliseconds (default 30000) */
  timeoutMs?: number;
  /** User-Agent header (default `metallb-ts`) */
  userAgent?: string;
  /**
   * Keep up to this many connections open to the server (a keep-alive pool of the client's own,
   * closed by close()). Default: none, every request on client-node's agent for the cluster.
   */
  maxSockets?: number;
}

/**
 * The one HTTP client to the API server (the CLI's reads, the controller's and the speaker's reads
 * and writes): JSON requests on the kubeconfig's server with its TLS material and credentials
 * (client certificates, tokens, token files, exec and auth-provider plugins, basic auth, proxies:
 * whatever client-node supports). Watches are client-node's Watch on the same KubeConfig (see
 * src/kube/live.ts).
 */
export class KubeClient {
  /** the API server URL, without a trailing slash */
  readonly server: string;
  private readonly kc: ClusterAccess;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private maxSockets: number | undefined;
  private agent: HttpAgent | undefined;

  /** @throws UserError when the kubeconfig has no current cluster (loadKubeConfig's configs always have one). */
  constructor(kc: ClusterAccess, opts: KubeClientOptions = {}) {
    const server = kc.getCurrentCluster()?.server;
    if (!server) throw new UserError('the kubeconfig has no current cluster');
    this.kc = kc;
    this.server = server.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.userAgent = opts.userAgent ?? 'metallb-ts';
    this.maxSockets = opts.maxSockets;
  }

  /**
   * Sends one request and resolves to the parsed JSON answer (undefined for an empty answer to
   * a write).
   *
   * @throws KubeApiError for a non-2xx answer (with the Kubernetes Status message; `statusCode` 409
   *   for conflicts, 404 for not found) or a 2xx answer that is not JSON; the socket's error (`code`
   *   ECONNREFUSED, TLS codes, ...) when the server cannot be reached; an error `no answer within N
   *   ms` with code ETIMEDOUT when the socket is idle for `timeoutMs` or the request is not done by
   *   `deadlineMs`; `answer larger than N bytes` (code ERESPONSETOOLARGE) past `maxBytes`; the
   *   signal's reason when `signal` aborts. Map them with apiError.
   *
   * An answer 429 or 5xx carrying Retry-After (the API server's flow control, a server shutting
   * down) is retried after that many seconds, up to 10 times, as client-go's rest client does;
   * not when the wait would pass `deadlineMs` or `signal` aborts meanwhile.
   */
  async request<T = unknown>(req: KubeRequest): Promise<T> {
    const start = Date.now();
    for (let retries = 0; ; retries++) {
      const deadlineMs = req.deadlineMs === undefined ? undefined : req.deadlineMs - (Date.now() - start);
      try {
        return await this.requestOnce<T>(deadlineMs === undefined ? req : { ...req, deadlineMs: Math.max(1, deadlineMs) });
      } catch (err) {
        const wait = err instanceof KubeApiError && (err.statusCode === 429 || err.statusCode >= 500) ? err.retryAfterSeconds : undefined;
        if (wait === undefined || retries >= MAX_RETRY_AFTER_RETRIES || req.signal?.aborted) throw err;
        const waitMs = wait * 1000;
        if (req.deadlineMs !== undefined && Date.now() - start + waitMs >= req.deadlineMs) throw err;
        await new Promise<void>((resolve) => {
          const done = (): void => {
            clearTimeout(t);
            req.signal?.removeEventListener('abort', done);
            resolve();
          };
          const t = setTimeout(done, waitMs);
          req.signal?.addEventListener('abort', done, { once: true });
        });
        if (req.signal?.aborted) throw err;
      }
    }
  }

  private async requestOnce<T>(req: KubeRequest): Promise<T> {
    const method = req.method ?? 'GET';
    const url = new URL(this.server + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const timeoutMs = req.timeoutMs ?? this.timeoutMs;
    const { deadlineMs, maxBytes, signal } = req;
    let r: ClientRequest | undefined;
    let res: IncomingMessage | undefined;
    let fail: (err: unknown) => void = () => {};
    let settled = false; // once answered, a late timer or abort must not destroy a socket the pool reuses
    const stopped = new Promise<never>((_, reject) => {
      fail = (err) => {
        if (settled) return;
        reject(err);
        res?.destroy();
        r?.destroy();
      };
    });
    stopped.catch(() => {});
    const deadline = deadlineMs !== undefined ? setTimeout(() => fail(timeoutError(deadlineMs)), deadlineMs) : undefined;
    const onAbort = () => fail(signal!.reason ?? Object.assign(new Error('aborted'), { name: 'AbortError' }));
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const opts: https.RequestOptions = { method, headers: {} };
      await Promise.race([this.kc.applyToHTTPSOptions(opts), stopped]);
      if (this.maxSockets !== undefined) opts.agent = this.keepAlive(opts);
      const body = req.rawBody !== undefined ? Buffer.from(req.rawBody) : req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
      opts.headers = {
        ...(opts.headers as Record<string, string>),
        Accept: 'application/json',
        'User-Agent': this.userAgent,
        ...(body ? { 'Content-Type': method === 'PATCH' ? (req.contentType ?? MERGE_PATCH) : 'application/json', 'Content-Length': String(body.length) } : {}),
      };
      const mod = url.protocol === 'http:' ? http : https;
      const answered = new Promise<T>((resolve, reject) => {
        r = mod.request(url, opts, (response) => {
          res = response;
          const declared = Number(response.headers['content-length']);
          if (maxBytes !== undefined && Number.isFinite(declared) && declared > maxBytes) {
            fail(tooLargeError(maxBytes));
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (c: Buffer) => {
            size += c.length;
            if (maxBytes !== undefined && size > maxBytes) {
              fail(tooLargeError(maxBytes));
              return;
            }
            chunks.push(c);
          });
          response.on('error', reject);
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const code = response.statusCode ?? 0;
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            if (code < 200 || code >= 300) {
              const status = parsed && typeof parsed === 'object' ? (parsed as KubeApiError['status']) : undefined;
              reject(new KubeApiError(code, status, text.trim().slice(0, 200) || (http.STATUS_CODES[code] ?? ''), retryAfterOf(response.headers['retry-after'])));
              return;
            }
            if (parsed === undefined && !(text === '' && method !== 'GET')) {
              reject(new KubeApiError(code, undefined, `the server did not answer JSON: ${text.trim().slice(0, 100)}`));
              return;
            }
            resolve(parsed as T);
          });
        });
        r.setTimeout(timeoutMs, () => fail(timeoutError(timeoutMs)));
        r.on('error', reject);
        r.end(body);
      });
      return await Promise.race([answered, stopped]);
    } finally {
      settled = true;
      if (deadline) clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Changes the keep-alive pool's size (a client made with maxSockets; otherwise nothing to do):
   * requests beyond it wait for a connection of the pool to be free. A larger size serves the
   * requests made from then on; one already waiting takes the next connection freed.
   */
  setMaxSockets(n: number): void {
    if (this.maxSockets === undefined) return;
    this.maxSockets = n;
    if (this.agent) this.agent.maxSockets = n;
  }

  /** Closes the kept-alive connections (with maxSockets; otherwise nothing to do). */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }

  /** One keep-alive agent with the TLS material client-node put on `opts` (proxy agents are kept as they are). */
  private keepAlive(opts: https.RequestOptions): HttpAgent | undefined {
    const given = opts.agent;
    if (given && !(given instanceof https.Agent) && !(given instanceof http.Agent && given.constructor === http.Agent)) return given as HttpAgent;
    if (this.agent) return this.agent;
    const base = given && 'options' in given ? (given as https.Agent).options : {};
    this.agent = this.server.startsWith('http:')
      ? new http.Agent({ keepAlive: true, maxSockets: this.maxSockets })
      : new https.Agent({ ...base, ca: opts.ca ?? base.ca, cert: opts.cert ?? base.cert, key: opts.key ?? base.key, keepAlive: true, maxSockets: this.maxSockets });
    return this.agent;
  }
}

/** Options of kubeGet. */
export interface KubeGetOptions {
  /** query parameters (undefined values are left out) */
  query?: Record<string, string | number | boolean | undefined>;
  /** idle timeout in milliseconds (default 30000) */
  timeoutMs?: number;
  /** absolute deadline in milliseconds (KubeRequest.deadlineMs; default none) */
  deadlineMs?: number;
  /** largest answer body in bytes (KubeRequest.maxBytes; default no limit) */
  maxBytes?: number;
  /** aborts the request */
  signal?: AbortSignal;
}

/**
 * GET `path` (`/api/v1/services`) on the kubeconfig's server and parse the JSON answer: one
 * KubeClient request with the kubeconfig's TLS material and credentials.
 *
 * @throws KubeApiError for a non-2xx answer (with the Kubernetes Status message) or one that is
 *   not JSON; the socket's error (`code` ECONNREFUSED, TLS codes, ...) when the server cannot be
 *   reached; `no answer within N ms` (code ETIMEDOUT) when the socket is idle for `timeoutMs` or
 *   the answer is not complete by `deadlineMs`; `answer larger than N bytes` (code
 *   ERESPONSETOOLARGE) past `maxBytes`. Map them with apiError.
 */
export async function kubeGet(kc: ClusterAccess, path: string, opts: KubeGetOptions = {}): Promise<unknown> {
  const { query, timeoutMs, deadlineMs, maxBytes, signal } = opts;
  return new KubeClient(kc).request({ path, query, timeoutMs, deadlineMs, maxBytes, signal });
}
