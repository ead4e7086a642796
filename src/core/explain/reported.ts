/**
 * What MetalLB's components report about their configuration, next to what the snapshot's
 * configuration makes them do. MetalLB v0.16.1 writes a ConfigurationState per component in its
 * namespace — `controller` and `speaker-<node>` — with `status.result` Valid, Invalid or Unknown and
 * an `errorSummary`, after every configuration load. metallb-ts computes, from the same snapshot,
 * whether the controller and each node's speaker accept the configuration (controllerConfig,
 * speakerConfigs). Where the two disagree, the components run another configuration than the
 * snapshot's: the snapshot is newer than their last load (or older than the state objects), a
 * component has not reloaded, or it stopped reporting.
 */
import type { ClusterState, ConfigurationStateObject } from '../kube.ts';
import type { SpeakerConfigs } from './speakers.ts';

/** How a report compares with the computation. */
export type ReportAgreement =
  /** Valid and accepted, or Invalid and rejected with the same error. */
  | 'agrees'
  /** Invalid and rejected, but MetalLB reports another error: it loaded another configuration. */
  | 'otherError'
  /** Valid while the snapshot's configuration is rejected there, or Invalid while it is accepted. */
  | 'disagrees'
  /** Nothing to compare: result Unknown (or absent), or no Node of that name in the snapshot. */
  | 'unknown';

/** One ConfigurationState and the comparison (`configuration.reported[]` of `explain -o json`, `reported[]` of `validate -o json`). */
export interface ReportedConfiguration {
  /** The object's name: `controller` or `speaker-<node>`. */
  readonly name: string;
  readonly component: 'controller' | 'speaker';
  /** The speaker's node (label `metallb.io/node-name`, else the name after `speaker-`); null for the controller. */
  readonly node: string | null;
  /** `status.result` as written (Valid, Invalid, Unknown), or null when the object has no status yet. */
  readonly result: string | null;
  readonly errorSummary: string | null;
  /** What the snapshot's configuration makes this component do: accepted, rejected, or noNode (no Node object of that name). */
  readonly computed: 'accepted' | 'rejected' | 'noNode';
  /** MetalLB's error for `computed: rejected`, else null. */
  readonly computedError: string | null;
  readonly agreement: ReportAgreement;
}

/** The controller's side: whether it accepts the snapshot's configuration, and MetalLB's error when not. */
export interface ControllerComputation {
  readonly accepted: boolean;
  readonly error: string | null;
}

const CONFIG_ERROR_PREFIX = /^configuration error: /;

/** An error as MetalLB prints it: without the ConfigurationState's `configuration error: ` and metallb-ts's `namespace/Kind/name: ` prefix. */
function core(text: string): string {
  return text
    .replace(CONFIG_ERROR_PREFIX, '')
    .replace(/^[^\s/]+\/[A-Za-z0-9]+\/[^\s:]+: /, '')
    .trim();
}

/** Whether a reported errorSummary says the same as our error (either contains the other, prefixes aside). */
function sameError(reported: string | null, computed: string | null): boolean {
  if (!reported || !computed) return true;
  const a = core(reported);
  const b = core(computed);
  return a.includes(b) || b.includes(a);
}

function compare(result: string | null, errorSummary: string | null, computed: ReportedConfiguration['computed'], computedError: string | null): ReportAgreement {
  if (computed === 'noNode' || (result !== 'Valid' && result !== 'Invalid')) return 'unknown';
  if (result === 'Valid') return computed === 'accepted' ? 'agrees' : 'disagrees';
  if (computed === 'accepted') return 'disagrees';
  return sameError(errorSummary, computedError) ? 'agrees' : 'otherError';
}

/** The speaker's node of a `speaker-<node>` ConfigurationState. */
function nodeOf(o: ConfigurationStateObject): string {
  const label = o.metadata?.labels?.['metallb.io/node-name'];
  if (label) return label;
  return (o.metadata?.name ?? '').replace(/^speaker-/, '');
}

/**
 * The ConfigurationStates of MetalLB's namespace (`controller`, `speaker-<node>`; others are not
 * MetalLB's) with what the snapshot's configuration makes each component do: the controller by
 * `controller`, each speaker by its node's group in `configs` (a speaker of a node the snapshot
 * lacks: noNode). Controller first, then speakers by node name. Pure.
 */
