/**
 * The controller's IPAddressPool status writes and pool gauges: MetalLB v0.16.1's
 * PoolStatusReconciler (internal/k8s/controllers/pool_status_controller.go) fed by the allocator's
 * pool-change notifications (PoolStatusChan) and the pool watch. Changes are gathered for
 * `delayMs`, then every changed pool's gauges are refreshed and its status written when the counts
 * differ from the stored ones. A failed write (other than a conflict, retried on a fresh read)
 * backs off per pool — 5 ms doubling to 1000 s, as controller-runtime requeues MetalLB's
 * reconciler — instead of being retried on every change. The ControllerLoop owns one.
 */
import type { ControllerState } from '../core/controller/index.ts';
import type { IPAddressPool, KubeObject } from '../core/kube.ts';
import type { Logger } from '../runtime/log.ts';
import type { ControllerMetrics } from './metrics.ts';
import { ExponentialBackoff, type Clock } from './queue.ts';
import { ConflictError, NotFoundError, type ControllerWriter, type PoolStatusCounts } from './writer.ts';

/** The object's resourceVersion as a number, or null when it is absent or opaque. */
export function rvNumber(obj: KubeObject | undefined): bigint | null {
  const rv = obj?.metadata?.resourceVersion;
  if (!rv || !/^\d+$/.test(rv)) return null;
  return BigInt(rv);
}

/** The pool status the counters give, compared with a stored one (numbers lose nothing that matters for equality). */
function sameCounts(status: Record<string, unknown> | undefined, c: PoolStatusCounts): boolean {
  if (!status) return false;
  return (['assignedIPv4', 'assignedIPv6', 'availableIPv4', 'availableIPv6'] as const).every((k) => typeof status[k] === 'number' && status[k] === Number(c[k]));
}

/** What PoolStatusWriter reads from its ControllerLoop. */
export interface PoolStatusPorts {
  readonly ctrl: () => ControllerState;
  readonly writer: ControllerWriter;
  /** MetalLB's namespace (where the pools are read again after a conflict). */
  readonly namespace: string;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: ControllerMetrics | undefined;
  /** Gathering time before a flush (ms). */
  readonly delayMs: number;
  readonly backoff?: ExponentialBackoff;
  /** Attempts of one write against 409 Conflicts. */
  readonly conflictRetries: number;
  /** Whether a configuration was loaded (before that, nothing meaningful to write). */
  readonly hasConfig: () => boolean;
  readonly stopped: () => boolean;
  /** Counts successful and failed writes (the loop's stats). */
  readonly counted: (ok: boolean) => void;
  /** Called when a flush or retry ended (the loop checks whether it is idle). */
  readonly settled: () => void;
}

/** See module doc. */
export class PoolStatusWriter {
  private readonly p: PoolStatusPorts;
  private readonly backoff: ExponentialBackoff;
  /** The pools of MetalLB's namespace, as the watch delivers them. */
  private readonly pools = new Map<string, IPAddressPool>();
  private readonly dirty = new Set<string>();
  /** per pool: the counts last written and the resourceVersion the write returned */
  private readonly written = new Map<string, { sig: string; rv: bigint | null }>();
  private timer: unknown = null;
  private flushing: Promise<void> | null = null;
  /** pools whose status write failed, with their retry timer (a flush skips them until it fires) */
  private readonly retry = new Map<string, unknown>();

  constructor(ports: PoolStatusPorts) {
    this.p = ports;
    this.backoff = ports.backoff ?? new ExponentialBackoff();
  }

  /** Nothing gathered, in flight or waiting for a retry. */
  get idle(): boolean {
    return this.timer === null && this.flushing === null && this.retry.size === 0;
  }

  /** The flush in flight, if any (stop waits for it). */
  get inFlight(): Promise<void> | null {
    return this.flushing;
  }

  /** Stops the timers (the loop's stop). */
  stop(): void {
    if (this.timer !== null) this.p.clock.clearTimeout(this.timer);
    for (const t of this.retry.values()) this.p.clock.clearTimeout(t);
    this.retry.clear();
  }

