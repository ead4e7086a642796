/**
 * The controller loop: MetalLB v0.16.1's controller (controller/main.go on top of
 * internal/k8s/controllers' ServiceReconciler, PoolReconciler and PoolStatusReconciler) as a thin
 * shell around the pure core. Every decision comes from src/core/controller (reconcileService,
 * setControllerPools, processingOrder) and src/core/config (parseConfig); this file only moves
 * objects between a ClusterState source, the core and a ControllerWriter.
 *
 * One work queue (client-go semantics, see queue.ts) carries three kinds of keys, handed out one
 * at a time like controller-runtime's single worker:
 * - `namespace/name` of a Service: reconcile it (skipped until the first full pass, as MetalLB's
 *   `initialLoadPerformed`); the write is pipelined — the key stays "in processing" until its
 *   write finished, so two writes of one Service never overlap;
 * - RELOAD (MetalLB's reprocessAll): every Service, in processingOrder — addresses already in a
 *   status first, so a restart re-registers them before allocating anything new — then waits for
 *   the writes; a pass with a retry (a write failed, or a Service asked for reprocessAll) comes
 *   back after the queue's backoff and the first clean pass sets initialLoadPerformed;
 * - CONFIG (PoolReconciler): parse the IPAddressPools and Communities of the MetalLB namespace and
 *   the Namespaces with the core; an invalid configuration keeps the previous one (config_stale);
 *   a changed one goes to setControllerPools and a RELOAD. Every load's outcome goes to
 *   `onConfigResult` (the ConfigurationState `controller`, condition poolReconcilerValid).
 *
 * What the loop reads of a Service is the newest it knows: the object of a write in flight, else
 * the object the last write returned (until the watch delivers that version), else the watch's.
 * A write refused with 409 is retried on a fresh GET, reconciled again.
 *
 * Like MetalLB, the update event of the loop's own write reconciles the Service again. A Service
 * whose reconciles never settle (each write restores an earlier state: see WriteHistory) would
 * make MetalLB rewrite it forever; the loop writes the repeated state, logs `serviceNeverConverges`
 * once, and ignores its own writes of that Service until someone changes it (or the
 * configuration). A full pass that asks for another one is retried with the queue's backoff, as
 * MetalLB's reprocessAll is, without a limit (a warning after 10 passes in a row). Pool status
 * writes that fail back off per pool (5 ms doubling to 1000 s).
 */
import { parseConfig, poolSummary } from '../core/config/index.ts';
import type { Config } from '../core/config/index.ts';
import {
  filteredByLoadBalancerClass,
  newController,
  processingOrder,
  reconcileService,
  serviceInputs,
  serviceKey,
  setControllerPools,
  statusIPs,
  statusKept,
  WriteHistory,
  type ControllerState,
  type ReconcileOutcome,
} from '../core/controller/index.ts';
import { emptyClusterState, type ClusterState, type IPAddressPool, type Service } from '../core/kube.ts';
import { silentLogger, type Logger } from '../runtime/log.ts';
import type { ControllerMetrics } from './metrics.ts';
import { realClock, WorkQueue, type Clock } from './queue.ts';
import { ConflictError, NotFoundError, type ControllerWriter } from './writer.ts';
import { PoolStatusWriter } from './pool-status.ts';
import { CONFIG_KEY, newLoopStats, RELOAD_KEY, type ControllerLoopOptions, type LoopStats, type StateChange, type StateSource } from './loop-types.ts';
import { caughtUp, storesSame } from './stored.ts';

export { CONFIG_KEY, RELOAD_KEY, type ControllerLoopOptions, type LoopStats, type StateChange, type StateSource } from './loop-types.ts';
export { storesSame } from './stored.ts';

interface Overlay {
  /** the object being written (its metadata.resourceVersion is the old one) */
  pending?: Service;
  /** the object the last write returned, until the watch delivers that version */
  written?: Service;
}

