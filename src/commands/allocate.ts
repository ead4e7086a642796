/**
 * `metallb-ts allocate --dry-run`: what MetalLB's controller would assign to every LoadBalancer
 * service of the state (IP, pool, or why it stays pending), without writing anything.
 */
import type { Command } from 'commander';
import type { ClusterState } from '../core/kube.ts';
import { UserError } from '../core/errors.ts';
import {
  addFilenameOption, addNamespaceOption, addOutputOption, loadState,
  type OutputOptions, type StateOptions,
} from './options.ts';

/** What `allocate` asks the core. */
export interface AllocateRequest {
  /** Only report services of this namespace (all services are still allocated, in order). */
  namespace?: string;
}

/**
 * Runs the controller's allocation over the state. Backed by `allocateAll` once it lands.
 * @throws UserError while the allocator core is not available.
 */
export async function allocateDryRun(_state: ClusterState, _req: AllocateRequest): Promise<never> {
  throw new UserError('allocate is not available yet (the allocator core has not landed)');
}

interface AllocateOptions extends StateOptions, OutputOptions {
  dryRun?: boolean;
}

/** Registers `allocate` on `program`. */
export function registerAllocate(program: Command): void {
  const cmd = program
    .command('allocate')
    .description("show the IP MetalLB's controller would give every LoadBalancer service, or why it stays pending")
    .option('--dry-run', 'compute only, change nothing (required: writing to the cluster is not supported)')
    .addHelpText('after', '\nExample:\n  metallb-ts allocate --dry-run -f examples/cluster.yaml');
  addFilenameOption(cmd);
  addNamespaceOption(cmd, 'only show services of this namespace');
  addOutputOption(cmd);
  cmd.action(async (opts: AllocateOptions) => {
    if (!opts.dryRun) throw new UserError('allocate only runs with --dry-run (writing allocations to the cluster is the controller\'s job)');
    const state = await loadState(opts);
    await allocateDryRun(state, opts.namespace !== undefined ? { namespace: opts.namespace } : {});
  });
}
