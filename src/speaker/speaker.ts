/**
 * The speaker loop (MetalLB v0.16.1 `speaker/main.go` with its reconcilers): watches the cluster,
 * asks the membership who is alive, and hands every Service to the SpeakerController, which acts
 * on the core's decisions. Changes are batched (`debounceMs`); each batch builds one election
 * index and reconciles:
 *
 *  - the Services whose Service or EndpointSlices changed;
 *  - every Service after a configuration change (IPAddressPool, L2/BGPAdvertisement, BGPPeer,
 *    Community, BFDProfile, Secret, ConfigMap, Namespace), a Node added or deleted or whose labels
 *    or NetworkUnavailable condition changed, or a membership change (MetalLB's forced sync);
 *  - the ServiceL2Status of a Service whose status object of this node changed (someone else
 *    edited or deleted it).
 */
import { diagnosticConfig } from '../core/explain/index.ts';
import { buildElectionIndex } from '../core/election/index.ts';
import { ConfigError } from '../core/errors.ts';
import type { Membership } from '../core/membership/types.ts';
import { namespacedName, type ClusterState, type KubeObject, type Node, type Service } from '../core/kube.ts';
import type { BGPPublisher, L2Announcer } from './announcer.ts';
import { SpeakerController, type EventSink, type SyncContext } from './controller.ts';
import { L2StatusWriter, LABEL_ANNOUNCE_NODE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, type L2StatusApi, type OwnerRef } from './l2status.ts';
import type { Logger } from '../log.ts';
import type { SpeakerMetrics } from './metrics.ts';

/** One change of the watched state (the shape ClusterStateWatcher reports). */
export interface StateChange {
  list: keyof ClusterState;
  type: 'add' | 'update' | 'delete';
  object: KubeObject;
  old?: KubeObject;
}

/** The cluster watch the loop runs on (ClusterStateWatcher from src/kube/live.ts). */
export interface StateSource {
  /** resolves once every list synced; rejects (a UserError) when the cluster cannot be read */
  start(): Promise<void>;
  state(): ClusterState;
  onChange(cb: (change: StateChange) => void): void;
  stop(): void | Promise<void>;
}

/** The ClusterState lists the speaker watches (for least-privilege RBAC: no Pods, no Events). */
export const SPEAKER_KINDS: ReadonlyArray<keyof ClusterState> = [
  'services', 'endpointSlices', 'nodes', 'namespaces', 'secrets', 'configMaps',
  'ipAddressPools', 'l2Advertisements', 'bgpAdvertisements', 'bgpPeers', 'communities', 'bfdProfiles',
  'serviceL2Statuses',
];

const SERVICE_LISTS = new Set<keyof ClusterState>(['services', 'endpointSlices']);
const IGNORED_LISTS = new Set<keyof ClusterState>(['events', 'pods', 'serviceBGPStatuses']);

/** Options of Speaker. */
export interface SpeakerOptions {
  readonly node: string;
  /** the MetalLB namespace (ServiceL2Status objects live there) */
  readonly namespace: string;
  readonly source: StateSource;
  readonly membership: Membership;
  readonly l2: L2Announcer;
  readonly bgp: BGPPublisher;
  readonly log: Logger;
  readonly metrics: SpeakerMetrics;
  readonly l2StatusApi: L2StatusApi;
  readonly event: EventSink;
  /** the speaker Pod, owner of the ServiceL2Status objects (null when not running in a pod) */
  readonly owner: OwnerRef | null;
  readonly ignoreExcludeLB?: boolean;
  /** `--lb-class`: only Services of this loadBalancerClass; undefined: only those without one */
  readonly lbClass?: string;
  /** batching delay in ms (default 20) */
  readonly debounceMs?: number;
  /** first ServiceL2Status retry delay in ms (default 500) */
  readonly statusBackoffMs?: number;
}

function conditionTrue(node: KubeObject | undefined, type: string): boolean {
  return ((node as Node | undefined)?.status?.conditions ?? []).find((c) => c?.type === type)?.status === 'True';
}

