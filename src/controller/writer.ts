/**
 * What the controller loop writes to the cluster, behind an interface (the loop's unit tests use
 * a fake): Service status and annotations, core/v1 Events on Services, IPAddressPool status.
 * `KubeWriter` implements it against the API server.
 */
import type { IPAddressPool, Service } from '../core/kube.ts';
import type { ControllerEvent } from '../core/controller/index.ts';
import { httpStatusOf, MERGE_PATCH, type KubeClient } from '../kube/client.ts';
import { EventRecorder, kubeEventSink, type EventRecorderOptions, type KubeEvent } from '../kube/events.ts';
import { corePath, metallbPath } from './api.ts';

/** MetalLB's IPAddressPool status (counts; bigint because IPv6 pools reach 2^63-1). */
export interface PoolStatusCounts {
  assignedIPv4: bigint;
  assignedIPv6: bigint;
  availableIPv4: bigint;
  availableIPv6: bigint;
}

/** A write the API server refused because the object changed meanwhile (HTTP 409). */
export class ConflictError extends Error {
  constructor(what: string) {
    super(`conflict writing ${what}: the object was modified`);
    this.name = 'ConflictError';
  }
}

/** The object to write does not exist any more (HTTP 404). */
export class NotFoundError extends Error {
  constructor(what: string) {
    super(`${what} not found`);
    this.name = 'NotFoundError';
  }
}

/** The controller's cluster writes. Errors other than ConflictError/NotFoundError mean "retry later". */
export interface ControllerWriter {
  /**
   * Makes the stored Service carry `desired`'s `status` and `metadata.annotations`, writing on top
   * of `base` (its `metadata.resourceVersion` is the precondition). Resolves to the stored object.
   * @throws ConflictError (409), NotFoundError (404), or the transport/API error.
   */
  writeService(base: Service, desired: Service): Promise<Service>;
  /** The current Service, or null when it does not exist. */
  readService(namespace: string, name: string): Promise<Service | null>;
  /** Records `event` on `svc` (best effort: never blocks on the API; errors are for logging only). */
  recordEvent(svc: Service, event: ControllerEvent): Promise<void>;
  /**
   * Writes `counts` as the status of `pool` (precondition: its resourceVersion). Resolves to the stored object.
   * @throws ConflictError, NotFoundError, or the transport/API error.
   */
  writePoolStatus(pool: IPAddressPool, counts: PoolStatusCounts): Promise<IPAddressPool>;
  /** The current IPAddressPool, or null. */
  readPool(namespace: string, name: string): Promise<IPAddressPool | null>;
}

function rethrow(err: unknown, what: string): never {
  const code = httpStatusOf(err);
  if (code === 409) throw new ConflictError(what);
  if (code === 404) throw new NotFoundError(what);
  throw err;
}

function sameAnnotations(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b ?? {}).length) return false;
  return ka.every((k) => Object.hasOwn(b ?? {}, k) && b?.[k] === a?.[k]);
}

/** Options of KubeWriter. */
export interface KubeWriterOptions {
  /** `source.component` and `reportingComponent` of events (MetalLB: `metallb-controller`) */
  component?: string;
  /**
   * `source.host` and `reportingInstance` of events. MetalLB's controller records with
   * controller-runtime's recorder, whose source has no host: both stay empty (the default).
   */
  instance?: string;
  /** clock for event timestamps (default Date.now) */
  now?: () => number;
  /** failures to write an event (logged by the caller) */
  onEventError?: (err: unknown, ev: KubeEvent, what: string) => void;
  /** options of the event recorder (tests: shorter retry waits) */
  events?: Partial<EventRecorderOptions>;
}

/**
 * ControllerWriter over the API server:
 * - Service: `PUT .../services/<name>/status` with the base object carrying the desired status and
 *   annotations (MetalLB's `UpdateStatus`; the Service status strategy keeps metadata changes); if
 *   the stored annotations still differ (an API server that ignores metadata on /status), a merge
 *   patch of `metadata.annotations` with the resourceVersion as precondition follows.
 * - Events: client-go's recorder (src/kube/events.ts): core/v1 Events named
 *   `<service>.<hex nanoseconds>`, written one at a time and correlated as client-go does — a
 *   repeat of the same type/reason/message on the same Service patches `count`, `lastTimestamp`
 *   (and `message`) of the earlier Event instead of creating one, also within a burst.
 * - IPAddressPool: `PUT .../ipaddresspools/<name>/status` (int64 counts written exactly).
 */
