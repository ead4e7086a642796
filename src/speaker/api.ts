/**
 * The speaker's writes to the API server (ServiceL2Status objects and their status subresource,
 * Events), through the one client to the API server (src/kube/client.ts KubeClient). Reads of
 * cluster state go through the shared ClusterStateWatcher (src/kube/live.ts), never here.
 * Failures reject with KubeClient's errors (KubeApiError with `statusCode`, or the socket's error).
 */
import { httpStatusOf, MERGE_PATCH, type KubeClient } from '../kube/client.ts';
import type { ServiceL2Status } from '../core/kube.ts';
import type { L2StatusApi, L2StatusBody } from './l2status.ts';

const L2 = '/apis/metallb.io/v1beta1/namespaces';
const seg = encodeURIComponent;

/** L2StatusApi over REST: POST, PATCH …/status (merge patch), DELETE (404 is fine). */
export function restL2StatusApi(api: KubeClient): L2StatusApi {
  return {
    async create(namespace: string, obj: ServiceL2Status): Promise<ServiceL2Status> {
      return api.request<ServiceL2Status>({ method: 'POST', path: `${L2}/${seg(namespace)}/servicel2statuses`, body: obj });
    },
    async patchStatus(namespace: string, name: string, status: L2StatusBody): Promise<void> {
      // A merge patch replaces the interfaces list; null removes a list no longer wanted.
      await api.request({
        method: 'PATCH', path: `${L2}/${seg(namespace)}/servicel2statuses/${seg(name)}/status`, contentType: MERGE_PATCH,
        body: { status: { ...status, interfaces: status.interfaces ?? null } },
      });
    },
    async delete(namespace: string, name: string): Promise<void> {
      try {
        await api.request({ method: 'DELETE', path: `${L2}/${seg(namespace)}/servicel2statuses/${seg(name)}` });
      } catch (err) {
        if (httpStatusOf(err) !== 404) throw err;
      }
    },
  };
}

/** A core/v1 Event as client-go's recorder writes it. */
export interface CoreEvent {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  involvedObject: { apiVersion?: string; kind: string; namespace?: string; name: string; uid?: string; resourceVersion?: string };
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
  source: { component: string; host?: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  reportingComponent: string;
  reportingInstance: string;
}

/** Creates a core/v1 Event in its namespace. */
export async function createEvent(api: KubeClient, ev: CoreEvent): Promise<void> {
  await api.request({ method: 'POST', path: `/api/v1/namespaces/${seg(ev.metadata.namespace)}/events`, body: ev });
}
