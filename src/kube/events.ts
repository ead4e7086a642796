/**
 * Kubernetes Events as client-go's recorder writes them (k8s.io/client-go tools/record, the
 * recorder controller-runtime's `GetEventRecorderFor` hands MetalLB's controller and speaker):
 *
 * - `makeEvent`: a core/v1 Event named `<object>.<hex UnixNano>` in the object's namespace,
 *   `source: {component, host}`, `reportingComponent` = the component, `reportingInstance` = the
 *   host (MetalLB's controller records as `metallb-controller` with no host: both empty there),
 *   first/last timestamp = when it was recorded, count 1.
 * - `EventCorrelator` (events_cache.go), in this order: the aggregator (10 events of one
 *   source/object/type/reason with different messages within 10 minutes become one Event with the
 *   message `(combined from similar events): <message>`), the logger (an event identical to one
 *   already written — same source, object, type, reason, message — patches that Event's `count`,
 *   `lastTimestamp` and `message` instead of creating one), the spam filter (per source+object+type
 *   a token bucket of 25, refilled one per 5 minutes; beyond, events are dropped). LRU caches of
 *   4096 entries each.
 * - `EventRecorder`: the broadcaster. `record()` never blocks: the event is queued (at most 1000
 *   waiting, more are dropped and logged) and one writer handles the queue in order, correlating
 *   each event only when the previous one was written — so identical events recorded in a burst
 *   become one Event whose count grows, never several Events with count 1. A write the API server
 *   refuses is dropped; one that cannot reach it is retried up to 12 times, 10 s apart (the first
 *   wait randomized), as client-go does. A PATCH that finds the Event gone (404, TTL) creates it.
 *
 * The controller (src/controller/writer.ts) and the speaker use it through an EventSink
 * (`kubeEventSink` writes to the API server; tests pass a fake).
 */
import type { KubeClient } from './client.ts';
import { httpStatusOf } from './client.ts';
import { rfc3339Utc } from '../runtime/utc-time.ts';

