/**
 * Kubernetes Events on Services, as client-go's recorder writes them for MetalLB's speaker
 * (`source.component: metallb-speaker`, `source.host`: the node): a core/v1 Event named
 * `<service>.<hex nanoseconds>` in the Service's namespace. Writes are queued and sent one at a
 * time; a failed write is logged and dropped (Events are best effort, as in client-go).
 */
import type { Service } from '../core/kube.ts';
import type { CoreEvent } from './api.ts';
import type { EventSink } from './controller.ts';
import type { Logger } from '../log.ts';

/** The component name MetalLB's speaker records events as. */
export const SPEAKER_COMPONENT = 'metallb-speaker';

/** Builds the Event client-go would write for `service` (pure). `nowMs` in ms since the epoch. */
export function serviceEvent(service: Service, node: string, type: 'Normal' | 'Warning', reason: string, message: string, nowMs: number, seq = 0): CoreEvent {
  const ts = new Date(Math.floor(nowMs / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  const name = service.metadata?.name ?? '';
  const namespace = service.metadata?.namespace ?? 'default';
  const nanos = BigInt(Math.floor(nowMs)) * 1_000_000n + BigInt(seq % 1_000_000);
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${name}.${nanos.toString(16)}`, namespace },
    involvedObject: {
      apiVersion: 'v1', kind: 'Service', namespace, name,
      ...(service.metadata?.uid ? { uid: service.metadata.uid } : {}),
      ...(service.metadata?.resourceVersion ? { resourceVersion: service.metadata.resourceVersion } : {}),
    },
    reason,
    message,
    type,
    source: { component: SPEAKER_COMPONENT, host: node },
    firstTimestamp: ts,
    lastTimestamp: ts,
    count: 1,
    reportingComponent: SPEAKER_COMPONENT,
    reportingInstance: node,
  };
}

/** A queue of Event writes: `sink` is the controller's EventSink, `idle()` waits for the queue. */
export class EventRecorder {
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  private seq = 0;
  private closed = false;
  readonly sink: EventSink;

  constructor(node: string, write: (ev: CoreEvent) => Promise<void>, log: Logger, now: () => number = Date.now) {
    this.sink = (service, type, reason, message) => {
      if (this.closed) return;
      const ev = serviceEvent(service, node, type, reason, message, now(), this.seq++);
      this.pending++;
      this.chain = this.chain
        .then(() => write(ev))
        .catch((err: unknown) => log.error({ op: 'recordEvent', reason, service: `${ev.metadata.namespace}/${ev.involvedObject.name}`, error: err instanceof Error ? err.message : String(err), msg: 'failed to record event' }))
        .finally(() => { this.pending--; });
    };
  }

  /** Number of Event writes not finished. */
  get queued(): number {
    return this.pending;
  }

  /** Resolves when every queued write has finished. */
  async idle(): Promise<void> {
    await this.chain;
  }

  /** Drops later events; waits for the queued ones. */
  async close(): Promise<void> {
    this.closed = true;
    await this.idle();
  }
}