function sameLabels(a: KubeObject | undefined, b: KubeObject | undefined): boolean {
  const la = a?.metadata?.labels ?? {};
  const lb = b?.metadata?.labels ?? {};
  const ka = Object.keys(la);
  return ka.length === Object.keys(lb).length && ka.every((k) => Object.prototype.hasOwnProperty.call(lb, k) && lb[k] === la[k]);
}

/** MetalLB's filterByLoadBalancerClass: true when the Service is not ours. */
export function filteredByClass(svc: Service, lbClass: string | undefined): boolean {
  const cls = svc.spec?.loadBalancerClass;
  if (cls === undefined || cls === null) return lbClass !== undefined && lbClass !== '';
  return cls !== (lbClass ?? '');
}

/** See module doc. */
export class Speaker {
  readonly controller: SpeakerController;
  readonly l2Status: L2StatusWriter;
  private readonly o: SpeakerOptions;
  private readonly dirty = new Set<string>();
  private readonly statusDirty = new Set<string>();
  private all = false;
  private configDirty = true;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private stopping = false;
  private ready = false;
  private failure: ((err: unknown) => void) | null = null;
  /** Rejects when a sync pass throws (a bug): the command exits with the stack. */
  readonly crashed: Promise<never>;

  constructor(opts: SpeakerOptions) {
    this.o = opts;
    this.controller = new SpeakerController({
      node: opts.node, log: opts.log, metrics: opts.metrics, l2: opts.l2, bgp: opts.bgp, event: opts.event,
      l2StatusChanged: (svc) => this.l2Status.enqueue(svc),
      ignoreExcludeLB: opts.ignoreExcludeLB === true,
    });
    this.l2Status = new L2StatusWriter({
      node: opts.node, namespace: opts.namespace, api: opts.l2StatusApi, log: opts.log,
      desired: (svc) => this.controller.announcement(svc)?.interfaces ?? null,
      known: () => opts.source.state().serviceL2Statuses,
      owner: () => opts.owner,
      onError: () => opts.metrics.updateErrors.inc(),
      ...(opts.statusBackoffMs !== undefined ? { backoffMs: opts.statusBackoffMs } : {}),
    });
    this.crashed = new Promise<never>((_, reject) => { this.failure = reject; });
    this.crashed.catch(() => {});
  }

  /** Whether the first full sync has run (`/readyz`). */
  get isReady(): boolean {
    return this.ready;
  }

  /**
   * Starts the membership and the watch, then reconciles every Service once.
   * @throws what Membership.start or StateSource.start throw (cannot reach the cluster: exit 3).
   */
  async start(): Promise<void> {
    if (this.started) throw new Error('Speaker.start() called twice');
    this.started = true;
    this.o.source.onChange((c) => this.changed(c));
    this.o.membership.onChange(() => { this.all = true; this.schedule(); });
    await this.o.membership.start();
    await this.o.source.start();
    this.o.log.info({ op: 'startup', node: this.o.node, msg: 'cluster state synced, reconciling every service' });
    // Statuses this node left behind (a previous run): reconciled like MetalLB's initial list events.
    for (const s of this.o.source.state().serviceL2Statuses) this.statusFor(s);
    this.all = true;
    this.configDirty = true;
    this.flush();
    this.ready = true;
  }

