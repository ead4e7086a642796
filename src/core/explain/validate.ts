/**
 * `validate`: every configuration error and warning of a state (validateConfig), and which MetalLB
 * component rejects each configuration error. The admission webhook
 * judges the whole cluster's configuration, but the running components each parse their own part:
 * the controller the IPAddressPools and Communities, the speaker of node N everything of MetalLB's
 * namespace minus the BGPPeers and BGPAdvertisements whose nodeSelectors do not select N. So an
 * error can stop the controller and every speaker, the speakers of some nodes only, or nothing
 * that runs (a BGPAdvertisement that selects no node is validated by no speaker: only the webhook
 * would have refused to create it).
 */
import { collectConfigErrors, configWarnings } from '../config/index.ts';
import { EXIT_NO, EXIT_OK, type ConfigError } from '../errors.ts';
import { DEFAULT_METALLB_NAMESPACE, KIND_TO_LIST, objectRef, originOf, type ClusterState, type KubeObject } from '../kube.ts';
import { compareStrings } from '../labels.ts';
import { bgpTraps } from './bgp-traps.ts';
import { controllerConfig, controllerConfigState, metallbView } from './context.ts';
import { configHazards, type Hazard } from './hazards.ts';
import { disagreementText, groupReports, reportedConfiguration, type ReportedConfiguration } from './reported.ts';
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

/** One finding. `object` is the objectRef of the object to fix (absent for cluster-wide errors). */
export interface ValidationFinding {
  severity: 'error' | 'warning';
  object?: string;
  /** What is wrong, without the object prefix. */
  message: string;
  /** Warnings: the stable id (`pool-not-advertised`, ...). */
  id?: string;
  /** Warnings: how to fix it. */
  fix?: string;
  /** `file:line` the object was read from, when known. */
  source?: string;
  /**
   * Errors: who rejects the configuration because of it — the controller, the speakers (`all`,
   * node names, [] for none, null when the snapshot has no Node object to tell); neither means
   * only the admission webhook would refuse it.
   */
  rejectedBy?: { controller: boolean; speakers: 'all' | string[] | null };
}

/** `validate -o json|yaml` output: `{ errors: [...], warnings: [...], reported: [...] }` (documented schema). */
export interface ValidationReport {
  errors: ValidationFinding[];
  warnings: ValidationFinding[];
  /**
   * The ConfigurationStates of MetalLB's namespace (what the controller and each speaker report
   * about their last load), each compared with what this configuration makes the component do.
   */
  reported: ReportedConfiguration[];
}

/**
 * Every configuration error and warning for `state`, each with the file:line of its object when
 * it was read from a snapshot. Errors: the whole cluster's (collectConfigErrors: exactly what
 * parseConfig would reject), then those only a component raises, each with the components that
 * reject the configuration because of it (configRejections: the controller, the speakers of
 * which nodes, or none but the admission webhook). Warnings: configWarnings, then the BGP traps
 * (bgpTraps), then the hazards (configHazards: node addresses or Pod/Service ranges in a pool,
 * unintended interfaces). Only metallb.io objects in `metallbNamespace` count (metallbView); the others are
 * warnings (`outside-metallb-namespace`). Pure; never throws for a bad configuration.
 */
export function validateConfig(all: ClusterState, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): ValidationReport {
  const sources = sourcesByRef(all);
  const { state, ignored } = metallbView(all, metallbNamespace);
  const { rejections, speakerConfigs } = configRejections(all, metallbNamespace);
  const errors = rejections.map(({ error: e, controller, speakers }): ValidationFinding => {
    const object = e.object;
    const source = object ? sources.get(object) : undefined;
    return {
      severity: 'error',
      ...(object ? { object } : {}),
      message: e.detail,
      ...(source ? { source } : {}),
      rejectedBy: { controller, speakers: speakers === null || speakers === 'all' ? speakers : [...speakers] },
    };
  });
  const warnings = [...configWarnings(state), ...bgpTraps(all, speakerConfigs)].map((w): ValidationFinding => {
    const source = sources.get(w.object);
    return { severity: 'warning', object: w.object, message: w.message, id: w.id, fix: w.fix, ...(source ? { source } : {}) };
  });
  // Dangerous configurations MetalLB accepts (pools holding node addresses or overlapping the Pod or
  // Service ranges, speakers answering on wireless/VPN/overlay interfaces): judged with the
  // controller's pools, none when it rejects them.
  let hazards: Hazard[] = [];
  try {
    hazards = configHazards(all, controllerConfig(all, metallbNamespace), metallbNamespace);
  } catch {
    hazards = [];
  }
  for (const h of hazards) {
    const source = sources.get(h.object);
    warnings.push({ severity: 'warning', object: h.object, message: h.message, id: h.id, fix: h.fix, ...(source ? { source } : {}) });
  }
  const controllerError = rejections.find((r) => r.controller)?.error.message ?? null;
  const reported = reportedConfiguration(all, metallbNamespace, speakerConfigs, { accepted: controllerError === null, error: controllerError });
  for (const g of groupReports(reported.filter((r) => r.agreement === 'disagrees' || r.agreement === 'otherError'))) {
    const object = `${metallbNamespace}/ConfigurationState/${g[0]!.name}${g.length > 1 ? ` (and ${g.length - 1} more)` : ''}`;
    warnings.push({
      severity: 'warning',
      object,
      id: 'configuration-state-disagrees',
      message: disagreementText(g),
      fix:
        "validate a fresh snapshot (metallb-ts snapshot) or the live cluster; if it persists, read the component's log and its ConfigurationState (kubectl get configurationstates -n " + metallbNamespace + ')',
    });
  }
  for (const obj of ignored) {
    const object = objectRef(obj);
    const source = sources.get(object);
    warnings.push({
      severity: 'warning',
      object,
      id: 'outside-metallb-namespace',
      message: `MetalLB reads its configuration only from namespace ${metallbNamespace}: this object is ignored`,
      fix: `move it to ${metallbNamespace}, or pass --metallb-namespace if MetalLB runs in ${obj.metadata?.namespace}`,
      ...(source ? { source } : {}),
    });
  }
  return { errors, warnings, reported };
}

/** Exit status for a report: 1 on errors, or on warnings with `strict`; else 0. */
export function validationExitCode(report: ValidationReport, strict: boolean): number {
  return report.errors.length > 0 || (strict && report.warnings.length > 0) ? EXIT_NO : EXIT_OK;
}

/** The `file:line` each object of `state` was read from, by objectRef (objects without an origin left out). */
function sourcesByRef(state: ClusterState): Map<string, string> {
  const out = new Map<string, string>();
  for (const list of Object.values(KIND_TO_LIST)) {
    for (const obj of state[list] as KubeObject[]) {
      const origin = originOf(obj);
      const ref = objectRef(obj);
      if (origin && !out.has(ref)) out.set(ref, `${origin.file}:${origin.line}`);
    }
  }
  return out;
}
