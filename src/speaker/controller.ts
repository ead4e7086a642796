/**
 * The speaker's per-service state machine: MetalLB v0.16.1 `speaker/main.go` (controller
 * SetBalancer / handleService / deleteBalancer / SetConfig) acting on the core's decisions.
 *
 * The decisions come from src/core/election (`electL2` + `decideL2ForNode`, `evaluateBGP` +
 * `decideBGPForNode`), so what this node does is what `explain` says it does. This class only
 * remembers what it announces (and, for BGP, the routes of each service: MetalLB's `svcAds`,
 * from which the speaker builds its FRRConfiguration), calls the L2 data plane, sets the metrics,
 * writes MetalLB's log lines and asks for events and ServiceL2Status updates through the ports it
 * is given. No I/O of its own; every call is synchronous.
 */
import type { Config } from '../core/config/types.ts';
import { decideBGPForNode, decideL2ForNode, electL2, evaluateBGP, poolForIPs, type ElectionIndex, type InterfaceSet, type L2Election } from '../core/election/index.ts';
import { parseIP, type IP } from '../core/ip.ts';
import type { ClusterState, Service } from '../core/kube.ts';
import { communityLimitError, routesFor, type BGPRoute } from '../core/bgp/routes.ts';
import type { L2Announcer } from './announcer.ts';
import type { LogFields, Logger } from '../runtime/log.ts';
import type { SpeakerMetrics } from './metrics.ts';
import { announceFailedMessage, nodeAssignedMessage, type AnnounceProtocol, type SpeakerEventReason } from '../core/speaker/events.ts';
import { matchInterfaces } from '../core/election/l2.ts';

/** MetalLB's protocol names (`config.Proto`), in the order MetalLB handles them. */
export type Protocol = AnnounceProtocol;
export const PROTOCOLS: readonly Protocol[] = ['bgp', 'layer2'];

/** Asks for a Kubernetes Event on a Service (MetalLB `client.Infof` / `Errorf`). */
export type EventSink = (service: Service, type: 'Normal' | 'Warning', reason: SpeakerEventReason, message: string) => void;

/** What the controller needs from outside. */
export interface ControllerPorts {
  /** This speaker's node name (`--node-name`). */
  readonly node: string;
  readonly log: Logger;
  readonly metrics: SpeakerMetrics;
  readonly l2: L2Announcer;
  readonly event: EventSink;
  /** The ServiceL2Status of `namespace/name` may need writing (MetalLB's Layer2StatusChange). */
  readonly l2StatusChanged: (service: string) => void;
  /** `--ignore-exclude-lb`. */
  readonly ignoreExcludeLB: boolean;
  /** Called with every L2 election this speaker runs (the unannounced report reads it). */
  readonly elected?: (service: string, l2: L2Election) => void;
}

/** What one sync pass decides with; built once per batch of changes. */
export interface SyncContext {
  readonly state: ClusterState;
  readonly config: Config;
  /** Membership.alive(): null when every Node counts. */
  readonly speakers: readonly string[] | null;
  /** buildElectionIndex(state, speakers), shared by every service of the pass. */
  readonly index: ElectionIndex;
}

/** What this node announces for one service. */
export interface Announcement {
  readonly service: string;
  readonly ips: readonly string[];
  readonly pool: string | null;
  /** Interfaces of the L2 announcement (null unless `layer2` is announced). */
  readonly interfaces: InterfaceSet;
  readonly protocols: readonly Protocol[];
}

/**
 * What this speaker last decided for a service, per protocol: `announce`, MetalLB's reason, or
 * `noConfig` (no configuration accepted yet: MetalLB's "not processing, still waiting for
 * config"), `syncError` (the announcement failed: a session on the node gets an advertisement with
 * more than 63 communities; layer2 is then `syncError` too when it would announce, since MetalLB
 * returns before handling it).
 */
export type SpeakerVerdict = string;

const SERVICE_REASONS = new Set(['notLoadBalancer', 'noIPAllocated', 'invalidIP', 'ipNotAllowed']);