/**
 * Service writes in flight at first, and one more allowed per WRITES_PER_MORE_IN_FLIGHT writes
 * done, up to writeConcurrency: each write in flight holds a TLS connection of the client's pool
 * open (75-150 KB each, kept alive afterwards), so a small cluster, whose writes the first few
 * connections finish in milliseconds, does not open writeConcurrency of them; a large one reaches
 * writeConcurrency after 224 writes. (20 Services: 1.7 MiB less at peak with 4 instead of 16, a
 * further 0.2 with 2 and the pool sized by onWriteLimit; issue #14.)
 */
export const WRITES_IN_FLIGHT_AT_START = 2;
export const WRITES_PER_MORE_IN_FLIGHT = 16;

/** Service writes allowed in flight after `done` writes, with `--write-concurrency` `concurrency` (see above). */
export function writesAllowed(done: number, concurrency: number): number {
  return Math.min(concurrency, WRITES_IN_FLIGHT_AT_START + Math.floor(done / WRITES_PER_MORE_IN_FLIGHT));
}

/** The controller loop (see the module comment). */
export class ControllerLoop {
  readonly ctrl: ControllerState;
  readonly queue: WorkQueue;
  readonly stats: LoopStats = newLoopStats();
  private readonly source: StateSource;
  private readonly writer: ControllerWriter;
  private readonly ns: string;
  private readonly lbClass: string;
  private readonly log: Logger;
  private readonly metrics: ControllerMetrics | undefined;
  private readonly clock: Clock;
  private readonly writeConcurrency: number;
  private readonly conflictRetries: number;
  private readonly onConfigResult: ((error: string | null) => void) | undefined;
  private readonly onWriteLimit: ((limit: number) => void) | undefined;

  private readonly services = new Map<string, Service>();
  private readonly overlay = new Map<string, Overlay>();
  private readonly writesInFlight = new Set<Promise<unknown>>();
  private readonly writeSlotWaiters: Array<() => void> = [];
  private writesDone = 0;
  private configSignature: string | null = null;
  private configProcessed = false;
  private initialLoadPerformed = false;
  /** The IPAddressPool status writes and gauges (MetalLB's PoolStatusReconciler). */
  private readonly poolStatus: PoolStatusWriter;
  /** the writes of each Service since it last changed, to find Services that never settle */
  private readonly history = new WriteHistory();
  /** Services that rewrite themselves forever: their inputs when found; their own writes' events are ignored */
  private readonly cycling = new Map<string, string>();
  /** consecutive full passes that asked for another one */
  private reloadRetries = 0;
  /** Services that asked for another full pass in the last one */
  private reprocessAsked: string[] = [];
  private worker: Promise<void> | null = null;
  private stopped = false;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(source: StateSource, writer: ControllerWriter, opts: ControllerLoopOptions) {
    this.source = source;
    this.writer = writer;
    this.ns = opts.metallbNamespace;
    this.lbClass = opts.loadBalancerClass ?? '';
    this.log = opts.logger ?? silentLogger;
    this.metrics = opts.metrics;
    this.clock = opts.clock ?? realClock;
    this.writeConcurrency = opts.writeConcurrency ?? 16;
    this.conflictRetries = opts.conflictRetries ?? 5;
    this.onConfigResult = opts.onConfigResult;
    this.onWriteLimit = opts.onWriteLimit;
    const m = this.metrics;
    this.queue = new WorkQueue({
      clock: this.clock,
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      hooks: m
        ? {
            onAdd: () => m.queueAdds.inc({ name: 'service' }),
            onRetry: () => m.queueRetries.inc({ name: 'service' }),
            onDepth: (d) => m.queueDepth.set({ name: 'service' }, d),
          }
        : {},
    });
    this.poolStatus = new PoolStatusWriter({
      ctrl: () => this.ctrl,
      writer,
      namespace: this.ns,
      clock: this.clock,
      log: this.log,
      metrics: this.metrics,
      delayMs: opts.poolStatusDelayMs ?? 100,
      ...(opts.poolStatusBackoff ? { backoff: opts.poolStatusBackoff } : {}),
      conflictRetries: this.conflictRetries,
      hasConfig: () => this.configSignature !== null,
      stopped: () => this.stopped,
      counted: (ok) => (ok ? this.stats.poolStatusWrites++ : this.stats.poolStatusErrors++),
      settled: () => this.checkIdle(),
    });
    this.ctrl = newController((pool) => this.poolStatus.changed(pool));
  }

