/**
 * An informer's list and watch without the Kubernetes client library (whose ListWatch and Watch
 * load all of it: about 85 MiB per daemon, see src/kube/access.ts). Same contract as client-node's
 * ListWatch, which ClusterStateWatcher and the webhook rotator were written against:
 *
 * - start(): lists (`listFn`) unless a resourceVersion is known, reports adds, updates (a changed
 *   resourceVersion) and deletes (objects gone from the new list), then opens the watch
 *   (`?watch=true&resourceVersion=RV`, the selectors) and resolves;
 * - watch events ADDED/MODIFIED/DELETED update the cache and are reported; every event moves the
 *   resourceVersion on; an ERROR event with code 410 (Gone) or a 410 answer forgets it, so the next
 *   round lists again;
 * - the watch ending (the server's timeout), or 30 s without a byte, starts the next round
 *   (re-watch from the resourceVersion, or list after a 410), after 1 s doubling to 30 s when the
 *   previous round saw no event;
 * - any other failure (list or watch) is reported to the `error` listeners and ends the rounds:
 *   the owner calls start() again when it wants to retry.
 *
 * Objects are plain JSON as the API server sends them.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import https from 'node:https';
import type { KubeObject } from '../core/kube.ts';
import type { ClusterAccess } from './access.ts';

const http = process.getBuiltinModule('node:http');

/** A list answer as listFn gives it. */
export interface ObjectList {
  metadata?: { resourceVersion?: string };
  items: KubeObject[];
}

type Verb = 'add' | 'update' | 'delete' | 'error' | 'connect';

/** No byte for this long and the watch is closed and opened again (client-node's Watch: 30 s). */
const WATCH_IDLE_MS = 30_000;
const BASE_RECONNECT_DELAY_MS = 1000;
const MAX_RECONNECT_DELAY_MS = 30_000;

/** An error with the answer's HTTP status (`statusCode`), as client-node's Watch throws them. */
function statusError(code: number): Error {
  return Object.assign(new Error(http.STATUS_CODES[code] ?? `HTTP ${code}`), { statusCode: code });
}

/** See the module comment. */
export class ListWatch {
  private objects = new Map<string, KubeObject>();
  private readonly callbacks: Record<Verb, Array<(arg: unknown) => void>> = { add: [], update: [], delete: [], error: [], connect: [] };
  private resourceVersion = '';
  private stopped = false;
  private reconnectDelayMs = 0;
  private hasConnected = false;
  private request: ClientRequest | undefined;
  private readonly path: string;
  private readonly access: ClusterAccess;
  private readonly listFn: () => Promise<ObjectList>;
  private readonly labelSelector: string | undefined;
  private readonly fieldSelector: string | undefined;

  /** `path`: the collection (`/api/v1/services`); `access`: the server and credentials of the watch. */
  constructor(path: string, access: ClusterAccess, listFn: () => Promise<ObjectList>, labelSelector?: string, fieldSelector?: string) {
    this.path = path;
    this.access = access;
    this.listFn = listFn;
    this.labelSelector = labelSelector;
    this.fieldSelector = fieldSelector;
  }

  /** Lists (when needed) and opens the watch; resolves once the watch request is open or a failure was reported. */
  async start(): Promise<void> {
    this.stopped = false;
    this.reconnectDelayMs = 0;
    this.hasConnected = false;
    await this.round(null);
  }

  /** Closes the watch; no round starts afterwards. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort();
  }

  on(verb: 'add' | 'update' | 'delete', cb: (obj: KubeObject) => void): void;
  on(verb: 'error', cb: (err: unknown) => void): void;
  on(verb: 'connect', cb: (err: unknown) => void): void;
  on(verb: Verb, cb: (arg: never) => void): void {
    // The overloads pair each verb with its argument's type; emit passes exactly that argument.
    this.callbacks[verb].push(cb as (arg: unknown) => void);
  }

  /** Every object of the cache. */
  list(): KubeObject[] {
    return [...this.objects.values()];
  }

  private abort(): void {
    const r = this.request;
    this.request = undefined;
    r?.destroy();
  }

  private emit(verb: Verb, arg: unknown): void {
    for (const cb of this.callbacks[verb].slice()) cb(arg);
  }

