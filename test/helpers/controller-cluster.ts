/**
 * The controller loop's unit-test cluster: an in-memory API server and watcher (FakeCluster) with
 * resourceVersions, 409 on stale writes and watch events delivered asynchronously, like a real
 * one's; `run` starts a ControllerLoop on it and `settle` waits until everything is quiet.
 */
import { emptyClusterState, type ClusterState, type IPAddressPool, type KubeObject, type Service } from '../../src/core/kube.ts';
import type { ControllerEvent } from '../../src/core/controller/index.ts';
import { ControllerLoop, type ControllerLoopOptions, type StateChange, type StateSource } from '../../src/controller/loop.ts';
import { ExponentialBackoff } from '../../src/controller/queue.ts';
import { ConflictError, NotFoundError, type ControllerWriter, type PoolStatusCounts } from '../../src/controller/writer.ts';
import type { ControllerMetrics } from '../../src/controller/metrics.ts';

export const NS = 'metallb-system';

export const keyOf = (o: KubeObject): string => `${o.metadata?.namespace}/${o.metadata?.name}`;
export const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** An in-memory API server + watcher: resourceVersions, 409 on stale writes, watch events delivered asynchronously. */
export class FakeCluster implements StateSource, ControllerWriter {
  private rv = 100;
  readonly services = new Map<string, Service>();
  readonly pools = new Map<string, IPAddressPool>();
  readonly namespaces: KubeObject[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } }];
  private readonly listeners: Array<(c: StateChange) => void> = [];
  readonly events: Array<{ service: string } & ControllerEvent> = [];
  readonly serviceWrites: string[] = [];
  readonly poolWrites: Array<{ pool: string; counts: PoolStatusCounts }> = [];
  /** writes to fail, by service key: 'conflict' (another writer bumped it first) or an error */
  readonly failNext = new Map<string, Array<'conflict' | 'error'>>();
  /** when set, every pool status write fails with it (e.g. a 403 from a missing RBAC rule) */
  poolWriteError: Error | null = null;
  /** when each pool status write was attempted (ms, performance.now()) */
  readonly poolWriteAttempts: number[] = [];

  private bump<T extends KubeObject>(o: T): T {
    return { ...o, metadata: { ...o.metadata, resourceVersion: String(++this.rv) } };
  }

  private emit(c: StateChange): void {
    setImmediate(() => {
      for (const l of this.listeners) l(c);
    });
  }

  put(o: Service | IPAddressPool): void {
    const isPool = o.kind === 'IPAddressPool';
    const store = (isPool ? this.pools : this.services) as Map<string, KubeObject>;
    const old = store.get(keyOf(o));
    const stored = this.bump(o);
    if (isPool && old) stored.metadata!.generation = Number(old.metadata?.generation ?? 1) + 1;
    store.set(keyOf(o), stored);
    this.emit({ list: isPool ? 'ipAddressPools' : 'services', type: old ? 'update' : 'add', object: stored, ...(old ? { old } : {}) });
  }

  remove(list: 'services' | 'ipAddressPools', key: string): void {
    const store = (list === 'services' ? this.services : this.pools) as Map<string, KubeObject>;
    const old = store.get(key);
    if (!old) return;
    store.delete(key);
    this.emit({ list, type: 'delete', object: old });
  }

  // StateSource
  state(): ClusterState {
    return { ...emptyClusterState(), services: [...this.services.values()], ipAddressPools: [...this.pools.values()], namespaces: this.namespaces as ClusterState['namespaces'] };
  }
  onChange(cb: (c: StateChange) => void): void {
    this.listeners.push(cb);
  }

  // ControllerWriter
  async writeService(base: Service, desired: Service): Promise<Service> {
    await tick();
    const key = keyOf(base);
    const fail = this.failNext.get(key)?.shift();
    if (fail === 'error') throw new Error('HTTP 500 etcd timeout');
    if (fail === 'conflict') this.put({ ...this.services.get(key)!, metadata: { ...this.services.get(key)!.metadata, labels: { touched: 'yes' } } });
    const cur = this.services.get(key);
    if (!cur) throw new NotFoundError(`Service ${key}`);
    if (cur.metadata?.resourceVersion !== base.metadata?.resourceVersion) throw new ConflictError(`Service ${key}`);
    const stored = this.bump({ ...cur, metadata: { ...cur.metadata, annotations: desired.metadata?.annotations ?? {} }, status: desired.status ?? {} });
    this.services.set(key, stored);
    this.serviceWrites.push(key);
    this.emit({ list: 'services', type: 'update', object: stored, old: cur });
    return stored;
  }
  async readService(namespace: string, name: string): Promise<Service | null> {
    return this.services.get(`${namespace}/${name}`) ?? null;
  }
  async recordEvent(s: Service, e: ControllerEvent): Promise<void> {
    this.events.push({ service: keyOf(s), ...e });
  }
  async writePoolStatus(p: IPAddressPool, counts: PoolStatusCounts): Promise<IPAddressPool> {
    this.poolWriteAttempts.push(performance.now());
    await tick();
    if (this.poolWriteError) throw this.poolWriteError;
    const key = keyOf(p);
    const cur = this.pools.get(key)!;
    if (cur.metadata?.resourceVersion !== p.metadata?.resourceVersion) throw new ConflictError(key);
    const status = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Number(v)]));
    const stored = this.bump({ ...cur, status } as IPAddressPool);
    this.pools.set(key, stored);
    this.poolWrites.push({ pool: p.metadata!.name!, counts });
    this.emit({ list: 'ipAddressPools', type: 'update', object: stored, old: cur });
    return stored;
  }
  async readPool(namespace: string, name: string): Promise<IPAddressPool | null> {
    return this.pools.get(`${namespace}/${name}`) ?? null;
  }

  ipsOf(key: string): string[] {
    return (this.services.get(key)?.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? '');
  }
  poolOf(key: string): string | undefined {
    return this.services.get(key)?.metadata?.annotations?.['metallb.io/ip-allocated-from-pool'];
  }
}

export async function run(cluster: FakeCluster, opts: { lbClass?: string; metrics?: ControllerMetrics; settle?: boolean } & Partial<ControllerLoopOptions> = {}): Promise<ControllerLoop> {
  const { lbClass, metrics, settle: wait, ...rest } = opts;
  const loop = new ControllerLoop(cluster, cluster, {
    metallbNamespace: NS,
    poolStatusDelayMs: 1,
    backoff: new ExponentialBackoff(1, 50),
    ...(lbClass !== undefined ? { loadBalancerClass: lbClass } : {}),
    ...(metrics ? { metrics } : {}),
    ...rest,
  });
  loop.start();
  if (wait !== false) await settle(loop);
  return loop;
}

/** Waits until the loop is idle and no watch event is in flight. */
export async function settle(loop: ControllerLoop): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await loop.whenIdle();
    await tick(2);
  }
  await loop.whenIdle();
}
