/**
 * The one line for a configuration MetalLB's controller rejects, shared by the diagnostics commands
 * (explain, whois, whatif, allocate): with nothing of the snapshot running, there is nothing to
 * explain beyond the rejection itself.
 */
import { ConfigError, UserError } from '../errors.ts';

/**
 * A ConfigError of the controller's configuration as the one-line user error (exit 2); others
 * unchanged. The controller parses the IPAddressPools and Communities only, and every speaker
 * parses them too: nothing in the snapshot runs, so there is nothing to explain (MetalLB's
 * components keep the configuration they accepted last).
 */
export function rejectedConfig(err: unknown): unknown {
  return err instanceof ConfigError
    ? new UserError(
        `MetalLB's controller rejects this configuration: ${err.message}; the controller and every speaker keep running the configuration they accepted last, which a snapshot cannot show (see metallb-ts validate)`,
      )
    : err;
}
