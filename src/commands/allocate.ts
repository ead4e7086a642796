/**
 * `metallb-ts allocate --dry-run`: what MetalLB's controller would assign to every LoadBalancer
 * service of the state (IP, pool, or why it stays pending), as after a controller restart, without
 * writing anything. Parses the flags, reads the state, calls allocateDryRun
 * (src/core/explain/allocate.ts) and renders its report (src/render/allocate.ts). Exit 1 when a
 * shown service would stay without an address, 0 otherwise.
 */
import type { Command } from 'commander';
import { allocateDryRun, allocateExitCode } from '../core/explain/allocate.ts';
import { UserError } from '../core/errors.ts';
import { allocateTable } from '../render/allocate.ts';
import { writeResult } from '../render/output.ts';
import { addFilenameOption, addNamespaceOption, addOutputOption, loadState, type OutputOptions, type StateOptions } from './options.ts';

interface AllocateOptions extends StateOptions, OutputOptions {
  dryRun?: boolean;
}

/** Registers `allocate` on `program`. */
export function registerAllocate(program: Command): void {
  const cmd = program
    .command('allocate')
    .description("show the IP MetalLB's controller would give every LoadBalancer service, or why it stays pending")
    .option('--dry-run', 'compute only, change nothing (required: writing to the cluster is not supported)')
    .option('--lb-class <class>', "the controller's --lb-class: handle only Services with this spec.loadBalancerClass")
    .addHelpText('after', '\nExit status: 0 every service gets an address, 1 some would stay pending, 2 bad input.\n\nExample:\n  metallb-ts allocate --dry-run -f examples/cluster.yaml');
  addFilenameOption(cmd);
  addNamespaceOption(cmd, 'only show services of this namespace');
  addOutputOption(cmd);
  cmd.action(async (opts: AllocateOptions) => {
    if (!opts.dryRun) throw new UserError("allocate only runs with --dry-run (writing allocations to the cluster is the controller's job)");
    const state = await loadState(opts);
    const report = allocateDryRun(state, {
      ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
      ...(opts.lbClass !== undefined ? { loadBalancerClass: opts.lbClass } : {}),
      ...(opts.metallbNamespace !== undefined ? { metallbNamespace: opts.metallbNamespace } : {}),
    });
    writeResult(opts.output, report, (wide) => allocateTable(report, wide));
    process.exitCode = allocateExitCode(report);
  });
}
