/**
 * The writer behind the speaker's per-service status objects (ServiceL2Status and
 * ServiceBGPStatus, MetalLB v0.16.1 `internal/k8s/controllers/{layer2,bgp}_status_controller.go`):
 * a pure plan per service (which objects to delete, one to create, a status to write) carried out
 * against the API one service at a time, failures retried with backoff.
 */
import type { KubeObject } from '../core/kube.ts';
import { LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, type StatusPlan } from '../core/status.ts';

export type { StatusPlan };
import type { Logger } from '../runtime/log.ts';

/** The API calls a StatusWriter makes. Errors reject; `delete` of a missing object resolves. */
export interface StatusApi<T extends KubeObject, B> {
  /** Creates the object; resolves with it as stored (with its generated name). */
  create(namespace: string, obj: T): Promise<T>;
  /** Writes `status` through the status subresource. */
  patchStatus(namespace: string, name: string, status: B): Promise<void>;
  delete(namespace: string, name: string): Promise<void>;
}

/** Options of StatusWriter. */
export interface StatusWriterOptions<T extends KubeObject, B> {
  /** the namespace the objects live in (the speaker's) */
  readonly namespace: string;
  readonly api: StatusApi<T, B>;
  readonly log: Logger;
  /** MetalLB's controller name, for log lines (`Layer2StatusReconciler`) */
  readonly controller: string;
  /** the kind, for log lines (`ServiceL2Status`) */
  readonly what: string;
  /** the plan for `service` (`namespace/name`) given its objects as known now */
  readonly plan: (service: string, serviceNamespace: string, serviceName: string, existing: readonly T[]) => StatusPlan<T, B>;
  /** the objects of this kind the cluster watch currently holds (any node, any service) */
  readonly known: () => readonly T[];
  /** called after a failed write (metrics) */
  readonly onError?: (err: unknown) => void;
  /** first retry delay in ms (default 500), doubled per failure up to maxBackoffMs (default 30000) */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
}

/**
 * Carries out a status plan per service, serially (one service at a time, in request order, a
 * service queued again while running is run once more afterwards). The watch lags behind our own
 * writes, so objects we created are remembered until the watch shows them, and objects we deleted
 * are hidden until it stops showing them.
 */
export class StatusWriter<T extends KubeObject, B> {
  private readonly o: StatusWriterOptions<T, B>;
  private readonly queue = new Set<string>();
  private running: Promise<void> | null = null;
  private readonly created = new Map<string, T>();
  private readonly deleted = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(opts: StatusWriterOptions<T, B>) {
    this.o = opts;
  }

  /** Queues `service` (`namespace/name`) for a status reconcile (run asynchronously). */
  enqueue(service: string): void {
    if (this.stopped) return;
    this.queue.add(service);
    // Started on a later tick, so that the caller's state changes are complete when it runs.
    if (!this.running) this.running = new Promise<void>((r) => setImmediate(r)).then(() => this.drain());
  }

  /** Resolves when the queue is empty (no retry pending counts as idle). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Stops retries and new work; the current write finishes. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.queue.clear();
    await this.idle();
  }

  /** The service's objects: the watch's, minus what we deleted, plus what we created that it lacks. */
  private existingFor(ns: string, name: string): T[] {
    const inState = this.o.known().filter((s) => s.metadata?.namespace === this.o.namespace);
    const seen = new Set(inState.map((s) => s.metadata?.name ?? ''));
    for (const n of [...this.deleted]) if (!seen.has(n)) this.deleted.delete(n);
    for (const [n] of [...this.created]) if (seen.has(n)) this.created.delete(n);
    const all = [...inState.filter((s) => !this.deleted.has(s.metadata?.name ?? '')), ...this.created.values()];
    return all.filter((s) => s.metadata?.labels?.[LABEL_SERVICE_NAME] === name && s.metadata?.labels?.[LABEL_SERVICE_NAMESPACE] === ns);
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.size > 0 && !this.stopped) {
        const key = this.queue.values().next().value as string;
        this.queue.delete(key);
        try {
          await this.reconcile(key);
          this.failures.delete(key);
        } catch (err) {
          this.o.onError?.(err);
          const n = (this.failures.get(key) ?? 0) + 1;
          this.failures.set(key, n);
          const delay = Math.min((this.o.backoffMs ?? 500) * 2 ** (n - 1), this.o.maxBackoffMs ?? 30_000);
          // An object deleted before the watch showed it (the garbage collector removing a replaced
          // speaker Pod's objects): nothing failed, the retry writes another: info, not error.
          const gone = (err as { statusCode?: unknown } | null)?.statusCode === 404;
          this.o.log[gone ? 'info' : 'error']({ controller: this.o.controller, service: key, error: err instanceof Error ? err.message : String(err), retryInMs: delay, msg: `failed to update ${this.o.what}` });
          if (!this.stopped) {
            const t = setTimeout(() => {
              this.timers.delete(t);
              this.enqueue(key);
            }, delay);
            t.unref();
            this.timers.add(t);
          }
        }
      }
    } finally {
      this.running = null;
    }
  }

  /** Runs one service's plan now. Rejects on the first failed API call. */
  async reconcile(key: string): Promise<void> {
    const slash = key.indexOf('/');
    const serviceNamespace = key.slice(0, slash);
    const serviceName = key.slice(slash + 1);
    const { namespace, api, controller, what } = this.o;
    const plan = this.o.plan(key, serviceNamespace, serviceName, this.existingFor(serviceNamespace, serviceName));
    for (const name of plan.deletes) {
      await api.delete(namespace, name);
      this.deleted.add(name);
      this.created.delete(name);
      this.o.log.debug({ controller, service: key, deleted: name, msg: `deleted ${what}` });
    }
    let target = plan.patch?.name ?? null;
    if (plan.create) {
      const made = await api.create(namespace, plan.create);
      target = made.metadata?.name ?? null;
      if (!target) throw new Error(`the API server returned a ${what} without a name`);
      this.created.set(target, made);
      this.o.log.debug({ controller, service: key, created: target, msg: `created ${what}` });
    }
    if (plan.patch && target) {
      try {
        await api.patchStatus(namespace, target, plan.patch.status);
      } catch (err) {
        // Gone meanwhile (deleted by someone else before the watch showed it): forget it, so the
        // retry creates a new one.
        if ((err as { statusCode?: unknown } | null)?.statusCode === 404) this.created.delete(target);
        throw err;
      }
      const mine = this.created.get(target);
      if (mine) this.created.set(target, { ...mine, status: { ...plan.patch.status } });
    }
  }
}
