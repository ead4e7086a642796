import type { ClusterState } from '../core/kube.ts';
import type { Logger } from '../runtime/log.ts';
import type { ControllerMetrics } from './metrics.ts';
import type { ExponentialBackoff, Clock } from './queue.ts';
import type { ClusterStateChange } from '../kube/live.ts';

/** One change of the watched state (ClusterStateWatcher's: `add`, `update` with `old`, `delete`). */
export type StateChange = ClusterStateChange;

/** Where the loop reads the cluster: a synced watcher (src/kube/live.ts) or a fake in tests. */
export interface StateSource {
  /** the current state (the lists are read, never modified) */
  state(): ClusterState;
  /** subscribes to changes; called synchronously for every change after the initial sync */
  onChange(cb: (change: StateChange) => void): unknown;
}

/** Queue key of a full pass over every Service (MetalLB's reload event `metallbreload/reload`). */
export const RELOAD_KEY = 'metallbreload/reload';
/** Queue key of a configuration (re)load. */
export const CONFIG_KEY = 'metallbconfig/config';

/** Options of ControllerLoop. */
export interface ControllerLoopOptions {
  /** where the IPAddressPools and Communities live (MetalLB's `--namespace`) */
  metallbNamespace: string;
  /** MetalLB's `--lb-class`; "" (default): only Services without `spec.loadBalancerClass` */
  loadBalancerClass?: string;
  logger?: Logger;
  metrics?: ControllerMetrics;
  clock?: Clock;
  /** Service writes in flight at once (default 16) */
  writeConcurrency?: number;
  /** attempts of one Service write on 409 conflicts before giving up to the backoff (default 5) */
  conflictRetries?: number;
  /** delay before pool status and gauges are refreshed after a change, in ms (default 100) */
  poolStatusDelayMs?: number;
  /** backoff of failed keys (default controller-runtime's: 5 ms doubling to 1000 s) */
  backoff?: ExponentialBackoff;
  /** backoff of failed pool status writes, per pool (default controller-runtime's, as MetalLB's PoolStatusReconciler) */
  poolStatusBackoff?: ExponentialBackoff;
  /**
   * The outcome of every configuration load (MetalLB's PoolReconciler reportCondition): null when
   * the configuration parsed (changed or not), else MetalLB's error text. The command writes it
   * to the ConfigurationState `controller`.
   */
  onConfigResult?: (error: string | null) => void;
  /**
   * Called each time the Service writes allowed in flight grow (WRITES_IN_FLIGHT_AT_START, one more
   * per WRITES_PER_MORE_IN_FLIGHT done, up to writeConcurrency), with the new number: the command
   * sizes the API client's connection pool by it.
   */
  onWriteLimit?: (limit: number) => void;
}

/** Figures the loop keeps for tests and the bench. */
export interface LoopStats {
  reconciles: number;
  reloads: number;
  serviceWrites: number;
  conflicts: number;
  writeErrors: number;
  events: number;
  poolStatusWrites: number;
  poolStatusErrors: number;
  configLoads: number;
  configErrors: number;
  /** Services found rewriting themselves forever (see WriteHistory) */
  cycles: number;
}

/** Every LoopStats counter at zero. */
export function newLoopStats(): LoopStats {
  return { reconciles: 0, reloads: 0, serviceWrites: 0, conflicts: 0, writeErrors: 0, events: 0, poolStatusWrites: 0, poolStatusErrors: 0, configLoads: 0, configErrors: 0, cycles: 0 };
}
