/**
 * The speaker's writes to the API server (ServiceL2Status and ServiceBGPStatus objects and their
 * status subresource, the FRRConfiguration of its node; Events go through src/kube/events.ts), through the one client to the API server (src/kube/client.ts KubeClient). Reads of
 * cluster state go through the shared ClusterStateWatcher (src/kube/live.ts), never here.
 * Failures reject with KubeClient's errors (KubeApiError with `statusCode`, or the socket's error).
 */
import { httpStatusOf, MERGE_PATCH, type KubeClient } from '../kube/client.ts';
import type { ServiceBGPStatus, ServiceL2Status } from '../core/kube.ts';
import type { BGPStatusBody } from '../core/bgp/status.ts';
import type { FRRConfiguration } from '../core/frrk8s/types.ts';
import type { L2StatusApi, L2StatusBody } from './l2status.ts';
import type { StatusApi } from './status-writer.ts';
import type { FRRConfigurationApi } from './frrk8s.ts';

const L2 = '/apis/metallb.io/v1beta1/namespaces';
const FRRK8S = '/apis/frrk8s.metallb.io/v1beta1/namespaces';
const seg = encodeURIComponent;

async function deleteIgnoringAbsent(api: KubeClient, path: string): Promise<void> {
  try {
    await api.request({ method: 'DELETE', path });
  } catch (err) {
    if (httpStatusOf(err) !== 404) throw err;
  }
}

/** StatusApi of ServiceBGPStatus over REST: POST, PATCH …/status (merge patch), DELETE (404 is fine). */
export function restBGPStatusApi(api: KubeClient): StatusApi<ServiceBGPStatus, BGPStatusBody> {
  const base = (ns: string) => `${L2}/${seg(ns)}/servicebgpstatuses`;
  return {
    create: (namespace, obj) => api.request<ServiceBGPStatus>({ method: 'POST', path: base(namespace), body: obj }),
    async patchStatus(namespace, name, status) {
      await api.request({ method: 'PATCH', path: `${base(namespace)}/${seg(name)}/status`, contentType: MERGE_PATCH, body: { status } });
    },
    delete: (namespace, name) => deleteIgnoringAbsent(api, `${base(namespace)}/${seg(name)}`),
  };
}

/** FRRConfigurationApi over REST (`frrk8s.metallb.io/v1beta1 frrconfigurations`). */
export function restFRRConfigurationApi(api: KubeClient): FRRConfigurationApi {
  const base = (ns: string) => `${FRRK8S}/${seg(ns)}/frrconfigurations`;
  return {
    async get(namespace, name) {
      try {
        return await api.request<FRRConfiguration>({ path: `${base(namespace)}/${seg(name)}` });
      } catch (err) {
        if (httpStatusOf(err) === 404) return null;
        throw err;
      }
    },
    create: (obj) => api.request<FRRConfiguration>({ method: 'POST', path: base(obj.metadata.namespace), body: obj }),
    update: (obj) => api.request<FRRConfiguration>({ method: 'PUT', path: `${base(obj.metadata.namespace)}/${seg(obj.metadata.name)}`, body: obj }),
    delete: (namespace, name) => deleteIgnoringAbsent(api, `${base(namespace)}/${seg(name)}`),
  };
}

/** L2StatusApi over REST: POST, PATCH …/status (merge patch), DELETE (404 is fine). */
export function restL2StatusApi(api: KubeClient): L2StatusApi {
  return {
    async create(namespace: string, obj: ServiceL2Status): Promise<ServiceL2Status> {
      return api.request<ServiceL2Status>({ method: 'POST', path: `${L2}/${seg(namespace)}/servicel2statuses`, body: obj });
    },
    async patchStatus(namespace: string, name: string, status: L2StatusBody): Promise<void> {
      // A merge patch replaces the interfaces list; null removes a list no longer wanted.
      await api.request({
        method: 'PATCH',
        path: `${L2}/${seg(namespace)}/servicel2statuses/${seg(name)}/status`,
        contentType: MERGE_PATCH,
        body: { status: { ...status, interfaces: status.interfaces ?? null } },
      });
    },
    delete: (namespace: string, name: string) => deleteIgnoringAbsent(api, `${L2}/${seg(namespace)}/servicel2statuses/${seg(name)}`),
  };
}
