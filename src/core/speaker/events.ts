/**
 * The Events the speaker records on a Service, spelled once: their reasons as a typed union and the
 * nodeAssigned message both written (src/speaker/controller.ts) and read back (explain's findings
 * and flapping report) from here, so that a rename fails the type check instead of silently
 * switching a finding off. Pure.
 */

/**
 * The reasons of the speaker's Service Events: `nodeAssigned` (MetalLB v0.16.1 speaker/main.go,
 * Normal, when the node announces the Service), `announceFailed` (speaker/layer2_controller.go,
 * Warning, an L2Advertisement's interfaces missing on the node), and metallb-ts's `notAnnounced`
 * (Warning: no node announces an address the Service holds; src/speaker/unannounced.ts).
 */
export type SpeakerEventReason = 'nodeAssigned' | 'announceFailed' | 'notAnnounced';

/** The announcement protocols a nodeAssigned message names (MetalLB's config.Layer2 / config.BGP). */
export type AnnounceProtocol = 'layer2' | 'bgp';

/**
 * The nodeAssigned message as MetalLB formats it (`announcing from node %q with protocol %q`):
 * `announcing from node "node-a" with protocol "layer2"`. Node names are DNS labels, so Go's %q
 * quoting is plain double quotes here.
 */
export function nodeAssignedMessage(node: string, protocol: AnnounceProtocol): string {
  return `announcing from node "${node}" with protocol "${protocol}"`;
}

const NODE_ASSIGNED = /^announcing from node "([^"]*)" with protocol "([^"]*)"/;

/**
 * The node and protocol of a nodeAssigned message (nodeAssignedMessage's inverse); null when the
 * text is not one (another speaker's wording, an empty note).
 */
export function parseNodeAssigned(message: string): { readonly node: string; readonly protocol: string } | null {
  const m = NODE_ASSIGNED.exec(message);
  return m ? { node: m[1]!, protocol: m[2]! } : null;
}

/**
 * The announceFailed message MetalLB records when the interfaces an L2Advertisement names for the
 * address do not exist on the node elected to announce it (layer2_controller.go SetBalancer:
 * `the interfaces specified by LB IP %q doesn't exist in assigned node %q with protocol %q`).
 */
export function announceFailedMessage(ip: string, node: string): string {
  return `the interfaces specified by LB IP "${ip}" doesn't exist in assigned node "${node}" with protocol "layer2"`;
}