  /** One round: list if needed, then watch. `err`: how the previous round ended. */
  private async round(err: unknown): Promise<void> {
    this.abort();
    const code = (err as { statusCode?: unknown; code?: unknown } | null)?.statusCode ?? (err as { code?: unknown } | null)?.code;
    if (err && code === 410) this.resourceVersion = '';
    else if (err && (err as { name?: unknown }).name === 'TimeoutError') this.reconnectDelayMs = 0;
    else if (err) {
      this.emit('error', err);
      return;
    }
    if (this.stopped) return;
    this.emit('connect', undefined);
    if (!this.resourceVersion) {
      let list: ObjectList;
      try {
        list = await this.listFn();
      } catch (e) {
        this.emit('error', e);
        return;
      }
      const fresh = new Map<string, KubeObject>();
      for (const obj of list.items ?? []) fresh.set(keyOf(obj), obj);
      for (const [k, old] of this.objects) {
        if (!fresh.has(k)) {
          this.objects.delete(k);
          this.emit('delete', old);
        }
      }
      for (const obj of list.items ?? []) this.addOrUpdate(obj);
      this.resourceVersion = list.metadata?.resourceVersion ?? '';
    }
    if (this.reconnectDelayMs > 0 && this.hasConnected) await new Promise((r) => setTimeout(r, this.reconnectDelayMs));
    if (this.hasConnected) this.reconnectDelayMs = Math.min(this.reconnectDelayMs > 0 ? this.reconnectDelayMs * 2 : BASE_RECONNECT_DELAY_MS, MAX_RECONNECT_DELAY_MS);
    this.hasConnected = true;
    if (this.stopped) return;
    try {
      await this.watch();
    } catch (e) {
      void this.round(e);
    }
  }

  private addOrUpdate(obj: KubeObject): void {
    const k = keyOf(obj);
    const found = this.objects.get(k);
    if (!found) {
      this.objects.set(k, obj);
      this.emit('add', obj);
    } else if (!(found.metadata?.resourceVersion != null && found.metadata.resourceVersion === obj.metadata?.resourceVersion)) {
      this.objects.set(k, obj);
      this.emit('update', obj);
    }
  }

  private event(type: string, obj: KubeObject & { code?: number }): void {
    switch (type) {
      case 'ERROR':
        if (obj.code === 410) this.resourceVersion = '';
        return;
      case 'ADDED':
      case 'MODIFIED':
        this.addOrUpdate(obj);
        break;
      case 'DELETED': {
        const k = keyOf(obj);
        const had = this.objects.get(k);
        this.objects.delete(k);
        if (had) this.emit('delete', obj);
        break;
      }
      default: // BOOKMARK
    }
    this.reconnectDelayMs = 0;
    this.resourceVersion = obj.metadata?.resourceVersion ?? '';
  }

  /**
   * Opens the watch request; resolves once the answer's head is there (200), rejects with a
   * `statusCode` error otherwise. The end of the stream starts the next round.
   */
  private async watch(): Promise<void> {
    const cluster = this.access.getCurrentCluster();
    if (!cluster) throw new Error('No currently active cluster');
    const url = new URL(cluster.server + this.path);
    url.searchParams.set('watch', 'true');
    url.searchParams.set('resourceVersion', this.resourceVersion);
    if (this.labelSelector !== undefined) url.searchParams.set('labelSelector', this.labelSelector);
    if (this.fieldSelector !== undefined) url.searchParams.set('fieldSelector', this.fieldSelector);
    const opts: https.RequestOptions = { method: 'GET', headers: {} };
    await this.access.applyToHTTPSOptions(opts);
    opts.headers = { ...(opts.headers as Record<string, string>), Accept: 'application/json', 'User-Agent': 'metallb-ts' };
    if (this.stopped) return;
    let ended = false;
    let timedOut = false;
    const end = (err: unknown): void => {
      if (ended) return;
      ended = true;
      if (this.request === req) this.request = undefined;
      req.destroy();
      if (this.stopped) return;
      void this.round(timedOut ? Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' }) : err);
    };
    const req = (url.protocol === 'http:' ? http : https).request(url, opts);
    this.request = req;
    req.setTimeout(WATCH_IDLE_MS, () => {
      timedOut = true;
      end(null);
    });
    await new Promise<void>((resolve, reject) => {
      req.once('error', (e) => {
        if (!ended) {
          ended = true;
          if (this.request === req) this.request = undefined;
        }
        reject(e);
      });
      req.once('close', () => {
        if (!ended) resolve();
      }); // destroyed by stop() before an answer
      req.once('response', (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          res.resume();
          ended = true;
          if (this.request === req) this.request = undefined;
          req.destroy();
          reject(statusError(res.statusCode ?? 0));
          return;
        }
        req.removeAllListeners('error');
        req.on('error', (e) => end(e));
        resolve();
        res.setEncoding('utf8');
        let buf = '';
        res.on('data', (chunk: string) => {
          buf += chunk;
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (ended) return;
            let data: { type?: string; object?: KubeObject } | undefined;
            try {
              data = JSON.parse(line);
            } catch {
              data = undefined;
            } // as client-node: a bad line is skipped
            if (data?.type && data.object) this.event(data.type, data.object);
          }
        });
        res.on('error', (e) => end(e));
        res.on('end', () => end(null));
        res.on('close', () => end(null));
      });
      req.end();
    });
  }
}

/** namespace/name of an object: the cache's key. */
function keyOf(obj: KubeObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}
