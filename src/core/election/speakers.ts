/**
 * Which speakers are alive, as far as a ClusterState can tell. In a cluster MetalLB asks memberlist;
 * from a snapshot the best evidence is the speaker pods' Ready condition.
 */
import type { ClusterState, Pod } from '../kube.ts';

/** Whether a pod is a MetalLB speaker: label `component=speaker` or `app.kubernetes.io/component=speaker`. */
export function isSpeakerPod(pod: Pod): boolean {
  const l = pod.metadata?.labels;
  return !!l && (l['component'] === 'speaker' || l['app.kubernetes.io/component'] === 'speaker');
}

/**
 * The default speaker list for `explain`: the names of the nodes (`spec.nodeName`) whose speaker
 * pod has condition Ready=True, sorted and unique, when the state holds speaker pods (any
 * namespace); null when it holds none — then the election treats every Node as having a live
 * speaker, as MetalLB does with memberlist disabled. Pure; never throws.
 */
export function aliveSpeakers(state: Pick<ClusterState, 'pods'>): string[] | null {
  const speakers = state.pods.filter(isSpeakerPod);
  if (speakers.length === 0) return null;
  const alive = new Set<string>();
  for (const pod of speakers) {
    const node = pod.spec?.nodeName;
    if (!node) continue;
    if ((pod.status?.conditions ?? []).some((c) => c?.type === 'Ready' && c.status === 'True')) alive.add(node);
  }
  return [...alive].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