export class KubeWriter implements ControllerWriter {
  private readonly api: KubeClient;
  /** The Event recorder (client-go's broadcaster and correlator). */
  readonly events: EventRecorder;

  constructor(api: KubeClient, opts: KubeWriterOptions = {}) {
    this.api = api;
    this.events = new EventRecorder(kubeEventSink(api), {
      component: opts.component ?? 'metallb-controller',
      ...(opts.instance ? { host: opts.instance } : {}),
      ...(opts.now ? { now: opts.now } : {}),
      ...(opts.onEventError ? { onError: opts.onEventError } : {}),
      ...(opts.events ?? {}),
    });
  }

  async writeService(base: Service, desired: Service): Promise<Service> {
    const ns = base.metadata?.namespace ?? 'default';
    const name = base.metadata?.name ?? '';
    const what = `Service ${ns}/${name}`;
    const body: Service = {
      ...base,
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { ...(base.metadata ?? {}), annotations: desired.metadata?.annotations ?? {} },
      status: desired.status ?? {},
    };
    if (!desired.metadata?.annotations) delete body.metadata!.annotations;
    let stored: Service;
    try {
      stored = await this.api.request<Service>({ method: 'PUT', path: `${corePath(ns, 'services', name)}/status`, body });
    } catch (err) {
      rethrow(err, what);
    }
    if (!sameAnnotations(stored.metadata?.annotations, desired.metadata?.annotations)) {
      const patch: Record<string, string | null> = {};
      for (const k of Object.keys(stored.metadata?.annotations ?? {})) if (!Object.hasOwn(desired.metadata?.annotations ?? {}, k)) patch[k] = null;
      Object.assign(patch, desired.metadata?.annotations ?? {});
      try {
        stored = await this.api.request<Service>({
          method: 'PATCH',
          path: corePath(ns, 'services', name),
          contentType: MERGE_PATCH,
          body: { metadata: { resourceVersion: stored.metadata?.resourceVersion, annotations: patch } },
        });
      } catch (err) {
        rethrow(err, what);
      }
    }
    return stored;
  }

  /** GET `path`; null when the object does not exist (404). Other errors propagate. */
  private async getOrNull<T>(path: string): Promise<T | null> {
    try {
      return await this.api.request<T>({ method: 'GET', path });
    } catch (err) {
      if (httpStatusOf(err) === 404) return null;
      throw err;
    }
  }

  readService(namespace: string, name: string): Promise<Service | null> {
    return this.getOrNull<Service>(corePath(namespace, 'services', name));
  }

  recordEvent(svc: Service, e: ControllerEvent): Promise<void> {
    this.events.record({ apiVersion: 'v1', kind: 'Service', metadata: svc.metadata ?? {} }, e.type, e.reason, e.message);
    return Promise.resolve();
  }

  /** Waits (at most `timeoutMs`) for the queued events, then drops the rest. */
  async closeEvents(timeoutMs = 2000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.events.idle(),
      new Promise<void>((r) => {
        timer = setTimeout(r, timeoutMs);
        timer.unref?.();
      }),
    ]);
    clearTimeout(timer);
    await this.events.close();
  }

  async writePoolStatus(pool: IPAddressPool, counts: PoolStatusCounts): Promise<IPAddressPool> {
    const ns = pool.metadata?.namespace ?? '';
    const name = pool.metadata?.name ?? '';
    // int64 counts beyond 2^53 must be written exactly: splice them into the JSON text.
    const placeholder = '__metallb_ts_status__';
    const text = JSON.stringify({ ...pool, status: placeholder }).replace(
      `"${placeholder}"`,
      `{"assignedIPv4":${counts.assignedIPv4},"assignedIPv6":${counts.assignedIPv6},"availableIPv4":${counts.availableIPv4},"availableIPv6":${counts.availableIPv6}}`,
    );
    try {
      return await this.api.request<IPAddressPool>({ method: 'PUT', path: `${metallbPath(ns, 'ipaddresspools', name)}/status`, rawBody: text });
    } catch (err) {
      rethrow(err, `IPAddressPool ${ns}/${name}`);
    }
  }

  readPool(namespace: string, name: string): Promise<IPAddressPool | null> {
    return this.getOrNull<IPAddressPool>(metallbPath(namespace, 'ipaddresspools', name));
  }
}
