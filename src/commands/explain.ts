/**
 * `metallb-ts explain svc/NAME|NS/NAME|NAME [-n NS]`: why a LoadBalancer service has (or lacks)
 * its IP and which node announces it, with the trace of every step. Live, the election's speakers
 * are a running speaker's memberlist view (`--speaker`, or a speaker pod found through the API
 * server) unless `--speakers` is given; `speakers` in the output says which view was used. Exit 0
 * when some node announces it, 1 when nobody does, 2 for bad input, 3 when the cluster or the
 * speaker named with `--speaker` cannot be reached.
 */
import type { Command } from 'commander';
import { EXIT_NO, EXIT_OK } from '../core/errors.ts';
import { isAnnounced } from '../core/explain/explain.ts';
import { serviceKey } from '../core/controller/service.ts';
import { writeResult } from '../render/output.ts';
import { explainText } from '../render/explain.ts';
import { addFilenameOption, addNamespaceOption, addOutputOption, addSpeakerOptions, addSpeakerViewOption, diagnostics, loadDiagnosticState, type OutputOptions, type StateOptions } from './options.ts';
import { parseServiceTarget, findService, explainServiceRef } from '../core/explain/service-ref.ts';
// The explain modules themselves, not index.ts: whois.ts and validate.ts are not loaded then.

export { type ServiceRef, parseServiceTarget, findService, explainServiceRef } from '../core/explain/service-ref.ts';

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
