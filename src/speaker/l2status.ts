/**
 * ServiceL2Status objects as MetalLB v0.16.1 writes them
 * (`internal/k8s/controllers/layer2_status_controller.go`): one per service this node announces in
 * Layer 2, in the MetalLB namespace, `generateName: l2-`, labels `metallb.io/node`,
 * `metallb.io/service-name`, `metallb.io/service-namespace`, owned by the speaker Pod, and the
 * status (node, serviceName, serviceNamespace, interfaces unless all) written through the status
 * subresource. The announcing node deletes every other status of the service; a node that stops
 * announcing deletes its own.
 *
 * `planL2Status` is the pure decision; `L2StatusWriter` carries it out against the API, one
 * service at a time, retrying failures with backoff.
 */
import type { InterfaceSet } from '../core/election/types.ts';
import type { ServiceL2Status } from '../core/kube.ts';
import type { Logger } from '../log.ts';
import {
  LABEL_ANNOUNCE_NODE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, METALLB_STATUS_API_VERSION, type OwnerRef,
} from '../core/status.ts';

export { LABEL_ANNOUNCE_NODE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, type OwnerRef };

/** `status` of a ServiceL2Status as MetalLB builds it (`buildDesiredStatus`). */
export interface L2StatusBody {
  node: string;
  serviceName: string;
  serviceNamespace: string;
  interfaces?: Array<{ name: string }>;
}

/** What to do for one service's ServiceL2Status objects. */
export interface L2StatusPlan {
  /** names to delete (other nodes' statuses when we announce, ours when we do not, duplicates) */
  readonly deletes: readonly string[];
  /** an object to create (without status: the API ignores it on create), or null */
  readonly create: ServiceL2Status | null;
  /** the status to write on `name` (`null` name: the object about to be created), or null when up to date */
  readonly patch: { readonly name: string | null; readonly status: L2StatusBody } | null;
}

/** Input of planL2Status. */
export interface L2StatusInput {
  readonly node: string;
  /** the MetalLB namespace, where the objects live */
  readonly namespace: string;
  readonly serviceNamespace: string;
  readonly serviceName: string;
  /** the interfaces this node announces the service on, or null when it does not announce it (in L2) */
  readonly desired: InterfaceSet | undefined;
  /** the service's ServiceL2Status objects as currently known (any node) */
  readonly existing: readonly ServiceL2Status[];
  readonly owner: OwnerRef | null;
}

/** The status MetalLB writes: interface names only when not announcing on all interfaces. */
export function desiredL2Status(node: string, serviceNamespace: string, serviceName: string, interfaces: InterfaceSet): L2StatusBody {
  const s: L2StatusBody = { node, serviceName, serviceNamespace };
  if (interfaces !== 'all' && interfaces !== null && interfaces.length > 0) s.interfaces = interfaces.map((name) => ({ name }));
  return s;
}

function sameStatus(a: ServiceL2Status['status'], b: L2StatusBody): boolean {
  const ai = (a?.interfaces ?? []).map((i) => i?.name ?? '');
  const bi = (b.interfaces ?? []).map((i) => i.name);
  return (a?.node ?? '') === b.node && (a?.serviceName ?? '') === b.serviceName && (a?.serviceNamespace ?? '') === b.serviceNamespace
    && ai.length === bi.length && ai.every((x, i) => x === bi[i]);
}