/** A core/v1 Event as written (the fields client-go's recorder sets). */
export interface KubeEvent {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  involvedObject: { apiVersion?: string; kind: string; namespace?: string; name: string; uid?: string; resourceVersion?: string; fieldPath?: string };
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
  source: { component?: string; host?: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  reportingComponent?: string;
  reportingInstance?: string;
}

/** What a correlated event turns into: a create, a patch of an earlier Event, or nothing. */
export interface CorrelateResult {
  readonly event: KubeEvent;
  /** the strategic merge patch for the earlier Event (`count`, `lastTimestamp`, `message`); absent: create */
  readonly patch?: { count: number; lastTimestamp: string; message: string };
  /** dropped by the spam filter */
  readonly skip: boolean;
}

/** Where the recorder writes. `create`/`patch` resolve to the Event the server stored. */
export interface EventSink {
  create(ev: KubeEvent): Promise<KubeEvent>;
  patch(ev: KubeEvent, patch: NonNullable<CorrelateResult['patch']>): Promise<KubeEvent>;
}

/** The object an event is about (a Service, a Node...). */
export interface EventObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** metav1.Time as JSON: RFC 3339 in whole seconds, UTC. */
export function eventTime(ms: number): string {
  return rfc3339Utc(ms, false);
}

/**
 * client-go's `makeEvent` + `generateEvent` for `obj`. `nowNs` is the record time in nanoseconds
 * since the epoch (it names the Event). Objects without a namespace get their Event in `default`.
 */
export function makeEvent(obj: EventObject, type: 'Normal' | 'Warning', reason: string, message: string, source: { component: string; host?: string }, nowNs: bigint): KubeEvent {
  const name = obj.metadata?.name ?? '';
  const namespace = obj.metadata?.namespace || 'default';
  const t = eventTime(Number(nowNs / 1_000_000n));
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${name}.${nowNs.toString(16)}`, namespace },
    involvedObject: {
      apiVersion: obj.apiVersion ?? 'v1',
      kind: obj.kind ?? '',
      ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
      name,
      ...(obj.metadata?.uid ? { uid: obj.metadata.uid } : {}),
      ...(obj.metadata?.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {}),
    },
    reason,
    message,
    type,
    source: { component: source.component, ...(source.host ? { host: source.host } : {}) },
    firstTimestamp: t,
    lastTimestamp: t,
    count: 1,
    reportingComponent: source.component,
    reportingInstance: source.host ?? '',
  };
}

/** k8s.io/utils/lru: Get refreshes, Add inserts or refreshes, the least recently used goes first. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  private readonly size: number;
  constructor(size: number) {
    this.size = size;
  }
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  add(key: string, v: V): void {
    this.map.delete(key);
    this.map.set(key, v);
    if (this.map.size > this.size) this.map.delete(this.map.keys().next().value!);
  }
}

const io = (e: KubeEvent) => e.involvedObject;

/** getEventKey: source, object (with fieldPath), type, reason, message. */
function eventKey(e: KubeEvent): string {
  const o = io(e);
  return [e.source.component, e.source.host, o.kind, o.namespace, o.name, o.fieldPath, o.uid, o.apiVersion, e.type, e.reason, e.message].map((x) => x ?? '').join('\u0000');
}

/** EventAggregatorByReasonFunc's aggregate key (the message is the local key). */
function aggregateKey(e: KubeEvent): string {
  const o = io(e);
  return [e.source.component, e.source.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion, e.type, e.reason, e.reportingComponent, e.reportingInstance].map((x) => x ?? '').join('\u0000');
}

/** getSpamKey: source, object, type. */
function spamKey(e: KubeEvent): string {
  const o = io(e);
  return [e.source.component, e.source.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion, e.type].map((x) => x ?? '').join('\u0000');
}

/** The prefix of an aggregated event's message (EventAggregatorByReasonMessageFunc). */
export const COMBINED_PREFIX = '(combined from similar events): ';

/** Options of EventCorrelator (client-go's defaults). */
export interface CorrelatorOptions {
  /** ms since the epoch */
  now?: () => number;
  lruCacheSize?: number;
  /** distinct messages per aggregate key before aggregating (10) */
  maxEvents?: number;
  /** seconds after which similar events start a fresh aggregate record (600) */
  maxIntervalSeconds?: number;
  /** spam filter token bucket size (25) and refill per second (1/300) */
  burst?: number;
  qps?: number;
}

/** client-go's EventCorrelator (see the module comment). */
export class EventCorrelator {
  private readonly now: () => number;
  private readonly maxEvents: number;
  private readonly maxIntervalMs: number;
  private readonly burst: number;
  private readonly qps: number;
  private readonly aggregates: Lru<{ localKeys: Set<string>; lastMs: number }>;
  private readonly observed: Lru<{ count: number; firstTimestamp: string; name: string; resourceVersion: string }>;
  private readonly buckets: Lru<{ tokens: number; lastMs: number }>;

  constructor(opts: CorrelatorOptions = {}) {
    this.now = opts.now ?? Date.now;
    const size = opts.lruCacheSize ?? 4096;
    this.maxEvents = opts.maxEvents ?? 10;
    this.maxIntervalMs = (opts.maxIntervalSeconds ?? 600) * 1000;
    this.burst = opts.burst ?? 25;
    this.qps = opts.qps ?? 1 / 300;
    this.aggregates = new Lru(size);
    this.observed = new Lru(size);
    this.buckets = new Lru(size);
  }

  /** EventCorrelate: aggregate, observe (count), filter (spam). */
  correlate(ev: KubeEvent): CorrelateResult {
    const [agg, key] = this.aggregate(ev);
    const [observed, patch] = this.observe(agg, key);
    return { event: observed, ...(patch ? { patch } : {}), skip: !this.allow(observed) };
  }

  /** UpdateState: remember the Event the server stored (its name, count, resourceVersion). */
  updateState(ev: KubeEvent): void {
    this.observed.add(eventKey(ev), {
      count: ev.count,
      firstTimestamp: ev.firstTimestamp,
      name: ev.metadata.name,
      resourceVersion: ev.metadata.resourceVersion ?? '',
    });
  }

  private aggregate(ev: KubeEvent): [KubeEvent, string] {
    const nowMs = this.now();
    const aKey = aggregateKey(ev);
    let rec = this.aggregates.get(aKey) ?? { localKeys: new Set<string>(), lastMs: -Infinity };
    if (nowMs - rec.lastMs > this.maxIntervalMs) rec = { localKeys: new Set(), lastMs: -Infinity };
    rec.localKeys.add(ev.message);
    rec.lastMs = nowMs;
    this.aggregates.add(aKey, rec);
    if (rec.localKeys.size < this.maxEvents) return [ev, eventKey(ev)];
    // sets.String.PopAny removes an arbitrary member (Go map order); the oldest here.
    rec.localKeys.delete(rec.localKeys.values().next().value!);
    const t = eventTime(nowMs);
    const nowNs = BigInt(Math.floor(nowMs)) * 1_000_000n;
    return [
      {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${io(ev).name}.${nowNs.toString(16)}`, namespace: ev.metadata.namespace },
        involvedObject: ev.involvedObject,
        reason: ev.reason,
        message: COMBINED_PREFIX + ev.message,
        type: ev.type,
        source: ev.source,
        firstTimestamp: t,
        lastTimestamp: t,
        count: 1,
      },
      aKey,
    ];
  }

  private observe(ev: KubeEvent, key: string): [KubeEvent, CorrelateResult['patch'] | undefined] {
    const out: KubeEvent = { ...ev, metadata: { ...ev.metadata } };
    const last = this.observed.get(key);
    let patch: CorrelateResult['patch'] | undefined;
    if (last && last.count > 0) {
      out.metadata.name = last.name;
      if (last.resourceVersion) out.metadata.resourceVersion = last.resourceVersion;
      out.firstTimestamp = last.firstTimestamp;
      out.count = last.count + 1;
      patch = { count: out.count, lastTimestamp: out.lastTimestamp, message: out.message };
    }
    this.observed.add(key, { count: out.count, firstTimestamp: out.firstTimestamp, name: out.metadata.name, resourceVersion: out.metadata.resourceVersion ?? '' });
    return [out, patch];
  }

  /** EventSourceObjectSpamFilter: a token bucket per source+object+type (x/time/rate's AllowN). */
  private allow(ev: KubeEvent): boolean {
    const k = spamKey(ev);
    const nowMs = this.now();
    const b = this.buckets.get(k) ?? { tokens: this.burst, lastMs: nowMs };
    b.tokens = Math.min(this.burst, b.tokens + (Math.max(0, nowMs - b.lastMs) / 1000) * this.qps);
    b.lastMs = nowMs;
    const ok = b.tokens >= 1;
    if (ok) b.tokens -= 1;
    this.buckets.add(k, b);
    return ok;
  }
}

