/**
 * `metallb-ts snapshot [-f ...] -o yaml|json`: the cluster state metallb-ts sees, as one `kind: List`
 * (kept kinds only, grouped by kind, managedFields dropped). Without `-f` it is exactly what the
 * other commands read from the live cluster, so `explain -f dump.yaml` replays a live `explain`.
 * Note: that includes the Secrets of the MetalLB namespace (BGP passwords, the memberlist key).
 */
import type { Command } from 'commander';
import { dumpSnapshot } from '../kube/snapshot.ts';
import { DATA_FORMATS, type DataFormat } from '../render/output.ts';
import { addFilenameOption, addOutputOption, loadState, type StateOptions } from './options.ts';

interface SnapshotOptions extends StateOptions {
  output: DataFormat;
}

/** Registers `snapshot` on `program`. */
export function registerSnapshot(program: Command): void {
  const cmd = program
    .command('snapshot')
    .description('print the cluster state metallb-ts reads (Services, EndpointSlices, Nodes, speaker Pods, metallb.io CRs) as one List')
    .addHelpText(
      'after',
      '\nExamples:\n  metallb-ts snapshot -o yaml > dump.yaml                  # the live cluster (kubeconfig), for a bug report\n  metallb-ts explain svc/frontend -n shop -f dump.yaml     # replays what explain saw live\n  metallb-ts snapshot -f dump/ -o json > cluster.json\n  kubectl get nodes,svc,endpointslices -A -o yaml | metallb-ts snapshot -f -',
    );
  addFilenameOption(cmd);
  addOutputOption(cmd, DATA_FORMATS, 'yaml');
  cmd.action(async (opts: SnapshotOptions) => {
    const state = await loadState(opts);
    process.stdout.write(dumpSnapshot(state, opts.output));
  });
}