/** Same IPs in any order (MetalLB `compareIPs`). Inputs are canonical strings. */
function sameIPs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((ip) => b.includes(ip));
}

/** See module doc. */
export class SpeakerController {
  private readonly p: ControllerPorts;
  private config: Config | null = null;
  private readonly announced: Record<Protocol, Map<string, true>> = { bgp: new Map(), layer2: new Map() };
  /** service → the IPs it was announced with (MetalLB `svcIPs`). */
  private readonly svcIPs = new Map<string, readonly string[]>();
  private readonly svcPool = new Map<string, string | null>();
  private readonly l2Interfaces = new Map<string, InterfaceSet>();
  /** Services announced in Layer 2 whose advertisement's interfaces none exist here (MetalLB's announceFailed): no ServiceL2Status. */
  private readonly l2Unmatched = new Set<string>();
  /** service → the BGP routes it is advertised with (MetalLB `svcAds`). */
  private readonly routes = new Map<string, readonly BGPRoute[]>();
  /** service → the last decision per protocol. */
  private readonly verdicts = new Map<string, Record<Protocol, SpeakerVerdict>>();
  private routesVersion = 0;

  constructor(ports: ControllerPorts) {
    this.p = ports;
  }

  /** The configuration in use (null before the first one was accepted). */
  currentConfig(): Config | null {
    return this.config;
  }

  /**
   * Takes a new configuration (MetalLB `SetConfig`). Refuses it — returns false, logs
   * "new configuration rejected" and keeps the old one — when an IP this node announces would
   * have no pool under it. True: the caller resyncs every service (MetalLB's reprocess-all).
   */
  setConfig(config: Config): boolean {
    const svc = this.unplaced(config);
    if (svc !== null) {
      this.p.log.error({ op: 'setConfig', service: svc, ip: this.svcIPs.get(svc), error: 'service has no configuration under new config', msg: 'new configuration rejected' });
      return false;
    }
    this.config = config;
    return true;
  }

  /**
   * Whether setConfig would pass MetalLB's first check (every IP this node announces has a pool
   * under `config`), which SetConfig makes before it hands the configuration to the protocol
   * handlers. Nothing is logged or changed.
   */
  handlersReached(config: Config): boolean {
    return this.unplaced(config) === null;
  }

  /** The first announced service (MetalLB `svcIPs` order) with an IP no pool of `config` holds, or null. */
  private unplaced(config: Config): string | null {
    for (const [svc, ips] of this.svcIPs) {
      const parsed = ips.map((s) => parseIP(s)).filter((x): x is IP => x !== undefined);
      if (!poolForIPs(config, parsed)) return svc;
    }
    return null;
  }

  /** Services this node announces, with their IPs, pool, protocols and L2 interfaces, by name. */
  announcements(): Announcement[] {
    return [...this.svcIPs.keys()].sort().map((s) => this.announcement(s)!);
  }

  /** What this node announces for `service` (`namespace/name`), or null. */
  announcement(service: string): Announcement | null {
    const ips = this.svcIPs.get(service);
    if (!ips) return null;
    const protocols = PROTOCOLS.filter((p) => this.announced[p].has(service));
    return {
      service,
      ips,
      pool: this.svcPool.get(service) ?? null,
      protocols,
      interfaces: this.announced.layer2.has(service) && !this.l2Unmatched.has(service) ? (this.l2Interfaces.get(service) ?? 'all') : null,
    };
  }

  /** Every service the controller has state for (so a resync also visits deleted ones). */
  knownServices(): string[] {
    return [...this.svcIPs.keys()];
  }

  /** The BGP routes of every service advertised from this node, by `namespace/name` (MetalLB `svcAds`). */
  bgpRoutes(): ReadonlyMap<string, readonly BGPRoute[]> {
    return this.routes;
  }

  /** Bumped whenever bgpRoutes() changes. */
  get bgpRoutesVersion(): number {
    return this.routesVersion;
  }