/** Options of EventRecorder. */
export interface EventRecorderOptions {
  /** `source.component` and `reportingComponent` (MetalLB: `metallb-controller`, `metallb-speaker`) */
  component: string;
  /** `source.host` and `reportingInstance` (MetalLB's speaker: its node; the controller: none) */
  host?: string;
  /** ms since the epoch */
  now?: () => number;
  /** failures to log (a dropped or unwritable event) */
  onError?: (err: unknown, ev: KubeEvent, what: string) => void;
  /** wait between attempts of an event the server could not be reached for (10000) */
  sleepMs?: number;
  /** attempts per event (12) */
  maxTries?: number;
  /** events waiting to be written before new ones are dropped (1000) */
  maxQueued?: number;
  correlator?: CorrelatorOptions;
}

/** client-go's broadcaster + recorder + sink loop (see the module comment). */
export class EventRecorder {
  readonly correlator: EventCorrelator;
  private readonly sink: EventSink;
  private readonly opts: Required<Pick<EventRecorderOptions, 'sleepMs' | 'maxTries' | 'maxQueued'>> & EventRecorderOptions;
  private readonly now: () => number;
  private readonly queue: KubeEvent[] = [];
  private running: Promise<void> | null = null;
  private closed = false;
  private lastNs = 0n;
  private readonly idleWaiters: Array<() => void> = [];
  private readonly stopTimers = new Set<() => void>();
  /** events dropped because the queue was full, or after close() */
  dropped = 0;

