/**
 * The speaker's Events on Services, through client-go's recorder as MetalLB's speaker gets it from
 * controller-runtime (`GetEventRecorderFor("metallb-speaker")`): source component
 * `metallb-speaker` and no host, identical events of a burst folded into one Event whose count
 * grows (src/kube/events.ts). Best effort: a failed write is logged, never retried forever.
 */
import type { Service } from '../core/kube.ts';
import { EventRecorder, kubeEventSink, type EventSink as KubeEventSink } from '../kube/events.ts';
import type { KubeClient } from '../kube/client.ts';
import type { EventSink } from './controller.ts';
import type { Logger } from '../runtime/log.ts';

/** The component name MetalLB's speaker records events as. */
export const SPEAKER_COMPONENT = 'metallb-speaker';

/** The speaker's recorder: `sink` is the controller's EventSink; `idle()`/`close()` wait for the queue. */
export class SpeakerEvents {
  readonly recorder: EventRecorder;
  readonly sink: EventSink;

  /** `api`: a KubeClient (writes to the API server) or an EventSink of src/kube/events.ts (tests). */
  constructor(api: KubeClient | KubeEventSink, log: Logger, now?: () => number) {
    const sink = 'request' in api ? kubeEventSink(api) : api;
    this.recorder = new EventRecorder(sink, {
      component: SPEAKER_COMPONENT,
      ...(now ? { now } : {}),
      onError: (err, ev, what) =>
        log.error({
          op: 'recordEvent',
          reason: ev.reason,
          service: `${ev.involvedObject.namespace}/${ev.involvedObject.name}`,
          what,
          error: err instanceof Error ? err.message : String(err),
          msg: 'failed to record event',
        }),
    });
    this.sink = (service: Service, type, reason, message) => this.recorder.record({ apiVersion: 'v1', kind: 'Service', metadata: service.metadata ?? {} }, type, reason, message);
  }

  /** Resolves when every queued event was written (or given up). */
  idle(): Promise<void> {
    return this.recorder.idle();
  }

  /** Drops later events; waits for the write in flight. */
  close(): Promise<void> {
    return this.recorder.close();
  }
}
