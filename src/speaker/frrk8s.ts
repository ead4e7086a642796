/**
 * The writer of the speaker's FRRConfiguration (MetalLB v0.16.1
 * `internal/k8s/controllers/frrk8s_config_controller.go` FRRK8sReconciler): it keeps
 * `metallb-<node>` in the frr-k8s namespace equal to the desired object the speaker computes
 * (src/core/frrk8s `frrConfiguration`).
 *
 *  - `update(desired)` stores the desired object and starts the debounce timer (3 s, as MetalLB's
 *    debouncer: the first change starts it, later changes ride along);
 *  - `changed()` (a watch event on `metallb-<node>`: someone edited or deleted it) reconciles at
 *    once, so edits by others are reverted;
 *  - a reconcile creates the object or updates its `spec` only (labels, annotations and other
 *    metadata of an existing object are left alone), and writes nothing when the stored spec
 *    already equals the desired one once frr-k8s's CRD defaults are applied (MetalLB sends an
 *    update every time: its comparison never matches a defaulted object);
 *  - a desired `null` (the speaker never produced a configuration: no BGP session and no BFD
 *    profile) deletes a leftover `metallb-<node>`. Unlike MetalLB, whose reconciler can run before
 *    the first configuration is processed and then deletes the object of a restarting speaker,
 *    nothing is deleted before the speaker's first full sync (`update` was never called).
 * Failed writes are retried with backoff; a conflict (someone wrote in between) at once.
 */
import { specsEqual } from '../core/frrk8s/config.ts';
import type { FRRConfiguration } from '../core/frrk8s/types.ts';
import type { Logger } from '../runtime/log.ts';

/** The API calls the writer makes. Errors reject (KubeClient errors carry `statusCode`). */
export interface FRRConfigurationApi {
  /** The stored object, or null when there is none. */
  get(namespace: string, name: string): Promise<FRRConfiguration | null>;
  create(obj: FRRConfiguration): Promise<FRRConfiguration>;
  /** PUT of the whole object (with the stored `metadata.resourceVersion`). */
  update(obj: FRRConfiguration): Promise<FRRConfiguration>;
  /** Resolves also when the object does not exist. */
  delete(namespace: string, name: string): Promise<void>;
}

/** Options of FRRConfigurationWriter. */
export interface FRRConfigurationWriterOptions {
  /** `metallb-<node>` */
  readonly name: string;
  /** the frr-k8s namespace */
  readonly namespace: string;
  readonly api: FRRConfigurationApi;
  readonly log: Logger;
  /** MetalLB's debounce of configuration changes, ms (default 3000) */
  readonly debounceMs?: number;
  /** first retry delay after a failed write, ms (default 1000), doubled up to 30 s */
  readonly backoffMs?: number;
  /** called after every reconcile: `written` says whether the API was written to */
  readonly onReconcile?: (result: { readonly written: 'created' | 'updated' | 'deleted' | null; readonly error?: unknown }) => void;
}

/** See the module comment. */
export class FRRConfigurationWriter {
  private readonly o: FRRConfigurationWriterOptions;
  /** undefined: the speaker has not computed a desired state yet */
  private desired: FRRConfiguration | null | undefined = undefined;
  private debounce: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private failures = 0;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(opts: FRRConfigurationWriterOptions) {
    this.o = opts;
  }

  /** The object the writer converges to (undefined before the first `update`). */
  get current(): FRRConfiguration | null | undefined {
    return this.desired;
  }

  /** Stores the desired object (null: none) and schedules a debounced reconcile. */
  update(desired: FRRConfiguration | null): void {
    if (this.stopped) return;
    this.desired = desired;
    if (this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.kick();
    }, this.o.debounceMs ?? 3000);
    this.debounce.unref?.();
  }

  /** The stored object changed (watch event): reconcile now, unless nothing is desired yet. */
  changed(): void {
    if (this.stopped || this.desired === undefined) return;
    this.kick();
  }

  /** Resolves when no reconcile is running or queued (a pending debounce or retry does not count). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Whether a debounced or retried reconcile is still to come. */
  get pending(): boolean {
    return this.debounce !== undefined || this.retry !== undefined || this.running !== null;
  }

  /** Runs any pending debounced reconcile now and waits for it (tests, shutdown). */
  async flush(): Promise<void> {
    if (this.debounce) {
      clearTimeout(this.debounce);
      this.debounce = undefined;
      this.kick();
    }
    await this.idle();
  }

  /** Stops timers; a running reconcile finishes. The object is left in place (MetalLB too). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.debounce);
    clearTimeout(this.retry);
    this.debounce = undefined;
    this.retry = undefined;
    await this.idle();
  }

  private kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.reconcileOnce();
        } while (this.again && !this.stopped);
      } finally {
        this.running = null;
      }
    })();
  }

  private async reconcileOnce(): Promise<void> {
    const desired = this.desired;
    if (desired === undefined || this.stopped) return;
    const { api, name, namespace, log } = this.o;
    let written: 'created' | 'updated' | 'deleted' | null = null;
    try {
      if (desired === null) {
        const existing = await api.get(namespace, name);
        if (existing) {
          await api.delete(namespace, name);
          written = 'deleted';
          log.info({ controller: 'FRRK8sReconciler', name, namespace, msg: 'deleted the FRRConfiguration: this speaker has no BGP session and no BFD profile' });
        }
      } else {
        const existing = await api.get(namespace, name);
        if (!existing) {
          await api.create(desired);
          written = 'created';
        } else if (!specsEqual(existing.spec, desired.spec)) {
          await api.update({ ...existing, spec: desired.spec });
          written = 'updated';
        }
        if (written) log.info({ controller: 'FRRK8sReconciler', name, namespace, event: written, msg: `${written} the FRRConfiguration` });
        else log.debug({ controller: 'FRRK8sReconciler', event: 'not reconciling because of no change' });
      }
      this.failures = 0;
      this.o.onReconcile?.({ written });
    } catch (error) {
      this.o.onReconcile?.({ written: null, error });
      const conflict = (error as { statusCode?: unknown } | null)?.statusCode === 409;
      this.failures++;
      const delay = conflict ? 0 : Math.min((this.o.backoffMs ?? 1000) * 2 ** (this.failures - 1), 30_000);
      const notServed =
        (error as { statusCode?: unknown } | null)?.statusCode === 404 && desired !== null
          ? ' (the API server does not serve frrconfigurations.frrk8s.metallb.io there: is frr-k8s installed, in that namespace?)'
          : '';
      log.error({
        controller: 'FRRK8sReconciler',
        name,
        namespace,
        error: `${error instanceof Error ? error.message : String(error)}${notServed}`,
        retryInMs: delay,
        msg: 'failed to write the FRRConfiguration',
      });
      if (!this.stopped && !this.retry) {
        this.retry = setTimeout(() => {
          this.retry = undefined;
          this.kick();
        }, delay);
        this.retry.unref?.();
      }
    }
  }
}