  constructor(sink: EventSink, opts: EventRecorderOptions) {
    this.sink = sink;
    this.opts = { sleepMs: 10_000, maxTries: 12, maxQueued: 1000, ...opts };
    this.now = opts.now ?? Date.now;
    this.correlator = new EventCorrelator({ now: this.now, ...(opts.correlator ?? {}) });
  }

  /** Records an event about `obj` (Eventf); never blocks, never throws. */
  record(obj: EventObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    // Go names events by UnixNano; keep names unique when the clock has only milliseconds.
    let ns = BigInt(Math.floor(this.now())) * 1_000_000n;
    if (ns <= this.lastNs) ns = this.lastNs + 1n;
    this.lastNs = ns;
    const ev = makeEvent(obj, type, reason, message, { component: this.opts.component, ...(this.opts.host ? { host: this.opts.host } : {}) }, ns);
    if (this.closed || this.queue.length >= this.opts.maxQueued) {
      this.dropped++;
      this.opts.onError?.(new Error('too many queued events, dropped event'), ev, 'queue');
      return;
    }
    this.queue.push(ev);
    this.kick();
  }

  private kick(): void {
    if (this.running) return;
    this.running = this.drain().finally(() => {
      this.running = null;
      if (this.queue.length > 0 && !this.closed) this.kick();
      else for (const w of this.idleWaiters.splice(0)) w();
    });
  }

  /** Events queued or being written. */
  get pending(): number {
    return this.queue.length + (this.running ? 1 : 0);
  }

  /** Resolves when every queued event was written (or given up). */
  idle(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Drops later events and retries in progress; waits for the write in flight. */
  async close(): Promise<void> {
    this.closed = true;
    this.dropped += this.queue.length;
    this.queue.length = 0;
    for (const stop of [...this.stopTimers]) stop();
    await this.idle();
  }

  private async drain(): Promise<void> {
    for (;;) {
      const ev = this.queue.shift();
      if (!ev) return;
      const r = this.correlator.correlate(ev);
      if (r.skip) continue;
      for (let tries = 1; ; tries++) {
        if (await this.write(r)) break;
        if (tries >= this.opts.maxTries || this.closed) {
          this.opts.onError?.(new Error('retry limit exceeded'), r.event, 'write');
          break;
        }
        const delay = tries === 1 ? this.opts.sleepMs * Math.random() : this.opts.sleepMs;
        await new Promise<void>((resolve) => {
          const t = setTimeout(() => {
            this.stopTimers.delete(stop);
            resolve();
          }, delay);
          t.unref?.();
          const stop = (): void => {
            clearTimeout(t);
            this.stopTimers.delete(stop);
            resolve();
          };
          this.stopTimers.add(stop);
        });
      }
    }
  }

  /** recordEvent: true when written or given up for good, false to retry. */
  private async write(r: CorrelateResult): Promise<boolean> {
    let ev = r.event;
    try {
      let stored: KubeEvent | undefined;
      if (r.patch && ev.count > 1) {
        try {
          stored = await this.sink.patch(ev, r.patch);
        } catch (err) {
          if (httpStatusOf(err) !== 404) throw err;
        }
      }
      if (!stored) {
        ev = { ...ev, metadata: { name: ev.metadata.name, namespace: ev.metadata.namespace } };
        stored = await this.sink.create(ev);
      }
      this.correlator.updateState(stored);
      return true;
    } catch (err) {
      this.opts.onError?.(err, ev, 'write');
      // Refused by the API server: writing it again would not help (client-go drops it).
      return httpStatusOf(err) !== undefined;
    }
  }
}

/** The strategic merge patch content type client-go's event sink uses. */
export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';

/** An EventSink writing to the API server (POST, and PATCH with a strategic merge patch). */
export function kubeEventSink(api: KubeClient): EventSink {
  const path = (ns: string, name?: string): string => `/api/v1/namespaces/${encodeURIComponent(ns)}/events${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
  return {
    create: (ev) => api.request<KubeEvent>({ method: 'POST', path: path(ev.metadata.namespace), body: ev }),
    patch: (ev, patch) =>
      api.request<KubeEvent>({
        method: 'PATCH',
        path: path(ev.metadata.namespace, ev.metadata.name),
        contentType: STRATEGIC_MERGE_PATCH,
        body: patch,
      }),
  };
}
