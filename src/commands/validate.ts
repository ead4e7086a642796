/**
 * `metallb-ts validate [--strict]`: the errors MetalLB's config parser and webhooks would report for
 * the metallb.io objects of the state, each with the components that reject the configuration
 * because of it, and warnings about configurations that parse but most likely do not do what was
 * meant (BGP traps included). Parses the flags, reads the state, calls validateConfig
 * (src/core/explain/validate.ts) and renders its report (src/render/validate.ts). Exit 1 on any
 * error (and on warnings with --strict), 0 otherwise.
 */
import type { Command } from 'commander';
import { validateConfig, validationExitCode } from '../core/explain/validate.ts';
import { writeResult } from '../render/output.ts';
import { validationTable } from '../render/validate.ts';
import { addFilenameOption, addOutputOption, loadState, type OutputOptions, type StateOptions } from './options.ts';

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
