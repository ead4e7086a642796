/**
 * The live ClusterState source: the objects metallb-ts reads, straight from the API server.
 *
 * - readClusterState: one consistent-enough read of every list (diagnostic commands, `snapshot`).
 * - ClusterStateWatcher: informers (list + watch with resourceVersion, re-list on 410 Gone) that
 *   keep the same lists current, for the `controller` and `speaker` loops.
 *
 * Both give plain JSON objects exactly as `kubectl get -o json` shows them (apiVersion and kind
 * filled on list items, timestamps as RFC 3339 strings, every field kept), each list in API order
 * (namespace/name), so the core runs on them exactly as on a snapshot loaded with `-f`.
 *
 * What is read (as MetalLB's own caches, internal/k8s/k8s.go): Services, EndpointSlices
 * (discovery.k8s.io/v1), Nodes and Namespaces cluster-wide; speaker Pods (label
 * `component=speaker` or `app.kubernetes.io/component=speaker`), Secrets and ConfigMaps in the
 * MetalLB namespace; every metallb.io kind in the MetalLB namespace; Events of the MetalLB namespace
 * and of Services (optional: missing rights or kinds leave the list empty).
 */
import type { ClusterAccess as KubeConfig } from './access.ts';
import { ListWatch } from './list-watch.ts';
import { emptyClusterState, type ClusterState, type KubeObject } from '../core/kube.ts';
import { ClusterUnreachableError, UserError } from '../core/errors.ts';
import { apiError, httpStatusOf, kubeGet, serverOf } from './client.ts';