  /** The last decision per protocol for `service`, or null when it was never processed (or deleted). */
  verdict(service: string): Readonly<Record<Protocol, SpeakerVerdict>> | null {
    return this.verdicts.get(service) ?? null;
  }

  /**
   * Reconciles one service (MetalLB `SetBalancer`): `service` null means it was deleted (or is no
   * longer ours, e.g. another loadBalancerClass). Without a configuration nothing happens yet.
   */
  setBalancer(key: string, service: Service | null, ctx: SyncContext | null): void {
    const log = this.p.log;
    if (service === null) {
      this.verdicts.delete(key);
      this.deleteBalancer(log, key, 'serviceDeleted');
      return;
    }
    if (service.spec?.type !== 'LoadBalancer') {
      this.verdicts.set(key, { bgp: 'notLoadBalancer', layer2: 'notLoadBalancer' });
      this.deleteBalancer(log, key, 'notLoadBalancer');
      return;
    }
    if (ctx === null || this.config === null) {
      this.verdicts.set(key, { bgp: 'noConfig', layer2: 'noConfig' });
      log.debug({ event: 'noConfig', service: key, msg: 'not processing, still waiting for config' });
      return;
    }
    const { state, speakers, index } = ctx;
    const config = this.config;
    const ignoreExcludeLB = this.p.ignoreExcludeLB;
    const l2 = electL2({ config, state, service, speakers, ignoreExcludeLB, index });
    this.p.elected?.(key, l2);
    if (l2.serviceReason !== null && SERVICE_REASONS.has(l2.serviceReason)) {
      if (l2.serviceReason === 'invalidIP' || l2.serviceReason === 'ipNotAllowed') {
        const detail = l2.checks[l2.checks.length - 1]?.detail;
        log.error({ op: 'setBalancer', service: key, error: detail, msg: l2.serviceReason === 'invalidIP' ? 'invalid IP allocated by controller' : 'IP allocated by controller not allowed by config' });
      }
      this.verdicts.set(key, { bgp: l2.serviceReason, layer2: l2.serviceReason });
      this.deleteBalancer(log, key, l2.serviceReason);
      return;
    }
    const ips = l2.ips;
    const pool = l2.pool;
    const slog = log.with({ ips, pool, service: key });
    const previous = this.svcIPs.get(key);
    if (previous && !sameIPs(previous, ips)) this.deleteBalancer(slog, key, 'loadBalancerIPChanged');

    // BGP first, then Layer 2, as MetalLB's protocol list.
    const bgp = decideBGPForNode(evaluateBGP({ config, state, service, ignoreExcludeLB, index }), this.p.node);
    const mine = decideL2ForNode(l2, this.p.node);
    if (bgp.decision !== 'announce') {
      this.deleteProtocol(slog.with({ protocol: 'bgp' }), 'bgp', key, bgp.decision);
    } else {
      const routes = routesFor(bgp);
      const refused = communityLimitError(routes);
      if (refused) {
        // MetalLB: a session on this node gets an advertisement with more than 63 communities;
        // frr-k8s's session refuses it, the BGP handler's SetBalancer fails, and MetalLB's
        // SetBalancer returns SyncStateError before it handles layer2 (speaker/main.go
        // handleService loop): layer2 is left as it was (not announced from scratch) and the
        // service is retried. (MetalLB also keeps the refused advertisement in svcAds, so every
        // later BGP update of every service fails too; here only this service is refused.)
        this.p.metrics.updateErrors.inc();
        slog.error({ op: 'setBalancer', protocol: 'bgp', error: refused.message, msg: 'failed to announce service' });
        this.deleteProtocol(slog.with({ protocol: 'bgp' }), 'bgp', key, 'syncError');
        const layer2: SpeakerVerdict = this.announced.layer2.has(key) ? 'announce' : mine.decision === 'announce' ? 'syncError' : mine.decision;
        this.verdicts.set(key, { bgp: 'syncError', layer2 });
        return;
      }
      const before = this.routes.get(key);
      if (!before || JSON.stringify(before) !== JSON.stringify(routes)) {
        this.routes.set(key, routes);
        this.routesVersion++;
      }
      this.announced_(slog, 'bgp', key, ips, pool, service);
      log.info({ event: 'updatedAdvertisements', service: key, numAds: routes.length, msg: 'making advertisements using BGP' });
    }
    this.verdicts.set(key, { bgp: bgp.decision, layer2: mine.decision });
    if (mine.decision !== 'announce') {
      this.deleteProtocol(slog.with({ protocol: 'layer2' }), 'layer2', key, mine.decision);
    } else {
      const local = this.p.l2.nodeInterfaces?.();
      if (local && !matchInterfaces(mine.interfaces, local)) {
        // MetalLB's layer2 SetBalancer: none of the advertisement's interfaces exists on this
        // node: a warning and an announceFailed Event per address, nothing handed to the
        // announcer (an earlier announcement of the service stays as it was), no status change;
        // main.go still counts the service announced and records nodeAssigned.
        for (const ip of ips) {
          slog.warn({ op: 'SetBalancer', protocol: 'layer2', IPAdvertisement: { ip, interfaces: mine.interfaces }, localIfs: local, msg: "the specified interfaces used to announce LB IP don't exist" });
          this.p.event(service, 'Warning', 'announceFailed', announceFailedMessage(ip, this.p.node));
        }
        if (!this.l2Interfaces.has(key)) this.l2Unmatched.add(key);
      } else {
        this.p.l2.announce(key, ips, mine.interfaces);
        this.l2Interfaces.set(key, mine.interfaces);
        this.l2Unmatched.delete(key);
      }
      this.announced_(slog, 'layer2', key, ips, pool, service);
      this.p.l2StatusChanged(key);
    }
  }

