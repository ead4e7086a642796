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
 *  - the ServiceL2Status / ServiceBGPStatus of a Service whose status object of this node changed
 *    (someone else edited or deleted it).
 *
 * The configuration is the speaker's own (src/core/speaker speakerConfig: its namespace, the
 * BGPPeers and BGPAdvertisements selecting its node, MetalLB's parser); a configuration MetalLB
 * rejects is logged and the last accepted one stays in force. After each batch the BGP side
 * (frr-k8s mode) computes the node's FRRConfiguration from the sessions, the routes of every
 * announced service and the BFD profiles, hands it to the FRRConfiguration writer when it
 * changed, and queues a ServiceBGPStatus write for every service whose set of peers changed.
 */
import { buildElectionIndex } from '../core/election/index.ts';
import type { Membership } from '../core/membership/types.ts';
import { namespacedName, type ClusterState, type KubeObject, type Node, type Service, type ServiceBGPStatus } from '../core/kube.ts';
import { speakerConfig, type BGPType, type SpeakerConfig } from '../core/speaker/config.ts';
import type { BFDProfileConfig } from '../core/config/types.ts';
import { bgpSessions, secretHandlingFor } from '../core/bgp/sessions.ts';
import { peersByService } from '../core/bgp/routes.ts';
import { planBGPStatus, type BGPStatusBody } from '../core/bgp/status.ts';
import { frrConfiguration, frrConfigurationName } from '../core/frrk8s/config.ts';
import type { FRRConfiguration } from '../core/frrk8s/types.ts';
import { LABEL_ANNOUNCE_NODE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, type OwnerRef } from '../core/status.ts';
import type { L2Announcer } from './announcer.ts';
import { SpeakerController, type EventSink, type SyncContext } from './controller.ts';
import { L2StatusWriter, type L2StatusApi } from './l2status.ts';
import { StatusWriter, type StatusApi } from './status-writer.ts';
import { FRRConfigurationWriter, type FRRConfigurationApi } from './frrk8s.ts';
import type { Logger } from '../runtime/log.ts';
import type { SpeakerMetrics } from './metrics.ts';
import { UnannouncedReporter } from './unannounced.ts';
import { filteredByLoadBalancerClass } from '../core/controller/service.ts';

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

/**
 * The ClusterState lists the speaker watches (for least-privilege RBAC: no Pods, no Events); in
 * frr-k8s mode its own FRRConfiguration too (SPEAKER_BGP_KINDS).
 */
export const SPEAKER_KINDS: ReadonlyArray<keyof ClusterState> = [
  'services',
  'endpointSlices',
  'nodes',
  'namespaces',
  'secrets',
  'configMaps',
  'ipAddressPools',
  'l2Advertisements',
  'bgpAdvertisements',
  'bgpPeers',
  'communities',
  'bfdProfiles',
  'serviceL2Statuses',
  'serviceBGPStatuses',
];

/** SPEAKER_KINDS plus the node's FRRConfiguration (watch it with a `metadata.name` field selector). */
export const SPEAKER_BGP_KINDS: ReadonlyArray<keyof ClusterState> = [...SPEAKER_KINDS, 'frrConfigurations'];

const SERVICE_LISTS = new Set<keyof ClusterState>(['services', 'endpointSlices']);
const IGNORED_LISTS = new Set<keyof ClusterState>(['events', 'pods']);

/** Options of Speaker. */
export interface SpeakerOptions {
  readonly node: string;
  /** the MetalLB namespace (ServiceL2Status objects live there) */
  readonly namespace: string;
  readonly source: StateSource;
  readonly membership: Membership;
  readonly l2: L2Announcer;
  readonly log: Logger;
  readonly metrics: SpeakerMetrics;
  readonly l2StatusApi: L2StatusApi;
  readonly bgpStatusApi: StatusApi<ServiceBGPStatus, BGPStatusBody>;
  /** writes `metallb-<node>` in the frr-k8s namespace */
  readonly frrApi: FRRConfigurationApi;
  readonly event: EventSink;
  /** the speaker Pod, owner of the ServiceL2Status and ServiceBGPStatus objects (null when not running in a pod) */
  readonly owner: OwnerRef | null;
  /** `METALLB_BGP_TYPE` (default `frr-k8s`, the only one the speaker runs) */
  readonly bgpType?: BGPType;
  /** `--frrk8s-namespace` (default: `namespace`) */
  readonly frrk8sNamespace?: string;
  /** the FRRConfiguration writer's debounce in ms (default 3000, MetalLB's) */
  readonly frrDebounceMs?: number;
  /**
   * Called after every configuration load with MetalLB's error text, or null when the
   * configuration was taken (the command reports it as the ConfigurationState `speaker-<node>`).
   */
  readonly configReported?: (error: string | null) => void;
  readonly ignoreExcludeLB?: boolean;
  /**
   * Record the Warning Event `notAnnounced` on a Service nobody announces, when this speaker is
   * the one reporting (src/speaker/unannounced.ts). Default true; `--no-unannounced-events` sets
   * false (the warn log line and the gauge stay).
   */
  readonly unannouncedEvents?: boolean;
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
  return ka.length === Object.keys(lb).length && ka.every((k) => Object.hasOwn(lb, k) && lb[k] === la[k]);
}

