/**
 * `metallb-ts whois IP`: which pool an IP belongs to, which service(s) hold it and which node
 * answers ARP/NDP for it. Exit 0 when a Service holding it is announced, 1 otherwise (nobody
 * holds it, or nobody announces it), 2 for bad input.
 */
import type { Command } from 'commander';
import { UserError } from '../core/errors.ts';
import { whoisExitCode, whoisIP } from '../core/explain/index.ts';
import { canonicalIP } from '../core/ip.ts';
import { writeResult } from '../render/output.ts';
import { whoisText } from '../render/explain.ts';
import { addFilenameOption, addOutputOption, addSpeakerOptions, addSpeakerViewOption, diagnostics, loadDiagnosticState, type OutputOptions, type StateOptions } from './options.ts';

/**
 * The canonical form of a `whois` argument.
 * @throws UserError (exit 2) when it is not an IPv4 or IPv6 address.
 */
export function parseWhoisIP(arg: string): string {
  const ip = canonicalIP(arg.trim());
  if (ip === undefined) throw new UserError(`invalid IP address "${arg}"`);
  return ip;
}

interface WhoisOptions extends StateOptions, OutputOptions {}

/** Registers `whois` on `program`. */
export function registerWhois(program: Command): void {
  const cmd = program
    .command('whois')
    .description('tell which pool, service(s) and announcing node an IP belongs to')
    .argument('<ip>', 'an IPv4 or IPv6 address')
    .addHelpText('after', '\nExample:\n  metallb-ts whois 192.0.2.40 -f examples/cluster.yaml');
  addFilenameOption(cmd);
  addOutputOption(cmd);
  addSpeakerOptions(cmd);
  addSpeakerViewOption(cmd);
  cmd.action(async (arg: string, opts: WhoisOptions) => {
    const ip = parseWhoisIP(arg);
    const { state, speakerView } = await loadDiagnosticState(opts);
    const ctx = diagnostics(state, opts, speakerView);
    // The live speakers the elections used (as in explain) are the command's addition.
    const result = { ...whoisIP({ ...ctx, ip }), speakers: { source: ctx.speakersSource, nodes: ctx.speakers, ...speakerView.report } };
    writeResult(opts.output, result, (wide) => whoisText(result, wide));
    process.exitCode = whoisExitCode(result);
  });
}
