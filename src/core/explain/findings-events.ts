import type { Finding } from './types.ts';
import { parseNodeAssigned, type SpeakerEventReason } from '../speaker/events.ts';
import { list, type FindingsInput } from './findings-input.ts';

/**
 * The speaker's announceFailed Events of the Service on the node that announces it now (MetalLB's
 * layer2 SetBalancer: none of the interfaces the L2Advertisement names exists on that node, so
 * nothing answers ARP/NDP there although the election picked it): finding `announce-failed`,
 * naming the interfaces the node would need. Offline, the node's interfaces are unknown: only the
 * Event tells. Events of an earlier Service of the same name (another uid) are left out.
 */
export function announceFailedFindings(f: FindingsInput, out: Finding[]): void {
  if (f.announcer === null) return;
  const [ns, name] = f.service.split('/');
  const uid = f.serviceObject.metadata?.uid;
  const failed = f.state.events.filter(
    (e) =>
      e.reason === ('announceFailed' satisfies SpeakerEventReason)
      && e.involvedObject?.kind === 'Service'
      && e.involvedObject.namespace === ns
      && e.involvedObject.name === name
      && !(uid && e.involvedObject.uid && e.involvedObject.uid !== uid)
      && (e.message ?? '').includes(`in assigned node "${f.announcer}"`),
  );
  if (failed.length === 0) return;
  const at = failed.map((e) => e.lastTimestamp ?? e['eventTime'] ?? e.metadata?.creationTimestamp).find((t) => t !== undefined);
  const ifs = f.l2?.nodes.find((n) => n.node === f.announcer)?.interfaces;
  const names = Array.isArray(ifs) ? ifs.join(', ') : 'the listed interfaces';
  out.push({
    id: 'announce-failed',
    severity: 'error',
    message: `the speaker on ${f.announcer}, which the election picks, reports announceFailed${at ? ` (${String(at)})` : ''}: none of the interfaces its L2Advertisements name (${names}) exists on that node, so nothing answers ARP/NDP for the address`,
    fix: `add ${f.announcer}'s interface to spec.interfaces of ${f.l2?.advertisements.map((a) => `L2Advertisement ${f.metallbNamespace}/${a}`).join(', ') || 'the L2Advertisement'}, or restrict its nodeSelectors to nodes that have ${names}`,
  });
}

/** The node a Layer 2 nodeAssigned message names, or null (see parseNodeAssigned). */
function l2NodeAssigned(message: string | undefined): string | null {
  const m = parseNodeAssigned(message ?? '');
  return m?.protocol === 'layer2' ? m.node : null;
}

/**
 * The Service's newest `nodeAssigned` event (the speaker emits it on every L2 announce; events
 * are history, kept an hour) against the election's winner: finding `nodeassigned-event-disagrees`.
 */
export function nodeAssignedEventFindings(f: FindingsInput, out: Finding[]): void {
  const [ns, name] = f.service.split('/');
  const uid = f.serviceObject.metadata?.uid;
  const when = (e: (typeof f.state.events)[number]): number => Date.parse(String(e.lastTimestamp ?? e['eventTime'] ?? e.metadata?.creationTimestamp ?? '')) || 0;
  const events = f.state.events.filter(
    (e) =>
      e.reason === ('nodeAssigned' satisfies SpeakerEventReason)
      && e.involvedObject?.kind === 'Service'
      && e.involvedObject.namespace === ns
      && e.involvedObject.name === name
      && !(uid && e.involvedObject.uid && e.involvedObject.uid !== uid)
      && l2NodeAssigned(e.message) !== null,
  );
  if (events.length === 0) return;
  const latest = events.reduce((a, b) => (when(b) >= when(a) ? b : a));
  const node = l2NodeAssigned(latest.message)!;
  if (node === f.announcer) return;
  const at = latest.lastTimestamp ?? latest['eventTime'] ?? latest.metadata?.creationTimestamp;
  out.push({
    id: 'nodeassigned-event-disagrees',
    severity: 'info',
    message: `the newest nodeAssigned event${at ? ` (${String(at)})` : ''} says ${node} announces the Service, but the election gives ${f.announcer ?? 'nobody'}`,
    fix: 'events are history: if the election changed since, the speakers may not have caught up yet; compare the ServiceL2Status objects and the speaker logs',
  });
}

export function statusFindings(f: FindingsInput, out: Finding[]): void {
  const [ns, name] = f.service.split('/');
  const statuses = f.state.serviceL2Statuses.filter((s) => s.status?.serviceNamespace === ns && s.status?.serviceName === name);
  const claimed = [...new Set(statuses.map((s) => s.status?.node).filter((n): n is string => !!n))];
  const others = claimed.filter((n) => n !== f.announcer);
  if (others.length > 0 || (f.announcer && statuses.length > 0 && !claimed.includes(f.announcer))) {
    out.push({
      id: 'l2status-disagrees',
      severity: 'warning',
      message: `ServiceL2Status says ${list(claimed) || 'nobody'} announces the Service, but the election gives ${f.announcer ?? 'nobody'}`,
      fix: 'the snapshot may be stale or the speakers disagree on who is alive (memberlist); compare `metallb-ts explain` live with the speaker logs',
    });
  }
}
