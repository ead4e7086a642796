/**
 * Writes a component's ConfigurationState (src/core/configuration-state.ts) through KubeClient:
 * creates the object when missing, then merge-patches its status subresource — only when the
 * condition's status, reason or message changed (MetalLB re-applies it with a fresh timestamp on
 * every reconcile). Best effort: a failure is logged and retried with backoff; the daemon goes on.
 */
import { configurationStateMeta, configurationStateStatus, newConfigurationState, type ConfigurationConditionType } from '../core/configuration-state.ts';
import type { KubeObject } from '../core/kube.ts';
import type { OwnerRef } from '../core/status.ts';
import type { Logger } from '../runtime/log.ts';
import { httpStatusOf, MERGE_PATCH, type KubeClient } from './client.ts';
import { rfc3339Utc } from '../runtime/utc-time.ts';

/** Options of ConfigurationStateWriter. */
export interface ConfigurationStateWriterOptions {
  readonly api: KubeClient;
  readonly namespace: string;
  readonly component: { speaker: string } | 'controller';
  readonly type: ConfigurationConditionType;
  readonly owner: OwnerRef | null;
  readonly log: Logger;
  /** first retry delay in ms (default 1000), doubled up to 30 s */
  readonly backoffMs?: number;
}

/** See the module comment. */
export class ConfigurationStateWriter {
  private readonly o: ConfigurationStateWriterOptions;
  private desired: string | null | undefined = undefined;
  private written: string | null | undefined = undefined;
  private running: Promise<void> | null = null;
  private retry: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;

  constructor(o: ConfigurationStateWriterOptions) {
    this.o = o;
  }

  /** Reports the outcome of a configuration load: null = loaded, else MetalLB's error text. */
  report(error: string | null): void {
    if (this.stopped) return;
    this.desired = error;
    this.kick();
  }

  /** Waits for the running write. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    await this.idle();
  }

  private kick(): void {
    if (this.running || this.retry) return;
    this.running = this.write().finally(() => {
      this.running = null;
    });
  }

  private async write(): Promise<void> {
    while (this.desired !== undefined && this.desired !== this.written && !this.stopped) {
      const error = this.desired;
      const { api, namespace, component, owner, log } = this.o;
      const { name } = configurationStateMeta(component);
      const base = `/apis/metallb.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/configurationstates`;
      try {
        let current: KubeObject | null = null;
        try {
          current = await api.request<KubeObject>({ path: `${base}/${encodeURIComponent(name)}` });
        } catch (err) {
          if (httpStatusOf(err) !== 404) throw err;
        }
        if (!current) await api.request({ method: 'POST', path: base, body: newConfigurationState(namespace, component, owner) });
        const status = configurationStateStatus(this.o.type, error, rfc3339Utc(Date.now(), false));
        await api.request({
          method: 'PATCH',
          path: `${base}/${encodeURIComponent(name)}/status`,
          contentType: MERGE_PATCH,
          body: { status: { ...status, errorSummary: status.errorSummary ?? null } },
        });
        this.written = error;
        this.failures = 0;
      } catch (err) {
        this.failures++;
        const delay = Math.min((this.o.backoffMs ?? 1000) * 2 ** (this.failures - 1), 30_000);
        const hint = httpStatusOf(err) === 404 ? ' (is the ConfigurationState CRD installed?)' : '';
        log.error({ controller: 'ConfigurationStateReconciler', name, error: `${err instanceof Error ? err.message : String(err)}${hint}`, retryInMs: delay, msg: 'failed to report the ConfigurationState' });
        if (!this.stopped) {
          this.retry = setTimeout(() => {
            this.retry = undefined;
            this.kick();
          }, delay);
          this.retry.unref?.();
        }
        return;
      }
    }
  }
}
