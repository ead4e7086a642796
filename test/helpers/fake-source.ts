/**
 * A cluster watch without an API server, for the speaker's unit tests: a ClusterState that tests
 * change with `put`, reporting each change to the listeners as ClusterStateWatcher would.
 */
import { clusterStateFromObjects, KIND_TO_LIST, type ClusterState, type KubeObject } from '../../src/core/kube.ts';
import type { StateChange, StateSource } from '../../src/speaker/speaker.ts';

export class FakeSource implements StateSource {
  st: ClusterState;
  private cbs: Array<(c: StateChange) => void> = [];
  constructor(objects: KubeObject[]) {
    this.st = clusterStateFromObjects(objects);
  }
  async start(): Promise<void> {}
  stop(): void {}
  state(): ClusterState {
    return this.st;
  }
  onChange(cb: (c: StateChange) => void): void {
    this.cbs.push(cb);
  }
  /** Adds or replaces `obj` (same kind, namespace and name), or deletes it, and reports the change. */
  put(obj: KubeObject, del = false): void {
    const list = KIND_TO_LIST[obj.kind as keyof typeof KIND_TO_LIST];
    if (!list) throw new Error(`FakeSource: no ClusterState list for kind ${obj.kind}`);
    const arr = this.st[list] as KubeObject[];
    const i = arr.findIndex((o) => o.metadata?.name === obj.metadata?.name && o.metadata?.namespace === obj.metadata?.namespace);
    const old = i >= 0 ? arr[i] : undefined;
    const next = arr.filter((_, j) => j !== i);
    if (!del) next.push(obj);
    this.st = { ...this.st, [list]: next };
    const change: StateChange = { list, type: del ? 'delete' : old ? 'update' : 'add', object: obj };
    if (old) change.old = old;
    for (const cb of this.cbs) cb(change);
  }
}
