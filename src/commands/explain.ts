/**
 * `metallb-ts explain svc/NAME|NS/NAME|NAME [-n NS]`: why a LoadBalancer service has (or lacks)
 * its IP and which node announces it, with the trace of every step. Live, the election's speakers
 * are a running speaker's memberlist view (`--speaker`, or a speaker pod found through the API
 * server) unless `--speakers` is given; `speakers` in the output says which view was used. Exit 0
 * when some node announces it, 1 when nobody does, 2 for bad input, 3 when the cluster or the
 * speaker named with `--speaker` cannot be reached.
 */
import type { Command } from 'commander';
import type { ClusterState, Service } from '../core/kube.ts';
import { EXIT_NO, EXIT_OK, UserError } from '../core/errors.ts';
// The explain modules themselves, not index.ts: whois.ts and validate.ts are not loaded then.
import { explainService as coreExplainService, isAnnounced, type Explanation } from '../core/explain/explain.ts';
import type { DiagnosticContext } from '../core/explain/context.ts';
import { serviceKey } from '../core/controller/service.ts';
import { writeResult } from '../render/output.ts';
import { explainText } from '../render/explain.ts';
import { addFilenameOption, addNamespaceOption, addOutputOption, addSpeakerOptions, addSpeakerViewOption, diagnostics, loadDiagnosticState, type OutputOptions, type StateOptions } from './options.ts';

/** A service reference: `namespace/name`. */
export interface ServiceRef {
  namespace: string;
  name: string;
}

const KIND_PREFIXES = new Set(['svc', 'service', 'services']);

/**
 * Parses `svc/NAME`, `service/NAME`, `NS/NAME` or `NAME`; the namespace is `-n`, else the one in
 * the target, else `default`.
 * @throws UserError (exit 2) for an empty name, more than one `/` (beyond a `svc/` prefix), or a
 *   namespace in the target that contradicts `-n`.
 */
export function parseServiceTarget(target: string, namespace?: string): ServiceRef {
  const parts = target.split('/');
  if (parts.length > 1 && KIND_PREFIXES.has(parts[0]!.toLowerCase())) parts.shift();
  if (parts.length > 2 || parts.some((p) => p === '')) {
    throw new UserError(`invalid service "${target}": expected svc/NAME, NAMESPACE/NAME or NAME`);
  }
  const [nsInTarget, name] = parts.length === 2 ? [parts[0]!, parts[1]!] : [undefined, parts[0]!];
  if (nsInTarget !== undefined && namespace !== undefined && nsInTarget !== namespace) {
    throw new UserError(`service "${target}" names namespace ${nsInTarget} but -n says ${namespace}`);
  }
  return { namespace: nsInTarget ?? namespace ?? 'default', name };
}

/**
 * The Service `ref` names in `state`.
 * @throws UserError (exit 2) when it is not there; the message names the namespaces where a
 *   Service of that name exists (`exists in namespace shop: explain svc/web -n shop`).
 */
export function findService(state: ClusterState, ref: ServiceRef): Service {
  const svc = state.services.find((s) => s.metadata?.name === ref.name && (s.metadata?.namespace ?? 'default') === ref.namespace);
  if (svc) return svc;
  const elsewhere = [...new Set(state.services.filter((s) => s.metadata?.name === ref.name).map((s) => s.metadata?.namespace ?? 'default'))].sort();
  const hint =
    elsewhere.length === 0
      ? ''
      : `; a Service ${ref.name} exists in namespace${elsewhere.length === 1 ? '' : 's'} ${elsewhere.length <= 8 ? elsewhere.join(', ') : `${elsewhere.slice(0, 8).join(', ')} and ${elsewhere.length - 8} more`}: explain svc/${ref.name} -n ${elsewhere[0]}`;
  throw new UserError(`service ${ref.namespace}/${ref.name} not found in the cluster state${hint}`);
}

/**
 * Explains the Service `ref` names (core explainService over the diagnostic context); `-o json|yaml`
 * print the returned Explanation as is.
 * @throws UserError (exit 2) when the Service is not in the state.
 */
export function explainServiceRef(ctx: DiagnosticContext, ref: ServiceRef): Explanation {
  return coreExplainService({ ...ctx, service: findService(ctx.state, ref) });
}

interface ExplainOptions extends StateOptions, OutputOptions {}

/** Registers `explain` on `program`. */
export function registerExplain(program: Command): void {
  const cmd = program
    .command('explain')
    .description('explain how MetalLB treats a LoadBalancer service: its IP, its pool, and which node announces it and why')
    .argument('<service>', 'svc/NAME, NAMESPACE/NAME or NAME')
    .addHelpText(
      'after',
      '\nExamples:\n  metallb-ts explain svc/frontend -n shop -f examples/cluster.yaml\n  metallb-ts explain shop/frontend -f dump/ -o json\n  metallb-ts explain svc/frontend -n shop                          # live: asks a speaker pod for its memberlist view\n  metallb-ts explain svc/frontend -n shop --speaker 10.0.0.5:9120',
    );
  addFilenameOption(cmd);
  addNamespaceOption(cmd);
  addOutputOption(cmd);
  addSpeakerOptions(cmd);
  addSpeakerViewOption(cmd);
  cmd.action(async (target: string, opts: ExplainOptions) => {
    const ref = parseServiceTarget(target, opts.namespace);
    // The Service is looked up as soon as the state is there, before the speaker's answer is
    // awaited: an unknown Service (exit 2) wins over an unreachable speaker (exit 3).
    const { state, source, speakerView } = await loadDiagnosticState(opts, undefined, (s) => {
      findService(s, ref);
    });
    // The dry run needs to be complete for this Service only (allocateAll's focus).
    const explanation = explainServiceRef(diagnostics(state, opts, speakerView, serviceKey(findService(state, ref))), ref);
    // `source` (live server or snapshot files) and where the speaker view came from (or why live
    // mode fell back) are the command's additions to the core's Explanation.
    const output = { ...explanation, speakers: { ...explanation.speakers, ...speakerView.report }, source };
    writeResult(opts.output, output, (wide) => explainText(output, wide));
    process.exitCode = isAnnounced(explanation) ? EXIT_OK : EXIT_NO;
  });
}