  /**
   * Graceful shutdown: stops watching, withdraws every announcement (reason `shutdown`), removes
   * this node's ServiceL2Status objects, and stops the membership. Waits at most `timeoutMs` for
   * the API writes. Idempotent.
   */
  async stop(timeoutMs = 5000): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearTimeout(this.timer);
    await this.o.source.stop();
    this.controller.withdrawAll('shutdown');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.l2Status.idle(),
      new Promise<void>((r) => { timer = setTimeout(r, timeoutMs); timer.unref(); }),
    ]);
    clearTimeout(timer);
    await this.l2Status.stop();
    await this.o.membership.stop();
  }

  private statusFor(s: KubeObject | undefined): void {
    const l = s?.metadata?.labels;
    if (!l || l[LABEL_ANNOUNCE_NODE] !== this.o.node) return;
    const ns = l[LABEL_SERVICE_NAMESPACE];
    const name = l[LABEL_SERVICE_NAME];
    if (ns && name) this.statusDirty.add(`${ns}/${name}`);
  }

  private changed(c: StateChange): void {
    if (this.stopping || !this.started) return;
    this.o.metrics.updates.inc();
    if (IGNORED_LISTS.has(c.list)) return;
    if (c.list === 'serviceL2Statuses') {
      this.statusFor(c.object);
      this.statusFor(c.old);
    } else if (SERVICE_LISTS.has(c.list)) {
      for (const o of [c.object, c.old]) {
        if (!o) continue;
        if (c.list === 'services') {
          this.dirty.add(namespacedName(o));
        } else {
          const svc = o.metadata?.labels?.['kubernetes.io/service-name'];
          if (svc) this.dirty.add(`${o.metadata?.namespace ?? 'default'}/${svc}`);
        }
      }
    } else if (c.list === 'nodes') {
      // MetalLB reloads on Node create/delete and on label or NetworkUnavailable changes only.
      if (c.type !== 'update' || !sameLabels(c.object, c.old)
        || conditionTrue(c.object, 'NetworkUnavailable') !== conditionTrue(c.old, 'NetworkUnavailable')) {
        this.configDirty = true;
        this.all = true;
      } else {
        return;
      }
    } else {
      this.configDirty = true;
      this.all = true;
    }
    if (!this.ready) return; // start() runs the first full sync itself
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.stopping) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      try {
        this.flush();
      } catch (err) {
        this.failure?.(err);
      }
    }, this.o.debounceMs ?? 20);
  }

  /** Reloads the configuration through the same core function `explain` uses. */
  private loadConfig(state: ClusterState): boolean {
    let parsed: ReturnType<typeof diagnosticConfig>;
    try {
      parsed = diagnosticConfig(state);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      this.o.metrics.configStale.set(1);
      this.o.metrics.updateErrors.inc();
      this.o.log.error({ op: 'setConfig', error: err.message, msg: 'failed to parse the configuration, keeping the previous one' });
      return false;
    }
    if (parsed.rejected) {
      this.o.log.error({ op: 'setConfig', error: parsed.rejected.message, msg: 'MetalLB rejects this configuration (repeated entries); using it without the repeats, as explain does' });
    }
    if (!this.controller.setConfig(parsed.config)) {
      this.o.metrics.configStale.set(1);
      return false;
    }
    this.o.metrics.configLoaded.set(1);
    this.o.metrics.configStale.set(parsed.rejected ? 1 : 0);
    return true;
  }

  /** One sync pass over what changed since the last one. */
  private flush(): void {
    if (this.stopping) return;
    const state = this.o.source.state();
    if (this.configDirty) {
      this.configDirty = false;
      this.loadConfig(state); // refused: the previous configuration stays (MetalLB's stale config)
    }
    const config = this.controller.currentConfig();
    const speakers = this.o.membership.alive();
    const ctx: SyncContext | null = config ? { state, config, speakers, index: buildElectionIndex(state, speakers) } : null;
    const byKey = new Map<string, Service>();
    for (const s of state.services) byKey.set(namespacedName(s), s);
    const keys = this.all ? new Set([...byKey.keys(), ...this.controller.knownServices()]) : new Set(this.dirty);
    this.all = false;
    this.dirty.clear();
    for (const key of [...keys].sort()) {
      const svc = byKey.get(key) ?? null;
      if (svc && filteredByClass(svc, this.o.lbClass)) {
        // Not ours. MetalLB ignores it entirely; if we announced it (its class changed), withdraw.
        if (this.controller.announcement(key)) this.controller.setBalancer(key, null, ctx);
        continue;
      }
      this.controller.setBalancer(key, svc, ctx);
    }
    for (const key of this.statusDirty) this.l2Status.enqueue(key);
    this.statusDirty.clear();
  }
}
