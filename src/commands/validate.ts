/**
 * `metallb-ts validate [--strict]`: the errors MetalLB's config parser and webhooks would report for
 * the metallb.io objects of the state, and warnings about configurations that parse but do nothing.
 * Exit 1 on any error (and on warnings with --strict), 0 otherwise.
 */
import type { Command } from 'commander';
import type { ClusterState } from '../core/kube.ts';
import { UserError } from '../core/errors.ts';
import {
  addFilenameOption, addOutputOption, loadState,
  type OutputOptions, type StateOptions,
} from './options.ts';

/**
 * Validates the configuration. Backed by `collectConfigErrors`/`configWarnings` once they land.
 * @throws UserError while the config core is not available.
 */
export async function validateConfig(_state: ClusterState): Promise<never> {
  throw new UserError('validate is not available yet (the config core has not landed)');
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
    await validateConfig(state);
  });
}