  /** Withdraws every announcement (graceful shutdown), logging `reason`. */
  withdrawAll(reason: string): void {
    for (const key of this.knownServices()) this.deleteBalancer(this.p.log, key, reason);
  }

  private announced_(log: Logger, protocol: Protocol, key: string, ips: readonly string[], pool: string | null, service: Service): void {
    const fresh = !this.announced[protocol].has(key);
    if (fresh) {
      this.announced[protocol].set(key, true);
      this.svcIPs.set(key, ips);
      this.svcPool.set(key, pool);
    }
    for (const ip of ips) this.p.metrics.announced.set({ ip, node: this.p.node, protocol, service: key }, 1); // Go prints labels sorted
    log.info({ event: 'serviceAnnounced', protocol, msg: 'service has IP, announcing' });
    // MetalLB emits this on every sync and client-go folds repeats into one Event's count; we
    // emit it when this node starts announcing the service (or its IPs) with the protocol.
    if (fresh) this.p.event(service, 'Normal', 'nodeAssigned', nodeAssignedMessage(this.p.node, protocol));
  }

  private deleteBalancer(log: Logger, key: string, reason: string): void {
    for (const protocol of PROTOCOLS) this.deleteProtocol(log, protocol, key, reason);
  }

  private deleteProtocol(log: Logger, protocol: Protocol, key: string, reason: string): void {
    if (!this.announced[protocol].has(key)) return;
    if (protocol === 'layer2') {
      this.p.l2.withdraw(key);
      this.l2Interfaces.delete(key);
      this.l2Unmatched.delete(key);
    } else if (this.routes.delete(key)) {
      this.routesVersion++;
    }
    const ips = this.svcIPs.get(key) ?? [];
    for (const ip of ips) this.p.metrics.announced.remove({ ip, node: this.p.node, protocol, service: key });
    this.announced[protocol].delete(key);
    if (protocol === 'layer2') this.p.l2StatusChanged(key);
    if (PROTOCOLS.some((p) => this.announced[p].has(key))) return;
    const fields: LogFields = { event: 'serviceWithdrawn', service: key, ip: ips, reason, msg: 'withdrawing service announcement' };
    log.info(fields);
    this.svcIPs.delete(key);
    this.svcPool.delete(key);
  }
}