/** The MetalLB namespace when none is given. */
export { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';
import { rfc3339Utc } from '../runtime/utc-time.ts';

/** One API list behind a ClusterState list. */
export interface ResourceSpec {
  /** the ClusterState list it fills */
  list: keyof ClusterState;
  /** `v1`, `discovery.k8s.io/v1`, `metallb.io/v1beta1`, ... */
  apiVersion: string;
  kind: string;
  /** the resource's plural name (URL segment) */
  plural: string;
  /** `all`: every namespace (or cluster-scoped); `metallb`: the MetalLB namespace only; `frrk8s`: the frr-k8s namespace only */
  scope: 'all' | 'metallb' | 'frrk8s';
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * What a 404 (kind not served) or 403 means: `required` fails; `optional` (Events) reads as empty
   * on 403 and 404; `crd` reads as empty on 404 only (a MetalLB kind whose CRD is not installed).
   */
  absent: 'required' | 'optional' | 'crd';
}

const M1 = 'metallb.io/v1beta1';

/**
 * Every list read, in ClusterState order. Pods and Events take two queries each (a label selector
 * cannot OR two keys; Events of the MetalLB namespace plus Service events everywhere); their
 * results are merged without duplicates.
 */
export const RESOURCES: readonly ResourceSpec[] = [
  { list: 'services', apiVersion: 'v1', kind: 'Service', plural: 'services', scope: 'all', absent: 'required' },
  { list: 'endpointSlices', apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', plural: 'endpointslices', scope: 'all', absent: 'required' },
  { list: 'nodes', apiVersion: 'v1', kind: 'Node', plural: 'nodes', scope: 'all', absent: 'required' },
  { list: 'namespaces', apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', scope: 'all', absent: 'required' },
  { list: 'pods', apiVersion: 'v1', kind: 'Pod', plural: 'pods', scope: 'metallb', labelSelector: 'component=speaker', absent: 'required' },
  { list: 'pods', apiVersion: 'v1', kind: 'Pod', plural: 'pods', scope: 'metallb', labelSelector: 'app.kubernetes.io/component=speaker', absent: 'required' },
  { list: 'secrets', apiVersion: 'v1', kind: 'Secret', plural: 'secrets', scope: 'metallb', absent: 'required' },
  { list: 'configMaps', apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', scope: 'metallb', absent: 'required' },
  { list: 'ipAddressPools', apiVersion: M1, kind: 'IPAddressPool', plural: 'ipaddresspools', scope: 'metallb', absent: 'required' },
  { list: 'l2Advertisements', apiVersion: M1, kind: 'L2Advertisement', plural: 'l2advertisements', scope: 'metallb', absent: 'crd' },
  { list: 'bgpAdvertisements', apiVersion: M1, kind: 'BGPAdvertisement', plural: 'bgpadvertisements', scope: 'metallb', absent: 'crd' },
  { list: 'bgpPeers', apiVersion: 'metallb.io/v1beta2', kind: 'BGPPeer', plural: 'bgppeers', scope: 'metallb', absent: 'crd' },
  { list: 'communities', apiVersion: M1, kind: 'Community', plural: 'communities', scope: 'metallb', absent: 'crd' },
  { list: 'bfdProfiles', apiVersion: M1, kind: 'BFDProfile', plural: 'bfdprofiles', scope: 'metallb', absent: 'crd' },
  { list: 'serviceL2Statuses', apiVersion: M1, kind: 'ServiceL2Status', plural: 'servicel2statuses', scope: 'metallb', absent: 'crd' },
  { list: 'serviceBGPStatuses', apiVersion: M1, kind: 'ServiceBGPStatus', plural: 'servicebgpstatuses', scope: 'metallb', absent: 'crd' },
  { list: 'configurationStates', apiVersion: M1, kind: 'ConfigurationState', plural: 'configurationstates', scope: 'metallb', absent: 'optional' },
  { list: 'frrConfigurations', apiVersion: 'frrk8s.metallb.io/v1beta1', kind: 'FRRConfiguration', plural: 'frrconfigurations', scope: 'frrk8s', absent: 'optional' },
  { list: 'events', apiVersion: 'v1', kind: 'Event', plural: 'events', scope: 'metallb', absent: 'optional' },
  { list: 'events', apiVersion: 'v1', kind: 'Event', plural: 'events', scope: 'all', fieldSelector: 'involvedObject.kind=Service', absent: 'optional' },
];

/** `metallb.io/v1beta1 ipaddresspools`: how messages name a resource. */
export function resourceName(spec: ResourceSpec): string {
  return `${spec.apiVersion} ${spec.plural}`;
}

/**
 * The collection URL path of `spec` (`/apis/metallb.io/v1beta1/namespaces/metallb-system/ipaddresspools`).
 * `frrk8sNamespace` (default: the MetalLB namespace) is where `frrk8s`-scoped lists are read.
 */
export function resourcePath(spec: ResourceSpec, metallbNamespace: string, frrk8sNamespace: string = metallbNamespace): string {
  const base = spec.apiVersion.includes('/') ? `/apis/${spec.apiVersion}` : `/api/${spec.apiVersion}`;
  if (spec.scope === 'all') return `${base}/${spec.plural}`;
  const ns = spec.scope === 'metallb' ? metallbNamespace : frrk8sNamespace;
  return `${base}/namespaces/${encodeURIComponent(ns)}/${spec.plural}`;
}

/** A list answer: items (kind/apiVersion filled) and the list's resourceVersion. */
export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
}

const PAGE_SIZE = 500;

/**
 * Lists one resource (all pages of 500, as kubectl does), items with apiVersion and kind filled;
 * with `trim`, each page's items go through {@link trimForCache} as they arrive (a watch cache's
 * list: 5,000 Services are not held with their managedFields until the last page).
 * @throws the raw error of kubeGet (map it with apiError).
 */
export async function listResource(kc: KubeConfig, spec: ResourceSpec, metallbNamespace: string, frrk8sNamespace: string = metallbNamespace, trim = false): Promise<ListResult> {
  const path = resourcePath(spec, metallbNamespace, frrk8sNamespace);
  const items: KubeObject[] = [];
  let resourceVersion = '';
  let cont: string | undefined;
  do {
    const page = (await kubeGet(kc, path, {
      query: { limit: PAGE_SIZE, continue: cont, labelSelector: spec.labelSelector, fieldSelector: spec.fieldSelector },
    })) as { metadata?: { resourceVersion?: string; continue?: string }; items?: unknown[] | null };
    if (!resourceVersion) resourceVersion = page.metadata?.resourceVersion ?? '';
    for (const item of page.items ?? []) {
      // trimmed page by page: the pages parsed so far are not held whole until the last arrives
      if (trim) trimForCache(item as KubeObject, spec.kind);
      items.push(withKind(item as KubeObject, spec));
    }
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return { items, resourceVersion };
}

/** `obj` with apiVersion and kind first (as kubectl prints list items), filled from `spec` when absent. */
function withKind(obj: KubeObject, spec: ResourceSpec): KubeObject {
  const { apiVersion, kind, ...rest } = obj;
  return { apiVersion: apiVersion ?? spec.apiVersion, kind: kind ?? spec.kind, ...rest };
}

/**
 * Drops, in place, what no decision of the daemons reads and costs memory in a watch cache, as
 * MetalLB's informers do with their transforms: `metadata.managedFields` of every object (often
 * half of a Service; a PUT without it keeps the server's, so writes built from cached objects lose
 * nothing) and a Node's `status.images` (every image on the node, kilobytes each). Diagnostics
 * (readClusterState, snapshots, a watcher without `trim`) keep both: `explain` reads managedFields.
 */
export function trimForCache(obj: KubeObject, kind: string): void {
  const meta = obj.metadata as { managedFields?: unknown } | undefined;
  if (meta && 'managedFields' in meta) delete meta.managedFields;
  const status = (obj as { status?: { images?: unknown } }).status;
  if (kind === 'Node' && status && typeof status === 'object' && 'images' in status) delete status.images;
}

/** `namespace/name` (namespaced) or `name`: the API's (etcd key) order within one resource. */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  return ns ? `${ns}/${obj.metadata?.name ?? ''}` : (obj.metadata?.name ?? '');
}

function byKey(a: KubeObject, b: KubeObject): number {
  const ka = objectKey(a);
  const kb = objectKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** Whether a failed list of `spec` reads as an empty list (see ResourceSpec.absent). */
function isAbsentOk(spec: ResourceSpec, err: unknown): boolean {
  const status = httpStatusOf(err);
  if (spec.absent === 'optional') return status === 403 || status === 404;
  if (spec.absent === 'crd') return status === 404;
  return false;
}

/** Maps a list error of `spec` to the one-line user error (a 404 of a required MetalLB kind says so). */
function listError(err: unknown, spec: ResourceSpec, server: string, verb = 'list'): unknown {
  if (httpStatusOf(err) === 404 && spec.apiVersion.startsWith('metallb.io/')) {
    return new UserError(`cannot ${verb} ${resourceName(spec)} at ${server}: the server does not serve it; are MetalLB's CRDs installed?`);
  }
  return apiError(err, { verb, resource: resourceName(spec), server });
}

/** Options of readClusterState. */
export interface ReadClusterStateOptions {
  /** where MetalLB runs (its CRs, speaker pods, secrets, config maps); default `metallb-system` */
  metallbNamespace?: string;
  /** where frr-k8s runs (its FRRConfigurations); default the MetalLB namespace */
  frrk8sNamespace?: string;
  /** progress lines when the read is slow (default: to stderr, after `slowMs`) */
  progress?: (line: string) => void;
  /** how long before the first progress line, in milliseconds (default 2000) */
  slowMs?: number;
}

/**
 * Reads the whole cluster state once, every list in parallel (read-only: GET requests only).
 * Lists are in API order (namespace/name); Pods and Events merge two queries each.
 *
 * @throws ClusterUnreachableError (exit 3) when the server cannot be reached or forbids a list,
 *   naming the server and the first failing resource in RESOURCES order; UserError (exit 2) for
 *   other API errors and when the API server does not serve MetalLB's IPAddressPool kind.
 */
export async function readClusterState(kc: KubeConfig, opts: ReadClusterStateOptions = {}): Promise<ClusterState> {
  const ns = opts.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE;
  const server = serverOf(kc);
  let done = 0;
  const progress = opts.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const timer = setTimeout(() => {
    progress(`metallb-ts: reading the cluster state from ${server} (${done} of ${RESOURCES.length} lists read)...`);
  }, opts.slowMs ?? 2000);
  timer.unref();
  let results: Array<PromiseSettledResult<ListResult>>;
  try {
    results = await Promise.allSettled(
      RESOURCES.map(async (spec) => {
        try {
          return await listResource(kc, spec, ns, opts.frrk8sNamespace ?? ns);
        } finally {
          done++;
        }
      }),
    );
  } finally {
    clearTimeout(timer);
  }
  const state = emptyClusterState();
  const merged = new Set<keyof ClusterState>();
  RESOURCES.forEach((spec, i) => {
    const r = results[i]!;
    if (r.status === 'rejected') {
      if (isAbsentOk(spec, r.reason)) return;
      throw listError(r.reason, spec, server);
    }
    const target = state[spec.list] as KubeObject[];
    if (target.length > 0) merged.add(spec.list);
    target.push(...r.value.items);
  });
  for (const list of merged) {
    const seen = new Set<string>();
    const unique = (state[list] as KubeObject[]).filter((o) => {
      const k = objectKey(o);
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
    (state[list] as KubeObject[]) = unique.sort(byKey);
  }
  return state;
}

// ---------------------------------------------------------------------------------------------
// ClusterStateWatcher

/** One change the watcher saw; `old` is the previous version for updates and deletes. */
export interface ClusterStateChange {
  list: keyof ClusterState;
  type: 'add' | 'update' | 'delete';
  object: KubeObject;
  old?: KubeObject;
}

/** A structured log entry (one JSON line on stderr by default). */
export type LogEntry = { level: 'info' | 'error'; msg: string; [field: string]: unknown };

/** Options of ClusterStateWatcher. */
export interface ClusterStateWatcherOptions {
  /** default `metallb-system` */
  metallbNamespace?: string;
  /** where `frrConfigurations` are watched; default the MetalLB namespace */
  frrk8sNamespace?: string;
  /** field selectors replacing RESOURCES' own, per list (e.g. one FRRConfiguration by `metadata.name=…`) */
  fieldSelectors?: Partial<Record<keyof ClusterState, string>>;
  /** the lists to keep; default every list but `events` (the loops do not read them) */
  kinds?: ReadonlyArray<keyof ClusterState>;
  /** where log entries go; default one JSON line each on stderr */
  log?: (entry: LogEntry) => void;
  /** first retry delay after a failed list or watch, doubled up to maxBackoffMs; default 1000 */
  backoffMs?: number;
  /** default 30000 */
  maxBackoffMs?: number;
  /** drop what no decision reads from cached objects (trimForCache); default false: objects as the API server sends them */
  trim?: boolean;
  /** start() fails when the initial sync has not succeeded within this time (ms); default 60000 */
  syncTimeoutMs?: number;
}

interface Feed {
  spec: ResourceSpec;
  lw: ListWatch;
  /** this feed's objects by objectKey */
  store: Map<string, KubeObject>;
  synced: boolean;
  lastError: unknown;
  backoffMs: number;
  lastFailure: number;
  retry: NodeJS.Timeout | undefined;
  starting: Promise<void> | undefined;
  /** failed() calls so far (a start that returns without one more has listed or watched) */
  failures: number;
  /** when this feed's list/watch started failing (ms since the epoch); undefined while it works */
  failingSince: number | undefined;
}

function defaultLog(entry: LogEntry): void {
  process.stderr.write(`${JSON.stringify({ ts: rfc3339Utc(Date.now()), ...entry })}\n`);
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code ?? (err.cause as NodeJS.ErrnoException | undefined)?.code;
    return `${err.message}${code && !err.message.includes(String(code)) ? ` (${code})` : ''}`;
  }
  return String(err);
}

/**
 * Keeps a live ClusterState current with one informer per RESOURCES entry (src/kube/list-watch.ts,
 * client-node's ListWatch without client-node: list, then watch from the list's resourceVersion, re-list on 410 Gone).
 *
 * A failed list or a broken watch (the API server restarting, a network error) is logged as one JSON
 * line on stderr and retried with exponential backoff (1 s doubling to 30 s); the informer resumes
 * from its last resourceVersion, or re-lists when that is too old, and reports objects deleted in
 * the meantime as deletes. A list answered 429 Too Many Requests (the API server's flow control)
 * is first retried after its Retry-After by KubeClient; a 429 that remains, or one answering a
 * watch, is retried the same way but logged at info level ("throttled by the API server (HTTP 429),
 * backing off"), as client-go's reflector does. Objects are shared with the caller: treat them as read-only.
 * When every failing list/watch works again, one line says so with the outage's length
 * (`list/watch recovered after an outage of 12.3 s`, `outageMs`); `syncAgeSeconds()` tells how
 * long the current outage has lasted (0: none).
 */
export class ClusterStateWatcher {
  readonly server: string;
  readonly metallbNamespace: string;
  readonly frrk8sNamespace: string;
  private readonly fieldSelectors: Partial<Record<keyof ClusterState, string>>;
  private readonly kc: KubeConfig;
  private readonly feeds: Feed[];
  private readonly listeners: Array<(change: ClusterStateChange) => void> = [];
  private readonly log: (entry: LogEntry) => void;
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly syncTimeoutMs: number;
  private stopped = false;
  private cached: ClusterState | undefined;
  /** each list as state() last built it, until a change to that list */
  private readonly lists = new Map<keyof ClusterState, KubeObject[]>();
  private readonly trim: boolean;
  /** when the current outage began (first failure while every feed worked); undefined: none */
  private outageSince: number | undefined;
  private readonly recoveredResources = new Set<string>();

  constructor(kc: KubeConfig, opts: ClusterStateWatcherOptions = {}) {
    this.kc = kc;
    this.server = serverOf(kc);
    this.metallbNamespace = opts.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE;
    this.frrk8sNamespace = opts.frrk8sNamespace ?? this.metallbNamespace;
    this.fieldSelectors = opts.fieldSelectors ?? {};
    this.log = opts.log ?? defaultLog;
    this.baseBackoffMs = opts.backoffMs ?? 1000;
    this.maxBackoffMs = opts.maxBackoffMs ?? 30_000;
    this.trim = opts.trim ?? false;
    this.syncTimeoutMs = opts.syncTimeoutMs ?? 60_000;
    const kinds = new Set(opts.kinds ?? RESOURCES.map((r) => r.list).filter((l) => l !== 'events' && l !== 'frrConfigurations' && l !== 'configurationStates'));
    this.feeds = RESOURCES.filter((spec) => kinds.has(spec.list)).map((spec) => this.makeFeed(this.fieldSelectors[spec.list] !== undefined ? { ...spec, fieldSelector: this.fieldSelectors[spec.list] } : spec));
  }

  private makeFeed(spec: ResourceSpec): Feed {
    const listFn = async () => {
      try {
        const r = await listResource(this.kc, spec, this.metallbNamespace, this.frrk8sNamespace, this.trim);
        feed.synced = true;
        feed.lastError = undefined;
        return { apiVersion: spec.apiVersion, kind: `${spec.kind}List`, metadata: { resourceVersion: r.resourceVersion }, items: r.items };
      } catch (err) {
        if (isAbsentOk(spec, err)) {
          // Not served / not allowed and optional: an empty list, watched again after a backoff.
          feed.synced = true;
          throw Object.assign(new Error(`${resourceName(spec)} not available (HTTP ${httpStatusOf(err)})`), { absent: true });
        }
        feed.lastError = err;
        throw err;
      }
    };
    const lw = new ListWatch(resourcePath(spec, this.metallbNamespace, this.frrk8sNamespace), this.kc, listFn, spec.labelSelector, spec.fieldSelector);
    const feed: Feed = { spec, lw, store: new Map(), synced: false, lastError: undefined, backoffMs: 0, lastFailure: 0, retry: undefined, starting: undefined, failures: 0, failingSince: undefined };
    lw.on('add', (obj) => this.apply(feed, 'add', obj as KubeObject));
    lw.on('update', (obj) => this.apply(feed, 'update', obj as KubeObject));
    lw.on('delete', (obj) => this.apply(feed, 'delete', obj as KubeObject));
    lw.on('error', (err: unknown) => this.failed(feed, err));
    return feed;
  }

  private apply(feed: Feed, type: 'add' | 'update' | 'delete', raw: KubeObject): void {
    if (this.stopped) return;
    if (this.trim) trimForCache(raw, feed.spec.kind);
    const object = withKind(raw, feed.spec);
    const key = objectKey(object);
    const old = feed.store.get(key);
    if (type === 'delete') feed.store.delete(key);
    else feed.store.set(key, object);
    this.cached = undefined;
    this.lists.delete(feed.spec.list);
    // Pods and Events come from two feeds: report an object once, as long as either holds it.
    const twin = this.feeds.find((f) => f !== feed && f.spec.list === feed.spec.list && f.store.has(key));
    if (twin) {
      const other = twin.store.get(key)!;
      if (type === 'delete') return;
      if (other.metadata?.resourceVersion === object.metadata?.resourceVersion) return;
    }
    const change: ClusterStateChange = { list: feed.spec.list, type: type === 'add' && old ? 'update' : type, object };
    if (old && type !== 'add') change.old = old;
    for (const cb of this.listeners) cb(change);
  }

  private failed(feed: Feed, err: unknown): void {
    if (this.stopped) return;
    const absent = (err as { absent?: boolean } | null)?.absent === true;
    const now = Date.now();
    feed.failures++;
    if (absent) {
      // the API server answered (the kind is not served or not allowed): not an outage
      this.recovered(feed);
    } else {
      feed.failingSince ??= now;
      this.outageSince ??= now;
    }
    if (now - feed.lastFailure > 60_000) feed.backoffMs = 0;
    feed.lastFailure = now;
    feed.backoffMs = feed.backoffMs === 0 ? this.baseBackoffMs : Math.min(feed.backoffMs * 2, this.maxBackoffMs);
    const delay = absent ? this.maxBackoffMs : feed.backoffMs;
    // HTTP 429 is the API server's flow control (API Priority and Fairness, max-requests-inflight)
    // asking this client to slow down: like client-go's reflector ("watch of … returned 429 -
    // backing off", an info line), it is retried after the backoff and not logged as an error.
    const throttled = httpStatusOf(err) === 429;
    if (!absent || feed.backoffMs === this.baseBackoffMs) {
      this.log({
        level: absent || throttled ? 'info' : 'error',
        msg: absent ? 'resource not available, retrying' : throttled ? 'throttled by the API server (HTTP 429), backing off' : 'list/watch failed, retrying',
        op: 'watch',
        resource: resourceName(feed.spec),
        server: this.server,
        error: errorText(err),
        retryInMs: delay,
      });
    }
    clearTimeout(feed.retry);
    feed.retry = setTimeout(() => {
      feed.retry = undefined;
      if (!this.stopped) this.startFeed(feed);
    }, delay);
    feed.retry.unref?.();
  }

  private startFeed(feed: Feed): Promise<void> {
    const failures = feed.failures;
    // ListWatch.start resolves once its list and watch request are through, and also after a
    // failed list it reported as an error: only a start without a new failure is a recovery.
    const p = feed.lw.start().then(
      () => {
        if (feed.failures === failures) this.recovered(feed);
      },
      (err: unknown) => this.failed(feed, err),
    );
    feed.starting = p;
    return p;
  }

  /**
   * A feed's list/watch works again. Once every feed works, the outage is over: logged once
   * ("list/watch recovered", with `outageMs` from the first failure and the resources that failed).
   */
  private recovered(feed: Feed): void {
    if (this.stopped || feed.failingSince === undefined) return;
    feed.failingSince = undefined;
    this.recoveredResources.add(resourceName(feed.spec));
    if (this.outageSince === undefined || this.feeds.some((f) => f.failingSince !== undefined)) return;
    const outageMs = Date.now() - this.outageSince;
    this.outageSince = undefined;
    this.log({
      level: 'info',
      msg: `list/watch recovered after an outage of ${(outageMs / 1000).toFixed(1)} s`,
      op: 'watch',
      server: this.server,
      outageMs,
      resources: [...this.recoveredResources].sort(),
    });
    this.recoveredResources.clear();
  }

  /**
   * Seconds since the list/watches last all worked: 0 while they do; during an outage (any
   * list/watch failing, from its first failure until every one works again) the time since it
   * began. `metallb_k8s_client_sync_age_seconds` exports it.
   */
  syncAgeSeconds(now = Date.now()): number {
    return this.outageSince === undefined ? 0 : Math.max(0, now - this.outageSince) / 1000;
  }

  /**
   * Lists every resource and starts watching; resolves once every informer has synced (its first
   * list succeeded). Transient errors are retried with backoff meanwhile.
   * @throws ClusterUnreachableError (exit 3) when a list is forbidden or unauthorized, or when the
   *   server could not be reached within syncTimeoutMs; UserError for a required kind the server
   *   does not serve. The watcher is stopped then.
   */
  async start(): Promise<void> {
    if (this.stopped) throw new Error('ClusterStateWatcher: start() after stop()');
    const deadline = Date.now() + this.syncTimeoutMs;
    await Promise.all(this.feeds.map((f) => this.startFeed(f)));
    for (;;) {
      if (this.stopped) throw new Error('ClusterStateWatcher stopped before it synced');
      const pending = this.feeds.filter((f) => !f.synced);
      if (pending.length === 0) return;
      for (const f of pending) {
        const status = httpStatusOf(f.lastError);
        const permanent = status !== undefined && status !== 429 && status < 500;
        if (permanent || (f.lastError !== undefined && Date.now() > deadline)) {
          const err = listError(f.lastError, f.spec, this.server);
          this.stop();
          throw err instanceof UserError ? err : new ClusterUnreachableError(`cannot list ${resourceName(f.spec)} at ${this.server}: ${errorText(f.lastError)}`);
        }
      }
      if (Date.now() > deadline) {
        this.stop();
        throw new ClusterUnreachableError(`cannot list ${resourceName(pending[0]!.spec)} at ${this.server}: not synced within ${this.syncTimeoutMs} ms`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stops every informer and pending retry. Idempotent; onChange callbacks are not called afterwards. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const f of this.feeds) {
      clearTimeout(f.retry);
      void f.lw.stop();
      // A start in progress may open a watch after stop(): close it once that start settles.
      void f.starting?.then(() => f.lw.stop());
    }
  }

  /** Whether every informer has completed its first list. */
  get synced(): boolean {
    return this.feeds.every((f) => f.synced);
  }

  /**
   * The current state of the caches as a ClusterState: lists not watched are empty, every list in
   * API order (namespace/name). A new object after any change, the same one until then; a list
   * that did not change is the same array as before (rebuilding and sorting every list at each
   * change cost the speaker O(n²) on large clusters); arrays and objects are shared and must not
   * be modified.
   */
  state(): ClusterState {
    if (this.cached) return this.cached;
    const state = emptyClusterState();
    const perList = new Map<keyof ClusterState, Map<string, KubeObject>>();
    for (const f of this.feeds) {
      if (this.lists.has(f.spec.list)) continue;
      let m = perList.get(f.spec.list);
      if (!m) perList.set(f.spec.list, (m = new Map()));
      for (const [k, o] of f.store) if (!m.has(k)) m.set(k, o);
    }
    for (const [list, m] of perList) this.lists.set(list, [...m.values()].sort(byKey));
    for (const [list, objects] of this.lists) (state[list] as KubeObject[]) = objects;
    this.cached = state;
    return state;
  }

  /** Calls `cb` for every add, update and delete after it is registered (including the initial list's adds). */
  onChange(cb: (change: ClusterStateChange) => void): void {
    this.listeners.push(cb);
  }
}