/**
 * Whether MetalLB's NodeReconciler passes a Node change on (its predicate: create, delete, a label
 * change, or a change of the NetworkUnavailable condition); heartbeats and other status updates
 * do not count.
 */
export function nodeChangeMatters(c: Pick<StateChange, 'type' | 'object' | 'old'>): boolean {
  return c.type !== 'update' || !sameLabels(c.object, c.old) || conditionTrue(c.object, 'NetworkUnavailable') !== conditionTrue(c.old, 'NetworkUnavailable');
}

/** MetalLB's filterByLoadBalancerClass: true when the Service is not ours. */
export function filteredByClass(svc: Service, lbClass: string | undefined): boolean {
  return filteredByLoadBalancerClass(svc, lbClass ?? '');
}

/** See module doc. */
export class Speaker {
  readonly controller: SpeakerController;
  readonly l2Status: L2StatusWriter;
  readonly bgpStatus: StatusWriter<ServiceBGPStatus, BGPStatusBody>;
  readonly frr: FRRConfigurationWriter;
  /** The "nobody announces" report (one speaker of the cluster reports). */
  readonly unannounced: UnannouncedReporter;
  private readonly o: SpeakerOptions;
  private readonly frrk8sNamespace: string;
  private readonly dirty = new Set<string>();
  private readonly statusDirty = new Set<string>();
  private readonly bgpStatusDirty = new Set<string>();
  /** the outcome of the last configuration load (null before the first) */
  private lastConfig: SpeakerConfig | null = null;
  /** the BFD profiles last synced (MetalLB syncs only a non-empty list: removing all keeps the old ones) */
  private bfdProfiles: readonly BFDProfileConfig[] = [];
  /** whether the BGP side ever produced a configuration (a session started or BFD profiles synced) */
  private frrProduced = false;
  private lastFRRJSON: string | undefined;
  /** service → sorted peers its prefixes go to (MetalLB activeAds), as last handed to the status writer */
  private peers = new Map<string, string[]>();
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
    this.frrk8sNamespace = opts.frrk8sNamespace ?? opts.namespace;
    this.unannounced = new UnannouncedReporter({
      node: opts.node,
      namespace: opts.namespace,
      event: opts.event,
      log: opts.log,
      gauge: opts.metrics.unannounced,
      events: opts.unannouncedEvents !== false,
      ignoreExcludeLB: opts.ignoreExcludeLB === true,
    });
    this.controller = new SpeakerController({
      node: opts.node,
      log: opts.log,
      metrics: opts.metrics,
      l2: opts.l2,
      event: opts.event,
      l2StatusChanged: (svc) => this.l2Status.enqueue(svc),
      ignoreExcludeLB: opts.ignoreExcludeLB === true,
      elected: (svc, l2) => this.unannounced.elected(svc, l2),
    });
    this.l2Status = new L2StatusWriter({
      node: opts.node,
      namespace: opts.namespace,
      api: opts.l2StatusApi,
      log: opts.log,
      desired: (svc) => this.controller.announcement(svc)?.interfaces ?? null,
      known: () => opts.source.state().serviceL2Statuses,
      owner: () => opts.owner,
      onError: () => opts.metrics.updateErrors.inc(),
      ...(opts.statusBackoffMs !== undefined ? { backoffMs: opts.statusBackoffMs } : {}),
    });
    this.bgpStatus = new StatusWriter<ServiceBGPStatus, BGPStatusBody>({
      namespace: opts.namespace,
      api: opts.bgpStatusApi,
      log: opts.log,
      controller: 'ServiceBGPStatus',
      what: 'ServiceBGPStatus',
      plan: (service, serviceNamespace, serviceName, existing) =>
        planBGPStatus({
          node: opts.node,
          namespace: opts.namespace,
          serviceNamespace,
          serviceName,
          peers: this.peers.get(service) ?? [],
          existing,
          owner: opts.owner,
        }),
      known: () => opts.source.state().serviceBGPStatuses,
      onError: () => opts.metrics.updateErrors.inc(),
      ...(opts.statusBackoffMs !== undefined ? { backoffMs: opts.statusBackoffMs } : {}),
    });
    this.frr = new FRRConfigurationWriter({
      name: frrConfigurationName(opts.node),
      namespace: this.frrk8sNamespace,
      api: opts.frrApi,
      log: opts.log,
      ...(opts.frrDebounceMs !== undefined ? { debounceMs: opts.frrDebounceMs } : {}),
      onReconcile: ({ error }) => {
        opts.metrics.updates.inc();
        if (error) opts.metrics.updateErrors.inc();
      },
    });
    this.crashed = new Promise<never>((_, reject) => {
      this.failure = reject;
    });
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
    this.o.membership.onChange(() => {
      this.all = true;
      this.schedule();
    });
    await this.o.membership.start();
    await this.o.source.start();
    this.o.log.info({ op: 'startup', node: this.o.node, msg: 'cluster state synced, reconciling every service' });
    // Statuses this node left behind (a previous run): reconciled like MetalLB's initial list events.
    for (const s of this.o.source.state().serviceL2Statuses) this.statusFor(this.statusDirty, s);
    for (const s of this.o.source.state().serviceBGPStatuses) this.statusFor(this.bgpStatusDirty, s);
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
    // MetalLB leaves the FRRConfiguration and the ServiceBGPStatus objects in place on shutdown
    // (frr-k8s keeps the sessions up while the speaker restarts); only L2 is withdrawn.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.l2Status.idle(),
      new Promise<void>((r) => {
        timer = setTimeout(r, timeoutMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    await this.l2Status.stop();
    await this.bgpStatus.stop();
    await this.frr.stop();
    await this.o.membership.stop();
  }

  /** The outcome of the last configuration load: the config, or why MetalLB rejects it (null before the first). */
  get configuration(): SpeakerConfig | null {
    return this.lastConfig;
  }

  /** The BGPPeer names each announced service reaches (ServiceBGPStatus `status.peers`), by `namespace/name`. */
  bgpPeersByService(): ReadonlyMap<string, readonly string[]> {
    return this.peers;
  }

  private statusFor(into: Set<string>, s: KubeObject | undefined): void {
    const l = s?.metadata?.labels;
    if (!l || l[LABEL_ANNOUNCE_NODE] !== this.o.node) return;
    const ns = l[LABEL_SERVICE_NAMESPACE];
    const name = l[LABEL_SERVICE_NAME];
    if (ns && name) into.add(`${ns}/${name}`);
  }

  private changed(c: StateChange): void {
    if (this.stopping || !this.started) return;
    this.o.metrics.updates.inc();
    if (IGNORED_LISTS.has(c.list)) return;
    if (c.list === 'serviceL2Statuses' || c.list === 'serviceBGPStatuses') {
      const into = c.list === 'serviceL2Statuses' ? this.statusDirty : this.bgpStatusDirty;
      this.statusFor(into, c.object);
      this.statusFor(into, c.old);
    } else if (c.list === 'frrConfigurations') {
      // Our own object changed (an edit, a delete, or our own write coming back): reconcile it now.
      if (c.object.metadata?.name === frrConfigurationName(this.o.node) && c.object.metadata?.namespace === this.frrk8sNamespace) this.frr.changed();
      return;
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
      if (nodeChangeMatters(c)) {
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
    // Before the first full sync (start() runs it itself) a pass would see a half-listed cluster:
    // memberlist reports its first view while the watch is still listing, and the configuration
    // would fail for a Node that is simply not listed yet.
    if (this.timer || this.stopping || !this.ready) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      try {
        this.flush();
      } catch (err) {
        this.failure?.(err);
      }
    }, this.o.debounceMs ?? 20);
  }

  /**
   * Reloads the speaker's own configuration (speakerConfig). A configuration MetalLB rejects is
   * logged and reported in the metrics; the previous one stays in force. Returns whether a new
   * configuration was taken.
   */
  private loadConfig(state: ClusterState): boolean {
    const result = speakerConfig(state, { node: this.o.node, namespace: this.o.namespace, bgpType: this.o.bgpType ?? 'frr-k8s' });
    this.lastConfig = result;
    if (!result.ok) {
      // MetalLB's bgpController.SetConfig syncs the BFD profiles before it refuses the extras:
      // they reach the FRRConfiguration although the configuration is rejected (if SetConfig's
      // own check let it reach the handlers).
      if (result.stage === 'bgpExtras' && result.config && result.config.bfdProfiles.size > 0 && this.controller.handlersReached(result.config)) {
        this.bfdProfiles = [...result.config.bfdProfiles.values()];
        this.frrProduced = true;
      }
      this.o.metrics.configStale.set(1);
      this.o.metrics.updateErrors.inc();
      const msg = result.stage === 'bgpExtras' ? 'applying new configuration to protocol handler failed' : result.stage === 'parse' ? 'failed to parse the configuration' : 'failed to read the configuration';
      this.o.log.error({ op: 'setConfig', controller: 'ConfigReconciler', error: result.error.message, msg: `${msg}, keeping the previous one` });
      this.o.configReported?.(result.error.message);
      return false;
    }
    if (result.bgpExtras !== '') {
      this.o.log.info({ controller: 'ConfigReconciler', 'warning message': 'BGP Extras provided, please note that this configuration is not supported and used at your own risk' });
    }
    if (!this.controller.setConfig(result.config)) {
      this.o.metrics.configStale.set(1);
      this.o.configReported?.('general handler sync state error');
      return false;
    }
    // MetalLB's bgpController.SetConfig: the BFD profiles are synced only when there is at least one.
    if (result.config.bfdProfiles.size > 0) {
      this.bfdProfiles = [...result.config.bfdProfiles.values()];
      this.frrProduced = true;
    }
    this.o.metrics.configLoaded.set(1);
    this.o.metrics.configStale.set(0);
    this.o.log.info({ controller: 'ConfigReconciler', event: 'config reloaded' });
    this.o.configReported?.(null);
    return true;
  }

  /**
   * What the BGP side should have now: the FRRConfiguration of this node (null: none, the speaker
   * never produced one: no session ever started and no BFD profile was synced), whether that
   * counts as produced, and the peers of every announced service. Reads the controller's state.
   */
  desiredBGP(state: ClusterState): { frr: FRRConfiguration | null; produced: boolean; peers: Map<string, string[]> } {
    const config = this.controller.currentConfig();
    const node = state.nodes.find((n) => n.metadata?.name === this.o.node);
    const sessions = config ? bgpSessions(config, node?.metadata?.labels) : [];
    const produced = this.frrProduced || sessions.length > 0;
    const routes = this.controller.bgpRoutes();
    const frr = produced
      ? frrConfiguration({
          node: this.o.node,
          namespace: this.frrk8sNamespace,
          sessions,
          routes: [...routes.values()].flat(),
          bfdProfiles: this.bfdProfiles,
          secretHandling: secretHandlingFor(this.o.namespace, this.frrk8sNamespace),
        })
      : null;
    return { frr, produced, peers: config ? peersByService(routes, sessions) : new Map() };
  }

  /** After a sync pass: hand a changed FRRConfiguration to its writer, queue changed ServiceBGPStatuses. */
  private syncBGP(state: ClusterState): void {
    const { frr, produced, peers } = this.desiredBGP(state);
    this.frrProduced = produced;
    const json = JSON.stringify(frr);
    if (json !== this.lastFRRJSON) {
      this.lastFRRJSON = json;
      this.frr.update(frr);
    }
    const changed = new Set<string>();
    for (const [svc, list] of peers) {
      const old = this.peers.get(svc);
      if (!old || old.length !== list.length || old.some((p, i) => p !== list[i])) changed.add(svc);
    }
    for (const svc of this.peers.keys()) if (!peers.has(svc)) changed.add(svc);
    this.peers = peers;
    for (const svc of changed) this.bgpStatus.enqueue(svc);
  }

  /** One sync pass over what changed since the last one. */
  private flush(): void {
    if (this.stopping) return;
    const state = this.o.source.state();
    const configChanged = this.configDirty;
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
    this.unannounced.begin(ctx, configChanged);
    for (const key of [...keys].sort()) {
      const svc = byKey.get(key) ?? null;
      if (svc && filteredByClass(svc, this.o.lbClass)) {
        // Not ours. MetalLB ignores it entirely; if we announced it (its class changed), withdraw.
        if (this.controller.announcement(key)) this.controller.setBalancer(key, null, ctx);
        this.unannounced.service(key, null, ctx);
        continue;
      }
      this.controller.setBalancer(key, svc, ctx);
      this.unannounced.service(key, svc, ctx);
    }
    for (const key of this.statusDirty) this.l2Status.enqueue(key);
    this.statusDirty.clear();
    this.syncBGP(state);
    for (const key of this.bgpStatusDirty) this.bgpStatus.enqueue(key);
    this.bgpStatusDirty.clear();
  }
}
