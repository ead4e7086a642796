/**
 * Which MetalLB component rejects each configuration error (`validate`). The admission webhook
 * judges the whole cluster's configuration, but the running components each parse their own part:
 * the controller the IPAddressPools and Communities, the speaker of node N everything of MetalLB's
 * namespace minus the BGPPeers and BGPAdvertisements whose nodeSelectors do not select N. So an
 * error can stop the controller and every speaker, the speakers of some nodes only, or nothing
 * that runs (a BGPAdvertisement that selects no node is validated by no speaker: only the webhook
 * would have refused to create it).
 */
import { collectConfigErrors } from '../config/index.ts';
import type { ConfigError } from '../errors.ts';
import { DEFAULT_METALLB_NAMESPACE, type ClusterState } from '../kube.ts';
import { compareStrings } from '../labels.ts';
import { controllerConfigState, metallbView } from './context.ts';
import { speakerConfigs, speakerErrors, type SpeakerConfigs } from './speakers.ts';

/** One configuration error and who rejects the configuration because of it. */
export interface Rejection {
  readonly error: ConfigError;
  /** The controller rejects it (it keeps allocating with the configuration it accepted last). */
  readonly controller: boolean;
  /**
   * The speakers that reject it: `all` (every Node's), the node names (sorted; empty: none), or
   * null when the snapshot has no Node object to tell.
   */
  readonly speakers: 'all' | readonly string[] | null;
}

/** The errors of the configuration with the components that reject it, and the speakers' configurations. */
export interface ConfigRejections {
  /**
   * The whole cluster's errors (collectConfigErrors, what the webhook judges) in their order,
   * then the errors only a component raises (e.g. the frr-k8s peer compatibility check).
   */
  readonly rejections: readonly Rejection[];
  readonly speakerConfigs: SpeakerConfigs;
}

/** Errors of different parses compare equal when they name the same object and say the same (list positions aside). */
function keyOf(e: ConfigError): string {
  return e.message.replace(/advertisements \d+ and \d+ are equal/g, 'advertisements # and # are equal');
}

/**
 * Every configuration error of `state` with the components that reject it. Pure; never throws
 * for a bad configuration.
 */
export function configRejections(state: ClusterState, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): ConfigRejections {
  const entries = new Map<string, { error: ConfigError; controller: boolean; speakers: Set<string> }>();
  const entry = (e: ConfigError) => {
    const k = keyOf(e);
    let x = entries.get(k);
    if (!x) entries.set(k, (x = { error: e, controller: false, speakers: new Set() }));
    return x;
  };
  for (const e of collectConfigErrors(metallbView(state, metallbNamespace).state)) entry(e);
  for (const e of collectConfigErrors(controllerConfigState(state, metallbNamespace))) entry(e).controller = true;
  const nodes = state.nodes.map((n) => n.metadata?.name ?? '').filter(Boolean);
  const configs = speakerConfigs(state, nodes, metallbNamespace);
  for (const g of configs.groups) {
    if (g.status === 'noNode') continue;
    for (const e of speakerErrors(state, g, metallbNamespace)) {
      let targets = [entry(e)];
      if (!g.result.ok && g.result.stage === 'nodeFilter' && e === g.result.error) {
        // The node filter's own wording; the parser's error on the same selector says the same thing.
        const same = [...entries.values()].filter((x) => x.error.object === e.object && /nodeSelectors/.test(x.error.message));
        if (same.length > 0) {
          entries.delete(keyOf(e));
          targets = same;
        }
      }
      for (const t of targets) for (const n of g.nodes) t.speakers.add(n);
    }
  }
  const total = new Set(nodes).size;
  const rejections = [...entries.values()].map(
    (x): Rejection => ({
      error: x.error,
      controller: x.controller,
      speakers: total === 0 ? null : x.speakers.size === total ? 'all' : [...x.speakers].sort(compareStrings),
    }),
  );
  return { rejections, speakerConfigs: configs };
}

/** One line: who rejects it (`the controller and every speaker`, `the speakers of node-a`, `no running component: ...`). */
export function rejectedByText(r: Pick<Rejection, 'controller' | 'speakers'>, max = 5): string {
  const s = r.speakers;
  const speakers =
    s === null
      ? 'the speakers (no Node in the snapshot to tell which)'
      : s === 'all'
        ? 'every speaker'
        : s.length === 0
          ? ''
          : `the speaker${s.length === 1 ? '' : 's'} of ${s.length <= max ? s.join(', ') : `${s.slice(0, max).join(', ')} and ${s.length - max} more`}`;
  if (r.controller) return speakers ? `the controller and ${speakers}` : 'the controller';
  if (speakers) return `${speakers} (the controller accepts it)`;
  return "no running component: only the admission webhook refuses it (no speaker's configuration contains it)";
}