/** Decides creates, status writes and deletes for one service, as MetalLB's reconciler. Pure. */
export function planL2Status(input: L2StatusInput): L2StatusPlan {
  const { node, existing } = input;
  const nameOf = (s: ServiceL2Status): string => s.metadata?.name ?? '';
  if (input.desired === null || input.desired === undefined) {
    return { deletes: existing.filter((s) => s.metadata?.labels?.[LABEL_ANNOUNCE_NODE] === node).map(nameOf), create: null, patch: null };
  }
  let mine: ServiceL2Status | null = null;
  const deletes: string[] = [];
  for (const s of existing) {
    if (mine === null && s.metadata?.labels?.[LABEL_ANNOUNCE_NODE] === node) mine = s;
    else deletes.push(nameOf(s));
  }
  const status = desiredL2Status(node, input.serviceNamespace, input.serviceName, input.desired);
  if (mine !== null) {
    return { deletes, create: null, patch: sameStatus(mine.status, status) ? null : { name: nameOf(mine), status } };
  }
  const create: ServiceL2Status = {
    apiVersion: METALLB_STATUS_API_VERSION,
    kind: 'ServiceL2Status',
    metadata: {
      generateName: 'l2-',
      namespace: input.namespace,
      labels: {
        [LABEL_ANNOUNCE_NODE]: node,
        [LABEL_SERVICE_NAME]: input.serviceName,
        [LABEL_SERVICE_NAMESPACE]: input.serviceNamespace,
      },
      ...(input.owner ? { ownerReferences: [{ ...input.owner }] } : {}),
    },
    spec: {},
  };
  return { deletes, create, patch: { name: null, status } };
}

/** The API calls the writer makes. Errors reject; `delete` of a missing object resolves. */
export interface L2StatusApi {
  /** Creates the object; resolves with it as stored (with its generated name). */
  create(namespace: string, obj: ServiceL2Status): Promise<ServiceL2Status>;
  /** Merge-patches `status` through the status subresource. */
  patchStatus(namespace: string, name: string, status: L2StatusBody): Promise<void>;
  delete(namespace: string, name: string): Promise<void>;
}

/** Options of L2StatusWriter. */
export interface L2StatusWriterOptions {
  readonly node: string;
  readonly namespace: string;
  readonly api: L2StatusApi;
  readonly log: Logger;
  /** the interfaces this node announces `namespace/name` on in L2, or null */
  readonly desired: (service: string) => InterfaceSet | null;
  /** the ServiceL2Status objects the cluster watch currently holds (any node, any service) */
  readonly known: () => readonly ServiceL2Status[];
  readonly owner: () => OwnerRef | null;
  /** called after a failed write (metrics) */
  readonly onError?: (err: unknown) => void;
  /** first retry delay in ms (default 500), doubled per failure up to maxBackoffMs (default 30000) */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
}

/**
 * Carries out planL2Status per service, serially (one service at a time, in request order, a
 * service queued again while running is run once more afterwards). The watch lags behind our own
 * writes, so objects we created are remembered until the watch shows them, and objects we deleted
 * are hidden until it stops showing them.
 */
export class L2StatusWriter {
  private readonly o: L2StatusWriterOptions;
  private readonly queue = new Set<string>();
  private running: Promise<void> | null = null;
  private readonly created = new Map<string, ServiceL2Status>();
  private readonly deleted = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(opts: L2StatusWriterOptions) {
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
  private existingFor(ns: string, name: string): ServiceL2Status[] {
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
          this.o.log.error({ controller: 'Layer2StatusReconciler', service: key, error: err instanceof Error ? err.message : String(err), retryInMs: delay, msg: 'failed to update ServiceL2Status' });
          if (!this.stopped) {
            const t = setTimeout(() => { this.timers.delete(t); this.enqueue(key); }, delay);
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
    const { namespace, node, api } = this.o;
    const plan = planL2Status({
      node, namespace, serviceNamespace, serviceName,
      desired: this.o.desired(key), existing: this.existingFor(serviceNamespace, serviceName), owner: this.o.owner(),
    });
    for (const name of plan.deletes) {
      await api.delete(namespace, name);
      this.deleted.add(name);
      this.created.delete(name);
      this.o.log.debug({ controller: 'Layer2StatusReconciler', service: key, deleted: name, msg: 'deleted ServiceL2Status' });
    }
    let target = plan.patch?.name ?? null;
    if (plan.create) {
      const made = await api.create(namespace, plan.create);
      target = made.metadata?.name ?? null;
      if (!target) throw new Error('the API server returned a ServiceL2Status without a name');
      this.created.set(target, made);
      this.o.log.debug({ controller: 'Layer2StatusReconciler', service: key, created: target, msg: 'created ServiceL2Status' });
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
