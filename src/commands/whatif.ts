/**
 * `metallb-ts whatif`: what changes for every LoadBalancer Service (its addresses, pool, L2
 * announcer, BGP nodes and peers) if nodes go down (`--node-down`), node labels are edited
 * (`--label NODE key=value|key-`), the speakers run with or without `--ignore-exclude-lb`, or
 * manifests are applied or deleted (`--apply`, `--delete`) — from a snapshot (`-f`) or live. The
 * core (src/core/explain/whatif.ts) runs `explain`'s composition of the controller's and the speakers'
 * decisions on the state before and after. Exit 1 when a Service would lose its address or its
 * announcer, 0 otherwise, 2 for bad input, 3 when the cluster cannot be reached.
 */
import type { Command } from 'commander';
import { changedState, parseLabelEdits, whatIf, whatIfExitCode, type WhatIfChange, type WhatIfReport } from '../core/explain/whatif.ts';
import { writeResult } from '../render/output.ts';
import { whatIfText } from '../render/whatif.ts';
import { addFilenameOption, addOutputOption, addSpeakerViewOption, loadDiagnosticState, parseNodeList, rejectedConfig, type OutputOptions, type StateOptions } from './options.ts';
import { loadManifests } from '../kube/manifests.ts';

interface WhatIfOptions extends Omit<StateOptions, 'ignoreExcludeLb'>, OutputOptions {
  nodeDown?: string[];
  label?: string[];
  /** true: `--ignore-exclude-lb`; false: `--no-ignore-exclude-lb`; absent: neither. */
  ignoreExcludeLb?: boolean;
  apply?: string[];
  delete?: string[];
}

const repeat = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** Registers `whatif` on `program`. */
export function registerWhatIf(program: Command): void {
  const cmd = program
    .command('whatif')
    .description('what changes for every LoadBalancer service (address, pool, announcer) if a node goes down, a label changes, a flag changes or manifests are applied')
    .option('--node-down <node>', 'this node goes down: its speaker leaves memberlist, its endpoints turn not ready (repeatable; a,b,c)', (v: string, prev: string[] | undefined) => [
      ...(prev ?? []),
      ...parseNodeList(v),
    ])
    .option('--label <node-and-labels...>', 'NODE key=value (add or change) or NODE key- (remove), as kubectl label (repeatable)', repeat)
    .option('--ignore-exclude-lb', 'the speakers run with --ignore-exclude-lb (they run without it now)')
    .option('--no-ignore-exclude-lb', 'the speakers run without --ignore-exclude-lb (they run with it now)')
    .option('--apply <path>', 'apply these manifests: a file or directory; objects replace those of the same kind, namespace and name, others are added (repeatable)', repeat)
    .option('--delete <path>', 'delete the objects of these manifests (repeatable)', repeat)
    .option('--speakers <nodes>', "comma-separated nodes whose speaker is alive in memberlist now (default: a running speaker's memberlist view, else nodes with a Ready speaker pod)", parseNodeList)
    .option('--lb-class <class>', "MetalLB's --lb-class: it handles only Services with this spec.loadBalancerClass (default: only Services without one)")
    .addHelpText(
      'after',
      [
        '',
        'Exit status: 0 no Service loses its address or announcer, 1 some would, 2 bad input, 3 cluster unreachable.',
        '',
        'Examples:',
        '  metallb-ts whatif --node-down lab-worker-b -f examples/cluster.yaml',
        '  metallb-ts whatif --label lab-worker-a node-role/worker- -f examples/cluster.yaml',
        '  metallb-ts whatif --ignore-exclude-lb -f examples/cluster-cp-only.yaml',
        '  metallb-ts whatif --apply metallb-config/ -o json        # live: CI check of edited manifests',
      ].join('\n'),
    );
  addFilenameOption(cmd);
  addOutputOption(cmd);
  addSpeakerViewOption(cmd);
  cmd.action(async (opts: WhatIfOptions) => {
    const labels = parseLabelEdits(opts.label ?? []);
    const [apply, remove] = await Promise.all([opts.apply ? loadManifests('--apply', opts.apply) : Promise.resolve([]), opts.delete ? loadManifests('--delete', opts.delete) : Promise.resolve([])]);
    const change: WhatIfChange = {
      nodesDown: [...new Set(opts.nodeDown ?? [])],
      labels,
      apply,
      remove,
      ...(opts.ignoreExcludeLb !== undefined ? { ignoreExcludeLB: opts.ignoreExcludeLb } : {}),
    };
    const metallbNamespace = opts.metallbNamespace;
    const { state, speakerView } = await loadDiagnosticState(opts as StateOptions, undefined, (s) => {
      // Unknown nodes and missing objects are bad input: reported before any speaker is asked.
      changedState(s, change, metallbNamespace);
    });
    let report: WhatIfReport;
    try {
      report = whatIf(state, change, {
        ...(opts.speakers ? { speakers: opts.speakers } : {}),
        ...(speakerView.memberlist ? { memberlist: speakerView.memberlist } : {}),
        // `--no-ignore-exclude-lb` asks about speakers that run with the flag now.
        ignoreExcludeLB: opts.ignoreExcludeLb === false,
        ...(opts.lbClass !== undefined ? { loadBalancerClass: opts.lbClass } : {}),
        ...(metallbNamespace !== undefined ? { metallbNamespace } : {}),
      });
    } catch (err) {
      throw rejectedConfig(err);
    }
    writeResult(opts.output, report, (wide) => whatIfText(report, wide));
    process.exitCode = whatIfExitCode(report);
  });
}
