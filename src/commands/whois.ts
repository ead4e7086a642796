/**
 * `metallb-ts whois IP`: which pool an IP belongs to, which service(s) hold it and which node
 * answers ARP/NDP for it.
 */
import type { Command } from 'commander';
import type { ClusterState } from '../core/kube.ts';
import { UserError } from '../core/errors.ts';
import { canonicalIP } from '../core/ip.ts';
import {
  addFilenameOption, addOutputOption, addSpeakerOptions, loadState,
  type OutputOptions, type StateOptions,
} from './options.ts';

/** What `whois` asks the core. */
export interface WhoisRequest {
  /** Canonical form of the IP (`2001:db8::1`, `192.0.2.10`). */
  ip: string;
  speakers?: string[];
  ignoreExcludeLB: boolean;
}

/**
 * The canonical form of a `whois` argument.
 * @throws UserError (exit 2) when it is not an IPv4 or IPv6 address.
 */
export function parseWhoisIP(arg: string): string {
  const ip = canonicalIP(arg.trim());
  if (ip === undefined) throw new UserError(`invalid IP address "${arg}"`);
  return ip;
}

/**
 * Answers `whois` for one IP. Backed by the core (config + allocator + election) once it lands.
 * @throws UserError while the core modules are not available.
 */
export async function whoisIP(_state: ClusterState, _req: WhoisRequest): Promise<never> {
  throw new UserError('whois is not available yet');
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
  cmd.action(async (arg: string, opts: WhoisOptions) => {
    const ip = parseWhoisIP(arg);
    const state = await loadState(opts);
    await whoisIP(state, {
      ip,
      ...(opts.speakers ? { speakers: opts.speakers } : {}),
      ignoreExcludeLB: opts.ignoreExcludeLb === true,
    });
  });
}