  /** Ready: started on a synced source and the first configuration was processed (valid or not). */
  get ready(): boolean {
    return this.worker !== null && this.configProcessed;
  }

  /** Whether the first full pass over the Services completed (MetalLB's initialLoadPerformed). */
  get initialLoadDone(): boolean {
    return this.initialLoadPerformed;
  }

  /**
   * Starts on a source that has synced: indexes its Services and pools, subscribes to changes,
   * queues CONFIG then RELOAD (MetalLB's start-up reload) and runs the worker until stop().
   */
  start(): void {
    if (this.worker) throw new Error('controller loop already started');
    const st = this.source.state();
    for (const svc of st.services) this.services.set(serviceKey(svc), svc);
    for (const p of st.ipAddressPools) if (p.metadata?.namespace === this.ns) this.poolStatus.observe(p, false);
    this.source.onChange((c) => this.onChange(c));
    this.queue.add(CONFIG_KEY);
    this.queue.add(RELOAD_KEY);
    this.worker = this.run();
  }

  /**
   * Stops handing out work, waits for the writes in flight (at most `timeoutMs`, default 5000)
   * and the pending pool status flush. Idempotent.
   */
  async stop(timeoutMs = 5000): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.queue.shutDown();
    this.poolStatus.stop();
    for (const w of this.writeSlotWaiters.splice(0)) w();
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((r) => {
      timer = setTimeout(r, timeoutMs);
      timer.unref?.();
    });
    await Promise.race([Promise.allSettled([this.worker, ...this.writesInFlight, this.poolStatus.inFlight]), limit]);
    clearTimeout(timer);
  }

  /** Resolves when the queue is empty, nothing is in flight and no retry is scheduled (tests, bench). */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private isIdle(): boolean {
    return this.queue.idle && this.writesInFlight.size === 0 && this.poolStatus.idle;
  }

  private checkIdle(): void {
    if (this.idleWaiters.length > 0 && this.isIdle()) for (const w of this.idleWaiters.splice(0)) w();
  }

  // ------------------------------------------------------------------------------------ watch

  private onChange(c: StateChange): void {
    if (this.stopped) return;
    switch (c.list) {
      case 'services': {
        const svc = c.object as Service;
        const key = serviceKey(svc);
        const ov = this.overlay.get(key);
        if (c.type === 'delete') {
          this.services.delete(key);
          if (ov) delete ov.written;
        } else {
          this.services.set(key, svc);
          if (ov?.written && caughtUp(svc, ov.written)) delete ov.written;
        }
        if (ov && !ov.pending && !ov.written) this.overlay.delete(key);
        const cycleInputs = this.cycling.get(key);
        if (cycleInputs !== undefined) {
          // A Service that never settles: its own writes do not trigger another reconcile; a change
          // of what the controller does not write (or a delete) ends that.
          if (c.type !== 'delete' && serviceInputs(svc) === cycleInputs) break;
          this.cycling.delete(key);
          this.history.reset(key);
        }
        if (c.type === 'delete') this.history.reset(key);
        this.queue.add(key);
        break;
      }
      case 'ipAddressPools': {
        if (c.object.metadata?.namespace !== this.ns) return;
        const name = c.object.metadata?.name ?? '';
        const pool = c.object as IPAddressPool;
        this.poolStatus.observe(pool, c.type === 'delete');
        // PoolReconciler ignores status-only updates (generation unchanged); the status reconciler looks at every change.
        const old = c.old as IPAddressPool | undefined;
        const specChanged =
          c.type !== 'update'
          || !old
          || old.metadata?.generation !== pool.metadata?.generation
          || old.metadata?.generation === undefined
          || JSON.stringify(old.metadata?.labels ?? {}) !== JSON.stringify(pool.metadata?.labels ?? {});
        if (specChanged) this.queue.add(CONFIG_KEY);
        if (c.type !== 'delete') this.poolStatus.changed(name);
        break;
      }
      case 'communities':
        if (c.object.metadata?.namespace === this.ns) this.queue.add(CONFIG_KEY);
        break;
      case 'namespaces':
        if (c.type !== 'update' || JSON.stringify(c.old?.metadata?.labels ?? {}) !== JSON.stringify(c.object.metadata?.labels ?? {})) {
          this.queue.add(CONFIG_KEY);
        }
        break;
      default:
        break;
    }
  }

  /** The newest Service object the loop knows for `key` (see the module comment), or undefined. */
  private view(key: string): Service | undefined {
    const ov = this.overlay.get(key);
    return ov?.pending ?? ov?.written ?? this.services.get(key);
  }

  // ----------------------------------------------------------------------------------- worker

  private async run(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === null) return;
      try {
        if (key === CONFIG_KEY) {
          this.processConfig();
          this.queue.done(key);
        } else if (key === RELOAD_KEY) {
          const retry = await this.reprocessAll();
          if (retry) {
            this.log.info({ controller: 'ServiceReconciler - reprocessAll', event: 'force service reload' });
            this.reloadRetries++;
            // MetalLB retries a full pass as long as one asks for it, with no limit (the backoff
            // grows to 1000 s); say so when it goes on.
            if (this.reloadRetries >= 10 && (this.reloadRetries & (this.reloadRetries - 1)) === 0) {
              this.log.warn({
                controller: 'ServiceReconciler - reprocessAll',
                passes: this.reloadRetries,
                services: this.reprocessAsked.slice(0, 20),
                msg: 'full passes keep asking for another one (a Service asks to reprocess all, or a write fails); retrying with backoff, as MetalLB does',
              });
            }
            this.queue.addRateLimited(key);
            this.metrics?.reconcileTotal.inc({ controller: 'service', result: 'requeue' });
          } else {
            this.reloadRetries = 0;
            this.queue.forget(key);
            this.initialLoadPerformed = true;
            this.metrics?.reconcileTotal.inc({ controller: 'service', result: 'success' });
          }
          this.queue.done(key);
        } else {
          await this.processService(key);
        }
      } catch (err) {
        // A bug (the core threw): log it with its stack and go on with the next key, as controller-runtime recovers panics.
        this.log.error({ op: 'reconcile', key, error: err, stack: (err as Error)?.stack, msg: 'internal error while reconciling' });
        this.queue.done(key);
      }
      this.checkIdle();
    }
  }

  // ----------------------------------------------------------------------------------- config

  /** The objects MetalLB's PoolReconciler reads: pools and communities of the MetalLB namespace, every Namespace. */
  private configState(): ClusterState {
    const st = this.source.state();
    return {
      ...emptyClusterState(),
      ipAddressPools: st.ipAddressPools.filter((p) => p.metadata?.namespace === this.ns),
      communities: st.communities.filter((c) => c.metadata?.namespace === this.ns),
      namespaces: st.namespaces,
    };
  }

  private processConfig(): void {
    this.metrics?.updates.inc();
    const log = this.log.with({ caller: 'pool_controller.go', controller: 'PoolReconciler' });
    this.configProcessed = true;
    let config: Config;
    try {
      config = parseConfig(this.configState());
    } catch (err) {
      this.stats.configErrors++;
      this.metrics?.configStale.set(1);
      this.metrics?.reconcileTotal.inc({ controller: 'ipaddresspool', result: 'success' });
      log.error({ error: (err as Error).message, msg: 'failed to parse the configuration' });
      this.onConfigResult?.((err as Error).message);
      return;
    }
    this.onConfigResult?.(null);
    const signature = JSON.stringify([...config.pools.values()].map((p) => [p.name, poolSummary(p), p.labels]));
    this.metrics?.reconcileTotal.inc({ controller: 'ipaddresspool', result: 'success' });
    if (signature === this.configSignature) {
      log.debug({ event: 'configuration did not change, ignoring' });
      this.metrics?.configStale.set(0);
      return;
    }
    const removed = this.metrics?.poolNames.filter((p) => !config.pools.has(p)) ?? [];
    const result = setControllerPools(this.ctrl, config.pools.values());
    // Another configuration may let a never-settling Service settle: watch them all again.
    this.history.reset();
    this.cycling.clear();
    for (const p of removed) this.metrics?.deletePool(p);
    this.configSignature = signature;
    this.stats.configLoads++;
    this.metrics?.configLoaded.set(1);
    this.metrics?.configStale.set(0);
    log.info({ event: 'config reloaded', pools: [...config.pools.keys()] });
    if (result === 'reprocessAll') {
      log.info({ event: 'force service reload' });
      this.queue.add(RELOAD_KEY);
    }
  }

  // --------------------------------------------------------------------------------- services

  /** One Service key (ServiceReconciler.reconcileService). */
  private async processService(key: string): Promise<void> {
    this.metrics?.updates.inc();
    if (!this.initialLoadPerformed) {
      // MetalLB: "filtered service, still waiting for the initial load to be performed"; the pending RELOAD covers it.
      this.queue.done(key);
      return;
    }
    const svc = this.view(key) ?? null;
    if (svc && filteredByLoadBalancerClass(svc, this.lbClass)) {
      this.queue.done(key);
      return;
    }
    const out = this.reconcile(key, svc);
    const finish = (ok: boolean): void => {
      if (!ok) {
        this.metrics?.updateErrors.inc();
        this.metrics?.reconcileErrors.inc({ controller: 'service' });
        this.metrics?.reconcileTotal.inc({ controller: 'service', result: 'error' });
        this.queue.addRateLimited(key);
      } else {
        this.queue.forget(key);
        this.metrics?.reconcileTotal.inc({ controller: 'service', result: 'success' });
      }
      this.queue.done(key);
      this.checkIdle();
    };
    if (out.write) {
      await this.writeSlot();
      void out.write.then(finish);
    } else {
      finish(true);
    }
  }

  /** A full pass (ServiceReconciler.reprocessAll); resolves to whether it must be retried. */
  private async reprocessAll(): Promise<boolean> {
    this.stats.reloads++;
    const startedMs = Date.now();
    const log = this.log.with({ caller: 'service_controller_reload.go', controller: 'ServiceReconciler - reprocessAll' });
    let retry = false;
    // Allocations of Services that are gone (deleted while no pass could see it): release them first.
    for (const key of this.ctrl.allocator.allocatedServices()) {
      if (!this.services.has(key) && this.reconcile(key, null, true).result === 'reprocessAll') retry = true;
    }
    const all: Service[] = [];
    for (const key of this.services.keys()) all.push(this.view(key)!);
    const writes: Array<Promise<boolean>> = [];
    this.reprocessAsked = [];
    for (const svc of processingOrder(all, (s) => statusKept(this.ctrl, serviceKey(s), s))) {
      if (this.stopped) return false;
      if (filteredByLoadBalancerClass(svc, this.lbClass)) continue;
      const key = serviceKey(svc);
      const out = this.reconcile(key, svc, true);
      if (out.result === 'reprocessAll') {
        retry = true;
        this.reprocessAsked.push(key);
      }
      if (out.write) {
        writes.push(out.write);
        await this.writeSlot();
      }
    }
    const decidedMs = Date.now() - startedMs;
    const results = await Promise.all(writes);
    if (results.some((ok) => !ok)) {
      retry = true;
      log.error({ event: 'failed to handle service, retry' });
    }
    log.info({ event: 'reprocessAll done', services: all.length, writes: writes.length, decidedMs, durationMs: Date.now() - startedMs, retry });
    return retry;
  }

  /**
   * Runs the core on one Service and applies the outcome: events, logs, and the write (started
   * here, resolved to false when it failed and the key must be retried).
   */
  private reconcile(key: string, svc: Service | null, inPass = false): { result: ReconcileOutcome['result']; write?: Promise<boolean> } {
    this.stats.reconciles++;
    const log = this.log.with({ caller: 'main.go', service: key });
    const hadAllocation = this.ctrl.allocator.poolOf(key) !== null;
    const out = reconcileService(this.ctrl, key, svc);
    this.report(log, key, svc, out, hadAllocation, inPass);
    if (!svc || !out.updated || !out.service) return { result: out.result };
    if (storesSame(svc, out.service)) {
      log.debug({ event: 'noChange', msg: 'service converged, no change (the API server already stores this)' });
      return { result: out.result };
    }
    this.noteWrite(key, out.service, log);
    const write = this.startWrite(key, svc, out.service, log);
    return { result: out.result, write };
  }

  /** Events and log lines of one outcome (MetalLB's Infof/Errorf and level.*.Log calls). */
  private report(log: Logger, key: string, svc: Service | null, out: ReconcileOutcome, hadAllocation: boolean, inPass = false): void {
    if (svc === null) {
      if (hadAllocation) log.info({ event: 'serviceDeleted', msg: 'service deleted' });
    } else {
      for (const e of out.events) {
        this.emit(svc, e);
        if (e.reason === 'ClearAssignment') log.info({ event: 'clearAssignment', error: e.message, msg: 'current IP not allowed by config, clearing' });
        else if (e.reason === 'AdditionalAssignFailed') log.error({ op: 'allocateIPs', error: e.message, msg: 'IP allocation failed' });
        else if (e.type === 'Warning' && e.reason !== 'AllocationFailed') log.warn({ event: e.reason, msg: e.message });
      }
      if (out.allocation) {
        log.info({ event: 'ipAllocated', ip: [...out.allocation.ips], pool: out.allocation.pool, msg: 'IP address assigned by controller' });
      }
      if (out.failure) {
        if (out.events.some((e) => e.reason === 'AllocationFailed')) log.error({ op: 'allocateIPs', error: out.failure.message, msg: 'IP allocation failed' });
        log.error({ controller: 'ServiceReconciler', name: key, error: out.failure.message, event: 'failed to handle service' });
        this.metrics?.updateErrors.inc();
      }
    }
    // A single Service's reconcile asks for a full pass (MetalLB's forceReload); within a full
    // pass the answer only makes that pass retry (MetalLB's reprocessAll sets `retry`).
    if (out.result === 'reprocessAll' && !inPass) {
      log.info({ controller: 'ServiceReconciler', event: 'force service reload' });
      this.queue.add(RELOAD_KEY);
    }
  }

  /** Remembers a write; when it restores an earlier state of a Service that did not change, the Service never settles. */
  private noteWrite(key: string, desired: Service, log: Logger): void {
    const cycle = this.history.record(key, desired);
    if (!cycle || this.cycling.has(key)) return;
    this.cycling.set(key, serviceInputs(desired));
    this.stats.cycles++;
    log.error({
      event: 'serviceNeverConverges',
      states: cycle.states,
      msg: "each reconcile of this Service writes the next of these states, and each write triggers another reconcile: MetalLB's controller rewrites it forever; metallb-ts writes this state and ignores its own writes of the Service until it changes",
    });
  }

  private emit(svc: Service, e: { type: 'Normal' | 'Warning'; reason: string; message: string }): void {
    this.stats.events++;
    this.writer.recordEvent(svc, e).catch((err: unknown) => {
      this.log.warn({ op: 'recordEvent', reason: e.reason, service: serviceKey(svc), error: err, msg: 'failed to record event' });
    });
  }

  /** Service writes allowed in flight now (WRITES_IN_FLIGHT_AT_START). */
  private writeLimit(): number {
    return writesAllowed(this.writesDone, this.writeConcurrency);
  }

  /** Waits until fewer Service writes than writeLimit() are in flight. */
  private writeSlot(): Promise<void> {
    if (this.writesInFlight.size < this.writeLimit() || this.stopped) return Promise.resolve();
    return new Promise((r) => this.writeSlotWaiters.push(r));
  }

  /**
   * Writes `desired` over `base` (MetalLB's UpdateStatus). On 409: GET, reconcile the fresh object
   * again, write that (up to conflictRetries times). Resolves to false on a failure to retry later.
   */
  private startWrite(key: string, base: Service, desired: Service, log: Logger): Promise<boolean> {
    const ov = this.overlay.get(key) ?? {};
    ov.pending = desired;
    this.overlay.set(key, ov);
    const task = (async (): Promise<boolean> => {
      let cur = base;
      let want = desired;
      for (let attempt = 0; ; attempt++) {
        try {
          this.stats.serviceWrites++;
          const stored = await this.writer.writeService(cur, want);
          this.settle(key, want, stored);
          log.info({ event: 'serviceUpdated', msg: 'updated service object', ip: statusIPs(stored) });
          return true;
        } catch (err) {
          if (err instanceof NotFoundError) {
            this.settle(key, want, null);
            return true; // deleted meanwhile: the watch's DELETED event releases it
          }
          if (!(err instanceof ConflictError) || attempt + 1 >= this.conflictRetries) {
            this.stats.writeErrors++;
            this.settle(key, want, null);
            log.error({ op: 'updateServiceStatus', error: err, msg: 'failed to update service' });
            return false;
          }
          this.stats.conflicts++;
          let fresh: Service | null;
          try {
            fresh = await this.writer.readService(base.metadata?.namespace ?? 'default', base.metadata?.name ?? '');
          } catch (readErr) {
            this.stats.writeErrors++;
            this.settle(key, want, null);
            log.error({ op: 'getService', error: readErr, msg: 'failed to re-read service after a conflict' });
            return false;
          }
          if (this.stopped) {
            this.settle(key, want, null);
            return false;
          }
          if (fresh === null || filteredByLoadBalancerClass(fresh, this.lbClass)) {
            this.settle(key, want, null);
            return true;
          }
          const again = reconcileService(this.ctrl, key, fresh);
          this.report(log, key, fresh, again, true);
          if (!again.updated || !again.service) {
            this.settle(key, want, fresh);
            return again.result !== 'error';
          }
          cur = fresh;
          want = again.service;
          this.noteWrite(key, want, log);
          this.overlay.get(key)!.pending = want;
        }
      }
    })();
    this.writesInFlight.add(task);
    void task.finally(() => {
      this.writesInFlight.delete(task);
      const before = this.writeLimit();
      this.writesDone++;
      const now = this.writeLimit();
      if (now !== before) this.onWriteLimit?.(now);
      const w = this.writeSlotWaiters.shift();
      if (w) w();
      this.checkIdle();
    });
    return task;
  }

  /** Ends a write of `key`: the pending object goes; the stored one stays until the watch has it. */
  private settle(key: string, want: Service, stored: Service | null): void {
    const ov = this.overlay.get(key);
    if (!ov) return;
    if (ov.pending === want) delete ov.pending;
    const seen = this.services.get(key);
    if (stored && !(seen && caughtUp(seen, stored))) ov.written = stored;
    if (!ov.pending && !ov.written) this.overlay.delete(key);
  }
}
