/**
 * `metallb-ts validate [--strict]`: the errors MetalLB's config parser and webhooks would report for
 * the metallb.io objects of the state, each with the components that reject the configuration
 * because of it, and warnings about configurations that parse but most likely do not do what was
 * meant (BGP traps included). Exit 1 on any error (and on warnings with --strict), 0 otherwise.
 */
import type { Command } from 'commander';
import { configWarnings } from '../core/config/index.ts';
import { DEFAULT_METALLB_NAMESPACE, KIND_TO_LIST, objectRef, originOf, type ClusterState, type KubeObject } from '../core/kube.ts';
import { controllerConfig, metallbView } from '../core/explain/context.ts';
import { configHazards, type Hazard } from '../core/explain/hazards.ts';
import { bgpTraps } from '../core/explain/bgp-traps.ts';
import { configRejections, rejectedByText } from '../core/explain/validate.ts';
import { disagreementText, groupReports, reportedConfiguration, reportedSummary, type ReportedConfiguration } from '../core/explain/reported.ts';
import { EXIT_NO, EXIT_OK } from '../core/errors.ts';
import { palette } from '../render/color.ts';
import { writeResult } from '../render/output.ts';
import { renderTable } from '../render/table.ts';
import { addFilenameOption, addOutputOption, loadState, type OutputOptions, type StateOptions } from './options.ts';

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
    const message = object && e.message.startsWith(`${object}: `) ? e.message.slice(object.length + 2) : e.message;
    const source = object ? sources.get(object) : undefined;
    return { severity: 'error', ...(object ? { object } : {}), message, ...(source ? { source } : {}), rejectedBy: { controller, speakers: speakers === null || speakers === 'all' ? speakers : [...speakers] } };
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

/**
 * The table for people: SEVERITY OBJECT MESSAGE REJECTED-BY (who rejects the configuration
 * because of an error; empty for warnings); wide: also FIX and SOURCE, and complete node lists.
 */
export function validationTable(report: ValidationReport, wide: boolean, color = palette()): string {
  const findings = [...report.errors, ...report.warnings];
  const summary = reportedSummary(report.reported, (xs) => (wide || xs.length <= 8 ? xs.join(', ') : `${xs.slice(0, 8).join(', ')} and ${xs.length - 8} more`));
  const states = summary ? `\nConfigurationState (what the running components report): ${summary}\n` : '';
  if (findings.length === 0) return `No errors or warnings.\n${states}`;
  const sev = (s: ValidationFinding['severity']) => (s === 'error' ? color.red(s) : color.yellow(s));
  const columns = ['SEVERITY', 'OBJECT', 'MESSAGE', { header: 'REJECTED-BY', placeholder: '' }, ...(wide ? ['FIX', 'SOURCE'] : [])];
  const rows = findings.map((f) => {
    const by = f.rejectedBy ? rejectedByText(f.rejectedBy, wide ? Infinity : 5) : '';
    const base = [sev(f.severity), f.object, f.message, by];
    return wide ? [...base, f.fix, f.source] : base;
  });
  return renderTable(columns, rows) + states;
}

interface ValidateOptions extends StateOptions, OutputOptions {
  strict?: boolean;
}

/** Registers `validate` on `program`. */
export function registerValidate(program: Command): void {
  const cmd = program
    .command('validate')
    .description('check the metallb.io configuration as MetalLB would: errors, and warnings for what parses but does nothing')
    .option('--strict', 'exit 1 on warnings too')
    .addHelpText('after', '\nExit status: 0 valid, 1 errors (or warnings with --strict), 2 unreadable input.\n\nExample:\n  metallb-ts validate --strict -f examples/cluster.yaml');
  addFilenameOption(cmd);
  addOutputOption(cmd);
  cmd.action(async (opts: ValidateOptions) => {
    const state = await loadState(opts);
    const report = validateConfig(state, opts.metallbNamespace);
    writeResult(opts.output, { errors: report.errors, warnings: report.warnings, reported: report.reported }, (wide) => validationTable(report, wide));
    process.exitCode = validationExitCode(report, opts.strict === true);
  });
}
