/**
 * The speaker's "nobody announces" report (metallb-ts's addition; MetalLB v0.16.1 leaves a
 * debug-level log line): when no node announces an address a Service holds, exactly one speaker
 * of the cluster — reportingSpeaker: the first live speaker in name order — records a Warning
 * Event `notAnnounced` on the Service with the reason (src/core/speaker/unannounced.ts), logs it
 * at warn level and sets the gauge `metallb_speaker_unannounced{service,ip}` to 1. The other
 * speakers stay silent. An Event is asked for when the condition starts or its reason changes;
 * the recorder folds repeats (a speaker restart, a new reporter) into the same Event's count.
 *
 * The speaker feeds it the L2 election of every Service it reconciles (SpeakerController's
 * `elected` port); the BGP side is evaluated with the whole cluster's BGPPeers and
 * BGPAdvertisements (the speaker's own configuration holds only those selecting its node).
 */
import { diagnosticConfig } from '../core/explain/context.ts';
import { evaluateBGP } from '../core/election/index.ts';
import type { L2Election } from '../core/election/types.ts';
import type { Config } from '../core/config/types.ts';
import type { Service } from '../core/kube.ts';
import { reportingSpeaker, unannouncedService, type Unannounced } from '../core/speaker/unannounced.ts';
import type { EventSink, SyncContext } from './controller.ts';
import type { Logger } from '../runtime/log.ts';
import type { Gauge } from 'prom-client';
import type { SpeakerEventReason } from '../core/speaker/events.ts';

/** The Event reason of the report. */
export const UNANNOUNCED_REASON = 'notAnnounced' satisfies SpeakerEventReason;

/** What the reporter needs. */
export interface UnannouncedOptions {
  readonly node: string;
  /** MetalLB's namespace (the whole-cluster BGP view reads its CRs). */
  readonly namespace: string;
  readonly event: EventSink;
  readonly log: Logger;
  /** `metallb_speaker_unannounced{service,ip}` */
  readonly gauge: Gauge<'service' | 'ip'>;
  /** false: `--no-unannounced-events` (the log line and the gauge stay) */
  readonly events: boolean;
  readonly ignoreExcludeLB: boolean;
}

/** See module doc. One per speaker; driven by the Speaker's sync pass. */
export class UnannouncedReporter {
  private readonly o: UnannouncedOptions;
  /** service → the report in force (on the reporting speaker only) */
  private readonly reported = new Map<string, Unannounced>();
  /**
   * elections of the current pass not yet judged, by service: service() takes its own out, so
   * that a pass does not hold every Service's election (one decision per Node object each) until
   * it ends: at 1,000 Services and 100 Nodes, 11 MiB promoted out of V8's young generation and a
   * peak above MetalLB's (issue #14)
   */
  private readonly elections = new Map<string, L2Election>();
  private reporter = false;
  private clusterConfig: Config | null = null;
  private clusterConfigRead = false;

  constructor(opts: UnannouncedOptions) {
    this.o = opts;
  }

  /** SpeakerController's `elected` port: the L2 election of a service in this pass. */
  elected(key: string, l2: L2Election): void {
    this.elections.set(key, l2);
  }

  /** Whether this speaker is the one reporting (as of the last pass). */
  get isReporter(): boolean {
    return this.reporter;
  }

  /**
   * Starts a pass: works out whether this speaker reports, and drops every report (and its gauge)
   * when it no longer does. `configChanged`: the whole-cluster BGP view is rebuilt.
   */
  begin(ctx: SyncContext | null, configChanged: boolean): void {
    this.elections.clear();
    if (!ctx) return;
    const nodes = ctx.index.nodeNames;
    const reporter = reportingSpeaker(ctx.speakers, nodes) === this.o.node;
    if (reporter !== this.reporter) {
      this.reporter = reporter;
      if (!reporter) for (const key of [...this.reported.keys()]) this.clear(key, true);
      this.o.log.info({ op: 'unannounced', node: this.o.node, reporter, msg: reporter ? 'this speaker reports services nobody announces' : 'another speaker reports services nobody announces' });
    }
    if (configChanged || !this.clusterConfigRead) {
      this.clusterConfigRead = true;
      try {
        this.clusterConfig = diagnosticConfig(ctx.state, this.o.namespace).config;
      } catch {
        this.clusterConfig = null; // a broken BGP object elsewhere: BGP is not judged
      }
    }
  }

  /** After the controller reconciled `key` (svc null: deleted or not ours). */
  service(key: string, svc: Service | null, ctx: SyncContext | null): void {
    const l2 = this.elections.get(key);
    this.elections.delete(key);
    if (!this.reporter || !svc || !ctx || !l2) {
      this.clear(key);
      return;
    }
    const pool = l2.pool ? ctx.config.pools.get(l2.pool) : undefined;
    const clusterPool = l2.pool ? this.clusterConfig?.pools.get(l2.pool) : undefined;
    const hasBGP = !!(clusterPool ?? pool)?.bgpAdvertisements.length;
    const bgp = hasBGP && this.clusterConfig ? evaluateBGP({ config: this.clusterConfig, state: ctx.state, service: svc, ignoreExcludeLB: this.o.ignoreExcludeLB, index: ctx.index }) : null;
    const found = unannouncedService({ l2, pool, bgp, hasBGP, speakers: ctx.speakers });
    if (!found) {
      this.clear(key);
      return;
    }
    const before = this.reported.get(key);
    if (before && before.message === found.message) return;
    if (before) for (const ip of before.ips) this.o.gauge.remove({ service: key, ip });
    this.reported.set(key, found);
    for (const ip of found.ips) this.o.gauge.set({ service: key, ip }, 1);
    this.o.log.warn({ op: 'unannounced', service: key, ips: found.ips, pool: found.pool, reason: found.reason, msg: 'no node announces the service' });
    if (this.o.events) this.o.event(svc, 'Warning', UNANNOUNCED_REASON, found.message);
  }

  /** The reports in force, by service (tests, debugging). */
  reports(): ReadonlyMap<string, Unannounced> {
    return this.reported;
  }

  private clear(key: string, quiet = false): void {
    const before = this.reported.get(key);
    if (!before) return;
    for (const ip of before.ips) this.o.gauge.remove({ service: key, ip });
    this.reported.delete(key);
    if (!quiet) this.o.log.info({ op: 'unannounced', service: key, msg: 'the service is announced again (or no longer holds an address)' });
  }
}