export function reportedConfiguration(state: ClusterState, namespace: string, configs: SpeakerConfigs, controller: ControllerComputation): ReportedConfiguration[] {
  const nodes = new Set(state.nodes.map((n) => n.metadata?.name ?? ''));
  const out: ReportedConfiguration[] = [];
  for (const o of state.configurationStates ?? []) {
    const ns = o.metadata?.namespace;
    if (ns && ns !== namespace) continue;
    const name = o.metadata?.name ?? '';
    const component = o.metadata?.labels?.['metallb.io/component-type'] ?? (name === 'controller' ? 'controller' : name.startsWith('speaker-') ? 'speaker' : '');
    const result = typeof o.status?.result === 'string' && o.status.result !== '' ? o.status.result : null;
    const errorSummary = typeof o.status?.errorSummary === 'string' && o.status.errorSummary !== '' ? o.status.errorSummary : null;
    if (component === 'controller') {
      const computed = controller.accepted ? 'accepted' : 'rejected';
      out.push({ name, component, node: null, result, errorSummary, computed, computedError: controller.error, agreement: compare(result, errorSummary, computed, controller.error) });
    } else if (component === 'speaker') {
      const node = nodeOf(o);
      const g = nodes.has(node) ? configs.byNode.get(node) : undefined;
      const computed = !g || g.status === 'noNode' ? 'noNode' : g.status;
      const computedError = g && !g.result.ok && computed === 'rejected' ? g.result.error.message : null;
      out.push({ name, component, node, result, errorSummary, computed, computedError, agreement: compare(result, errorSummary, computed, computedError) });
    }
  }
  const rank = (r: ReportedConfiguration): string => (r.component === 'controller' ? '' : `\u0001${r.node}`);
  return out.sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));
}

/** `the controller`, `the speaker of node-a`. */
export function componentText(r: Pick<ReportedConfiguration, 'component' | 'node'>): string {
  return r.component === 'controller' ? 'the controller' : `the speaker of ${r.node}`;
}

/** Names joined; past `max`, the first ones and a count. */
function names(xs: readonly string[], max: number): string {
  return xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`;
}

/** What a report says, in words: `reports Invalid: <errorSummary>`, `reports Valid`, `has not reported yet`. */
function saysText(r: ReportedConfiguration): string {
  if (r.result === null) return 'has not reported a result yet';
  return r.result === 'Invalid' && r.errorSummary ? `reports Invalid: ${r.errorSummary}` : `reports ${r.result}`;
}

/**
 * One sentence per disagreement: what the component reports, what the snapshot's configuration
 * makes it do, and what that means. Components saying the same thing are grouped.
 */
export function disagreementText(group: readonly ReportedConfiguration[], max = 8): string {
  const r = group[0]!;
  const who =
    r.component === 'controller'
      ? 'the controller'
      : `the speaker${group.length === 1 ? '' : 's'} of ${names(
          group.map((x) => x.node ?? ''),
          max,
        )}`;
  if (r.agreement === 'otherError') {
    return `${who} ${saysText(r)}, but this snapshot's configuration fails there with another error (${r.computedError}): ${group.length === 1 ? 'it' : 'they'} loaded another configuration than the snapshot's`;
  }
  const one = group.length === 1;
  if (r.result === 'Invalid') {
    return `${who} ${saysText(r)}, but this snapshot's configuration is accepted there: ${one ? 'it runs' : 'they run'} another configuration than the snapshot's (the snapshot is newer than ${one ? 'its' : 'their'} last load, or the ConfigurationState is stale)`;
  }
  return `${who} ${saysText(r)}, but this snapshot's configuration is rejected there (${r.computedError ?? 'rejected'}): ${one ? 'it has' : 'they have'} not processed this configuration yet (the snapshot is newer than ${one ? 'its' : 'their'} last load, or the ConfigurationState is stale) and ${one ? 'runs' : 'run'} the one ${one ? 'it' : 'they'} accepted last until then`;
}

/** Reports grouped by what they say and how they compare (one group per component kind, result, error and agreement). */
export function groupReports(reports: readonly ReportedConfiguration[]): ReportedConfiguration[][] {
  const groups = new Map<string, ReportedConfiguration[]>();
  for (const r of reports) {
    const k = JSON.stringify([r.component, r.result, r.errorSummary, r.computed, r.computedError, r.agreement]);
    const g = groups.get(k);
    if (g) g.push(r);
    else groups.set(k, [r]);
  }
  return [...groups.values()];
}

/**
 * One line over every report: `controller: Valid; speakers of a, b: Valid; speaker of c: Invalid,
 * with the error this snapshot gives`, and which disagree; `cut` words a list of nodes. Null
 * when there is none.
 */
export function reportedSummary(reports: readonly ReportedConfiguration[], cut: (nodes: readonly string[]) => string = (xs) => names(xs, 8)): string | null {
  if (reports.length === 0) return null;
  const parts: string[] = [];
  for (const g of groupReports(reports)) {
    const r = g[0]!;
    const what =
      r.result === null
        ? 'no result yet'
        : r.result === 'Invalid' && r.errorSummary && r.agreement !== 'agrees'
          ? `Invalid (${r.errorSummary})`
          : r.result === 'Invalid' && r.agreement === 'agrees'
            ? 'Invalid, with the error this snapshot gives'
            : r.result;
    const who = r.component === 'controller' ? 'controller' : g.length === 1 ? `speaker of ${r.node}` : `speakers of ${cut(g.map((x) => x.node ?? ''))}`;
    const how = r.agreement === 'agrees' ? '' : r.agreement === 'unknown' ? (r.computed === 'noNode' ? ' [no such Node in the snapshot]' : '') : ' [disagrees with this snapshot]';
    parts.push(`${who}: ${what}${how}`);
  }
  return parts.join('; ');
}
