/**
 * What explain's findings read (FindingsInput), and the small text helpers the findings files share.
 */
import type { Config, Pool } from '../config/types.ts';
import type { PoolOutcome } from '../controller/index.ts';
import type { L2Election } from '../election/types.ts';
import type { ClusterState, KubeObject, Service } from '../kube.ts';
import type { BGPView } from './bgp.ts';
import type { AllocationView, ConfigurationView, FixHint, NodeView, SpeakersSource } from './types.ts';
import type { SpeakerConfigs } from './speakers.ts';

/** What findingsFor reads: the explanation's parts plus the snapshot. */
export interface FindingsInput {
  readonly service: string;
  readonly serviceObject: Service;
  readonly mode: 'layer2' | 'bgp' | 'layer2+bgp' | 'none';
  readonly allocation: AllocationView;
  /** Who runs which configuration, and what the components report (their ConfigurationStates). */
  readonly configuration: ConfigurationView;
  readonly nodes: readonly NodeView[];
  readonly announcer: string | null;
  /** The first node of the L2 hash order (the announcer, unless its speaker rejects its configuration). */
  readonly hashWinner: string | null;
  readonly bgpAnnouncers: readonly string[];
  readonly speakers: { readonly source: SpeakersSource; readonly nodes: readonly string[] | null };
  readonly l2: L2Election | null;
  readonly bgp: BGPView | null;
  readonly state: ClusterState;
  /** The Service's pool in an accepting speaker's configuration (its L2Advertisements), if any. */
  readonly pool: Pool | undefined;
  readonly speakerConfigs: SpeakerConfigs;
  readonly ifFixed: FixHint | null;
  readonly metallbNamespace: string;
  readonly ignoreExcludeLB: boolean;
  /** metallb.io objects outside MetalLB's namespace (MetalLB never sees them). */
  readonly ignoredObjects: readonly KubeObject[];
  /** The controller's configuration (its pools: what a fix may point to). */
  readonly controllerConfig: Config;
  /** The dry run's pool figures (which pools still have room). */
  readonly dryRunPools: readonly PoolOutcome[];
  /** The passes the dry run ran when it stopped at its limit with a Service still asking for more; null when it converged. */
  readonly passLimit: number | null;
}

/** Names joined with commas; past `max`, the first ones and a count. */
export function list(names: Iterable<string>, max = 20): string {
  const xs = [...names];
  return xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`;
}

/** The node names of `nodes`, or "every node" when they are all of `all`. */
export function nodesText(nodes: readonly string[], all: number): string {
  return nodes.length === all && all > 1 ? `every node (${all})` : list(nodes);
}