  /**
   * A pool of the watch (start-up list, add, update; `deleted` on delete). A version newer than the
   * one the last write returned (or a deleted pool) forgets that write, so the next flush compares
   * with what is stored.
   */
  observe(pool: IPAddressPool, deleted: boolean): void {
    const name = pool.metadata?.name ?? '';
    if (deleted) this.pools.delete(name);
    else this.pools.set(name, pool);
    const written = this.written.get(name);
    const rv = rvNumber(pool);
    if (written && (deleted || rv === null || written.rv === null || rv > written.rv)) this.written.delete(name);
  }

  /** The allocator's pool-change notification (MetalLB's PoolStatusChan) and pool watch events. */
  changed(pool: string): void {
    this.dirty.add(pool);
    if (this.timer !== null || this.p.stopped()) return;
    this.timer = this.p.clock.setTimeout(() => {
      this.timer = null;
      this.flush();
    }, this.p.delayMs);
  }

  /** Refreshes the gauges and writes the status of every changed pool (PoolStatusReconciler). */
  private flush(): void {
    if (this.flushing) {
      // a flush is running: come back when it ends
      void this.flushing.then(() => {
        if (this.dirty.size > 0) this.changed([...this.dirty][0]!);
      });
      return;
    }
    const names = [...this.dirty];
    this.dirty.clear();
    const alloc = this.p.ctrl().allocator;
    const metrics = this.p.metrics;
    const perPool = new Map<string, number>();
    if (metrics) {
      for (const key of alloc.allocatedServices()) {
        const p = alloc.poolOf(key);
        if (p !== null) perPool.set(p, (perPool.get(p) ?? 0) + 1);
      }
    }
    for (const name of names) {
      const cap = alloc.capacity(name);
      if (cap) {
        const c = alloc.counters(name);
        metrics?.setPool(name, {
          total: cap.total,
          ipv4: cap.ipv4,
          ipv6: cap.ipv6,
          inUseIPv4: c.assignedIPv4,
          inUseIPv6: c.assignedIPv6,
          services: perPool.get(name) ?? 0,
        });
      } else {
        metrics?.deletePool(name);
      }
    }
    if (!this.p.hasConfig()) {
      this.p.settled();
      return; // no configuration yet: nothing meaningful to write
    }
    this.flushing = (async () => {
      for (const name of names) {
        if (this.p.stopped()) break;
        // Backing off after a failed write: the retry writes the counts of then.
        if (this.retry.has(name)) continue;
        await this.write(name);
      }
    })().finally(() => {
      this.flushing = null;
      this.p.settled();
    });
  }

  /** Writes one pool's status, unless the stored or last written counts are these already. */
  private async write(name: string): Promise<void> {
    let pool = this.pools.get(name);
    if (!pool) return;
    const counts = this.p.ctrl().allocator.counters(name);
    const sig = `${pool.metadata?.uid}|${counts.assignedIPv4}|${counts.assignedIPv6}|${counts.availableIPv4}|${counts.availableIPv6}`;
    if (sameCounts(pool.status as Record<string, unknown> | undefined, counts) || this.written.get(name)?.sig === sig) {
      this.backoff.forget(name);
      return;
    }
    for (let attempt = 0; attempt < this.p.conflictRetries; attempt++) {
      try {
        const stored = await this.p.writer.writePoolStatus(pool, counts);
        this.p.counted(true);
        this.written.set(name, { sig, rv: rvNumber(stored) });
        this.backoff.forget(name);
        return;
      } catch (err) {
        if (err instanceof NotFoundError) return;
        if (!(err instanceof ConflictError)) {
          this.p.counted(false);
          const delayMs = this.backoff.when(name);
          this.p.log.error({ controller: 'PoolStatusReconciler', pool: name, error: err, retryInMs: delayMs, msg: 'failed to update the pool status' });
          this.retryLater(name, delayMs);
          return;
        }
        const fresh = await this.p.writer.readPool(this.p.namespace, name).catch(() => null);
        if (!fresh) return;
        pool = fresh;
        if (sameCounts(pool.status as Record<string, unknown> | undefined, counts)) return;
      }
    }
  }

  private retryLater(name: string, delayMs: number): void {
    if (this.p.stopped() || this.retry.has(name)) return;
    this.retry.set(
      name,
      this.p.clock.setTimeout(() => {
        this.retry.delete(name);
        this.changed(name);
        this.p.settled();
      }, delayMs),
    );
  }
}
